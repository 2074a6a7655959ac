#!/usr/bin/env bash
#
# test/rollupanswer_bench.sh
#	A fleet-wide daily report answered from a rollup
#	(sqlite_shard_fdw.rollup_answer), against the same report over a
#	native table holding the rollup's rows and against the fan-out, on the
#	fleet of test/rollup_bench.sh (8 shards, 1,000 tenants,
#	ROLLUP_BENCH_ROWS orders each: 1,000), with nothing changed and after
#	1 % of the tenants changed.  Each figure is the best of five runs.
#
# Not part of make test (no test asserts a time).  After make install:
#	flock -o /tmp/ssfdw_install.lock bash test/rollupanswer_bench.sh

set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export LC_ALL=C.UTF-8
source test/harness.sh
source test/fixtures/common.sh

if [ -z "${RABENCH_INNER:-}" ]; then
	RABENCH_INNER=1 ssfdw_virtualenv bash "$0"
	exit $?
fi

ROWS=${ROLLUP_BENCH_ROWS:-1000}
tmp=$(mktemp -d -t ssfdw_rabench.XXXXXX)
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

# best SETTINGS SQL: the fastest of five runs of SQL after SETTINGS.
best()
{
	local i
	for i in 1 2 3 4 5; do
		psql -X -q -At -v ON_ERROR_STOP=1 -c "$1" -c '\timing on' -c "$2" |
			sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | tail -n 1
	done | sort -g | head -n 1
}

psql -X -q -v ON_ERROR_STOP=1 <<SQL >/dev/null
SET client_min_messages = warning;
CREATE EXTENSION sqlite_shard_fdw;
CREATE SERVER rbench FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '$d/directory.db', busy_timeout_ms '10000');
CREATE FOREIGN TABLE orders (tenant_id text, order_id bigint, status text,
  amount_cents bigint, created_at timestamp) SERVER rbench;
SQL
rows=$(q "SELECT count(*) FROM orders")
echo "fleet: 8 shards, 1000 tenants, $rows orders"

query="SELECT tenant_id, date_trunc('day', created_at) AS day, status,
  count(*), sum(amount_cents) AS amount, avg(amount_cents) AS avg_amount
  FROM orders GROUP BY 1, 2, 3"
q "SELECT rollup_create('orders_daily', \$\$$query\$\$)" >/dev/null
# a native table holding the rollup's rows, and the report written over it
q "CREATE TABLE native_daily AS TABLE orders_daily; ANALYZE native_daily; ANALYZE orders_daily" >/dev/null
echo "rollup: $(q "SELECT count(*) FROM orders_daily") groups"
# a refresh, as a schedule would run it, more than 2 s after the shards'
# last change: it records the state of their files, and the shards are not
# opened while they stay so (src/control/rollupcapture.c)
sleep 2.5
q "SELECT tenants FROM rollup_refresh('orders_daily')" >/dev/null

report="SELECT date_trunc('day', created_at) AS day, count(*), sum(amount_cents),
  avg(amount_cents) FROM orders GROUP BY 1 ORDER BY 1"
native="SELECT day, sum(count)::bigint, sum(amount)::bigint,
  sum(avg_amount_sum) / sum(avg_amount_count) FROM native_daily GROUP BY 1 ORDER BY 1"
# the library loaded first, so that the setting applies to the session's
# first query through the wrapper
off="LOAD 'sqlite_shard_fdw'; SET sqlite_shard_fdw.rollup_answer = off"
live="LOAD 'sqlite_shard_fdw'; SET sqlite_shard_fdw.rollup_answer = live"
stale="LOAD 'sqlite_shard_fdw'; SET sqlite_shard_fdw.rollup_answer = stale"

r_native=$(best "$off" "$native")
r_fanout=$(best "$off" "$report")
r_live=$(best "$live" "$report")
r_stale=$(best "$stale" "$report")
echo "daily report, nothing changed: native table of the rollup's rows $r_native ms, fan-out $r_fanout ms, rollup_answer = live $r_live ms ($(echo "scale=2; $r_live / $r_native" | bc)x), stale $r_stale ms ($(echo "scale=2; $r_stale / $r_native" | bc)x)"
psql -X -q -At -c "$live" -c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) $report" |
	grep -E 'Tenants Read Live|Change Logs Read|Planning|Execution'
# the same in one session (a connection pool's), each the best of five
one_session()
{
	psql -X -q -At -v ON_ERROR_STOP=1 -c "$1" -c '\timing on' -c "$2" -c "$2" \
		-c "$2" -c "$2" -c "$2" -c "$2" |
		sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | tail -n 5 | sort -g | head -n 1
}
s_native=$(one_session "$off" "$native")
s_live=$(one_session "$live" "$report")
s_stale=$(one_session "$stale" "$report")
echo "daily report, nothing changed, in one session: native $s_native ms, live $s_live ms ($(echo "scale=2; $s_live / $s_native" | bc)x), stale $s_stale ms ($(echo "scale=2; $s_stale / $s_native" | bc)x)"

# 1 % of the tenants change, written by the application
for k in $(seq 0 9); do
	t=$(printf 't%04d' $((k * 97 + 1)))
	s=$(( (k * 97 + 1) % 8 ))
	runuser -u postgres -- sqlite3 -cmd ".timeout 5000" "$d/shards/s$s.db" \
		"UPDATE orders SET amount_cents = amount_cents + 1 WHERE tenant_id = '$t' AND order_id = 1"
done
r_live10=$(best "$live" "$report")
r_stale10=$(best "$stale" "$report")
echo "daily report, 10 tenants (1 %) changed: rollup_answer = live $r_live10 ms, stale $r_stale10 ms"
psql -X -q -At -c "$live" -c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) $report"

# the answers: live equals the fan-out
d1=$(psql -X -q -At -v ON_ERROR_STOP=1 -c "$live" -c "CREATE TEMP TABLE a AS $report" -c "$off" \
	-c "SELECT count(*) FROM ((TABLE a EXCEPT ALL ($report)) UNION ALL (($report) EXCEPT ALL TABLE a)) x")
echo "live answer against the fan-out: $d1 rows differ"
