--
-- Schema drift between the files of a fleet of one SQLite file per tenant:
-- files made at different migrations lack a column, or the table.  The
-- options missing_column ('error' | 'null') and missing_table ('error' |
-- 'empty') of a foreign table or its server say how such a file is read.
-- See test/fixtures/drift.sh for the fleet.
--
\! bash test/fixtures/drift.sh
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
RESET client_min_messages;
\i test/regress_state.sql
\i test/regress_scan_node.sql

CREATE SERVER dr_flat FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/drift/flat/directory.db',
           layout 'file_per_tenant', tenant_path 'tenants/%s.db');
CREATE FOREIGN TABLE items (
  tenant_id text, order_id bigint, status text, amount_cents bigint,
  created_at timestamp, customer_id int
) SERVER dr_flat OPTIONS (table 'orders');

-- The same rows in a native table: NULL where a file lacks customer_id,
-- none of t0008, whose file has no table.
CREATE TABLE items_native (tenant_id text, order_id bigint, status text,
  amount_cents bigint, created_at timestamp, customer_id int);
\copy items_native FROM '/tmp/ssfdw_regress/drift/flat.csv' (FORMAT csv)
UPDATE items_native SET customer_id = NULL WHERE tenant_id IN ('t0003', 't0006');
DELETE FROM items_native WHERE tenant_id = 't0008';
ANALYZE items_native;
\i test/regress_compare.sql

-- ===================================================================
-- Options
-- ===================================================================
SELECT regress_state($$ALTER FOREIGN TABLE items OPTIONS (ADD missing_column 'zero')$$);
SELECT regress_state($$ALTER FOREIGN TABLE items OPTIONS (ADD missing_table 'skip')$$);
SELECT regress_state($$ALTER SERVER dr_flat OPTIONS (ADD missing_column 'nil')$$);
SELECT regress_state($$ALTER FOREIGN TABLE items ALTER COLUMN customer_id OPTIONS (ADD missing_column 'null')$$);

-- ===================================================================
-- The defaults: a file lacking the column or the table is an error
-- naming the file, the table and the column
-- ===================================================================
SELECT regress_state($$SELECT sum(customer_id) FROM items WHERE tenant_id IN ('t0001', 't0002', 't0003', 't0004')$$);
SELECT regress_state($$SELECT count(*) FROM items$$);
SELECT regress_state($$SELECT customer_id FROM items WHERE tenant_id = 't0006'$$);
-- columns every file has are read as ever
SELECT count(*), sum(amount_cents) FROM items
  WHERE tenant_id IN ('t0001', 't0002', 't0003', 't0004', 't0005', 't0006', 't0007');

-- ===================================================================
-- missing_column 'null': the file's SQL reads NULL for the column
-- ===================================================================
ALTER FOREIGN TABLE items OPTIONS (ADD missing_column 'null');
-- the table still errors where the file has no table
SELECT regress_state($$SELECT count(*) FROM items$$);
SELECT * FROM regress_same($$SELECT tenant_id, order_id, customer_id FROM {t} WHERE tenant_id IN ('t0001', 't0002', 't0003', 't0004', 't0005', 't0006', 't0007')$$)
  WHERE NOT same;
SELECT * FROM regress_same($$SELECT customer_id FROM {t} WHERE tenant_id = 't0003'$$);

-- ===================================================================
-- missing_table 'empty' (a server default here): the file reads no rows
-- ===================================================================
ALTER SERVER dr_flat OPTIONS (ADD missing_table 'empty');
SELECT count(*) FROM items WHERE tenant_id = 't0008';
SELECT * FROM regress_same($$SELECT count(*), sum(amount_cents) FROM {t}$$);
SELECT * FROM regress_same($$SELECT tenant_id, count(*) FROM {t} GROUP BY 1$$);

-- Conditions, aggregates, groups and orders on the missing column are
-- evaluated as on NULL, as the native table's NULLs are.
SELECT * FROM regress_same($$SELECT tenant_id, count(customer_id), sum(customer_id), min(customer_id), max(customer_id), avg(customer_id), count(*) FROM {t} GROUP BY 1$$);
SELECT * FROM regress_same($$SELECT count(*), count(customer_id), sum(customer_id) FROM {t}$$);
SELECT * FROM regress_same($$SELECT tenant_id, count(*) FROM {t} WHERE customer_id IS NULL GROUP BY 1$$);
SELECT * FROM regress_same($$SELECT tenant_id, count(*) FROM {t} WHERE customer_id IS NOT NULL GROUP BY 1$$);
SELECT * FROM regress_same($$SELECT tenant_id, count(*) FROM {t} WHERE customer_id > 250 OR amount_cents < 5000 GROUP BY 1$$);
SELECT * FROM regress_same($$SELECT tenant_id, count(*) FROM {t} WHERE NOT (customer_id < 250) GROUP BY 1$$);
SELECT * FROM regress_same($$SELECT tenant_id, count(*) FROM {t} WHERE coalesce(customer_id, -1) = -1 GROUP BY 1$$);
SELECT * FROM regress_same($$SELECT tenant_id, count(*) FROM {t} WHERE customer_id IN (1, 2, 3) OR customer_id IS NULL GROUP BY 1$$);
SELECT * FROM regress_same($$SELECT customer_id IS NULL, count(*), sum(amount_cents) FROM {t} GROUP BY 1$$);
SELECT * FROM regress_same($$SELECT count(*) FROM (SELECT customer_id, count(*) FROM {t} GROUP BY 1) g$$);
SELECT * FROM regress_same($$SELECT tenant_id, order_id, customer_id FROM {t} ORDER BY customer_id NULLS FIRST, order_id LIMIT 12$$, true);
SELECT * FROM regress_same($$SELECT tenant_id, order_id, customer_id FROM {t} ORDER BY customer_id DESC NULLS LAST, order_id LIMIT 5$$, true);
SELECT * FROM regress_same($$SELECT tenant_id, sum(customer_id) FROM {t} GROUP BY 1 ORDER BY 2 NULLS FIRST, 1 LIMIT 4$$, true);
SELECT * FROM regress_same($$SELECT count(*) FROM {t} WHERE tenant_id IN ('t0003', 't0004', 't0008') AND customer_id IS NULL$$);

-- EXPLAIN ANALYZE counts the files read around their schema.
SELECT n -> 'Files Missing Columns' AS missing_columns,
       n -> 'Files Without Table' AS without_table
  FROM regress_scan_node('SELECT sum(customer_id) FROM items') n;
SELECT n -> 'Files Missing Columns' AS missing_columns,
       n -> 'Files Without Table' AS without_table
  FROM regress_scan_node($$SELECT sum(amount_cents) FROM items WHERE tenant_id IN ('t0001', 't0002')$$) n;

-- A file's missing column cannot be written: the error names it.
SELECT regress_state($$UPDATE items SET customer_id = 7 WHERE tenant_id = 't0003'$$);

-- The table's option overrides the server's.
ALTER FOREIGN TABLE items OPTIONS (ADD missing_table 'error');
SELECT regress_state($$SELECT count(*) FROM items$$);
ALTER FOREIGN TABLE items OPTIONS (DROP missing_table, SET missing_column 'error');
SELECT regress_state($$SELECT count(customer_id) FROM items$$);
SELECT count(*) FROM items;

-- ===================================================================
-- shard_schemas: the declarations of table orders across the files
-- ===================================================================
SELECT * FROM shard_schemas('dr_flat', 'orders');
SELECT * FROM shard_schemas('dr_flat', 'notes');
SELECT regress_state($$SELECT * FROM shard_schemas('dr_flat', NULL)$$);
SELECT regress_state($$SELECT * FROM shard_schemas('nope', 'orders')$$);
-- a role scoped to some tenants learns nothing of the others' files
CREATE ROLE regress_dr_one;
CREATE USER MAPPING FOR regress_dr_one SERVER dr_flat OPTIONS (tenants 't0001');
GRANT SELECT ON items TO regress_dr_one;
SET ROLE regress_dr_one;
SELECT regress_state($$SELECT * FROM shard_schemas('dr_flat', 'orders')$$);
RESET ROLE;
GRANT EXECUTE ON FUNCTION shard_schemas(name, text) TO regress_dr_one;
GRANT USAGE ON FOREIGN SERVER dr_flat TO regress_dr_one;
SET ROLE regress_dr_one;
SELECT regress_state($$SELECT * FROM shard_schemas('dr_flat', 'orders')$$);
SELECT count(*) FROM items;
RESET ROLE;

-- ===================================================================
-- The shared layout reads shards so too
-- ===================================================================
CREATE SERVER dr_shared FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/drift/shared/directory.db');
CREATE FOREIGN TABLE sh_orders (tenant_id text, order_id bigint,
  amount bigint, customer_id bigint)
  SERVER dr_shared OPTIONS (table 'orders');
SELECT regress_state($$SELECT sum(customer_id) FROM sh_orders WHERE tenant_id IN ('a', 'c')$$);
ALTER FOREIGN TABLE sh_orders OPTIONS (ADD missing_column 'null', missing_table 'empty');
SELECT * FROM sh_orders ORDER BY order_id;
SELECT tenant_id, count(*), count(customer_id), sum(customer_id)
  FROM sh_orders GROUP BY 1 ORDER BY 1;
SELECT count(*) FROM sh_orders WHERE customer_id IS NULL;
SELECT count(*) FROM sh_orders WHERE tenant_id = 'c' AND customer_id > 0;
SELECT n -> 'Shards Missing Columns' AS missing_columns,
       n -> 'Shards Without Table' AS without_table
  FROM regress_scan_node('SELECT * FROM sh_orders') n;
SELECT columns, shards, example_shard FROM shard_schemas('dr_shared', 'orders');
DROP SERVER dr_shared CASCADE;

-- ===================================================================
-- Many files, drifted ones among them, in one fan-out: the files planned
-- alike share one statement text, a drifted file has its own, also when
-- the scan runs again (the same values, or new ones), with the tenants of
-- a list, and under a scoped login.  Compared with a native table, under
-- the names regress_same reads (dr_flat's tables renamed meanwhile).
-- ===================================================================
ALTER FOREIGN TABLE items RENAME TO flat_items;
ALTER TABLE items_native RENAME TO flat_items_native;
CREATE SERVER dr_many FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/drift/many/directory.db',
           layout 'file_per_tenant', tenant_path 'tenants/%2/%s.db',
           missing_table 'empty');
CREATE FOREIGN TABLE items (
  tenant_id text, order_id bigint, status text, amount_cents bigint,
  created_at timestamp, customer_id int
) SERVER dr_many OPTIONS (table 'orders', missing_column 'null');
CREATE TABLE items_native (tenant_id text, order_id bigint, status text,
  amount_cents bigint, created_at timestamp, customer_id int);
\copy items_native FROM '/tmp/ssfdw_regress/drift/many.csv' (FORMAT csv)
UPDATE items_native SET customer_id = NULL
  WHERE substr(tenant_id, 2)::int % 7 = 0;
DELETE FROM items_native WHERE tenant_id IN ('t0100', 't0250');
ANALYZE items_native;
SELECT count(*), count(customer_id), count(DISTINCT tenant_id) FROM items_native;

SELECT * FROM regress_same($$SELECT count(*), count(customer_id), sum(customer_id), sum(amount_cents) FROM {t}$$);
SELECT * FROM regress_same($$SELECT status, count(*), count(customer_id), min(customer_id), max(customer_id), round(avg(customer_id), 6) FROM {t} GROUP BY 1$$);
SELECT * FROM regress_same($$SELECT customer_id IS NULL, count(*), sum(amount_cents) FROM {t} GROUP BY 1$$);
SELECT * FROM regress_same($$SELECT tenant_id, order_id, customer_id FROM {t} WHERE customer_id > 495 OR (customer_id IS NULL AND amount_cents > 99000)$$);
SELECT n -> 'Files Missing Columns' AS missing_columns,
       n -> 'Files Without Table' AS without_table
  FROM regress_scan_node('SELECT sum(customer_id) FROM items') n;

-- the scan read again with the same values (a nested loop's inner side),
-- and with new ones (a lateral reference): each file's statement kept
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_material = off;
EXPLAIN (COSTS OFF)
SELECT g, x.* FROM generate_series(0, 3) g LEFT JOIN (SELECT tenant_id, count(customer_id) AS n, sum(customer_id) AS s FROM items GROUP BY 1 OFFSET 0) x ON x.n >= g AND x.tenant_id IN ('t0007', 't0008', 't0100', 't0399');
SELECT * FROM regress_same($$SELECT g, x.* FROM generate_series(0, 3) g LEFT JOIN (SELECT tenant_id, count(customer_id) AS n, sum(customer_id) AS s FROM {t} GROUP BY 1 OFFSET 0) x ON x.n >= g AND x.tenant_id IN ('t0007', 't0008', 't0100', 't0399')$$);
SELECT * FROM regress_same($$SELECT v.t, x.* FROM (VALUES ('t0006'), ('t0007'), ('t0100'), ('t0014')) v(t), LATERAL (SELECT count(*), count(customer_id), sum(customer_id) FROM {t} WHERE tenant_id IN (v.t, 't0021', 't0022')) x$$);
SELECT * FROM regress_same($$SELECT v.t, x.* FROM (VALUES (1), (250), (490)) v(t), LATERAL (SELECT count(*), count(customer_id), sum(amount_cents) FROM {t} WHERE customer_id > v.t OR customer_id IS NULL) x$$);
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET enable_material;

-- the tenants of a list, and of a scoped login, drifted ones among them
SELECT * FROM regress_same($$SELECT tenant_id, count(*), count(customer_id), sum(customer_id) FROM {t} WHERE tenant_id IN ('t0001', 't0007', 't0014', 't0015', 't0100', 't0250', 't0399') GROUP BY 1$$);
CREATE USER MAPPING FOR regress_dr_one SERVER dr_many
  OPTIONS (tenants 't0006,t0007,t0008,t0014,t0100');
GRANT SELECT ON items TO regress_dr_one;
GRANT USAGE ON FOREIGN SERVER dr_many TO regress_dr_one;
SET ROLE regress_dr_one;
SELECT tenant_id, count(*), count(customer_id) FROM items GROUP BY 1 ORDER BY 1;
RESET ROLE;
SELECT tenant_id, count(*), count(customer_id) FROM items_native
  WHERE tenant_id IN ('t0006', 't0007', 't0008', 't0014', 't0100')
  GROUP BY 1 ORDER BY 1;
DROP USER MAPPING FOR regress_dr_one SERVER dr_many;
REVOKE SELECT ON items FROM regress_dr_one;
REVOKE USAGE ON FOREIGN SERVER dr_many FROM regress_dr_one;
DROP TABLE items_native;
DROP SERVER dr_many CASCADE;
ALTER FOREIGN TABLE flat_items RENAME TO items;
ALTER TABLE flat_items_native RENAME TO items_native;

-- ===================================================================
-- Clean up
-- ===================================================================
DROP USER MAPPING FOR regress_dr_one SERVER dr_flat;
REVOKE SELECT ON items FROM regress_dr_one;
REVOKE EXECUTE ON FUNCTION shard_schemas(name, text) FROM regress_dr_one;
REVOKE USAGE ON FOREIGN SERVER dr_flat FROM regress_dr_one;
DROP ROLE regress_dr_one;
DROP FUNCTION regress_same(text, boolean);
DROP FUNCTION regress_state(text);
DROP FUNCTION regress_scan_node(text);
DROP TABLE items_native;
DROP SERVER dr_flat CASCADE;
