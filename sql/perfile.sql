--
-- One SQLite file per tenant (server option layout 'file_per_tenant'): the
-- file is the tenant, and the foreign table's tenant column, which no file
-- stores, is the tenant of the file each row comes from.
-- See test/fixtures/perfile.sh for the fleets.
--
\! bash test/fixtures/perfile.sh
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
RESET client_min_messages;

-- ===================================================================
-- Options
-- ===================================================================
CREATE SERVER pf_flat FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/perfile/flat/directory.db',
           layout 'file_per_tenant', tenant_path 'tenants/%s.db');
CREATE SERVER pf_hashed FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/perfile/hashed/directory.db',
           layout 'file_per_tenant', tenant_path 'tenants/%2/%s.db');
CREATE SERVER pf_dir FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/perfile/dir/directory.db',
           layout 'file_per_tenant');
-- Bad patterns and combinations, when they are written.
CREATE SERVER pf_x FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/x.db', layout 'file_per_tenant',
           tenant_path 'tenants/%d.db');
CREATE SERVER pf_x FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/x.db', layout 'file_per_tenant',
           tenant_path 'tenants/%2.db');
CREATE SERVER pf_x FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/x.db', layout 'file_per_tenant',
           tenant_path 'tenants/%s/%s.db');
CREATE SERVER pf_x FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/x.db', layout 'file_per_tenant',
           tenant_path 'tenants/%2%s.db');
CREATE SERVER pf_x FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/x.db', layout 'file_per_tenant',
           tenant_path 'tenants/../%s.db');
CREATE SERVER pf_x FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/x.db', layout 'file_per_tenant',
           tenant_path 'tenants/%s/');
CREATE SERVER pf_x FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/x.db', tenant_path 'tenants/%s.db');
CREATE SERVER pf_x FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/x.db', layout 'file_per_tenant',
           tenant_path 'tenants/%s.db', shard_path 'shards/%s.db');
CREATE SERVER pf_x FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/x.db', layout 'per_file');

CREATE FOREIGN TABLE items (
  tenant_id text, order_id bigint, status text, amount_cents bigint,
  created_at timestamp
) SERVER pf_flat OPTIONS (table 'orders');
CREATE FOREIGN TABLE items_hashed (
  tenant_id text, order_id bigint, status text, amount_cents bigint,
  created_at timestamp
) SERVER pf_hashed OPTIONS (table 'orders');
CREATE FOREIGN TABLE items_dir (
  tenant_id text, order_id bigint, status text, amount_cents bigint,
  created_at timestamp
) SERVER pf_dir OPTIONS (table 'orders');

-- The same rows in a native table, with a stored tenant column.
CREATE TABLE items_load (tenant_id text, order_id bigint, status text,
  amount_cents bigint, created_at timestamp, customer_id int);
\copy items_load FROM '/tmp/ssfdw_regress/perfile/flat.csv' (FORMAT csv)
CREATE TABLE items_native AS
  SELECT tenant_id, order_id, status, amount_cents, created_at FROM items_load;
DROP TABLE items_load;
ANALYZE items_native;
\i test/regress_compare.sql

-- ===================================================================
-- Routed reads: a filter on the tenant picks files before any is opened
-- ===================================================================
EXPLAIN (VERBOSE, COSTS OFF)
SELECT * FROM items WHERE tenant_id = 't0003';
SELECT * FROM regress_same('SELECT * FROM {t} WHERE tenant_id = ''t0003''');
EXPLAIN (VERBOSE, COSTS OFF)
SELECT tenant_id, order_id FROM items
 WHERE tenant_id IN ('t0002', 't0007') AND amount_cents > 50000;
SELECT * FROM regress_same('SELECT tenant_id, order_id FROM {t}
  WHERE tenant_id IN (''t0002'', ''t0007'') AND amount_cents > 50000');
-- A tenant with no file reads nothing.
SELECT count(*) FROM items WHERE tenant_id = 't0999';
-- A file removed, then back: each statement looks.
SELECT count(*) FROM items WHERE tenant_id = 't0012';
\! mv /tmp/ssfdw_regress/perfile/flat/tenants/t0012.db /tmp/ssfdw_regress/perfile/flat/t0012.away
SELECT count(*) FROM items WHERE tenant_id = 't0012';
\! mv /tmp/ssfdw_regress/perfile/flat/t0012.away /tmp/ssfdw_regress/perfile/flat/tenants/t0012.db
SELECT count(*) FROM items WHERE tenant_id = 't0012';
-- A tenant id that cannot name a file is refused, naming it.
SELECT count(*) FROM items WHERE tenant_id = '../flat/tenants/t0001';
SELECT count(*) FROM items WHERE tenant_id = '';
-- Other conditions on the tenant do not route: every file is read.
EXPLAIN (VERBOSE, COSTS OFF)
SELECT count(*) FROM items WHERE tenant_id > 't0010';
SELECT * FROM regress_same('SELECT tenant_id, count(*) FROM {t}
  WHERE tenant_id > ''t0010'' GROUP BY tenant_id');

-- ===================================================================
-- Fan-out: aggregates, grouping and ordering by the tenant
-- ===================================================================
EXPLAIN (VERBOSE, COSTS OFF)
SELECT status, count(*), sum(amount_cents), avg(amount_cents),
       min(amount_cents), max(amount_cents)
  FROM items GROUP BY status;
SELECT * FROM regress_same('SELECT status, count(*), sum(amount_cents),
  avg(amount_cents), min(amount_cents), max(amount_cents)
  FROM {t} GROUP BY status');
EXPLAIN (VERBOSE, COSTS OFF)
SELECT tenant_id, count(*), max(created_at) FROM items GROUP BY tenant_id;
SELECT * FROM regress_same('SELECT tenant_id, count(*), max(created_at)
  FROM {t} GROUP BY tenant_id');
SELECT * FROM regress_same('SELECT tenant_id, sum(amount_cents) FROM {t}
  GROUP BY tenant_id ORDER BY 2 DESC LIMIT 3', true);
SELECT * FROM regress_same('SELECT tenant_id, order_id FROM {t}
  ORDER BY tenant_id DESC, order_id LIMIT 4', true);
SELECT * FROM regress_same('SELECT count(DISTINCT tenant_id) FROM {t}');
SELECT * FROM regress_same('SELECT tenant_id, status, count(*) FROM {t}
  WHERE tenant_id IN (''t0001'', ''t0012'') GROUP BY 1, 2');
-- A join on the tenant column.
SELECT * FROM regress_same('SELECT a.tenant_id, count(*) FROM {t} a
  JOIN {t} b ON a.tenant_id = b.tenant_id AND a.order_id = b.order_id
  GROUP BY 1');
-- Hashed folders and the directory name the same files' rows.
CREATE FUNCTION regress_groups(tab text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r text;
BEGIN
  EXECUTE format('SELECT string_agg(x, '' '' ORDER BY x) FROM (SELECT tenant_id
    || '':'' || count(*) || '':'' || sum(amount_cents) FROM %I
    GROUP BY tenant_id) s(x)', tab) INTO r;
  RETURN r;
END $$;
SELECT regress_groups('items_hashed') = regress_groups('items_native')
         AS hashed_same,
       regress_groups('items_dir') = regress_groups('items_native')
         AS dir_same;
DROP FUNCTION regress_groups(text);
EXPLAIN (VERBOSE, COSTS OFF)
SELECT * FROM items_hashed WHERE tenant_id = 't0005';
EXPLAIN (VERBOSE, COSTS OFF)
SELECT * FROM items_dir WHERE tenant_id = 't0005';
SELECT sum(amount_cents) FROM items_hashed WHERE tenant_id = 't0005';
SELECT sum(amount_cents) FROM items_dir WHERE tenant_id = 't0005';
SELECT sum(amount_cents) FROM items_native WHERE tenant_id = 't0005';

-- Schema drift: every 5th file lacks column customer_id.  A table that
-- reads it names the file and the column.
CREATE FOREIGN TABLE items_cust (tenant_id text, order_id bigint,
  customer_id int) SERVER pf_flat OPTIONS (table 'orders');
SELECT count(customer_id) FROM items_cust WHERE tenant_id = 't0004';
SELECT count(customer_id) FROM items_cust WHERE tenant_id = 't0005';
SELECT count(*) FROM items_cust;

-- ===================================================================
-- Writes: the row goes to its tenant's file, the tenant not written
-- ===================================================================
BEGIN;
INSERT INTO items VALUES ('t0004', 100001, 'new', 123, '2025-06-01 10:00')
  RETURNING tenant_id, order_id;
INSERT INTO items_native VALUES ('t0004', 100001, 'new', 123, '2025-06-01 10:00');
UPDATE items SET amount_cents = amount_cents + 1
 WHERE tenant_id = 't0004' AND status = 'paid'
 RETURNING tenant_id, order_id, amount_cents;
UPDATE items_native SET amount_cents = amount_cents + 1
 WHERE tenant_id = 't0004' AND status = 'paid';
DELETE FROM items WHERE tenant_id = 't0006' AND amount_cents < 30000
 RETURNING tenant_id, order_id;
DELETE FROM items_native WHERE tenant_id = 't0006' AND amount_cents < 30000;
-- row by row, identified in each file by its rowid
UPDATE items SET status = 'late' WHERE order_id % 7 = 0 AND random() < 2
 RETURNING tenant_id, order_id;
UPDATE items_native SET status = 'late' WHERE order_id % 7 = 0;
SELECT * FROM regress_same('SELECT tenant_id, status, count(*),
  sum(amount_cents) FROM {t} GROUP BY 1, 2');
-- A tenant without a file: nothing creates one.
INSERT INTO items VALUES ('t0999', 1, 'new', 1, '2025-06-01');
ROLLBACK;
BEGIN;
INSERT INTO items VALUES ('a/b', 1, 'new', 1, '2025-06-01');
ROLLBACK;
-- What a file holds of a row: no tenant column.
INSERT INTO items VALUES ('t0004', 100002, 'new', 7, '2025-06-02');
\! sqlite3 -header /tmp/ssfdw_regress/perfile/flat/tenants/t0004.db "SELECT * FROM orders WHERE order_id = 100002"
DELETE FROM items WHERE tenant_id = 't0004' AND order_id = 100002;
-- A row's tenant is its file: it cannot change.
UPDATE items SET tenant_id = 't0005' WHERE tenant_id = 't0004';
-- Row by row, rowids that do not fit beside the file's number in a ctid
-- (negative, or beyond 2^43 with 12 files read) are kept as records.
BEGIN;
INSERT INTO items VALUES ('t0004', 70368744177669, 'new', 1, '2025-06-01'),
  ('t0007', -5, 'new', 2, '2025-06-01');
WITH u AS (UPDATE items SET status = 'odd'
  WHERE (order_id < 0 OR order_id > 1e13) AND random() < 2
  RETURNING tenant_id, order_id, status)
SELECT * FROM u ORDER BY 1;
SELECT tenant_id, order_id, status, amount_cents FROM items
 WHERE order_id < 0 OR order_id > 1e13 ORDER BY 1;
WITH d AS (DELETE FROM items
  WHERE (order_id < 0 OR order_id > 1e13 OR order_id = 7) AND random() < 2
  RETURNING tenant_id, order_id)
SELECT * FROM d ORDER BY 1;
SELECT count(*) FROM items WHERE order_id < 0 OR order_id > 1e13;
ROLLBACK;

-- ===================================================================
-- Files that are not tenants, and files that cannot be read
-- ===================================================================
CREATE SERVER pf_bad FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/perfile/bad/directory.db',
           layout 'file_per_tenant', tenant_path 'tenants/%2/%s.db');
CREATE FOREIGN TABLE items_bad (tenant_id text, order_id bigint)
  SERVER pf_bad OPTIONS (table 'orders');
-- Misplaced and undecodable names are skipped with a warning; the file
-- that is not a database is an error naming its tenant.
SELECT tenant_id, count(*) FROM items_bad GROUP BY 1 ORDER BY 1;
SELECT tenant_id, count(*) FROM items_bad
 WHERE tenant_id IN ('t0001', 't0002', 't0003') GROUP BY 1 ORDER BY 1;
SELECT count(*) FROM items_bad WHERE tenant_id = 't0099';

CREATE SERVER pf_dirbad FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/perfile/dirbad/directory.db',
           layout 'file_per_tenant');
CREATE FOREIGN TABLE items_dirbad (tenant_id text, order_id bigint)
  SERVER pf_dirbad OPTIONS (table 'orders');
-- a file the directory names and that does not exist
SELECT count(*) FROM items_dirbad WHERE tenant_id = 'ghost';
-- a shard two tenants are mapped to
SELECT count(*) FROM items_dirbad WHERE tenant_id = 't0003';
SELECT count(*) FROM items_dirbad WHERE tenant_id = 't0002';

-- ===================================================================
-- Scoped logins see their tenants' files only
-- ===================================================================
CREATE ROLE regress_pf_two;
GRANT SELECT ON items, items_bad TO regress_pf_two;
GRANT UPDATE, DELETE ON items_bad TO regress_pf_two;
CREATE USER MAPPING FOR regress_pf_two SERVER pf_flat
  OPTIONS (tenants 't0002,t0003');
CREATE USER MAPPING FOR regress_pf_two SERVER pf_bad
  OPTIONS (tenants 't0001');
SET ROLE regress_pf_two;
EXPLAIN (COSTS OFF) SELECT count(*) FROM items;
SELECT tenant_id, count(*) FROM items GROUP BY 1 ORDER BY 1;
SELECT count(*) FROM items WHERE tenant_id = 't0005';
-- another tenant's unreadable file, and the misplaced names, stay unseen
SELECT tenant_id, count(*) FROM items_bad GROUP BY 1 ORDER BY 1;
-- ... by a row-by-row UPDATE or DELETE too, which lists no files
BEGIN;
UPDATE items_bad SET order_id = order_id + 1000
 WHERE order_id % 7 = 0 AND random() < 2 RETURNING tenant_id, order_id;
DELETE FROM items_bad WHERE order_id > 1000 AND random() < 2
 RETURNING tenant_id, order_id;
SELECT count(*) FROM items_bad;
ROLLBACK;
RESET ROLE;

-- ===================================================================
-- Clean up
-- ===================================================================
DROP USER MAPPING FOR regress_pf_two SERVER pf_flat;
DROP USER MAPPING FOR regress_pf_two SERVER pf_bad;
REVOKE SELECT ON items, items_bad FROM regress_pf_two;
REVOKE UPDATE, DELETE ON items_bad FROM regress_pf_two;
DROP ROLE regress_pf_two;
DROP FUNCTION regress_same(text, boolean);
DROP TABLE items_native;
DROP SERVER pf_flat, pf_hashed, pf_dir, pf_bad, pf_dirbad CASCADE;
