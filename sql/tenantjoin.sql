--
-- Joins and semi-joins with a local table on the tenant column: the
-- foreign scan runs once per row of the local side and reads only the
-- tenant that row names, on its shard (a parameterized path), where that is
-- cheaper than reading the fleet.  Shard j4 of the fixture has no file: a
-- query that opened it would fail, so every query below that succeeds read
-- only the shards of the tenants the local side produced.  Each query runs
-- against the foreign table and a native table of the same rows.  See
-- test/fixtures/tenantjoin.sh.
--
\! bash test/fixtures/tenantjoin.sh
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
RESET client_min_messages;
CREATE SERVER tj_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/tenantjoin/directory.db');
CREATE FOREIGN TABLE items (tenant_id text, id int, v int, grp text)
  SERVER tj_srv;
CREATE TABLE items_native (tenant_id text, id int, v int, grp text);
\copy items_native FROM '/tmp/ssfdw_regress/tenantjoin/rows.csv' WITH (FORMAT csv)
-- the local side: a tenant twice, a tenant without rows (t30), one the
-- directory does not know, a NULL
CREATE TABLE acc (tenant text, plan text, tenant_vc varchar(10));
INSERT INTO acc VALUES
  ('t01', 'ent', 't01'), ('t05', 'ent', 't05'), ('t05', 'ent', 't05'),
  ('t09', 'free', 't09'), ('t12', 'ent', 't12'), ('t30', 'ent', 't30'),
  ('nobody', 'ent', 'nobody'), (NULL, 'ent', NULL), ('t02', 'free', 't02');
ANALYZE acc, items_native;

-- A fleet-wide scan opens every shard, j4 included: it fails.
SELECT count(*) FROM items;

-- regress_same(query [, ordered]): the foreign answer against the native one
\i test/regress_compare.sql

-- ===================================================================
-- Chosen by cost: a few local tenants against a fleet of 29,000 rows
-- ===================================================================
EXPLAIN (COSTS OFF)
SELECT count(*), sum(i.v) FROM acc a JOIN items i ON i.tenant_id = a.tenant
WHERE a.plan = 'ent';
SELECT * FROM regress_same($$
SELECT count(*), sum(i.v) FROM acc a JOIN {t} i ON i.tenant_id = a.tenant
WHERE a.plan = 'ent'$$);
SELECT * FROM regress_same($$
SELECT a.tenant, count(*), sum(i.v), min(i.id)
FROM acc a JOIN {t} i ON i.tenant_id = a.tenant
WHERE a.plan = 'ent' GROUP BY 1$$);
-- a loop over the local rows, one routed scan per row, where the planner
-- loops
SET enable_hashjoin = off;
SET enable_mergejoin = off;
EXPLAIN (COSTS OFF)
SELECT count(*), sum(i.v) FROM acc a JOIN items i ON i.tenant_id = a.tenant
WHERE a.plan = 'ent';
SELECT * FROM regress_same($$
SELECT count(*), sum(i.v) FROM acc a JOIN {t} i ON i.tenant_id = a.tenant
WHERE a.plan = 'ent'$$);
RESET enable_hashjoin;
RESET enable_mergejoin;
-- USING, and other conditions on the foreign side (pushed to the shard)
SELECT * FROM regress_same($$
SELECT count(*), sum(v), count(DISTINCT tenant_id)
FROM (SELECT tenant FROM acc WHERE plan = 'ent') a (tenant_id)
JOIN {t} i USING (tenant_id) WHERE i.v > 50 AND i.grp IN ('a', 'c')$$);
-- each tenant's three largest values
SELECT * FROM regress_same($$
SELECT a.tenant, s.id, s.v FROM acc a,
  LATERAL (SELECT id, v FROM {t} i WHERE i.tenant_id = a.tenant
           ORDER BY v DESC NULLS LAST, id LIMIT 3) s
WHERE a.plan = 'ent'$$);

-- ===================================================================
-- Semi-joins and anti-joins: IN (SELECT ...), EXISTS, NOT EXISTS
-- ===================================================================
EXPLAIN (COSTS OFF)
SELECT count(*), sum(v) FROM items
WHERE tenant_id IN (SELECT tenant FROM acc WHERE plan = 'ent');
SELECT * FROM regress_same($$
SELECT count(*), sum(v) FROM {t}
WHERE tenant_id IN (SELECT tenant FROM acc WHERE plan = 'ent')$$);
SELECT * FROM regress_same($$
SELECT grp, count(*) FROM {t} i
WHERE EXISTS (SELECT 1 FROM acc a WHERE a.tenant = i.tenant_id
              AND a.plan = 'free')
GROUP BY grp$$);
SELECT * FROM regress_same($$
SELECT a.tenant FROM acc a
WHERE NOT EXISTS (SELECT 1 FROM {t} i WHERE i.tenant_id = a.tenant)$$);
SELECT * FROM regress_same($$
SELECT a.tenant, a.plan FROM acc a
WHERE EXISTS (SELECT 1 FROM {t} i WHERE i.tenant_id = a.tenant AND i.v = 100)$$);

-- ===================================================================
-- Outer joins: local rows without a match keep their NULLs
-- ===================================================================
SELECT * FROM regress_same($$
SELECT a.tenant, a.plan, count(i.id), sum(i.v)
FROM acc a LEFT JOIN {t} i ON i.tenant_id = a.tenant AND i.grp = 'b'
GROUP BY 1, 2$$);
SELECT * FROM regress_same($$
SELECT a.tenant, count(i.id)
FROM {t} i RIGHT JOIN acc a ON i.tenant_id = a.tenant AND i.v < 5
GROUP BY 1$$);

-- ===================================================================
-- The local column as varchar; a prepared statement's generic plan
-- ===================================================================
SELECT * FROM regress_same($$
SELECT a.tenant_vc, count(*) FROM acc a JOIN {t} i ON i.tenant_id = a.tenant_vc
WHERE a.plan = 'free' GROUP BY 1$$);
PREPARE by_plan(text) AS
  SELECT a.tenant, count(*), sum(i.v) FROM acc a
  JOIN items i ON i.tenant_id = a.tenant WHERE a.plan = $1 GROUP BY 1
  ORDER BY 1;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE by_plan('ent');
EXECUTE by_plan('ent');
EXECUTE by_plan('free');
RESET plan_cache_mode;
DEALLOCATE by_plan;

-- ===================================================================
-- Where the planner hashes or merges: an InitPlan lists the tenants the
-- local side produces, and the scan reads only their shards (never j4)
-- ===================================================================
SET enable_nestloop = off;
EXPLAIN (COSTS OFF)
SELECT count(*), sum(i.v) FROM acc a JOIN items i ON i.tenant_id = a.tenant
WHERE a.plan = 'ent';
SELECT * FROM regress_same($$
SELECT count(*), sum(i.v) FROM acc a JOIN {t} i ON i.tenant_id = a.tenant
WHERE a.plan = 'ent'$$);
EXPLAIN (COSTS OFF)
SELECT count(*), sum(v) FROM items
WHERE tenant_id IN (SELECT tenant FROM acc WHERE plan = 'ent');
SELECT * FROM regress_same($$
SELECT count(*), sum(v) FROM {t}
WHERE tenant_id IN (SELECT tenant FROM acc WHERE plan = 'ent')$$);
SELECT * FROM regress_same($$
SELECT grp, count(*) FROM {t} i
WHERE EXISTS (SELECT 1 FROM acc a WHERE a.tenant = i.tenant_id
              AND a.plan = 'free')
GROUP BY grp$$);
SELECT * FROM regress_same($$
SELECT a.tenant, a.plan, count(i.id), sum(i.v)
FROM acc a LEFT JOIN {t} i ON i.tenant_id = a.tenant AND i.grp = 'b'
GROUP BY 1, 2$$);
SELECT * FROM regress_same($$
SELECT a.tenant_vc, count(*) FROM acc a JOIN {t} i ON i.tenant_id = a.tenant_vc
WHERE a.plan = 'free' GROUP BY 1$$);
-- a local condition that may compute otherwise the second time is not
-- repeated: the list is of the tenants the other conditions keep
EXPLAIN (COSTS OFF)
SELECT count(*) FROM acc a JOIN items i ON i.tenant_id = a.tenant
WHERE a.plan = 'ent' AND random() < 2;
SELECT * FROM regress_same($$
SELECT count(*) FROM acc a JOIN {t} i ON i.tenant_id = a.tenant
WHERE a.plan = 'ent' AND random() < 2$$);
-- a merge join
SET enable_hashjoin = off;
EXPLAIN (COSTS OFF)
SELECT a.tenant, count(*) FROM acc a JOIN items i ON i.tenant_id = a.tenant
WHERE a.plan = 'free' GROUP BY 1;
SELECT * FROM regress_same($$
SELECT a.tenant, count(*) FROM acc a JOIN {t} i ON i.tenant_id = a.tenant
WHERE a.plan = 'free' GROUP BY 1$$);
RESET enable_hashjoin;
-- a join under a collation that is not deterministic matches a tenant by
-- more than its bytes, which a list of values would miss: no list (EXPLAIN
-- only: the scan reads j4)
CREATE COLLATION regress_tj_ci (provider = icu,
  locale = 'und-u-ks-level2', deterministic = false);
CREATE TABLE acc_ci (tenant text COLLATE regress_tj_ci, plan text);
INSERT INTO acc_ci SELECT tenant, plan FROM acc;
ANALYZE acc_ci;
EXPLAIN (COSTS OFF)
SELECT count(*) FROM acc_ci a JOIN items i ON i.tenant_id = a.tenant
WHERE a.plan = 'ent';
DROP TABLE acc_ci;
DROP COLLATION regress_tj_ci;
-- a generic plan: the list is computed with the statement's parameter
PREPARE by_plan(text) AS
  SELECT a.tenant, count(*), sum(i.v) FROM acc a
  JOIN items i ON i.tenant_id = a.tenant WHERE a.plan = $1 GROUP BY 1
  ORDER BY 1;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE by_plan('ent');
EXECUTE by_plan('ent');
EXECUTE by_plan('free');
RESET plan_cache_mode;
DEALLOCATE by_plan;
-- a local table under row-level security, for a role the policy binds:
-- its conditions are not repeated elsewhere, so no list (EXPLAIN only: the
-- scan would read j4)
CREATE TABLE acc_rls AS SELECT * FROM acc;
ALTER TABLE acc_rls ENABLE ROW LEVEL SECURITY;
CREATE POLICY acc_rls_ent ON acc_rls USING (plan = 'ent');
ANALYZE acc_rls;
CREATE ROLE regress_tj_rls;
GRANT SELECT ON items, acc_rls TO regress_tj_rls;
SET ROLE regress_tj_rls;
EXPLAIN (COSTS OFF)
SELECT count(*) FROM acc_rls a JOIN items i ON i.tenant_id = a.tenant
WHERE a.tenant > 't';
RESET ROLE;
DROP TABLE acc_rls;
REVOKE ALL ON items FROM regress_tj_rls;
DROP ROLE regress_tj_rls;
RESET enable_nestloop;

-- ===================================================================
-- The table a statement writes is read once, never per outer row: t05,
-- named twice in acc, is updated once, as PostgreSQL updates it
-- ===================================================================
ALTER SERVER tj_srv OPTIONS (ADD on_missing_shard 'skip');
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_memoize = off;
BEGIN;
UPDATE items i SET v = i.v + 1 FROM acc a
WHERE i.tenant_id = a.tenant AND a.plan = 'ent';
UPDATE items_native i SET v = i.v + 1 FROM acc a
WHERE i.tenant_id = a.tenant AND a.plan = 'ent';
SELECT * FROM regress_same($$
SELECT tenant_id, count(*), sum(v) FROM {t} GROUP BY 1$$);
DELETE FROM items i USING acc a WHERE i.tenant_id = a.tenant AND a.plan = 'free';
DELETE FROM items_native i USING acc a
WHERE i.tenant_id = a.tenant AND a.plan = 'free';
SELECT * FROM regress_same($$
SELECT tenant_id, count(*), sum(v) FROM {t} GROUP BY 1$$);
ROLLBACK;
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET enable_memoize;
ALTER SERVER tj_srv OPTIONS (DROP on_missing_shard);

-- Naming the lost tenant reaches its shard, and only then fails.
INSERT INTO acc VALUES ('lost', 'x', 'lost');
SELECT count(*) FROM acc a JOIN items i ON i.tenant_id = a.tenant
WHERE a.plan = 'x';
DELETE FROM acc WHERE tenant = 'lost';

-- ===================================================================
-- A tenant-scoped login: the other side names tenants it may not see;
-- it reads only its own, and never opens another tenant's shard
-- ===================================================================
CREATE ROLE regress_tj_scoped;
GRANT SELECT ON items, acc TO regress_tj_scoped;
CREATE USER MAPPING FOR regress_tj_scoped SERVER tj_srv
  OPTIONS (tenants 't05,t09');
SET ROLE regress_tj_scoped;
SELECT a.tenant, count(i.id), sum(i.v)
FROM acc a LEFT JOIN items i ON i.tenant_id = a.tenant
GROUP BY 1 ORDER BY 1;
SELECT count(*) FROM items WHERE tenant_id IN (SELECT tenant FROM acc);
SET enable_nestloop = off;
SELECT a.tenant, count(i.id), sum(i.v)
FROM acc a JOIN items i ON i.tenant_id = a.tenant
GROUP BY 1 ORDER BY 1;
RESET enable_nestloop;
RESET ROLE;
SELECT tenant_id, count(*), sum(v) FROM items_native
WHERE tenant_id IN ('t05', 't09') GROUP BY 1 ORDER BY 1;

DROP USER MAPPING FOR regress_tj_scoped SERVER tj_srv;
REVOKE ALL ON items, acc FROM regress_tj_scoped;
DROP ROLE regress_tj_scoped;
DROP FUNCTION regress_same(text, boolean);
DROP TABLE acc, items_native;
DROP SERVER tj_srv CASCADE;
