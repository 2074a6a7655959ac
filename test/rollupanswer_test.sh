#!/usr/bin/env bash
#
# test/rollupanswer_test.sh
#	Aggregate queries answered from a rollup (sqlite_shard_fdw.rollup_answer)
#	against the same queries planned the ordinary way and over a native
#	table holding the same rows, while the fleet changes between refreshes.
#	Each round writes the shards at random, through the wrapper (some
#	transactions rolled back) and as the application does (the sqlite3
#	CLI, behind the wrapper's back), mirrors every committed write in the
#	native table, refreshes the rollup or not, and runs random aggregate
#	queries (grouping by any of the rollup's keys, count, sum, min, max and
#	avg, conditions on keys, HAVING, ORDER BY and LIMIT, and queries the
#	rollup cannot answer) with the setting off, live and stale (bound 0):
#	every answer must equal the native table's.  Within a transaction that
#	wrote the shards, too.
#
# Run by test/run_suites.sh inside a throw-away cluster, with PGDATABASE
# set to a fresh database.  The fleet lives in a new
# /tmp/ssfdw_rollupanswer.XXXXXX folder, removed at the end.  Prints one line
# per check, then "N passed, M failed".

set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export LC_ALL=C.UTF-8
source test/fixtures/common.sh
source test/script_common.sh
script_limit ssfdw_rollupanswer 300
script_tmp ssfdw_rollupanswer

ROUNDS=${ROLLUPANSWER_ROUNDS:-8}
QUERIES=${ROLLUPANSWER_QUERIES:-40}
SEED=${ROLLUPANSWER_SEED:-$RANDOM}
echo "# seed $SEED, $ROUNDS rounds of $QUERIES queries"
RANDOM=$SEED

q()
{
	psql -X -q -At -v ON_ERROR_STOP=1 -c "LOAD 'sqlite_shard_fdw'" -c "$1"
}

d="$tmp/fleet"
mkdir -p "$d/shards"
fx_directory "$d"
for s in s0 s1 s2; do
	fx_sqlite "$d/shards/$s.db" "PRAGMA journal_mode = WAL;
	  CREATE TABLE orders(tenant_id TEXT NOT NULL, order_id INTEGER NOT NULL,
	    status TEXT, amount_cents INTEGER, created_at TEXT,
	    PRIMARY KEY (tenant_id, order_id));"
	fx_add_shard "$d" "$s" "shards/$s.db"
done
for i in $(seq 1 12); do
	t=$(printf 't%02d' "$i")
	s="s$((i % 3))"
	fx_add_tenant "$d" "$t" "$s"
	fx_sqlite "$d/shards/$s.db" "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL
	    SELECT i + 1 FROM n WHERE i < 20)
	  INSERT INTO orders SELECT '$t', i, CASE i % 4 WHEN 0 THEN 'open'
	    WHEN 1 THEN 'paid' WHEN 2 THEN 'void' ELSE NULL END,
	    CASE WHEN i % 7 = 0 THEN NULL ELSE (i * 37 + $i) % 1000 END,
	    '2024-03-0' || (1 + i % 5) || ' ' || printf('%02d', i % 24) || ':00:00' FROM n;"
done
fx_done "$d"

psql -X -q -v ON_ERROR_STOP=1 <<SQL >/dev/null
SET client_min_messages = warning;
CREATE EXTENSION sqlite_shard_fdw;
CREATE SERVER fleet FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '$d/directory.db', busy_timeout_ms '10000');
CREATE FOREIGN TABLE orders (tenant_id text, order_id bigint, status text,
  amount_cents bigint, created_at timestamp) SERVER fleet;
CREATE TABLE native AS SELECT * FROM orders;
SELECT rollup_create('orders_daily', \$\$
  SELECT tenant_id, date_trunc('day', created_at) AS day, status,
         count(*), sum(amount_cents) AS amount, avg(amount_cents) AS avg_amount,
         min(amount_cents), max(amount_cents) AS max_amount,
         max(created_at) AS last_at
    FROM orders GROUP BY 1, 2, 3\$\$);

-- q's rows (q has %s for the table) with the setting mode (stale0: stale,
-- bound 0), sorted as text
CREATE FUNCTION ra_rows(q text, mode text, tbl text) RETURNS text[]
LANGUAGE plpgsql AS \$\$
DECLARE r text[] := '{}'; x record;
BEGIN
  IF mode = 'stale0' THEN
    PERFORM set_config('sqlite_shard_fdw.rollup_max_staleness', '0', true);
    mode := 'stale';
  END IF;
  PERFORM set_config('sqlite_shard_fdw.rollup_answer', mode, true);
  FOR x IN EXECUTE format(q, tbl) LOOP
    r := r || x::text;
  END LOOP;
  PERFORM set_config('sqlite_shard_fdw.rollup_answer', 'off', true);
  RETURN ARRAY(SELECT v FROM unnest(r) v ORDER BY v);
END \$\$;

-- is q answered from the rollup?
CREATE FUNCTION ra_answered(q text) RETURNS boolean
LANGUAGE plpgsql AS \$\$
DECLARE l text; found boolean := false;
BEGIN
  PERFORM set_config('sqlite_shard_fdw.rollup_answer', 'live', true);
  FOR l IN EXECUTE 'EXPLAIN (COSTS OFF) ' || format(q, 'orders') LOOP
    found := found OR l LIKE '%Rollup Live Tenants%';
  END LOOP;
  PERFORM set_config('sqlite_shard_fdw.rollup_answer', 'off', true);
  RETURN found;
END \$\$;

-- a random aggregate query over %s
CREATE FUNCTION ra_query() RETURNS text
LANGUAGE plpgsql AS \$\$
DECLARE
  keys text[] := ARRAY['tenant_id', 'date_trunc(''day'', created_at)', 'status'];
  aggs text[] := ARRAY['count(*)', 'sum(amount_cents)', 'avg(amount_cents)',
                       'min(amount_cents)', 'max(amount_cents)', 'max(created_at)',
                       'count(amount_cents)'];
  odd text[] := ARRAY['count(DISTINCT status)', 'sum(order_id)',
                      'min(created_at)', 'string_agg(status, '','' ORDER BY status)'];
  conds text[] := ARRAY['tenant_id IN (''t01'', ''t05'', ''t09'', ''t12'')',
                        'status = ''paid''', 'status IS NULL',
                        'date_trunc(''day'', created_at) >= ''2024-03-03''',
                        'tenant_id > ''t06''', 'amount_cents > 500'];
  g text[] := '{}'; a text[] := '{}'; w text[] := '{}';
  k text; sql text;
BEGIN
  FOREACH k IN ARRAY keys LOOP
    IF random() < 0.4 THEN g := g || k; END IF;
  END LOOP;
  FOREACH k IN ARRAY aggs LOOP
    IF random() < 0.4 THEN a := a || k; END IF;
  END LOOP;
  IF random() < 0.1 THEN a := a || odd[1 + floor(random() * 4)::int]; END IF;
  IF a = '{}' THEN a := ARRAY['count(*)']; END IF;
  FOREACH k IN ARRAY conds LOOP
    IF random() < 0.15 THEN w := w || k; END IF;
  END LOOP;
  sql := 'SELECT ' || array_to_string(g || a, ', ') || ' FROM %s';
  IF w <> '{}' THEN sql := sql || ' WHERE ' || array_to_string(w, ' AND '); END IF;
  IF g <> '{}' THEN
    sql := sql || ' GROUP BY ' || array_to_string(g, ', ');
    IF random() < 0.2 THEN sql := sql || ' HAVING count(*) > 2'; END IF;
    IF random() < 0.2 THEN
      sql := sql || ' ORDER BY ' || array_to_string(g, ', ') || ' LIMIT 3';
    END IF;
  END IF;
  RETURN sql;
END \$\$;

-- QUERIES random queries, each with the setting off, live and stale
-- (bound 0) against the native table: the differences, and how many
-- were answered from the rollup
CREATE FUNCTION ra_round(seed float8, n int, OUT bad text, OUT answered int)
LANGUAGE plpgsql AS \$\$
DECLARE sql text; m text; native text[]; got text[]; i int;
BEGIN
  PERFORM setseed(seed);
  answered := 0;
  FOR i IN 1 .. n LOOP
    sql := ra_query();
    native := ra_rows(sql, 'off', 'native');
    IF ra_answered(sql) THEN answered := answered + 1; END IF;
    FOREACH m IN ARRAY ARRAY['off', 'live', 'stale0'] LOOP
      got := ra_rows(sql, m, 'orders');
      IF got IS DISTINCT FROM native THEN
        bad := coalesce(bad || E'\n', '') || m || ': ' || sql || E'\n  got    ' ||
               got::text || E'\n  native ' || native::text;
      END IF;
    END LOOP;
  END LOOP;
END \$\$;
SQL

next_id=1000
# write_round: random writes through the wrapper (one transaction of them
# rolled back) and as the application, each committed one mirrored in the
# native table
write_round()
{
	local i t s n kind amount id day
	for i in $(seq 1 $((RANDOM % 6 + 1))); do
		n=$((RANDOM % 12 + 1))
		t=$(printf 't%02d' "$n")
		s="s$((n % 3))"
		amount=$((RANDOM % 1000))
		id=$((RANDOM % 20 + 1))
		day=$((RANDOM % 5 + 1))
		next_id=$((next_id + 1))
		kind=$((RANDOM % 6))
		case $kind in
			0) q "INSERT INTO orders VALUES ('$t', $next_id, 'open', $amount, '2024-03-0$day 10:00:00')" >/dev/null
			   q "INSERT INTO native VALUES ('$t', $next_id, 'open', $amount, '2024-03-0$day 10:00:00')" >/dev/null ;;
			1) q "UPDATE orders SET amount_cents = $amount WHERE tenant_id = '$t' AND order_id = $id" >/dev/null
			   q "UPDATE native SET amount_cents = $amount WHERE tenant_id = '$t' AND order_id = $id" >/dev/null ;;
			2) psql -X -q -At -v ON_ERROR_STOP=1 -c "LOAD 'sqlite_shard_fdw'" \
				-c "BEGIN" -c "DELETE FROM orders WHERE tenant_id = '$t'" \
				-c "INSERT INTO orders VALUES ('$t', $next_id, 'paid', 1, '2024-03-01 00:00:00')" \
				-c "ROLLBACK" >/dev/null ;;
			3) runuser -u postgres -- sqlite3 -cmd ".timeout 5000" "$d/shards/$s.db" \
				"INSERT INTO orders VALUES ('$t', $next_id, 'void', $amount, '2024-03-0$day 11:00:00')"
			   q "INSERT INTO native VALUES ('$t', $next_id, 'void', $amount, '2024-03-0$day 11:00:00')" >/dev/null ;;
			4) runuser -u postgres -- sqlite3 -cmd ".timeout 5000" "$d/shards/$s.db" \
				"UPDATE orders SET status = NULL, amount_cents = $amount WHERE tenant_id = '$t' AND order_id % 5 = $((amount % 5))"
			   q "UPDATE native SET status = NULL, amount_cents = $amount WHERE tenant_id = '$t' AND order_id % 5 = $((amount % 5))" >/dev/null ;;
			5) runuser -u postgres -- sqlite3 -cmd ".timeout 5000" "$d/shards/$s.db" \
				"DELETE FROM orders WHERE tenant_id = '$t' AND order_id % 6 = $((amount % 6))"
			   q "DELETE FROM native WHERE tenant_id = '$t' AND order_id % 6 = $((amount % 6))" >/dev/null ;;
		esac
	done
}

total_answered=0
for round in $(seq 1 "$ROUNDS"); do
	write_round
	what="not refreshed"
	if [ $((RANDOM % 2)) = 0 ]; then
		q "SELECT tenants FROM rollup_refresh('orders_daily')" >/dev/null
		what="refreshed"
	fi
	pending=$(q "SELECT count(*) FROM rollup_pending('orders_daily')")
	out=$(q "SELECT coalesce(bad, ''), answered FROM ra_round($RANDOM / 32768.0, $QUERIES)" |
		tr '|' '\n')
	answered=$(printf '%s\n' "$out" | tail -n 1)
	bad=$(printf '%s\n' "$out" | sed '$d')
	total_answered=$((total_answered + answered))
	if [ -z "$bad" ]; then
		result ok "round $round ($what, $pending tenants pending): $QUERIES queries off, live and stale equal the native table ($answered from the rollup)"
	else
		result failed "round $round ($what, $pending tenants pending)" "$bad"
	fi
done

# within a transaction that wrote the shards: its own writes are seen
out=$(psql -X -q -At -v ON_ERROR_STOP=1 -c "LOAD 'sqlite_shard_fdw'" -c "BEGIN" \
	-c "INSERT INTO orders VALUES ('t03', 99999, 'open', 4242, '2024-03-04 00:00:00')" \
	-c "INSERT INTO native VALUES ('t03', 99999, 'open', 4242, '2024-03-04 00:00:00')" \
	-c "SELECT coalesce(bad, 'same') FROM ra_round(0.5, 10)" -c "ROLLBACK")
if [ "$out" = same ]; then
	result ok "within a transaction that wrote the shards: 10 queries equal the native table"
else
	result failed "within a transaction that wrote the shards" "$out"
fi

if [ "$total_answered" -gt 0 ]; then
	result ok "$total_answered queries were answered from the rollup"
else
	result failed "no query was answered from the rollup"
fi

script_end
