#!/usr/bin/env bash
#
# test/rollup_bench.sh
#	What a rollup costs and saves, on a fleet of 8 shards, 1,000 tenants
#	and 1,000,000 orders (ROLLUP_BENCH_ROWS per tenant: 1,000):
#
#	- the fan-out aggregate the rollup stores, run on the fleet;
#	- rollup_create, and a full refresh (when nothing, and when every
#	  group, differs from what the rollup holds);
#	- an incremental refresh after 1 % of the tenants (10) changed, by the
#	  application writing their shards directly (sqlite3, while a process
#	  keeps a connection to each shard open);
#	- reading a day-level report from the rollup instead of the fleet;
#	- the routed single-row INSERT through the wrapper (pgbench -M
#	  prepared, 2 clients, ROLLUP_BENCH_SECONDS each) with the capture
#	  triggers and without them (dropped, then created again), in turns
#	  (ROLLUP_BENCH_WRITER_ROUNDS pairs: 4), and the transactions with
#	  them against those without over all the rounds.
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
WRITER_ROUNDS=${ROLLUP_BENCH_WRITER_ROUNDS:-4}
tmp=$(mktemp -d -t ssfdw_rbench.XXXXXX)
chmod 0777 "$tmp"
trap 'rm -rf "$tmp"' EXIT

d="$tmp/fleet"
fx_orders_fleet "$d" "$ROWS"

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
# count(x) needs every column of every group, as the rollup stores them
fanout_all=$(best3 "SELECT count(x) FROM ($query) x")
echo "fan-out aggregate, every column computed: $fanout_all ms"

pgb()
{
	pgbench -n -M prepared -c 2 -j 2 -T "$SECONDS_EACH" -D nkeys="$nkeys" \
		-f test/bench_pgbench_insert.sql 2>&1 |
		sed -n 's/^tps = \([0-9.]*\).*/\1/p'
}

create=$(ms "SELECT rollup_create('orders_daily', \$\$$query\$\$)")
groups=$(q "SELECT count(*) FROM orders_daily")
echo "rollup_create: $create ms ($groups groups)"
full=$(best3 "SELECT * FROM rollup_refresh('orders_daily', full => true)")
echo "full refresh: $full ms"
# the worst case: every group differs from the rollup's (all rewritten)
q "UPDATE orders_daily SET count = count + 1"
full_all=$(ms "SELECT * FROM rollup_refresh('orders_daily', full => true)")
echo "full refresh, every group different: $full_all ms"
none=$(best3 "SELECT * FROM rollup_refresh('orders_daily')")
echo "refresh with nothing changed: $none ms"

# 1 % of the tenants change, written by the application, which keeps a
# connection to every shard open meanwhile (as an application server does:
# no close of the last connection checkpoints and deletes a WAL file)
python3 - "$d" "$tmp/app.stop" <<'PY' &
import os, pwd, sqlite3, sys, time
pw = pwd.getpwnam("postgres")
os.setgid(pw.pw_gid); os.setuid(pw.pw_uid)
cons = [sqlite3.connect("%s/shards/s%d.db" % (sys.argv[1], s)) for s in range(8)]
for c in cons:
    c.execute("SELECT count(*) FROM sqlite_schema").fetchall()
while not os.path.exists(sys.argv[2]):
    time.sleep(0.1)
PY
app_pid=$!
sleep 1
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
touch "$tmp/app.stop"
wait "$app_pid"
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

# the capture triggers of every shard off (dropped) or on (created again
# with their exact text, so the capture stays the rollup's), in turns
triggers()
{
	local s
	for s in 0 1 2 3 4 5 6 7; do
		if [ "$1" = off ]; then
			runuser -u postgres -- sqlite3 -cmd ".timeout 5000" "$d/shards/s$s.db" \
				"SELECT sql || ';' FROM sqlite_schema WHERE type = 'trigger'
				   AND name GLOB '_ssfdw_rollup_*'" >"$tmp/triggers.s$s"
			runuser -u postgres -- sqlite3 -cmd ".timeout 5000" "$d/shards/s$s.db" \
				"DROP TRIGGER _ssfdw_rollup_i_orders; DROP TRIGGER _ssfdw_rollup_u_orders;
				 DROP TRIGGER _ssfdw_rollup_d_orders;"
		else
			runuser -u postgres -- sqlite3 -cmd ".timeout 5000" "$d/shards/s$s.db" \
				<"$tmp/triggers.s$s"
		fi
	done
}
sum_capture=0
sum_plain=0
for round in $(seq 1 "$WRITER_ROUNDS"); do
	tps_capture=$(pgb)
	triggers off
	tps_plain=$(pgb)
	triggers on
	echo "routed INSERT, round $round: with the capture $tps_capture tps, without $tps_plain tps"
	sum_capture=$(echo "$sum_capture + $tps_capture" | bc)
	sum_plain=$(echo "$sum_plain + $tps_plain" | bc)
done
echo "routed INSERT, $WRITER_ROUNDS rounds: $(echo "scale=1; 100 - 100 * $sum_capture / $sum_plain" | bc) % fewer transactions with the capture"

# A fleet of one file per tenant (ROLLUP_BENCH_FILES files of 100 orders,
# named by a pattern; 0: none): the rollup of a daily report per tenant,
# and the fleet-wide daily report from the files and from the rollup.
FILES=${ROLLUP_BENCH_FILES:-1000}
if [ "$FILES" -gt 0 ]; then
	python3 test/fixtures/tenantfiles.py build "$tmp/files" --tenants "$FILES" \
		--rows 100 --layout hashed >/dev/null
	fx_done "$tmp/files"
	psql -X -q -v ON_ERROR_STOP=1 <<SQL >/dev/null
CREATE SERVER rbench_files FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '$tmp/files/directory.db', layout 'file_per_tenant',
           tenant_path 'tenants/%2/%s.db', busy_timeout_ms '10000');
CREATE FOREIGN TABLE file_orders (tenant_id text, order_id bigint,
  status text, amount_cents bigint, created_at timestamp)
  SERVER rbench_files OPTIONS (table 'orders');
SQL
	fquery="SELECT tenant_id, date_trunc('day', created_at) AS day, status,
	  count(*), sum(amount_cents) AS amount FROM file_orders GROUP BY 1, 2, 3"
	create=$(ms "SELECT rollup_create('files_daily', \$\$$fquery\$\$)")
	echo "files: $FILES, $(q "SELECT count(*) FROM files_daily") groups; rollup_create: $create ms"
	ffull=$(best3 "SELECT * FROM rollup_refresh('files_daily', full => true)")
	# the files' states are recorded by a refresh that reads them more
	# than 2 s after their last change (src/control/rollupcapture.c)
	sleep 2.5
	fnone=$(best3 "SELECT * FROM rollup_refresh('files_daily')")
	echo "files: full refresh $ffull ms, refresh with nothing changed $fnone ms"
	nchanged=$((FILES / 100))
	for i in $(seq 1 "$nchanged"); do
		t=$(printf 't%04d' $((i * 97 % FILES + 1)))
		h=$(printf '%s' "$t" | md5sum | cut -c1-2)
		runuser -u postgres -- sqlite3 -cmd ".timeout 5000" "$tmp/files/tenants/$h/$t.db" \
			"UPDATE orders SET amount_cents = amount_cents + 1 WHERE order_id % 50 = 0"
	done
	finc=$(ms "SELECT * FROM rollup_refresh('files_daily')")
	echo "files: refresh after $nchanged tenants (1 %) changed: $finc ms"
	finc_ratio=$(echo "scale=1; 100 * $finc / $ffull" | bc)
	echo "files: refresh after 1 % changed / full refresh: $finc_ratio %"
	freport=$(best3 "SELECT date_trunc('day', created_at), count(*), sum(amount_cents) FROM file_orders GROUP BY 1")
	freport_rollup=$(best3 "SELECT day, sum(count), sum(amount) FROM files_daily GROUP BY 1")
	echo "files: a fleet-wide daily report: from the files $freport ms, from the rollup $freport_rollup ms"

	# the same report answered from the rollup (rollup_answer), against a
	# native table of the rollup's rows; each figure the best of five
	# sessions, planning included
	q "CREATE TABLE files_native AS TABLE files_daily; ANALYZE files_native; ANALYZE files_daily" >/dev/null
	freport="SELECT date_trunc('day', created_at) AS day, count(*), sum(amount_cents)
	  FROM file_orders GROUP BY 1 ORDER BY 1"
	fnative="SELECT day, sum(count)::bigint, sum(amount)::bigint FROM files_native
	  GROUP BY 1 ORDER BY 1"
	best5()
	{
		local i
		for i in 1 2 3 4 5; do
			psql -X -q -At -v ON_ERROR_STOP=1 -c "LOAD 'sqlite_shard_fdw'" \
				-c "SET sqlite_shard_fdw.rollup_answer = $1" -c '\timing on' -c "$2" |
				sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | tail -n 1
		done | sort -g | head -n 1
	}
	q "SELECT tenants FROM rollup_refresh('files_daily')" >/dev/null
	sleep 2.5
	q "SELECT tenants FROM rollup_refresh('files_daily')" >/dev/null
	fa_native=$(best5 off "$fnative")
	fa_live=$(best5 live "$freport")
	fa_stale=$(best5 stale "$freport")
	echo "files: daily report, nothing changed: native table of the rollup's rows $fa_native ms, rollup_answer = live $fa_live ms ($(echo "scale=2; $fa_live / $fa_native" | bc)x), stale $fa_stale ms ($(echo "scale=2; $fa_stale / $fa_native" | bc)x)"
	for m in live stale; do
		psql -X -q -At -c "LOAD 'sqlite_shard_fdw'" -c "SET sqlite_shard_fdw.rollup_answer = $m" \
			-c "EXPLAIN (ANALYZE, COSTS OFF) $freport" |
			grep -E 'Rollup Live Tenants|Seq Scan|Foreign Scan|Change Logs Read|Planning|Execution' | sed "s/^/files: $m: /"
	done
	for i in $(seq 1 "$nchanged"); do
		t=$(printf 't%04d' $((i * 89 % FILES + 1)))
		h=$(printf '%s' "$t" | md5sum | cut -c1-2)
		runuser -u postgres -- sqlite3 -cmd ".timeout 5000" "$tmp/files/tenants/$h/$t.db" \
			"UPDATE orders SET amount_cents = amount_cents + 1
			   WHERE order_id = (SELECT min(order_id) FROM orders)"
	done
	fa_live10=$(best5 live "$freport")
	fa_stale10=$(best5 stale "$freport")
	echo "files: daily report, $nchanged files (1 %) changed: live $fa_live10 ms, stale $fa_stale10 ms"
	psql -X -q -At -c "LOAD 'sqlite_shard_fdw'" -c "SET sqlite_shard_fdw.rollup_answer = live" \
		-c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) $freport" | grep -E 'Tenants Read Live|Change Logs Read|Execution'
	fd=$(psql -X -q -At -v ON_ERROR_STOP=1 -c "LOAD 'sqlite_shard_fdw'" \
		-c "SET sqlite_shard_fdw.rollup_answer = live" -c "CREATE TEMP TABLE a AS $freport" \
		-c "SET sqlite_shard_fdw.rollup_answer = off" \
		-c "SELECT count(*) FROM ((TABLE a EXCEPT ALL ($freport)) UNION ALL (($freport) EXCEPT ALL TABLE a)) x")
	echo "files: live answer against the fan-out: $fd rows differ"
fi
