--
-- SQLite's statistics: shard_analyze() runs ANALYZE inside the shards;
-- until then, a routed read of a large tenant on a shard without
-- statistics reads the shard rather than the tenant's index row by row
-- ("Tenant Index Skipped" in EXPLAIN ANALYZE).  See
-- test/fixtures/sqlitestats.sh for the rows.
--
\! bash test/fixtures/sqlitestats.sh
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
RESET client_min_messages;
CREATE SERVER stats_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/sqlitestats/directory.db');
CREATE FOREIGN TABLE stats_orders (tenant_id text, order_id bigint,
  amount bigint, created_at timestamp)
  SERVER stats_srv OPTIONS (table 'orders');

-- The plan lines that say how the shards were read.
CREATE FUNCTION regress_reads(q text) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
  l text;
BEGIN
  FOR l IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q LOOP
    IF l ~ '(Shard Rows|Tenant Index Skipped)' THEN
      RETURN NEXT l;
    END IF;
  END LOOP;
END$$;

-- ===================================================================
-- No statistics: the large tenant is read without its index
-- ===================================================================
SELECT * FROM regress_reads($$SELECT sum(amount) FROM stats_orders
  WHERE tenant_id = 'big'$$);
SELECT sum(amount), count(*) FROM stats_orders WHERE tenant_id = 'big';
SELECT * FROM regress_reads($$SELECT * FROM stats_orders
  WHERE tenant_id = 'big'$$);
-- a small tenant, another condition, an order, or a WITHOUT ROWID shard
-- keep the index
SELECT * FROM regress_reads($$SELECT sum(amount) FROM stats_orders
  WHERE tenant_id = 'small'$$);
SELECT * FROM regress_reads($$SELECT sum(amount) FROM stats_orders
  WHERE tenant_id = 'big' AND order_id < 100$$);
SELECT * FROM regress_reads($$SELECT order_id FROM stats_orders
  WHERE tenant_id = 'big' ORDER BY order_id DESC LIMIT 3$$);
SELECT order_id FROM stats_orders WHERE tenant_id = 'big'
  ORDER BY order_id DESC LIMIT 3;
SELECT * FROM regress_reads($$SELECT count(*) FROM stats_orders
  WHERE tenant_id = 'other'$$);
-- several tenants at once
SELECT * FROM regress_reads($$SELECT tenant_id, count(*) FROM stats_orders
  WHERE tenant_id IN ('big', 'small') GROUP BY 1$$);
SELECT tenant_id, count(*), sum(amount) FROM stats_orders
  WHERE tenant_id IN ('big', 'small', 'other') GROUP BY 1 ORDER BY 1;

-- ===================================================================
-- shard_analyze: SQLite's statistics, and the index is SQLite's choice
-- ===================================================================
SELECT * FROM shard_analyze('stats_srv', 's1');
SELECT * FROM regress_reads($$SELECT sum(amount) FROM stats_orders
  WHERE tenant_id = 'big'$$);
SELECT sum(amount), count(*) FROM stats_orders WHERE tenant_id = 'big';
SELECT * FROM shard_analyze('stats_srv') ORDER BY 1;
-- inside a transaction that rolls back, the statistics go too
\! sqlite3 /tmp/ssfdw_regress/sqlitestats/shards/s2.db 'DROP TABLE sqlite_stat1'
BEGIN;
SELECT * FROM shard_analyze('stats_srv', 's2');
ROLLBACK;
\! sqlite3 /tmp/ssfdw_regress/sqlitestats/shards/s2.db 'SELECT count(*) FROM sqlite_stat1' 2>&1 | sed 's/^Error: .*no such table.*/no sqlite_stat1/'
-- errors
SELECT * FROM shard_analyze('stats_srv', 'nope');
CREATE ROLE regress_stats_user;
GRANT USAGE ON FOREIGN SERVER stats_srv TO regress_stats_user;
SET ROLE regress_stats_user;
SELECT * FROM shard_analyze('stats_srv');
RESET ROLE;
GRANT EXECUTE ON FUNCTION shard_analyze(name, text) TO regress_stats_user;
SET ROLE regress_stats_user;
SELECT * FROM shard_analyze('stats_srv');
RESET ROLE;
DROP OWNED BY regress_stats_user;
DROP ROLE regress_stats_user;

DROP SERVER stats_srv CASCADE;
DROP FUNCTION regress_reads(text);
