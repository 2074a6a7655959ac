--
-- The aggregate merge past hash_mem (exec/merge.c, exec/mergespill.c): at
-- a work_mem of 64kB the groups of a pushed grouping do not fit, so the
-- merge keeps what fits and sets the rows of the other groups aside on
-- disk, then merges them partition by partition.  Every aggregate the
-- merge knows is compared with the same query over native tables of the
-- same rows.  See test/fixtures/mergespill.sh for the rows.
--
\! bash test/fixtures/mergespill.sh
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
RESET client_min_messages;
CREATE SERVER spill_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/mergespill/directory.db');
CREATE FOREIGN TABLE facts (tenant_id text, id int, k int, g text, a int,
  big bigint, price float8, ok boolean, d date, ts timestamp, name text,
  cust int) SERVER spill_srv;
CREATE FOREIGN TABLE customers (tenant_id text, customer_id int, plan text)
  SERVER spill_srv;
CREATE FOREIGN TABLE flags (tenant_id text, k int, ok boolean)
  SERVER spill_srv;
CREATE TABLE facts_native (tenant_id text, id int, k int, g text, a int,
  big bigint, price float8, ok boolean, d date, ts timestamp, name text,
  cust int);
CREATE TABLE customers_native (tenant_id text, customer_id int, plan text);
\copy facts_native FROM '/tmp/ssfdw_regress/mergespill/facts.csv' WITH (FORMAT csv)
\copy customers_native FROM '/tmp/ssfdw_regress/mergespill/customers.csv' WITH (FORMAT csv)
ANALYZE facts, customers, facts_native, customers_native;

-- spill_same(q [, ordered]): q over the foreign tables ({f}, {c}) against q
-- over the native ones, at the session's work_mem, with eager aggregation
-- off, on and always; rows compared as text, sorted unless ordered.  Then
-- how many rows the answer has.
CREATE FUNCTION spill_same(q text, ordered boolean DEFAULT false)
RETURNS TABLE (mode text, same boolean, nrows int)
LANGUAGE plpgsql AS $$
DECLARE
  want text[];
  got text[];
  ord text := CASE WHEN ordered THEN '' ELSE 'ORDER BY r::text' END;
  m text;
BEGIN
  EXECUTE format('SELECT coalesce(array_agg(r::text %s), ''{}'') FROM (%s) r', ord,
                 replace(replace(q, '{f}', 'facts_native'), '{c}', 'customers_native'))
    INTO want;
  FOREACH m IN ARRAY ARRAY['off', 'on', 'always'] LOOP
    PERFORM set_config('sqlite_shard_fdw.eager_aggregate', m, true);
    EXECUTE format('SELECT coalesce(array_agg(r::text %s), ''{}'') FROM (%s) r', ord,
                   replace(replace(q, '{f}', 'facts'), '{c}', 'customers'))
      INTO got;
    mode := m;
    same := got IS NOT DISTINCT FROM want;
    nrows := cardinality(got);
    IF NOT same THEN
      RAISE NOTICE 'foreign (%): %', m,
        array_to_string(got[1:5], ' ', '<NULL>');
      RAISE NOTICE 'native: %', array_to_string(want[1:5], ' ', '<NULL>');
    END IF;
    RETURN NEXT;
  END LOOP;
  PERFORM set_config('sqlite_shard_fdw.eager_aggregate', 'on', true);
END
$$;

-- spill_explain(q): EXPLAIN ANALYZE of q, its plan's nodes and the merge's
-- line, numbers masked.
CREATE FUNCTION spill_explain(q text) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
  l text;
BEGIN
  FOR l IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q
  LOOP
    IF l ~ '(->|^ *[A-Z][a-z]+ [A-Z][a-z]+ *(on|\(|$)|Pushdown|Merge Batches)' THEN
      RETURN NEXT regexp_replace(l, '[0-9]+', 'N', 'g');
    END IF;
  END LOOP;
END
$$;

SET work_mem = '64kB';

-- ===================================================================
-- The plan: a grouping of 3,001 groups is still pushed at 64kB
-- ===================================================================
EXPLAIN (VERBOSE, COSTS OFF)
SELECT k, count(*), sum(a) FROM facts GROUP BY k;
SELECT * FROM spill_explain('SELECT k, count(*), sum(a) FROM facts GROUP BY k');
-- with room for its groups, nothing is set aside
SET work_mem = '64MB';
SELECT * FROM spill_explain('SELECT k, count(*), sum(a) FROM facts GROUP BY k');
SET work_mem = '64kB';

-- ===================================================================
-- Every aggregate the merge combines, groups spread over shards
-- ===================================================================
SELECT * FROM spill_same($$
SELECT k, count(*), count(a), sum(a), sum(big), avg(a), avg(big),
       sum(price), avg(price), min(a), max(a), min(big), max(big),
       min(price), max(price)
FROM {f} GROUP BY k$$);
SELECT * FROM spill_same($$
SELECT k, min(d), max(d), min(ts), max(ts), count(d), count(ts),
       bool_and(ok), bool_or(ok), count(name)
FROM {f} GROUP BY k$$);
SELECT * FROM spill_same($$
SELECT k, var_pop(a), var_samp(a), stddev_pop(a), stddev_samp(a),
       variance(big), stddev(big)
FROM {f} GROUP BY k$$);
-- FILTER, a numeric CASE, text minima and maxima in the C collation
SELECT * FROM spill_same($$
SELECT k, count(*) FILTER (WHERE a > 0), sum(a) FILTER (WHERE price < 50),
       sum(CASE WHEN a > 100 THEN 1 ELSE 0.0 END),
       min(name COLLATE "C"), max(g COLLATE "C")
FROM {f} GROUP BY k$$);
-- NULL keys, text keys, two keys
SELECT * FROM spill_same($$
SELECT g, count(*), sum(big), min(name COLLATE "C") FROM {f} GROUP BY g$$);
SELECT * FROM spill_same($$
SELECT k % 7, g, count(*), avg(a) FROM {f} GROUP BY 1, 2$$);
SELECT * FROM spill_same($$
SELECT d, ok, count(*), max(price) FROM {f} GROUP BY d, ok$$);
-- grouped by SQLite's GROUP BY rather than the reading threads
SET sqlite_shard_fdw.thread_aggregation = off;
SELECT * FROM spill_same($$
SELECT k, count(*), sum(big), avg(price), min(ts), max(name COLLATE "C"),
       bool_or(ok), var_samp(a), sum(a) FILTER (WHERE ok)
FROM {f} GROUP BY k$$);
SELECT * FROM spill_explain('SELECT k, count(*), sum(big) FROM facts GROUP BY k');
RESET sqlite_shard_fdw.thread_aggregation;
-- whole groups per shard (grouped by the tenant)
SELECT * FROM spill_same($$
SELECT tenant_id, k, count(*), sum(a) FROM {f} GROUP BY tenant_id, k$$);
-- SELECT DISTINCT is a grouping too
SELECT * FROM spill_same($$SELECT DISTINCT k, g FROM {f}$$);

-- ===================================================================
-- HAVING, ORDER BY and LIMIT over the merged groups
-- ===================================================================
SELECT * FROM spill_same($$
SELECT k, count(*), sum(a) FROM {f} GROUP BY k HAVING count(*) > 4
ORDER BY k$$, true);
SELECT * FROM spill_same($$
SELECT g, count(*) FROM {f} GROUP BY g ORDER BY g COLLATE "C" DESC NULLS LAST$$,
  true);
SELECT * FROM spill_same($$
SELECT g, count(*) FROM {f} GROUP BY g ORDER BY g, 2$$, true);
SELECT * FROM spill_same($$
SELECT k, sum(big), count(*) FROM {f} GROUP BY k
ORDER BY sum(big) DESC, k LIMIT 25 OFFSET 10$$, true);
SELECT * FROM spill_same($$
SELECT k, sum(a) FROM {f} GROUP BY k HAVING sum(a) IS NULL OR sum(a) < 0
ORDER BY 2, 1 LIMIT 40$$, true);
EXPLAIN (VERBOSE, COSTS OFF)
SELECT k, sum(big), count(*) FROM facts GROUP BY k
ORDER BY sum(big) DESC, k LIMIT 25 OFFSET 10;
-- whole groups sorted and limited by the merge: the first 3,000 of each
-- shard do not fit either
SELECT * FROM spill_same($$
SELECT tenant_id, k, count(*), sum(a) FROM {f} GROUP BY tenant_id, k
ORDER BY 4 DESC NULLS LAST, tenant_id COLLATE "C", 2 LIMIT 3000 OFFSET 5$$, true);
EXPLAIN (COSTS OFF)
SELECT tenant_id, k, count(*), sum(a) FROM facts GROUP BY tenant_id, k
ORDER BY 4 DESC NULLS LAST, tenant_id COLLATE "C", 2 LIMIT 3000 OFFSET 5;
SELECT * FROM spill_explain($$
SELECT tenant_id, k, count(*), sum(a) FROM facts GROUP BY tenant_id, k
ORDER BY 4 DESC NULLS LAST, tenant_id COLLATE "C", 2 LIMIT 3000 OFFSET 5$$);

-- ===================================================================
-- Eager aggregation over a join PostgreSQL runs: 1,000 customers' groups
-- ===================================================================
EXPLAIN (COSTS OFF)
SELECT c.plan, count(*), sum(f.a) FROM facts f
LEFT JOIN customers c ON f.cust = c.customer_id
GROUP BY c.plan ORDER BY c.plan;
SELECT * FROM spill_same($$
SELECT c.plan, count(*), sum(f.a), sum(f.big), avg(f.a), min(f.price),
       max(f.d), bool_or(f.ok), count(f.name)
FROM {f} f LEFT JOIN {c} c ON f.cust = c.customer_id
GROUP BY c.plan ORDER BY c.plan$$, true);
SELECT * FROM spill_same($$
SELECT c.plan, f.k % 5, count(*) FILTER (WHERE f.a > 0), max(f.ts)
FROM {f} f JOIN {c} c ON f.cust = c.customer_id
WHERE f.price < 80 GROUP BY 1, 2 HAVING count(*) > 10$$);
SET sqlite_shard_fdw.eager_aggregate = always;
SELECT * FROM spill_explain($$
SELECT c.plan, count(*), sum(f.a) FROM facts f
LEFT JOIN customers c ON f.cust = c.customer_id GROUP BY c.plan$$);
RESET sqlite_shard_fdw.eager_aggregate;

-- ===================================================================
-- A rescan starts over, with what was set aside before gone
-- ===================================================================
SELECT * FROM spill_same($$
SELECT v.x, s.n, s.t FROM (VALUES (0), (300), (900)) v(x),
LATERAL (SELECT count(*) AS n, sum(c) AS t
         FROM (SELECT k, count(*) AS c FROM {f} WHERE a < v.x GROUP BY k) q) s
$$);

-- ===================================================================
-- count(DISTINCT x) keeps its table of pairs in memory: a grouping whose
-- pairs would not fit is left to PostgreSQL
-- ===================================================================
EXPLAIN (COSTS OFF)
SELECT k, count(DISTINCT tenant_id) FROM facts GROUP BY k;
SELECT * FROM spill_same($$
SELECT k, count(DISTINCT tenant_id) FROM {f} GROUP BY k$$);
SET work_mem = '64MB';
EXPLAIN (COSTS OFF)
SELECT k, count(DISTINCT tenant_id) FROM facts GROUP BY k;
SET work_mem = '64kB';

-- ===================================================================
-- A value a set-aside row cannot read is still reported with its shard
-- ===================================================================
SELECT count(*) FILTER (WHERE b) FROM (SELECT k, bool_and(ok) AS b FROM flags GROUP BY k) s;
SELECT count(*) FROM (SELECT k, count(*) FROM flags GROUP BY k) s;

RESET work_mem;
DROP FUNCTION spill_same(text, boolean);
DROP FUNCTION spill_explain(text);
DROP TABLE facts_native, customers_native;
DROP SERVER spill_srv CASCADE;
