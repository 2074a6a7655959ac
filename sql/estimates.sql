--
-- Row estimates of foreign tables ANALYZE never saw: rows from each
-- shard's B-tree (or sqlite_stat1), routed tenants from the directory.
-- docs/reference/statistics-and-import.md states the factor: within 2 of the true count.
--
\! bash test/fixtures/estimates.sh
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
RESET client_min_messages;
CREATE SERVER est_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/estimates/directory.db');
CREATE FOREIGN TABLE est_orders (tenant_id text, order_id bigint,
  amount int, note text) SERVER est_srv OPTIONS (table 'orders');
CREATE FOREIGN TABLE est_notes (tenant_id text, n int)
  SERVER est_srv OPTIONS (table 'notes');
CREATE SERVER est_many FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/many/directory.db');
CREATE FOREIGN TABLE est_many (tenant_id text, order_id bigint,
  amount int, note text) SERVER est_many OPTIONS (table 'orders');

-- The rows the scan returned, and whether the planner's estimate is
-- within a factor of 2 of them, or of the number given (the estimates
-- themselves depend on how SQLite filled its pages).
CREATE FUNCTION regress_estimate(q text, expected float8 DEFAULT NULL)
RETURNS TABLE (actual bigint, within_2x boolean)
LANGUAGE plpgsql AS $$
DECLARE
  plan json;
  est float8;
BEGIN
  EXECUTE 'EXPLAIN (ANALYZE, FORMAT JSON) ' || q INTO plan;
  est := (plan -> 0 -> 'Plan' ->> 'Plan Rows')::float8;
  actual := (plan -> 0 -> 'Plan' ->> 'Actual Rows')::bigint;
  expected := GREATEST(coalesce(expected, actual), 1);
  within_2x := est BETWEEN expected / 2.0 AND expected * 2.0;
  RETURN NEXT;
END $$;

-- ===================================================================
-- Whole tables: the B-tree's left edge on e1 and e3, sqlite_stat1 on e2
-- ===================================================================
SELECT reltuples FROM pg_class WHERE oid = 'est_orders'::regclass;
SELECT * FROM regress_estimate('SELECT * FROM est_orders');
SELECT * FROM regress_estimate('SELECT * FROM est_notes');
-- more shards than an estimate opens: the others by their file size
SELECT * FROM regress_estimate('SELECT * FROM est_many');

-- ===================================================================
-- Routed tenants: the average tenant of the shard that owns them
-- ===================================================================
SELECT * FROM regress_estimate($$SELECT * FROM est_orders WHERE tenant_id = 'a3'$$);
SELECT * FROM regress_estimate($$SELECT * FROM est_orders WHERE tenant_id = 'b3'$$);
SELECT * FROM regress_estimate($$SELECT * FROM est_orders WHERE tenant_id = 'c3'$$);
SELECT * FROM regress_estimate($$SELECT * FROM est_orders WHERE tenant_id IN ('a1', 'c1', 'c2')$$);
SELECT * FROM regress_estimate($$SELECT * FROM est_many WHERE tenant_id = 'm17x1'$$);
-- and the other conditions as PostgreSQL estimates them
SELECT * FROM regress_estimate($$SELECT * FROM est_orders WHERE tenant_id = 'a3' AND amount < 500$$);
-- a tenant the directory does not know: one row, the least the planner takes
SELECT * FROM regress_estimate($$SELECT * FROM est_orders WHERE tenant_id = 'nobody'$$);
-- a tenant known only when the query runs: the fleet's average tenant
-- (70,001 rows over 85 tenants)
PREPARE est_routed(text) AS SELECT * FROM est_orders WHERE tenant_id = $1;
SET plan_cache_mode = force_generic_plan;
SELECT * FROM regress_estimate($$EXECUTE est_routed('a3')$$, 70001 / 85);
RESET plan_cache_mode;
DEALLOCATE est_routed;

-- ===================================================================
-- After ANALYZE, PostgreSQL's own statistics decide
-- ===================================================================
ANALYZE est_orders;
SELECT reltuples FROM pg_class WHERE oid = 'est_orders'::regclass;
SELECT * FROM regress_estimate($$SELECT * FROM est_orders WHERE tenant_id = 'c3'$$);

DROP FUNCTION regress_estimate(text, float8);
DROP SERVER est_srv CASCADE;
DROP SERVER est_many CASCADE;
