--
-- Rollups: a PostgreSQL table of per-tenant aggregates of a foreign table,
-- kept fresh by refreshing the tenants whose rows changed, whoever changed
-- them.  See test/fixtures/rollup.sh for the fleet.
--
\! bash test/fixtures/rollup.sh
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
RESET client_min_messages;
CREATE SERVER rollup_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/rollup/directory.db');
CREATE FOREIGN TABLE ro_orders (tenant_id text, order_id bigint, status text,
  amount_cents bigint, created_at timestamp)
  SERVER rollup_srv OPTIONS (table 'orders');
CREATE FOREIGN TABLE ro_orders_tz (tenant_id text, order_id bigint,
  status text, amount_cents bigint, created_at timestamptz)
  SERVER rollup_srv OPTIONS (table 'orders');
CREATE FOREIGN TABLE ro_nums (tenant_id int, id int, v int)
  SERVER rollup_srv OPTIONS (table 'nums');
CREATE FOREIGN TABLE ro_plans (plan_id int, name text)
  SERVER rollup_srv OPTIONS (table 'plans', distribution 'reference');
CREATE TABLE ro_local (tenant_id text, n int);

-- ro_same(rollup, query): does the rollup hold exactly query's rows?
CREATE FUNCTION ro_same(r regclass, q text) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  EXECUTE format('SELECT count(*) FROM ((TABLE %s EXCEPT ALL %s) UNION ALL (%s EXCEPT ALL TABLE %s)) d',
                 r, q, q, r) INTO n;
  RETURN n = 0;
END $$;

-- ro_error(sql): the SQLSTATE and message sql fails with, or "ok".
CREATE FUNCTION ro_error(q text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE st text; msg text;
BEGIN
  EXECUTE q;
  RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT;
  RETURN st || ': ' || msg;
END $$;

-- The query of the daily rollup, as its table stores it (avg as sum, count).
CREATE VIEW ro_daily_scratch AS
  SELECT tenant_id, date_trunc('day', created_at) AS day, status,
         count(*) AS count, sum(amount_cents) AS amount,
         sum(amount_cents) AS avg_amount_sum,
         count(amount_cents) AS avg_amount_count,
         min(amount_cents) AS min, max(created_at) AS last_at
    FROM ro_orders GROUP BY 1, 2, 3;

-- ===================================================================
-- rollup_create: a real table of the query's result, with an index on the
-- keys and a policy for scoped roles
-- ===================================================================
SELECT rollup_create('ro_daily', $$
  SELECT tenant_id, date_trunc('day', created_at) AS day, status, count(*),
         sum(amount_cents) AS amount, avg(amount_cents) AS avg_amount,
         min(amount_cents), max(created_at) AS last_at
    FROM ro_orders GROUP BY 1, 2, 3$$);
SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
  WHERE attrelid = 'ro_daily'::regclass AND attnum > 0 ORDER BY attnum;
SELECT indexdef FROM pg_indexes WHERE tablename = 'ro_daily';
SELECT relrowsecurity, relforcerowsecurity FROM pg_class
  WHERE oid = 'ro_daily'::regclass;
SELECT polname, polcmd, polpermissive FROM pg_policy
  WHERE polrelid = 'ro_daily'::regclass;
SELECT * FROM ro_daily ORDER BY 1, 2, 3;
SELECT ro_same('ro_daily', 'SELECT * FROM ro_daily_scratch');
SELECT rollup::text, source::text, tenant_key, keys, fill_query
  FROM ssfdw_rollup.rollups;
SELECT shard_id, length(epoch), mark FROM ssfdw_rollup.shards ORDER BY 1;
SELECT tenant_id FROM ssfdw_rollup.tenants ORDER BY 1;
-- the capture in a shard: the triggers and the log
\! bash test/fixtures/rollup_app.sh s0 "SELECT type, name FROM sqlite_schema WHERE name GLOB '_ssfdw_*' ORDER BY 1, 2"
-- which IMPORT FOREIGN SCHEMA leaves out
CREATE SCHEMA ro_import;
SET client_min_messages = warning;
IMPORT FOREIGN SCHEMA main FROM SERVER rollup_srv INTO ro_import;
RESET client_min_messages;
SELECT relname FROM pg_class WHERE relnamespace = 'ro_import'::regnamespace
 ORDER BY 1;
DROP SCHEMA ro_import CASCADE;
-- coarser reports from the rollup: per day, averages exact
SELECT day, sum(count) AS orders, sum(amount) AS amount,
       round(sum(avg_amount_sum) / sum(avg_amount_count), 2) AS avg_amount
  FROM ro_daily GROUP BY day ORDER BY day;
SELECT date_trunc('day', created_at) AS day, count(*) AS orders,
       sum(amount_cents) AS amount, round(avg(amount_cents), 2) AS avg_amount
  FROM ro_orders GROUP BY 1 ORDER BY 1;

-- an integer tenant column, a WHERE clause, a FILTER
SELECT rollup_create('public.ro_nums_r', $$
  SELECT tenant_id, count(*) FILTER (WHERE v > 5) AS big, sum(v)
    FROM ro_nums WHERE id < 10 GROUP BY tenant_id$$);
SELECT * FROM ro_nums_r ORDER BY 1;

-- ===================================================================
-- Queries a rollup cannot store
-- ===================================================================
-- one error each: its SQLSTATE and message; the first with its detail
-- and hint
\set ON_ERROR_STOP 0
SELECT rollup_create('ro_bad', 'SELECT status, count(*) FROM ro_orders GROUP BY status');
\set ON_ERROR_STOP 1
-- not grouped by the tenant
SELECT ro_error($$SELECT rollup_create('ro_bad', $q$SELECT status, count(*) FROM ro_orders GROUP BY status$q$)$$);
-- an aggregate that does not combine
SELECT ro_error($$SELECT rollup_create('ro_bad', $q$SELECT tenant_id, count(DISTINCT status) AS n FROM ro_orders GROUP BY 1$q$)$$);
SELECT ro_error($$SELECT rollup_create('ro_bad', $q$SELECT tenant_id, string_agg(status, ',') AS s FROM ro_orders GROUP BY 1$q$)$$);
-- an expression of aggregates
SELECT ro_error($$SELECT rollup_create('ro_bad', $q$SELECT tenant_id, sum(amount_cents) / count(*) AS a FROM ro_orders GROUP BY 1$q$)$$);
-- HAVING, ORDER BY, a join, a subquery
SELECT ro_error($$SELECT rollup_create('ro_bad', $q$SELECT tenant_id, count(*) FROM ro_orders GROUP BY 1 HAVING count(*) > 1$q$)$$);
SELECT ro_error($$SELECT rollup_create('ro_bad', $q$SELECT tenant_id, count(*) FROM ro_orders GROUP BY 1 ORDER BY 1$q$)$$);
SELECT ro_error($$SELECT rollup_create('ro_bad', $q$SELECT o.tenant_id, count(*) FROM ro_orders o JOIN ro_nums n ON true GROUP BY 1$q$)$$);
SELECT ro_error($$SELECT rollup_create('ro_bad', $q$SELECT tenant_id, count(*) FROM ro_orders WHERE status IN (SELECT name FROM ro_plans) GROUP BY 1$q$)$$);
-- mutable functions: in WHERE, in a key
SELECT ro_error($$SELECT rollup_create('ro_bad', $q$SELECT tenant_id, count(*) FROM ro_orders WHERE created_at > now() - interval '1 day' GROUP BY 1$q$)$$);
SELECT ro_error($$SELECT rollup_create('ro_bad', $q$SELECT tenant_id, date_trunc('day', created_at) AS day, count(*) FROM ro_orders_tz GROUP BY 1, 2$q$)$$);
-- names: none, twice
SELECT ro_error($$SELECT rollup_create('ro_bad', $q$SELECT tenant_id, count(*) + 0 FROM ro_orders GROUP BY 1$q$)$$);
SELECT ro_error($$SELECT rollup_create('ro_bad', $q$SELECT tenant_id, sum(amount_cents) AS a, max(amount_cents) AS a FROM ro_orders GROUP BY 1$q$)$$);
SELECT ro_error($$SELECT rollup_create('ro_bad', $q$SELECT tenant_id, avg(amount_cents) AS a, sum(amount_cents) AS a_sum FROM ro_orders GROUP BY 1$q$)$$);
-- a key not selected
SELECT ro_error($$SELECT rollup_create('ro_bad', $q$SELECT tenant_id, count(*) FROM ro_orders GROUP BY 1, status$q$)$$);
-- not a foreign table of ours; a reference table; not a query
SELECT ro_error($$SELECT rollup_create('ro_bad', $q$SELECT tenant_id, count(*) FROM ro_local GROUP BY 1$q$)$$);
SELECT ro_error($$SELECT rollup_create('ro_bad', $q$SELECT plan_id, count(*) FROM ro_plans GROUP BY 1$q$)$$);
SELECT ro_error($$SELECT rollup_create('ro_bad', $q$DELETE FROM ro_orders$q$)$$);
SELECT ro_error($$SELECT rollup_create('ro_bad', $q$SELECT 1; SELECT 2$q$)$$);
-- a name taken
SELECT ro_error($$SELECT rollup_create('ro_local', $q$SELECT tenant_id, count(*) FROM ro_orders GROUP BY 1$q$)$$);
-- not a rollup
SELECT ro_error($$SELECT * FROM rollup_refresh('ro_local')$$);
SELECT count(*) FROM pg_class WHERE relname = 'ro_bad';

-- ===================================================================
-- rollup_refresh: the tenants whose rows changed, whoever changed them
-- ===================================================================
-- nothing changed: nothing to do
SELECT tenants, groups FROM rollup_refresh('ro_daily');
-- a write through the wrapper, one rolled back, one by the application
INSERT INTO ro_orders VALUES ('acme', 6, 'paid', 111, '2024-03-02 11:00:00');
BEGIN;
DELETE FROM ro_orders WHERE tenant_id = 'bcme';
ROLLBACK;
\! bash test/fixtures/rollup_app.sh s1 "UPDATE orders SET amount_cents = 950 WHERE tenant_id = 'cme' AND order_id = 1"
-- the rollup lags until it is refreshed
SELECT ro_same('ro_daily', 'SELECT * FROM ro_daily_scratch');
SELECT tenant_id, pending, changed_at IS NOT NULL AS timed,
       stale_for > interval '0' AS stale
  FROM rollup_staleness('ro_daily') ORDER BY 1;
SELECT * FROM rollup_pending('ro_daily') WHERE changed_at IS NULL;
-- what a refresh runs for the changed tenants: routed, grouped in the shard
SELECT fill_query FROM ssfdw_rollup.rollups
 WHERE rollup = 'ro_daily'::regclass \gset
EXPLAIN (VERBOSE, COSTS OFF)
  SELECT * FROM (:fill_query) s WHERE s.tenant_id = ANY ('{acme,cme}');
SELECT tenants, groups FROM rollup_refresh('ro_daily');
SELECT ro_same('ro_daily', 'SELECT * FROM ro_daily_scratch');
SELECT tenant_id, pending, stale_for FROM rollup_staleness('ro_daily')
  ORDER BY 1;
-- the refresh reports the time it holds every write committed before
SELECT as_of BETWEEN now() AND clock_timestamp() AS as_of_now
  FROM rollup_refresh('ro_daily');
SELECT as_of FROM rollup_refresh('ro_daily') \gset
SELECT refreshed_at = :'as_of' AS recorded FROM ssfdw_rollup.rollups
 WHERE rollup = 'ro_daily'::regclass;

-- an application write that moves a row to another tenant: both refreshed
\! bash test/fixtures/rollup_app.sh s0 "UPDATE orders SET tenant_id = 'bcme', order_id = 9 WHERE tenant_id = 'acme' AND order_id = 1"
SELECT tenant_id FROM rollup_pending('ro_daily') ORDER BY 1;
SELECT tenants FROM rollup_refresh('ro_daily');
SELECT ro_same('ro_daily', 'SELECT * FROM ro_daily_scratch');
-- those two were computed as of the refresh; the others are unchanged
SELECT t.tenant_id FROM ssfdw_rollup.tenants t
  JOIN ssfdw_rollup.rollups r USING (rollup)
 WHERE r.rollup = 'ro_daily'::regclass AND t.refreshed_at = r.refreshed_at
 ORDER BY 1;

-- one tenant, whatever the logs say; the full refresh
\! bash test/fixtures/rollup_app.sh s1 "DELETE FROM orders WHERE tenant_id = 'cme' AND order_id = 4"
SELECT tenants, groups FROM rollup_refresh_tenant('ro_daily', 'cme');
SELECT ro_same('ro_daily', 'SELECT * FROM ro_daily_scratch');
SELECT tenants, groups FROM rollup_refresh('ro_daily', full => true);
SELECT ro_same('ro_daily', 'SELECT * FROM ro_daily_scratch');
-- the integer rollup, its tenant written '08' by the application
\! bash test/fixtures/rollup_app.sh s1 "INSERT INTO nums VALUES ('08', 2, 50)"
SELECT tenant_id FROM rollup_pending('ro_nums_r') ORDER BY 1;
SELECT tenants FROM rollup_refresh('ro_nums_r');
SELECT * FROM ro_nums_r ORDER BY 1;
SELECT tenants, groups FROM rollup_refresh_tenant('ro_nums_r', '007');

-- ===================================================================
-- Shards, moves and removals between refreshes
-- ===================================================================
-- a new shard, a move onto it, writes there by the application
\! bash test/fixtures/rollup_app.sh s2 "SELECT count(*) FROM sqlite_schema WHERE name GLOB '_ssfdw_*'"
SELECT tenant_move('rollup_srv', 'cme', 's2');
SELECT * FROM tenant_cleanup('rollup_srv', 'cme');
\! bash test/fixtures/rollup_app.sh s2 "INSERT INTO orders VALUES ('cme', 10, 'paid', 5, '2024-03-04 00:00:00')"
SELECT tenants FROM rollup_refresh('ro_daily');
SELECT ro_same('ro_daily', 'SELECT * FROM ro_daily_scratch');
-- a shard whose capture was dropped: every tenant there is computed anew
\! bash test/fixtures/rollup_app.sh s2 "DROP TRIGGER _ssfdw_rollup_u_orders; UPDATE orders SET amount_cents = 6 WHERE order_id = 10"
SELECT tenant_id, changed_at FROM rollup_pending('ro_daily');
SELECT tenants FROM rollup_refresh('ro_daily');
SELECT ro_same('ro_daily', 'SELECT * FROM ro_daily_scratch');
\! bash test/fixtures/rollup_app.sh s2 "SELECT count(*) FROM sqlite_schema WHERE name = '_ssfdw_rollup_u_orders'"
-- a new tenant; a tenant removed with its rows
SELECT tenant_add('rollup_srv', 'dme', 's2');
INSERT INTO ro_orders VALUES ('dme', 1, 'open', 70, '2024-03-05 00:00:00');
SELECT tenant_remove('rollup_srv', 'bcme', delete_rows => true);
SELECT tenant_id FROM rollup_pending('ro_daily') ORDER BY 1;
SELECT tenants FROM rollup_refresh('ro_daily');
SELECT ro_same('ro_daily', 'SELECT * FROM ro_daily_scratch');
SELECT DISTINCT tenant_id FROM ro_daily ORDER BY 1;

-- ===================================================================
-- Refreshes: serialized, whole, refused where they would be wrong
-- ===================================================================
\set ON_ERROR_STOP 0
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT * FROM rollup_refresh('ro_daily');
ROLLBACK;
-- a role whose mapping limits it to some tenants cannot refresh
BEGIN;
CREATE USER MAPPING FOR CURRENT_USER SERVER rollup_srv OPTIONS (tenants 'acme');
SELECT ro_error($$SELECT rollup_create('ro_bad', 'SELECT tenant_id, count(*) FROM ro_orders GROUP BY 1')$$);
SELECT * FROM rollup_refresh('ro_daily');
ROLLBACK;
\set ON_ERROR_STOP 1
-- a refresh that fails takes nothing: the change waits for the next one
INSERT INTO ro_orders VALUES ('acme', 7, 'paid', 1, '2024-03-06 00:00:00');
BEGIN;
SELECT tenants FROM rollup_refresh('ro_daily');
ROLLBACK;
SELECT tenant_id FROM rollup_pending('ro_daily') ORDER BY 1;
SELECT tenants FROM rollup_refresh('ro_daily');
SELECT ro_same('ro_daily', 'SELECT * FROM ro_daily_scratch');

-- ===================================================================
-- Privileges: the rollup table is a PostgreSQL table; a scoped role reads
-- its tenants' groups only
-- ===================================================================
CREATE ROLE regress_rollup_acme;
CREATE ROLE regress_rollup_all;
CREATE ROLE regress_rollup_none;
GRANT SELECT ON ro_daily, ro_nums_r TO regress_rollup_acme, regress_rollup_all,
  regress_rollup_none;
CREATE USER MAPPING FOR regress_rollup_acme SERVER rollup_srv
  OPTIONS (tenants 'acme, dme');
CREATE USER MAPPING FOR regress_rollup_all SERVER rollup_srv;
SET ROLE regress_rollup_acme;
SELECT tenant_id, sum(count) FROM ro_daily GROUP BY 1 ORDER BY 1;
SELECT count(*) FROM ro_daily WHERE tenant_id = 'cme';
\set ON_ERROR_STOP 0
SELECT * FROM rollup_refresh('ro_daily');
SELECT * FROM rollup_staleness();
SELECT * FROM ssfdw_rollup.tenants;
DELETE FROM ro_daily;
\set ON_ERROR_STOP 1
RESET ROLE;
SET ROLE regress_rollup_all;
SELECT tenant_id, sum(count) FROM ro_daily GROUP BY 1 ORDER BY 1;
RESET ROLE;
-- a role without a mapping of the server is not limited by one
SET ROLE regress_rollup_none;
SELECT count(DISTINCT tenant_id) FROM ro_daily;
RESET ROLE;
CREATE USER MAPPING FOR regress_rollup_none SERVER rollup_srv
  OPTIONS (tenants '7');
SET ROLE regress_rollup_none;
SELECT * FROM ro_nums_r;
RESET ROLE;
-- a server that is gone scopes every role to no tenant
SELECT rollup_tenant_scope(0);

-- ===================================================================
-- rollup_drop
-- ===================================================================
SELECT rollup_drop('ro_nums_r');
SELECT count(*) FROM ssfdw_rollup.rollups;
\set ON_ERROR_STOP 0
SELECT rollup_drop('ro_local');
\set ON_ERROR_STOP 1

DROP USER MAPPING FOR regress_rollup_acme SERVER rollup_srv;
DROP USER MAPPING FOR regress_rollup_all SERVER rollup_srv;
DROP USER MAPPING FOR regress_rollup_none SERVER rollup_srv;
-- a rollup table dropped as a table, a source foreign table dropped: the
-- rollup is forgotten
SELECT rollup_create('ro_nums_r', 'SELECT tenant_id, sum(v) FROM ro_nums GROUP BY 1');
SELECT rollup_create('ro_nums_s', 'SELECT tenant_id, count(*) FROM ro_nums GROUP BY 1');
DROP TABLE ro_nums_r;
SELECT rollup::text FROM ssfdw_rollup.rollups ORDER BY 1;
DROP FOREIGN TABLE ro_nums;
SELECT rollup::text FROM ssfdw_rollup.rollups ORDER BY 1;
SELECT (SELECT count(*) FROM ssfdw_rollup.shards) AS shards,
       (SELECT count(DISTINCT rollup) FROM ssfdw_rollup.tenants) AS tenants;
DROP TABLE ro_nums_s;
SELECT rollup_drop('ro_daily');
SELECT count(*) FROM ssfdw_rollup.rollups;
DROP ROLE regress_rollup_acme, regress_rollup_all, regress_rollup_none;
DROP VIEW ro_daily_scratch;
DROP FUNCTION ro_same(regclass, text);
DROP FUNCTION ro_error(text);
DROP TABLE ro_local;
DROP SERVER rollup_srv CASCADE;
