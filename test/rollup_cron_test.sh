#!/usr/bin/env bash
#
# test/rollup_cron_test.sh
#	A rollup refreshed by pg_cron, as the README's recipe schedules it.
#	pg_cron must be loaded at server start (shared_preload_libraries), so
#	the test runs a cluster of its own rather than the suite's: it installs
#	the Debian package postgresql-$PG_MAJOR-cron when it is missing (as
#	test/deps.sh installs packages: apt-get only then), creates the
#	cluster in its folder with pg_cron preloaded and its jobs run by
#	background workers, builds a small fleet, creates a rollup, writes a
#	shard as the application does, and schedules rollup_refresh every
#	minute.  Within 75 seconds the job must have run and succeeded, and
#	the rollup must equal its query from scratch with nothing pending.
#
# Run by test/run_suites.sh (its own cluster, whatever PGDATABASE says).
# Needs root (or sudo) only to install the package.  The cluster and the
# fleet live in a new /tmp/ssfdw_rcron.XXXXXX folder, removed at the end.
# Takes up to 80 seconds; stops by itself after 200.

set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export LC_ALL=C.UTF-8
source test/fixtures/common.sh
source test/script_common.sh
script_time_limit 200

PG_MAJOR=${PG_MAJOR:-15}
BIN=/usr/lib/postgresql/$PG_MAJOR/bin
PKG=postgresql-$PG_MAJOR-cron

if ! dpkg-query -W -f='${db:Status-Abbrev}' "$PKG" 2>/dev/null | grep -q '^ii'; then
	SUDO=
	[ "$(id -u)" -ne 0 ] && SUDO=sudo
	echo "# installing $PKG"
	if ! { $SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive \
		$SUDO apt-get install -y -q --no-install-recommends "$PKG"; } \
		>/tmp/ssfdw_rcron_apt.log 2>&1 </dev/null; then
		tail -n 20 /tmp/ssfdw_rcron_apt.log
		echo "could not install $PKG"
		echo "0 passed, 1 failed"
		exit 1
	fi
fi

script_tmp ssfdw_rcron
script_cluster "shared_preload_libraries = 'pg_cron'
cron.database_name = 'postgres'
cron.use_background_workers = on
max_worker_processes = 16"

q()
{
	psql -X -q -At -v ON_ERROR_STOP=1 -c "$1"
}

d="$tmp/fleet"
mkdir -p "$d/shards"
fx_directory "$d"
for s in s0 s1; do
	fx_sqlite "$d/shards/$s.db" "PRAGMA journal_mode = WAL;
	  CREATE TABLE orders(tenant_id TEXT NOT NULL, order_id INTEGER NOT NULL,
	    amount_cents INTEGER, created_at TEXT, PRIMARY KEY (tenant_id, order_id));
	  INSERT INTO orders VALUES ('a$s', 1, 100, '2024-03-01 10:00:00'),
	    ('b$s', 1, 200, '2024-03-02 10:00:00');"
	fx_add_shard "$d" "$s" "shards/$s.db"
	fx_add_tenant "$d" "a$s" "$s"
	fx_add_tenant "$d" "b$s" "$s"
done
fx_done "$d"

psql -X -q -v ON_ERROR_STOP=1 <<SQL >/dev/null
SET client_min_messages = warning;
CREATE EXTENSION pg_cron;
CREATE EXTENSION sqlite_shard_fdw;
CREATE SERVER cron_fleet FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '$d/directory.db');
CREATE FOREIGN TABLE orders (tenant_id text, order_id bigint,
  amount_cents bigint, created_at timestamp) SERVER cron_fleet;
SELECT rollup_create('orders_daily', \$\$
  SELECT tenant_id, date_trunc('day', created_at) AS day, count(*),
         sum(amount_cents) AS amount
    FROM orders GROUP BY 1, 2\$\$);
SQL
result ok "pg_cron and a rollup in a cluster of the test's own"

# the application writes behind the wrapper's back
as_pg sqlite3 -cmd ".timeout 5000" "$d/shards/s1.db" \
	"INSERT INTO orders VALUES ('as1', 2, 50, '2024-03-03 10:00:00');
	 UPDATE orders SET amount_cents = 7 WHERE tenant_id = 'bs1'"
pending=$(q "SELECT string_agg(tenant_id, ',' ORDER BY tenant_id) FROM rollup_pending('orders_daily')")
if [ "$pending" = "as1,bs1" ]; then
	result ok "the application's writes are pending"
else
	result failed "pending: \"$pending\", not \"as1,bs1\""
fi

# the README's recipe
q "SELECT cron.schedule('refresh orders_daily', '* * * * *',
     \$\$SELECT rollup_refresh('orders_daily')\$\$)" >/dev/null
status=""
for _ in $(seq 1 150); do
	status=$(q "SELECT status FROM cron.job_run_details ORDER BY runid DESC LIMIT 1")
	case $status in
		succeeded | failed) break ;;
	esac
	sleep 0.5
done
if [ "$status" = succeeded ]; then
	result ok "pg_cron ran the scheduled refresh"
else
	result failed "the scheduled refresh: \"$status\"" \
		"$(q "SELECT return_message FROM cron.job_run_details ORDER BY runid DESC LIMIT 1")"
fi
diff=$(q "SELECT count(*) FROM ((TABLE orders_daily EXCEPT ALL
	  SELECT tenant_id, date_trunc('day', created_at), count(*), sum(amount_cents)
	  FROM orders GROUP BY 1, 2) UNION ALL (SELECT tenant_id,
	  date_trunc('day', created_at), count(*), sum(amount_cents) FROM orders
	  GROUP BY 1, 2 EXCEPT ALL TABLE orders_daily)) x")
if [ "$diff" = 0 ]; then
	result ok "the rollup equals its query from scratch"
else
	result failed "$diff rows of the rollup differ from its query"
fi
pending=$(q "SELECT count(*) FROM rollup_staleness('orders_daily') WHERE pending")
if [ "$pending" = 0 ]; then
	result ok "rollup_staleness: nothing pending"
else
	result failed "rollup_staleness: $pending tenants pending"
fi
q "SELECT cron.unschedule('refresh orders_daily')" >/dev/null

script_end
