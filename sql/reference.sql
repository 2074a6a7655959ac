--
-- Reference tables: foreign tables with distribution 'reference' hold rows
-- that belong to no tenant (plans), a copy in every shard.  A read takes
-- one shard's copy: the table's reference_shard, or the first shard by id;
-- a join with tenant tables runs inside each shard, with its own copy.
-- Writes, which reach every copy, are in sql/refwrite.sql.
-- See test/fixtures/reference.sh.
--
\! bash test/fixtures/reference.sh
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
RESET client_min_messages;
CREATE SERVER ref_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/reference/directory.db');
CREATE FOREIGN TABLE orders (tenant_id text, id int, plan_id int, amount int,
                             created_at timestamp)
  SERVER ref_srv;
CREATE FOREIGN TABLE plans (plan_id int, name text, price int)
  SERVER ref_srv OPTIONS (distribution 'reference');
CREATE TABLE orders_native (tenant_id text, id int, plan_id int, amount int,
                            created_at timestamp);
CREATE TABLE plans_native (plan_id int, name text, price int);
\copy orders_native FROM '/tmp/ssfdw_regress/reference/orders.csv' WITH (FORMAT csv)
\copy plans_native FROM '/tmp/ssfdw_regress/reference/plans.csv' WITH (FORMAT csv)
ANALYZE orders_native, plans_native;

-- orders with created_at read as timestamptz (stored as UTC)
CREATE FOREIGN TABLE orders_tz (tenant_id text, id int, plan_id int,
                                amount int, created_at timestamptz)
  SERVER ref_srv OPTIONS (table 'orders');
CREATE TABLE orders_tz_native AS
  SELECT tenant_id, id, plan_id, amount, created_at AT TIME ZONE 'UTC' AS created_at
  FROM orders_native;

-- ref_same(query): the rows query gives with {o}, {z} and {p} standing for
-- the foreign tables, and for the native ones, compared as multisets: the
-- number of rows, and whether they are the same.
CREATE FUNCTION ref_same(query text, OUT nrows bigint, OUT same boolean)
LANGUAGE plpgsql AS $$
DECLARE
  f text := replace(replace(replace(query, '{o}', 'orders'), '{p}', 'plans'),
                    '{z}', 'orders_tz');
  n text := replace(replace(replace(query, '{o}', 'orders_native'),
                            '{p}', 'plans_native'), '{z}', 'orders_tz_native');
  diff bigint;
BEGIN
  EXECUTE format('SELECT count(*) FROM (%s) r', f) INTO nrows;
  EXECUTE format('SELECT count(*) FROM ((%s EXCEPT ALL %s) UNION ALL (%s EXCEPT ALL %s)) d',
                 f, n, n, f) INTO diff;
  same := diff = 0;
END $$;

-- ===================================================================
-- Options
-- ===================================================================
CREATE FOREIGN TABLE bad (plan_id int) SERVER ref_srv
  OPTIONS (distribution 'replicated');
CREATE FOREIGN TABLE bad (plan_id int, tenant_id text) SERVER ref_srv
  OPTIONS (distribution 'reference', tenant_column 'tenant_id');
CREATE FOREIGN TABLE bad (tenant_id text) SERVER ref_srv
  OPTIONS (reference_shard 'r2');
CREATE FOREIGN TABLE bad (tenant_id text) SERVER ref_srv
  OPTIONS (distribution 'tenant', reference_shard 'r2');
-- a tenant table by name is one
CREATE FOREIGN TABLE orders_t (tenant_id text, id int) SERVER ref_srv
  OPTIONS (table 'orders', distribution 'tenant');
SELECT count(*) FROM orders_t WHERE tenant_id = 't01';
DROP FOREIGN TABLE orders_t;
-- a reference table needs no tenant column, and a tenant table still does
CREATE FOREIGN TABLE no_tenant (plan_id int) SERVER ref_srv
  OPTIONS (table 'plans');
SELECT * FROM no_tenant;
DROP FOREIGN TABLE no_tenant;

-- ===================================================================
-- Reads: the first shard's copy, with the usual pushdown
-- ===================================================================
SELECT * FROM plans ORDER BY plan_id;
SELECT * FROM ref_same('SELECT * FROM {p}');
EXPLAIN (VERBOSE, COSTS OFF) SELECT * FROM plans WHERE price > 5;
SELECT * FROM plans WHERE price > 5 ORDER BY plan_id;
EXPLAIN (VERBOSE, COSTS OFF) SELECT count(*), max(price) FROM plans;
SELECT count(*), max(price), sum(price) FROM plans;
EXPLAIN (VERBOSE, COSTS OFF) SELECT name FROM plans ORDER BY price DESC LIMIT 2;
SELECT name FROM plans ORDER BY price DESC LIMIT 2;
SELECT * FROM ref_same('SELECT name, price FROM {p} WHERE name LIKE ''%t%''');

-- Another shard's copy, chosen by the table option
ALTER FOREIGN TABLE plans OPTIONS (ADD reference_shard 'r3');
EXPLAIN (COSTS OFF) SELECT * FROM plans;
ALTER FOREIGN TABLE plans OPTIONS (SET reference_shard 'nope');
SELECT * FROM plans;
ALTER FOREIGN TABLE plans OPTIONS (DROP reference_shard);
SELECT count(*) FROM plans;

-- A copy missing from the shard read: the error names the shard
CREATE FOREIGN TABLE flags (name text, enabled int) SERVER ref_srv
  OPTIONS (distribution 'reference', reference_shard 'r3');
SELECT * FROM flags;
ALTER FOREIGN TABLE flags OPTIONS (DROP reference_shard);
SELECT * FROM flags ORDER BY name;

-- ===================================================================
-- Joins with tenant tables: the answers of native tables
-- ===================================================================
SELECT * FROM ref_same('SELECT o.tenant_id, o.id, p.name FROM {o} o JOIN {p} p ON p.plan_id = o.plan_id');
SELECT * FROM ref_same('SELECT o.id, p.name FROM {o} o LEFT JOIN {p} p ON p.plan_id = o.plan_id WHERE o.tenant_id = ''t05''');
SELECT * FROM ref_same('SELECT p.name, count(o.id), sum(o.amount) FROM {p} p LEFT JOIN {o} o ON o.plan_id = p.plan_id GROUP BY p.name');
SELECT * FROM ref_same('SELECT p.name, o.id FROM {o} o FULL JOIN {p} p ON p.plan_id = o.plan_id AND o.tenant_id = ''t02''');
SELECT * FROM ref_same('SELECT p.name, count(*), sum(o.amount) FROM {o} o JOIN {p} p USING (plan_id) GROUP BY 1');
SELECT * FROM ref_same('SELECT o.tenant_id, sum(p.price) FROM {o} o JOIN {p} p USING (plan_id) WHERE o.tenant_id IN (''t01'', ''t06'') GROUP BY 1');
SELECT * FROM ref_same('SELECT * FROM {p} p WHERE EXISTS (SELECT 1 FROM {o} o WHERE o.plan_id = p.plan_id AND o.tenant_id = ''t03'')');
SELECT p.name, count(*) FROM orders o JOIN plans p USING (plan_id)
  GROUP BY 1 ORDER BY 1;
-- three tables: a tenant self-join and the reference table
SELECT * FROM ref_same('SELECT p.name, count(*), sum(o2.amount) FROM {o} o JOIN {o} o2 ON o2.tenant_id = o.tenant_id AND o2.plan_id = o.plan_id JOIN {p} p ON p.plan_id = o2.plan_id GROUP BY 1');
SELECT * FROM ref_same('SELECT p.name, q.name FROM {p} p JOIN {p} q ON q.price > p.price');
-- the reference table first and the tenants equal by a constant: the
-- tenant tables' join is co-located by the equivalence class, whatever
-- the reference table's place
SELECT * FROM ref_same('SELECT o.id, p.name, o2.amount FROM {p} p JOIN {o} o ON o.plan_id = p.plan_id JOIN {o} o2 ON o2.tenant_id = o.tenant_id AND o2.id = o.id WHERE o.tenant_id = ''t04''');
SELECT * FROM ref_same('SELECT o.id, p.name FROM (SELECT * FROM {o} WHERE tenant_id = ''t02'') o LEFT JOIN {p} p ON p.plan_id = o.plan_id JOIN {o} o2 ON o2.tenant_id = o.tenant_id AND o2.id = o.id AND o2.plan_id = p.plan_id');
EXPLAIN (VERBOSE, COSTS OFF)
SELECT o.id, p.name, o2.amount FROM plans p JOIN orders o ON o.plan_id = p.plan_id
  JOIN orders o2 ON o2.tenant_id = o.tenant_id AND o2.id = o.id
  WHERE o.tenant_id = 't04';

-- time buckets of a tenant table's column as grouping keys
SELECT * FROM ref_same('SELECT date_trunc(''month'', o.created_at), p.name, count(*), sum(o.amount) FROM {o} o JOIN {p} p USING (plan_id) GROUP BY 1, 2');
SELECT * FROM ref_same('SELECT o.created_at::date, count(*), max(p.price) FROM {o} o LEFT JOIN {p} p USING (plan_id) WHERE o.tenant_id = ''t03'' GROUP BY 1');
SELECT * FROM ref_same('SELECT extract(dow FROM o.created_at), o2.tenant_id, count(*) FROM {o} o JOIN {o} o2 ON o2.tenant_id = o.tenant_id AND o2.plan_id = o.plan_id GROUP BY 1, 2');
SELECT * FROM ref_same('SELECT date_trunc(''week'', o.created_at), min(o.created_at), max(o2.created_at) FROM {o} o FULL JOIN {o} o2 ON o2.tenant_id = o.tenant_id AND o2.id = o.id + 1 GROUP BY 1');
-- ... of timestamptz, on the session TimeZone's grid
SET TimeZone = 'America/New_York';
SELECT * FROM ref_same('SELECT date_trunc(''day'', o.created_at), p.name, count(*), min(o.created_at) FROM {z} o JOIN {p} p USING (plan_id) GROUP BY 1, 2');
SELECT * FROM ref_same('SELECT extract(hour FROM o.created_at), count(*) FROM {z} o JOIN {p} p USING (plan_id) WHERE o.tenant_id IN (''t01'', ''t02'') GROUP BY 1');
EXPLAIN (VERBOSE, COSTS OFF)
SELECT date_trunc('day', o.created_at), count(*) FROM orders_tz o
  JOIN plans p USING (plan_id) GROUP BY 1;
RESET TimeZone;

-- What runs inside the shards: an inner join, a left join whose nullable
-- side is the reference table, aggregates and ORDER BY ... LIMIT over them,
-- routed or fanned out
EXPLAIN (VERBOSE, COSTS OFF)
SELECT o.id, p.name FROM orders o JOIN plans p ON p.plan_id = o.plan_id;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT o.id, p.name FROM orders o LEFT JOIN plans p ON p.plan_id = o.plan_id
  WHERE o.tenant_id = 't05';
EXPLAIN (VERBOSE, COSTS OFF)
SELECT p.name, count(*), sum(o.amount) FROM orders o JOIN plans p USING (plan_id)
  GROUP BY 1;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT date_trunc('month', o.created_at), p.name, count(*), sum(o.amount)
  FROM orders o JOIN plans p USING (plan_id) GROUP BY 1, 2;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT o.id, p.price FROM orders o JOIN plans p USING (plan_id)
  WHERE o.tenant_id = 't07' ORDER BY p.price DESC, o.id LIMIT 3;
SELECT o.id, p.price FROM orders o JOIN plans p USING (plan_id)
  WHERE o.tenant_id = 't07' ORDER BY p.price DESC, o.id LIMIT 3;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT p.name, count(*), sum(o2.amount) FROM orders o
  JOIN orders o2 ON o2.tenant_id = o.tenant_id AND o2.plan_id = o.plan_id
  JOIN plans p ON p.plan_id = o2.plan_id GROUP BY 1;
-- two reference tables join on the shard they are read from
EXPLAIN (VERBOSE, COSTS OFF)
SELECT p.name, q.name FROM plans p JOIN plans q ON q.plan_id = p.plan_id;
-- Not inside the shards: the reference table's rows preserved (each shard
-- would return them), reference tables read from different shards
EXPLAIN (COSTS OFF)
SELECT p.name, o.id FROM plans p LEFT JOIN orders o ON o.plan_id = p.plan_id;
EXPLAIN (COSTS OFF)
SELECT p.name, o.id FROM orders o FULL JOIN plans p ON p.plan_id = o.plan_id;
CREATE FOREIGN TABLE plans_r2 (plan_id int, name text, price int)
  SERVER ref_srv OPTIONS (table 'plans', distribution 'reference',
                          reference_shard 'r2');
EXPLAIN (COSTS OFF)
SELECT p.name FROM plans p JOIN plans_r2 q USING (plan_id);
SELECT p.name FROM plans p JOIN plans_r2 q USING (plan_id) ORDER BY 1;
-- a shard without the joined copy: the error names it
SELECT count(*) FROM orders o JOIN flags f ON f.enabled = o.plan_id;
SET sqlite_shard_fdw.join_pushdown = off;
SELECT count(*) FROM orders o JOIN flags f ON f.enabled = o.plan_id;
RESET sqlite_shard_fdw.join_pushdown;

-- ===================================================================
-- A scoped login sees every plan, and only its tenants' orders
-- ===================================================================
CREATE ROLE regress_ref_scoped;
CREATE USER MAPPING FOR regress_ref_scoped SERVER ref_srv
  OPTIONS (tenants 't04');
GRANT SELECT ON orders, plans TO regress_ref_scoped;
SET ROLE regress_ref_scoped;
SELECT count(*) FROM plans;
SELECT o.tenant_id, p.name, count(*) FROM orders o JOIN plans p USING (plan_id)
  GROUP BY 1, 2 ORDER BY 1, 2;
SELECT p.name, count(o.id) FROM plans p LEFT JOIN orders o USING (plan_id)
  GROUP BY 1 ORDER BY 1;
SELECT DISTINCT o.tenant_id FROM plans p JOIN orders o USING (plan_id);
EXPLAIN (COSTS OFF)
SELECT DISTINCT o.tenant_id FROM plans p JOIN orders o USING (plan_id);
SELECT count(*) FROM orders o JOIN plans p USING (plan_id) WHERE o.tenant_id <> 't04';
RESET ROLE;

-- ===================================================================
-- ANALYZE reads the copy it reads from
-- ===================================================================
ANALYZE plans;
SELECT reltuples FROM pg_class WHERE oid = 'plans'::regclass;
SELECT attname, n_distinct FROM pg_stats WHERE tablename = 'plans'
  ORDER BY attname;

-- ===================================================================
-- Copies that differ: reference_check finds them
-- ===================================================================
SELECT * FROM reference_check('plans');
\! sqlite3 /tmp/ssfdw_regress/reference/shards/r3.db "UPDATE plans SET price = 999 WHERE plan_id = 4; INSERT INTO plans VALUES (6, 'legacy', 5);"
SELECT shard_id, rows, same FROM reference_check('plans');
SELECT shard_id, rows, same FROM reference_check('flags');
-- reads come from r1's copy; a pushed join uses each shard's own
SELECT * FROM plans ORDER BY plan_id;
SELECT o.tenant_id, sum(p.price) FROM orders o JOIN plans p USING (plan_id)
  WHERE o.tenant_id IN ('t02', 't03') GROUP BY 1 ORDER BY 1;
ALTER FOREIGN TABLE plans OPTIONS (ADD reference_shard 'r3');
SELECT shard_id, rows, same FROM reference_check('plans');
ALTER FOREIGN TABLE plans OPTIONS (DROP reference_shard);
-- refusals
SELECT * FROM reference_check('orders');
SELECT * FROM reference_check('orders_native');
SET ROLE regress_ref_scoped;
SELECT * FROM reference_check('flags');
RESET ROLE;

-- A reference table may have a column named like the tenant column (the
-- tenants' names): it belongs to no tenant all the same, so the tenant
-- tools neither count its rows, list them as orphans nor delete them
\! for k in 1 2 3; do sqlite3 /tmp/ssfdw_regress/reference/shards/r$k.db "CREATE TABLE tenant_names(tenant_id TEXT, label TEXT); INSERT INTO tenant_names VALUES ('t01', 'Acme'), ('t02', 'Globex')"; done
CREATE FOREIGN TABLE tenant_names (tenant_id text, label text)
  SERVER ref_srv OPTIONS (distribution 'reference');
SELECT count(*) AS orphan_rows FROM shard_orphans('ref_srv')
  WHERE table_name = 'tenant_names';
SELECT count(*) AS counted FROM tenant_stats('ref_srv')
  WHERE table_rows ? 'tenant_names';
SELECT tenant_remove('ref_srv', 't01', true) AS t01_rows_deleted;
SELECT shard_id, rows, same FROM reference_check('tenant_names');
SELECT * FROM tenant_names ORDER BY 1;

DROP USER MAPPING FOR regress_ref_scoped SERVER ref_srv;
REVOKE ALL ON orders, plans FROM regress_ref_scoped;
DROP ROLE regress_ref_scoped;
DROP FUNCTION ref_same(text);
DROP TABLE orders_native, plans_native, orders_tz_native;
DROP SERVER ref_srv CASCADE;
