--
-- Parallel fan-out: shard queries on worker
-- threads give the same answers at every degree of parallelism, with few
-- open handles, and with PostgreSQL's own parallel query on or off;
-- statement_timeout stops every shard query promptly; an error on one
-- shard is raised with its name; a missing shard is skipped with a
-- WARNING when the server says so; no worker thread outlives its
-- statement.  See test/fixtures/fanout.sh for the fleets.
--
\! bash test/fixtures/fanout.sh
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
RESET client_min_messages;
CREATE SERVER fanout_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/fanout/directory.db');
CREATE FOREIGN TABLE orders (
  tenant_id text, order_id bigint, status text, amount bigint, note text
) SERVER fanout_srv;
CREATE FOREIGN TABLE badval (tenant_id text, id bigint, v bigint)
  SERVER fanout_srv;
CREATE FOREIGN TABLE nocol (tenant_id text, id bigint, extra text)
  SERVER fanout_srv;
CREATE FOREIGN TABLE many (tenant_id text, k bigint, v bigint)
  SERVER fanout_srv;
CREATE SERVER fanout_slow FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/fanout/slow/directory.db');
CREATE FOREIGN TABLE slow (tenant_id text, n bigint) SERVER fanout_slow;
CREATE FOREIGN TABLE lag (tenant_id text, n bigint) SERVER fanout_slow;
CREATE SERVER fanout_skip FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/fanout/skip/directory.db',
           on_missing_shard 'skip', allow_outside_paths 'true');
CREATE FOREIGN TABLE orders_skip (
  tenant_id text, order_id bigint, status text, amount bigint, note text
) SERVER fanout_skip OPTIONS (table 'orders');

-- The same 120,000 rows in a native table, from the fixture's formulas.
CREATE TABLE orders_native AS
SELECT 't' || k || substr('abcd', i % 4 + 1, 1) AS tenant_id,
       i::bigint AS order_id,
       (ARRAY['open', 'paid', 'void'])[i % 3 + 1] AS status,
       ((i * 7919 + k * 104729) % 100003 - 50000)::bigint AS amount,
       'n' || k || '-' || i AS note
FROM generate_series(1, 6) k, generate_series(1, 20000) i;
CREATE TABLE many_native AS
SELECT 't1a' AS tenant_id, k::bigint AS k, (k % 7)::bigint AS v
FROM generate_series(1, 60000) k
UNION ALL
SELECT 't2a', k, k % 7 FROM generate_series(59001, 60000) k;

-- regress_runs(query): run query (where {t} stands for the table) over
-- the native table, then over the foreign table at fan-out parallelism
-- 1, 2 and 4; one row per run with the result's rows as text, and
-- whether they equal the native table's.
CREATE FUNCTION regress_runs(query text, foreign_table text DEFAULT 'orders',
                             native_table text DEFAULT 'orders_native')
RETURNS TABLE (run text, same_as_native boolean, result text)
LANGUAGE plpgsql AS $$
DECLARE
  native text;
  p int;
BEGIN
  EXECUTE format('SELECT string_agg(r::text, '' '') FROM (%s) r',
                 replace(query, '{t}', native_table)) INTO native;
  run := 'native';
  same_as_native := true;
  result := native;
  RETURN NEXT;
  FOREACH p IN ARRAY ARRAY[1, 2, 4] LOOP
    PERFORM set_config('sqlite_shard_fdw.fanout_parallelism', p::text, true);
    EXECUTE format('SELECT string_agg(r::text, '' '') FROM (%s) r',
                   replace(query, '{t}', foreign_table)) INTO result;
    run := 'parallelism ' || p;
    same_as_native := result IS NOT DISTINCT FROM native;
    RETURN NEXT;
  END LOOP;
END
$$;

-- regress_same(query): whether query (with {t}) returns the same multiset
-- of rows from the foreign and the native table, at parallelism 1, 2, 4.
CREATE FUNCTION regress_same(query text, foreign_table text DEFAULT 'orders',
                             native_table text DEFAULT 'orders_native')
RETURNS TABLE (run text, rows bigint, same_as_native boolean)
LANGUAGE plpgsql AS $$
DECLARE
  p int;
  f text;
  n text;
BEGIN
  n := replace(query, '{t}', native_table);
  FOREACH p IN ARRAY ARRAY[1, 2, 4] LOOP
    PERFORM set_config('sqlite_shard_fdw.fanout_parallelism', p::text, true);
    f := replace(query, '{t}', foreign_table);
    run := 'parallelism ' || p;
    EXECUTE format('SELECT count(*) FROM (%s) f', f) INTO rows;
    EXECUTE format($q$
      SELECT NOT EXISTS (
        (SELECT * FROM (%1$s) f EXCEPT ALL SELECT * FROM (%2$s) n)
        UNION ALL
        (SELECT * FROM (%2$s) n EXCEPT ALL SELECT * FROM (%1$s) f))$q$,
      f, n) INTO same_as_native;
    RETURN NEXT;
  END LOOP;
END
$$;

-- regress_cancel(query): run query under the statement_timeout already
-- set (or while another session cancels it); the SQLSTATE of its error,
-- and whether it failed within 5 s (the time itself varies, so it is not
-- shown).
CREATE FUNCTION regress_cancel(query text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  t0 timestamptz := clock_timestamp();
BEGIN
  EXECUTE query;
  RETURN 'not canceled';
EXCEPTION WHEN query_canceled THEN
  RETURN SQLSTATE || ': ' || SQLERRM || ', within 5 s: ' ||
         (clock_timestamp() - t0 < interval '5 s');
END
$$;

-- The backend's threads are counted in /proc: 1 means that no fan-out
-- worker outlived the statement that started it.
SELECT pg_backend_pid() AS regress_pid \gset
\setenv REGRESS_PID :regress_pid

-- ===================================================================
-- Every row through the rows path (hashtext is not pushed): 40 batches
-- of 512 rows from each of 6 shards, the same at every parallelism
-- ===================================================================
EXPLAIN (VERBOSE, COSTS OFF)
SELECT count(*), sum(amount), sum(hashtext(o::text)) FROM orders o;
SELECT * FROM regress_runs(
  'SELECT count(*), sum(amount), sum(hashtext(o::text)) FROM {t} o');
SELECT * FROM regress_runs(
  'SELECT count(*), sum(amount), sum(hashtext(tenant_id || order_id || note))
   FROM {t} WHERE status = ''void''');
-- every row, compared with the native table as multisets
SELECT * FROM regress_same('SELECT * FROM {t}');
SELECT * FROM regress_same('SELECT * FROM {t} WHERE amount < 0');
\! ls /proc/$REGRESS_PID/task | wc -l

-- ===================================================================
-- ORDER BY ... LIMIT samples: PostgreSQL sorts what the shards stream
-- ===================================================================
SELECT * FROM regress_runs(
  'SELECT * FROM {t} ORDER BY amount DESC, note LIMIT 3');
SELECT * FROM regress_runs(
  'SELECT note, amount FROM {t} ORDER BY note OFFSET 100000 LIMIT 2');
SELECT * FROM regress_runs(
  'SELECT tenant_id, order_id FROM {t} WHERE amount BETWEEN -3 AND 3
   ORDER BY tenant_id, order_id');
-- A LIMIT without ORDER BY stops the scan early: the workers still
-- running are stopped with it.
SET sqlite_shard_fdw.fanout_parallelism = 4;
SELECT count(*) FROM (SELECT * FROM orders LIMIT 10) s;
\! ls /proc/$REGRESS_PID/task | wc -l
RESET sqlite_shard_fdw.fanout_parallelism;

-- ===================================================================
-- Aggregates pushed to the shards, merged, at every parallelism
-- ===================================================================
SELECT * FROM regress_runs(
  'SELECT count(*), sum(amount), min(amount), max(amount), count(DISTINCT status)
   FROM {t}');
SELECT * FROM regress_runs(
  'SELECT status, count(*), sum(amount), avg(amount) FROM {t}
   GROUP BY status ORDER BY status');
SELECT * FROM regress_runs(
  'SELECT tenant_id, count(*), sum(amount) FROM {t}
   GROUP BY tenant_id ORDER BY sum(amount) DESC LIMIT 3');

-- More groups than the reading threads keep (60,000 on f1): SQLite groups
-- instead, and groups of f1 and f2 still merge
EXPLAIN (VERBOSE, COSTS OFF)
SELECT k, count(*), sum(v) FROM many GROUP BY k;
SELECT * FROM regress_runs(
  'SELECT count(*), sum(c), sum(s), max(k), min(c), max(c)
   FROM (SELECT k, count(*) AS c, sum(v) AS s FROM {t} GROUP BY k) g',
  'many', 'many_native');
SELECT * FROM regress_runs(
  'SELECT k, count(*), sum(v) FROM {t} GROUP BY k ORDER BY count(*) DESC, k LIMIT 3',
  'many', 'many_native');
SELECT * FROM regress_runs(
  'SELECT v, count(*), count(DISTINCT k) FROM {t} GROUP BY v ORDER BY v',
  'many', 'many_native');
SET sqlite_shard_fdw.thread_aggregation = off;
SELECT * FROM regress_runs(
  'SELECT count(*), sum(c), sum(s), max(k), min(c), max(c)
   FROM (SELECT k, count(*) AS c, sum(v) AS s FROM {t} GROUP BY k) g',
  'many', 'many_native');
RESET sqlite_shard_fdw.thread_aggregation;

-- ===================================================================
-- PostgreSQL's own parallel query on and off: a join with a local table
-- ===================================================================
CREATE TABLE regress_tenants AS
SELECT 't' || k || c AS tenant_id, 'region-' || (k % 3) AS region
FROM generate_series(1, 6) k, unnest(ARRAY['a', 'b', 'c', 'd']) c;
CREATE TABLE regress_notes AS
SELECT 'n' || k || '-' || i AS note, i % 7 AS bucket
FROM generate_series(1, 6) k, generate_series(1, 20000, 3) i;
ANALYZE regress_tenants, regress_notes;
SET sqlite_shard_fdw.fanout_parallelism = 2;
SET max_parallel_workers_per_gather = 0;
SELECT r.region, count(*), sum(o.amount)
  FROM orders o JOIN regress_tenants r USING (tenant_id)
  GROUP BY r.region ORDER BY r.region;
SELECT n.bucket, count(*), sum(o.amount)
  FROM orders o JOIN regress_notes n USING (note)
  GROUP BY n.bucket ORDER BY n.bucket;
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
-- the local table is read by parallel workers; the foreign scan, in the
-- leader
EXPLAIN (COSTS OFF)
SELECT n.bucket, count(*), sum(o.amount)
  FROM orders o JOIN regress_notes n USING (note)
  GROUP BY n.bucket ORDER BY n.bucket;
SELECT r.region, count(*), sum(o.amount)
  FROM orders o JOIN regress_tenants r USING (tenant_id)
  GROUP BY r.region ORDER BY r.region;
SELECT n.bucket, count(*), sum(o.amount)
  FROM orders o JOIN regress_notes n USING (note)
  GROUP BY n.bucket ORDER BY n.bucket;
-- the native table's answer
SELECT n.bucket, count(*), sum(o.amount)
  FROM orders_native o JOIN regress_notes n USING (note)
  GROUP BY n.bucket ORDER BY n.bucket;
SELECT * FROM regress_same(
  'SELECT o.*, r.region FROM {t} o JOIN regress_tenants r USING (tenant_id)
   WHERE o.amount > 40000');
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET sqlite_shard_fdw.fanout_parallelism;
\! ls /proc/$REGRESS_PID/task | wc -l

-- ===================================================================
-- EXPLAIN ANALYZE: rows per shard; no time with TIMING OFF
-- ===================================================================
SET sqlite_shard_fdw.fanout_parallelism = 4;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT * FROM orders WHERE amount > 49000;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT * FROM orders;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT count(*) FROM orders WHERE tenant_id IN ('t1a', 't3b', 't3c');
-- the native table's rows per shard (tenant tKx lives on shard fK)
SELECT 'f' || substr(tenant_id, 2, 1) AS shard, count(*) FROM orders_native
  WHERE amount > 49000 GROUP BY 1 ORDER BY 1;

-- A scan that a LIMIT stops early: the rows the backend took from each
-- shard, the shards cut short "(stopped)", those never begun named.
SET sqlite_shard_fdw.fanout_parallelism = 1;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT * FROM orders LIMIT 100;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT * FROM orders LIMIT 20100;
-- In parallel which shards run depends on the threads, so check what must
-- hold: every shard named once, the rows taken add up to the node's rows,
-- and, where the scan's rows came from each shard's first batch (a small
-- LIMIT; any query read one shard at a time), no shard's time exceeds the
-- node's (the rows a worker read ahead and never handed over cost the
-- query nothing it waited for).  Over many batches in parallel, threads
-- also read while the plan above the scan works, which the node's time
-- does not count.
\i test/regress_scan_node.sql
CREATE FUNCTION regress_limit_explain(q text) RETURNS TABLE (check_name text, ok boolean)
LANGUAGE plpgsql AS $$
DECLARE
  node json := regress_scan_node(q);
  named text[] := '{}';
  rows_sum bigint := 0;
  slowest numeric;
  item text;
BEGIN
  FOREACH item IN ARRAY string_to_array(node ->> 'Shard Rows', ', ') LOOP
    named := named || split_part(item, '=', 1);
    rows_sum := rows_sum + split_part(split_part(item, '=', 2), ' ', 1)::bigint;
  END LOOP;
  IF node ->> 'Shards Not Started' IS NOT NULL THEN
    named := named || string_to_array(node ->> 'Shards Not Started', ', ');
  END IF;
  slowest := substring(node ->> 'Slowest Shard' FROM '\(([0-9.]+) ms\)')::numeric;
  check_name := 'every shard named once';
  ok := (SELECT array_agg(x ORDER BY x) FROM unnest(named) x) = '{f1,f2,f3,f4,f5,f6}';
  RETURN NEXT;
  check_name := 'shard rows add up to the node''s';
  ok := rows_sum = (node ->> 'Actual Rows')::bigint;
  RETURN NEXT;
  IF current_setting('sqlite_shard_fdw.fanout_parallelism') = '1' OR
     (node ->> 'Actual Rows')::bigint <= 512 THEN
    check_name := 'slowest shard within the node''s time';
    ok := slowest IS NOT NULL AND slowest <= (node ->> 'Actual Total Time')::numeric;
    RETURN NEXT;
  END IF;
END $$;
SELECT * FROM regress_limit_explain('SELECT * FROM orders LIMIT 30000');
SET sqlite_shard_fdw.fanout_parallelism = 2;
SELECT * FROM regress_limit_explain('SELECT * FROM orders LIMIT 100');
SELECT * FROM regress_limit_explain('SELECT * FROM orders LIMIT 30000');
SELECT * FROM regress_limit_explain('SELECT * FROM orders WHERE amount > 49000 LIMIT 10');
SELECT * FROM regress_limit_explain('SELECT * FROM orders');
DROP FUNCTION regress_limit_explain(text), regress_scan_node(text);
RESET sqlite_shard_fdw.fanout_parallelism;

-- ===================================================================
-- A sorted fan-out of a few rows a shard whose first shard (c1) took long
-- enough is shared: the backend reads the next (c2) while a worker reads
-- the last (c4, then c3); the worker is busy sorting c4's 300,000 rows, so
-- the backend takes c3 back and reads it too (c4 as well, when the worker
-- had not started it).  The answer is c3's first 350 rows.
-- ===================================================================
\i test/regress_scan_node.sql
SET sqlite_shard_fdw.fanout_parallelism = 2;
SET sqlite_shard_fdw.quick_shard_ms = 1000;
SELECT count(*), sum(n), min(n), max(n)
  FROM (SELECT n FROM lag ORDER BY n LIMIT 350) s;
SELECT (regress_scan_node('SELECT n FROM lag ORDER BY n LIMIT 350')
        ->> 'Shards Read In Backend')::int >= 3 AS took_back_c3;
-- a slow first shard sends the rest to the threads, those queued already
-- and those not
SET sqlite_shard_fdw.quick_shard_ms = 0;
SELECT count(*), sum(n), min(n), max(n)
  FROM (SELECT n FROM lag ORDER BY n LIMIT 350) s;
RESET sqlite_shard_fdw.quick_shard_ms;
RESET sqlite_shard_fdw.fanout_parallelism;
DROP FUNCTION regress_scan_node(text);

-- ===================================================================
-- statement_timeout stops a fan-out whose shard never ends quickly
-- (shard c4 of fanout_slow, a view counting to 5 * 10^7), and the
-- session goes on
-- ===================================================================
-- The quick shards alone.
SELECT tenant_id, count(*), sum(n) FROM slow
  WHERE tenant_id IN ('c1', 'c2', 'c3') GROUP BY tenant_id ORDER BY 1;
SET sqlite_shard_fdw.fanout_parallelism = 2;
SET statement_timeout = '300ms';
-- count(*) runs inside the slow shard, one long step of SQLite
SELECT count(*) FROM slow;
-- a condition no row meets: SQLite searches and returns nothing
SELECT * FROM slow WHERE n < 0;
-- rows stream into a sort that never gets them all
SELECT n FROM slow ORDER BY n DESC LIMIT 1;
-- promptly (the timings themselves vary)
SELECT regress_cancel('SELECT count(*) FROM slow');
SELECT regress_cancel('SELECT * FROM slow WHERE n < 0');
SELECT regress_cancel('SELECT n FROM slow ORDER BY n DESC LIMIT 1');
RESET statement_timeout;
\! ls /proc/$REGRESS_PID/task | wc -l
-- pg_cancel_backend from another session (retried until the statement
-- runs, so that the cancel cannot arrive before it)
\! bash test/fixtures/fanout.sh cancel $REGRESS_PID &
SELECT regress_cancel('SELECT count(*) FROM slow');
\! bash test/fixtures/fanout.sh cancel $REGRESS_PID &
SELECT regress_cancel('SELECT n FROM slow ORDER BY n DESC LIMIT 1');
\! ls /proc/$REGRESS_PID/task | wc -l
-- the same session works
SELECT tenant_id, count(*), sum(n) FROM slow
  WHERE tenant_id IN ('c1', 'c2', 'c3') GROUP BY tenant_id ORDER BY 1;
SELECT count(*), sum(amount), sum(hashtext(o::text)) FROM orders o;

-- Serially (parallelism 1), the backend itself steps the statements.
SET sqlite_shard_fdw.fanout_parallelism = 1;
SET statement_timeout = '300ms';
SELECT n FROM slow ORDER BY n DESC LIMIT 1;
SELECT regress_cancel('SELECT n FROM slow ORDER BY n DESC LIMIT 1');
-- count(*) inside the slow shard: one long step of SQLite, which the
-- backend must interrupt
SELECT regress_cancel('SELECT count(*) FROM slow');
-- routed to the slow shard alone (one shard is read serially at any
-- parallelism)
RESET sqlite_shard_fdw.fanout_parallelism;
SELECT regress_cancel('SELECT * FROM slow WHERE tenant_id = ''slowpoke'' AND n < 0');
RESET statement_timeout;
SELECT tenant_id, count(*), sum(n) FROM slow
  WHERE tenant_id IN ('c1', 'c2', 'c3') GROUP BY tenant_id ORDER BY 1;
SELECT count(*), sum(amount), sum(hashtext(o::text)) FROM orders o;
\! ls /proc/$REGRESS_PID/task | wc -l

-- ===================================================================
-- An error on one shard in the middle of a parallel fan-out is raised
-- with that shard's name; the other shards are stopped, and the next
-- query works
-- ===================================================================
SET sqlite_shard_fdw.fanout_parallelism = 4;
-- text in an INTEGER column (f4, rowid 15000), after many good rows
SELECT sum(v + 0) FROM badval;
SELECT id, v FROM badval ORDER BY v DESC LIMIT 1;
\! ls /proc/$REGRESS_PID/task | wc -l
SELECT count(*), sum(v) FROM badval WHERE id <> 15000;
-- the same value under aggregate pushdown
SELECT sum(v) FROM badval;
SELECT count(*), sum(v) FROM badval WHERE id <> 15000;
-- a shard (f5) whose table lacks a column
SELECT tenant_id, id, extra FROM nocol ORDER BY id LIMIT 1;
SELECT count(extra) FROM nocol;
SELECT count(*) FROM nocol WHERE extra = 'x7';
\! ls /proc/$REGRESS_PID/task | wc -l
-- what does not read the column works
SELECT count(*), sum(id) FROM nocol;
SELECT count(*), sum(amount), sum(hashtext(o::text)) FROM orders o;
RESET sqlite_shard_fdw.fanout_parallelism;

-- ===================================================================
-- on_missing_shard 'skip' in parallel mode: a WARNING names each
-- missing shard (f7, f8), and the other shards' rows are returned
-- ===================================================================
SET sqlite_shard_fdw.fanout_parallelism = 4;
SELECT count(*), sum(amount), sum(hashtext(o::text)) FROM orders_skip o;
SELECT status, count(*), sum(amount) FROM orders_skip
  GROUP BY status ORDER BY status;
SELECT * FROM orders_skip ORDER BY amount DESC, note LIMIT 2;
-- routed to a missing shard and an existing one
SELECT tenant_id, count(*) FROM orders_skip WHERE tenant_id IN ('t7a', 't1a')
  GROUP BY tenant_id;
-- routed to existing shards only: no WARNING
SELECT tenant_id, count(*) FROM orders_skip WHERE tenant_id IN ('t2a', 't1a')
  GROUP BY tenant_id ORDER BY 1;
RESET sqlite_shard_fdw.fanout_parallelism;
\! ls /proc/$REGRESS_PID/task | wc -l

-- ===================================================================
-- A fan-out stopped early (LIMIT) while another scan of the statement
-- reads the same shards: stopping one scan must not interrupt the other's
-- statements on the shared shard handles.
-- ===================================================================
SELECT count(*) AS rows, count(x.order_id) AS matched
  FROM (SELECT * FROM orders LIMIT 5) a
  CROSS JOIN LATERAL (SELECT b.order_id FROM orders b
                      WHERE b.status = a.status LIMIT 1) x;
SELECT count(*) AS rows
  FROM (SELECT * FROM orders LIMIT 3) a
  CROSS JOIN LATERAL (SELECT b.order_id FROM orders b
                      WHERE b.amount > a.amount LIMIT 1) x;

-- ===================================================================
-- Clean up
-- ===================================================================
\setenv REGRESS_PID
DROP FUNCTION regress_runs(text, text, text);
DROP FUNCTION regress_same(text, text, text);
DROP FUNCTION regress_cancel(text);
DROP TABLE orders_native, many_native, regress_tenants, regress_notes;
DROP SERVER fanout_srv CASCADE;
DROP SERVER fanout_slow CASCADE;
DROP SERVER fanout_skip CASCADE;

-- ===================================================================
-- sqlite_shard_fdw.max_open_shards = 2 with parallelism 4 over 6 shards:
-- a query still reads every shard, with the same answer, and a shard's
-- handle, closed as soon as the shard is done, is not touched again.
-- This runs last, in a session of its own that test/fixtures/fanout.sh
-- starts (and that waits for the server to accept connections again
-- afterwards), with objects of its own: a wrapper that crashes here
-- fails this suite alone, not the suites after it.
-- ===================================================================
SELECT current_database() AS regress_db \gset
\setenv REGRESS_DB :regress_db
\! bash test/fixtures/fanout.sh few-handles "$REGRESS_DB"
\setenv REGRESS_DB
