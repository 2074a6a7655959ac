--
-- Row-by-row UPDATE and DELETE of WITHOUT ROWID tables: the scan reads each
-- shard's primary key with the rows, keeps the key values as SQLite stored
-- them, and each row is changed by its key and tenant.  Compared all along
-- with a native table holding the same rows.  See test/fixtures/keyed.sh.
--
\! bash test/fixtures/keyed.sh
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
RESET client_min_messages;
CREATE SERVER keyed_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/keyed/directory.db');
CREATE FOREIGN TABLE items (tenant_id text, sku text, n bigint, qty bigint,
  label text) SERVER keyed_srv;
CREATE TABLE items_n (tenant_id text, sku text, n bigint,
  qty bigint CHECK (qty >= 0), label text, PRIMARY KEY (tenant_id, sku, n));
INSERT INTO items_n SELECT * FROM items;
-- the foreign table and the native one hold the same rows
\i test/regress_items_same.sql
SELECT count(*), regress_same() FROM items;
\set VERBOSITY default

-- ===================================================================
-- Routed: the key of a WITHOUT ROWID shard, with RETURNING
-- ===================================================================
-- (a condition PostgreSQL evaluates makes the change row by row)
EXPLAIN (VERBOSE, COSTS OFF)
UPDATE items SET qty = qty + 1 WHERE tenant_id = 'acme' AND label ~ 'a';
WITH u AS (UPDATE items SET qty = qty + 1, label = label || '!'
           WHERE tenant_id = 'acme' AND label ~ 'a' RETURNING *)
SELECT * FROM u ORDER BY sku, n;
WITH u AS (UPDATE items_n SET qty = qty + 1, label = label || '!'
           WHERE tenant_id = 'acme' AND label ~ 'a' RETURNING *)
SELECT * FROM u ORDER BY sku, n;
SELECT regress_same();
-- tenant 42 has a row with acme's key ('a', 1) on the same shard: untouched
\! bash test/fixtures/keyed.sh peek s1 "SELECT tenant_id, typeof(sku), sku, n, qty, label FROM items ORDER BY 1, 3, 4"
-- a key column itself changes, found by its old value
UPDATE items SET n = n + 100 WHERE tenant_id = '42' AND label ~ '.';
UPDATE items_n SET n = n + 100 WHERE tenant_id = '42' AND label ~ '.';
SELECT regress_same();
-- the sku stored as text '42' (written as an integer into a TEXT column)
DELETE FROM items WHERE tenant_id = 'acme' AND sku ~ '^4' RETURNING *;
DELETE FROM items_n WHERE tenant_id = 'acme' AND sku ~ '^4' RETURNING *;
SELECT regress_same();

-- ===================================================================
-- Every shard: keyed (s1, s3, the key in another order) and rowid (s2)
-- ===================================================================
WITH u AS (UPDATE items SET qty = qty * 2 WHERE label ~ 'i'
           RETURNING tenant_id, sku, n, qty)
SELECT * FROM u ORDER BY 1, 2, 3;
WITH u AS (UPDATE items_n SET qty = qty * 2 WHERE label ~ 'i'
           RETURNING tenant_id, sku, n, qty)
SELECT * FROM u ORDER BY 1, 2, 3;
SELECT regress_same();
WITH d AS (DELETE FROM items WHERE sku ~ '^a' RETURNING tenant_id, sku, n)
SELECT * FROM d ORDER BY 1, 2, 3;
WITH d AS (DELETE FROM items_n WHERE sku ~ '^a' RETURNING tenant_id, sku, n)
SELECT * FROM d ORDER BY 1, 2, 3;
SELECT regress_same();
\! bash test/fixtures/keyed.sh peek s3 "SELECT n, sku, tenant_id, qty FROM items ORDER BY 1, 2"

-- ===================================================================
-- Transactions: rolled back, and a savepoint rolled back to
-- ===================================================================
BEGIN;
DELETE FROM items WHERE label ~ '.';
SELECT count(*) FROM items;
ROLLBACK;
SELECT regress_same();
BEGIN;
UPDATE items SET label = 'kept' WHERE tenant_id = 'initech' AND label ~ 't';
SAVEPOINT s;
DELETE FROM items WHERE tenant_id = 'initech' AND label ~ '.';
ROLLBACK TO SAVEPOINT s;
COMMIT;
UPDATE items_n SET label = 'kept' WHERE tenant_id = 'initech' AND label ~ 't';
SELECT regress_same();

-- ===================================================================
-- Errors: a constraint of the shard, a view with neither rowid nor key
-- ===================================================================
UPDATE items SET qty = qty - 100 WHERE tenant_id = 'globex' AND label ~ 'r';
UPDATE items SET qty = qty - 100 WHERE tenant_id = '42' AND label ~ 'z';
SELECT regress_same();
CREATE FOREIGN TABLE vitems (tenant_id text, sku text, n bigint, qty bigint,
  label text) SERVER keyed_srv;
SELECT count(*) FROM vitems WHERE tenant_id = 'acme';
UPDATE vitems SET qty = 0 WHERE tenant_id = 'acme' AND label ~ '.';
DROP FOREIGN TABLE vitems;

-- ===================================================================
-- Keys are the values SQLite stored, never converted: the untyped key
-- column of loose holds 7, '7' and 7.5, which PostgreSQL reads as text
-- ===================================================================
CREATE FOREIGN TABLE loose (tenant_id text, k text, v text)
  SERVER keyed_srv;
SELECT * FROM loose ORDER BY v;
UPDATE loose SET v = v || '!' WHERE tenant_id = 'acme' AND v ~ '^text'
  RETURNING *;
DELETE FROM loose WHERE tenant_id = 'acme' AND v ~ '^int' RETURNING *;
\! bash test/fixtures/keyed.sh peek s1 "SELECT typeof(k), k, v FROM loose ORDER BY v"

-- The key compares with its own collation, not the column's: sku of coll
-- is NOCASE, its key BINARY, so 'A' and 'a' are two rows and a change of
-- one leaves the other (it used to change both)
CREATE FOREIGN TABLE coll (tenant_id text, sku text, v text)
  SERVER keyed_srv;
BEGIN;
UPDATE coll SET v = v || '!' WHERE tenant_id = 'acme' AND sku ~ '^A$';
DELETE FROM coll WHERE tenant_id = 'acme' AND sku ~ '^a$';
SELECT * FROM coll ORDER BY sku COLLATE "C";
ROLLBACK;
EXPLAIN (VERBOSE, COSTS OFF)
DELETE FROM coll WHERE tenant_id = 'acme' AND sku ~ '^a$';

-- ===================================================================
-- A scoped login changes only its tenant's rows, whatever it asks
-- ===================================================================
CREATE ROLE regress_keyed_hostile;
GRANT SELECT, UPDATE, DELETE ON items TO regress_keyed_hostile;
CREATE USER MAPPING FOR regress_keyed_hostile SERVER keyed_srv
  OPTIONS (tenants 'acme');
SET ROLE regress_keyed_hostile;
UPDATE items SET label = 'pwned' WHERE label ~ '.' RETURNING tenant_id, sku;
UPDATE items SET label = 'pwned' WHERE tenant_id IN ('42', 'globex')
  AND label ~ '.' RETURNING tenant_id;
DELETE FROM items WHERE tenant_id <> 'acme' AND label ~ '.'
  RETURNING tenant_id;
DELETE FROM items WHERE label ~ 'nothing' OR tenant_id = 'initech'
  RETURNING tenant_id;
RESET ROLE;
SELECT tenant_id, count(*) FILTER (WHERE label = 'pwned') AS pwned,
  count(*) FROM items GROUP BY 1 ORDER BY 1;
\! bash test/fixtures/keyed.sh peek s1 "SELECT tenant_id, label FROM items ORDER BY 1, 2"
DROP USER MAPPING FOR regress_keyed_hostile SERVER keyed_srv;
REVOKE ALL ON items FROM regress_keyed_hostile;
DROP ROLE regress_keyed_hostile;

-- ===================================================================
-- Clean up
-- ===================================================================
DROP FUNCTION regress_same();
DROP TABLE items_n;
DROP SERVER keyed_srv CASCADE;
