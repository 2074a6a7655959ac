#!/usr/bin/env bash
#
# test/rollup_bench.sh
#	What a rollup costs and saves, on a fleet of 8 shards, 1,000 tenants
#	and 1,000,000 orders (ROLLUP_BENCH_ROWS per tenant: 1,000):
#
#	- the fan-out aggregate the rollup stores, run on the fleet;
#	- rollup_create, and a full refresh;
#	- an incremental refresh after 1 % of the tenants (10) changed, by the
#	  application writing their shards directly;
#	- reading a day-level report from the rollup instead of the fleet;
#	- the routed single-row INSERT through the wrapper (pgbench -M
#	  prepared, 2 clients, ROLLUP_BENCH_SECONDS each) without the capture
#	  triggers, with them, and without them again.
#
# Not part of make test (no test asserts a time).  Builds with the
# installed extension in a throw-away cluster:
#	flock -o /tmp/ssfdw_install.lock bash test/rollup_bench.sh
# after make install.  The fleet is built in /tmp/ssfdw_rbench.XXXXXX,
# removed at the end.

set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export LC_ALL=C.UTF-8
source test/harness.sh
source test/fixtures/common.sh

if [ -z "${RBENCH_INNER:-}" ]; then
	RBENCH_INNER=1 ssfdw_virtualenv bash "$0"
	exit $?
fi

ROWS=${ROLLUP_BENCH_ROWS:-1000}
SECONDS_EACH=${ROLLUP_BENCH_SECONDS:-10}
tmp=$(mktemp -d -t ssfdw_rbench.XXXXXX)
chmod 0777 "$tmp"
trap 'rm -rf "$tmp"' EXIT

d="$tmp/fleet"
mkdir -p "$d/shards"
fx_directory "$d"
for s in 0 1 2 3 4 5 6 7; do
	fx_sqlite "$d/shards/s$s.db" "PRAGMA journal_mode = WAL;
	  CREATE TABLE orders(tenant_id TEXT NOT NULL, order_id INTEGER NOT NULL,
	    status TEXT, amount_cents INTEGER, created_at TEXT,
	    PRIMARY KEY (tenant_id, order_id));
	  WITH RECURSIVE t(i) AS (SELECT $s UNION ALL SELECT i + 8 FROM t WHERE i + 8 < 1000),
	    n(j) AS (SELECT 1 UNION ALL SELECT j + 1 FROM n WHERE j < $ROWS)
	  INSERT INTO orders SELECT printf('t%04d', i), j,
	    CASE j % 3 WHEN 0 THEN 'open' WHEN 1 THEN 'paid' ELSE 'void' END,
	    (i * 7 + j * 13) % 5000,
	    printf('2024-%02d-%02d %02d:00:00', 1 + j % 12, 1 + j % 28, j % 24)
	  FROM t, n;"
	fx_add_shard "$d" "s$s" "shards/s$s.db"
	fx_sqlite "$d/directory.db" "WITH RECURSIVE t(i) AS (SELECT $s UNION ALL
	    SELECT i + 8 FROM t WHERE i + 8 < 1000)
	  INSERT INTO shard_map(tenant_id, shard_id, status, updated_at)
	  SELECT printf('t%04d', i), 's$s', 'ACTIVE', 0 FROM t;"
done
fx_done "$d"

q()
{
	psql -X -q -At -v ON_ERROR_STOP=1 -c "$@"
}

# ms SQL: the milliseconds one statement takes, as psql's \timing says.
ms()
{
	psql -X -q -At -v ON_ERROR_STOP=1 -c '\timing on' -c "$1" |
		sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | tail -n 1
}

# best3 SQL: the fastest of three runs.
best3()
{
	local a b c
	a=$(ms "$1")
	b=$(ms "$1")
	c=$(ms "$1")
	printf '%s\n%s\n%s\n' "$a" "$b" "$c" | sort -g | head -n 1
}

psql -X -q -v ON_ERROR_STOP=1 <<SQL >/dev/null
SET client_min_messages = warning;
CREATE EXTENSION sqlite_shard_fdw;
CREATE SERVER rbench FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '$d/directory.db', busy_timeout_ms '10000');
CREATE FOREIGN TABLE orders (tenant_id text, order_id bigint, status text,
  amount_cents bigint, created_at timestamp) SERVER rbench;
CREATE TABLE bench_keys AS SELECT row_number() OVER () AS i, tenant_id
  FROM (SELECT DISTINCT tenant_id FROM orders ORDER BY 1) t;
CREATE SEQUENCE bench_insert_ids START 10000000;
SQL
nkeys=$(q "SELECT count(*) FROM bench_keys")
rows=$(q "SELECT count(*) FROM orders")
echo "fleet: 8 shards, $nkeys tenants, $rows orders"

query="SELECT tenant_id, date_trunc('day', created_at) AS day, status,
  count(*), sum(amount_cents) AS amount, avg(amount_cents) AS avg_amount
  FROM orders GROUP BY 1, 2, 3"
fanout=$(best3 "SELECT count(*) FROM ($query) x")
echo "fan-out aggregate (the rollup's query over the fleet): $fanout ms"

pgb()
{
	pgbench -n -M prepared -c 2 -j 2 -T "$SECONDS_EACH" -D nkeys="$nkeys" \
		-f test/bench_pgbench_insert.sql 2>&1 |
		sed -n 's/^tps = \([0-9.]*\).*/\1/p'
}
tps_plain=$(pgb)
echo "routed INSERT without capture triggers: $tps_plain tps"

create=$(ms "SELECT rollup_create('orders_daily', \$\$$query\$\$)")
groups=$(q "SELECT count(*) FROM orders_daily")
echo "rollup_create: $create ms ($groups groups)"
full=$(best3 "SELECT * FROM rollup_refresh('orders_daily', full => true)")
echo "full refresh: $full ms"
none=$(best3 "SELECT * FROM rollup_refresh('orders_daily')")
echo "refresh with nothing changed: $none ms"

# 1 % of the tenants change, written by the application
inc_total=0
for round in 1 2 3; do
	for k in $(seq 0 9); do
		t=$(printf 't%04d' $((k * 97 + round)))
		s=$(( (k * 97 + round) % 8 ))
		runuser -u postgres -- sqlite3 -cmd ".timeout 5000" "$d/shards/s$s.db" \
			"UPDATE orders SET amount_cents = amount_cents + 1 WHERE tenant_id = '$t' AND order_id = $round"
	done
	inc=$(ms "SELECT * FROM rollup_refresh('orders_daily')")
	echo "refresh after 10 tenants (1 %) changed, run $round: $inc ms"
done
diff=$(q "SELECT count(*) FROM ((TABLE orders_daily EXCEPT ALL
  SELECT tenant_id, date_trunc('day', created_at), status, count(*),
    sum(amount_cents), sum(amount_cents), count(amount_cents) FROM orders GROUP BY 1, 2, 3)
  UNION ALL (SELECT tenant_id, date_trunc('day', created_at), status, count(*),
    sum(amount_cents), sum(amount_cents), count(amount_cents) FROM orders GROUP BY 1, 2, 3
  EXCEPT ALL TABLE orders_daily)) x")
echo "rollup against its query from scratch: $diff rows differ"

report_fleet=$(best3 "SELECT date_trunc('day', created_at), count(*), sum(amount_cents) FROM orders GROUP BY 1")
report_rollup=$(best3 "SELECT day, sum(count), sum(amount) FROM orders_daily GROUP BY 1")
echo "a day-level report: fleet $report_fleet ms, rollup $report_rollup ms"

tps_capture=$(pgb)
echo "routed INSERT with capture triggers: $tps_capture tps"

# and without again, the triggers dropped, against the fleet grown since
for s in 0 1 2 3 4 5 6 7; do
	runuser -u postgres -- sqlite3 -cmd ".timeout 5000" "$d/shards/s$s.db" \
		"DROP TRIGGER _ssfdw_rollup_i_orders; DROP TRIGGER _ssfdw_rollup_u_orders;
		 DROP TRIGGER _ssfdw_rollup_d_orders;"
done
tps_again=$(pgb)
echo "routed INSERT without capture triggers, again: $tps_again tps"
