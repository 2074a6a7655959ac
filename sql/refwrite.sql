--
-- Writes to reference tables: INSERT, UPDATE, DELETE and COPY change every
-- shard's copy in one transaction, so that the copies stay alike
-- (reference_check), each statement beside the same on a native table;
-- what is refused: a row-by-row UPDATE or DELETE, a tenant-scoped role,
-- copies that do not change alike, a shard without the table.  See
-- test/fixtures/refwrite.sh.
--
\! bash test/fixtures/refwrite.sh
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
RESET client_min_messages;
CREATE SERVER rw_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/refwrite/directory.db');
CREATE FOREIGN TABLE plans (plan_id int, name text, price int, note text)
  SERVER rw_srv OPTIONS (distribution 'reference');
CREATE FOREIGN TABLE flags (name text, enabled int)
  SERVER rw_srv OPTIONS (distribution 'reference');
CREATE FOREIGN TABLE extras (k int, v text)
  SERVER rw_srv OPTIONS (distribution 'reference');
CREATE FOREIGN TABLE orders (tenant_id text, id int, plan_id int)
  SERVER rw_srv;
CREATE TABLE plans_native (plan_id int PRIMARY KEY, name text NOT NULL,
                           price int, note text DEFAULT 'none');
INSERT INTO plans_native (plan_id, name, price)
  VALUES (1, 'free', 0), (2, 'starter', 10), (3, 'team', 25),
         (4, 'enterprise', 40);
CREATE TABLE flags_native (name text, enabled int);
INSERT INTO flags_native VALUES ('beta', 1), ('dark_mode', 0);
\set VERBOSITY default

-- rw_run(statement): run statement with {t} standing for the foreign
-- table and for the native one (table: plans or flags); the rows each
-- changed, whether the two tables then hold the same rows, and whether
-- every shard's copy is alike.
CREATE FUNCTION rw_run(stmt text, tab text DEFAULT 'plans',
                       OUT foreign_rows bigint, OUT native_rows bigint,
                       OUT same boolean, OUT copies_alike boolean)
LANGUAGE plpgsql AS $$
DECLARE
  diff bigint;
BEGIN
  EXECUTE replace(stmt, '{t}', tab);
  GET DIAGNOSTICS foreign_rows = ROW_COUNT;
  EXECUTE replace(stmt, '{t}', tab || '_native');
  GET DIAGNOSTICS native_rows = ROW_COUNT;
  EXECUTE format('SELECT count(*) FROM ((TABLE %I EXCEPT ALL TABLE %I) UNION ALL (TABLE %I EXCEPT ALL TABLE %I)) d',
                 tab, tab || '_native', tab || '_native', tab) INTO diff;
  same := diff = 0;
  SELECT bool_and(r.same) INTO copies_alike FROM reference_check(tab::regclass) r;
END $$;
SELECT * FROM rw_run('SELECT 1');

-- ===================================================================
-- INSERT: the row in every copy; RETURNING reads the copy reads come from
-- ===================================================================
INSERT INTO plans VALUES (5, 'pro', 60) RETURNING *;
INSERT INTO plans_native VALUES (5, 'pro', 60) RETURNING *;
INSERT INTO plans (plan_id, name) VALUES (6, 'trial') RETURNING *;
INSERT INTO plans_native (plan_id, name) VALUES (6, 'trial') RETURNING *;
SELECT * FROM rw_run($$INSERT INTO {t} (plan_id, name, price)
  SELECT 10 + g, 'bulk' || g, g * 5 FROM generate_series(1, 5) g$$);
SELECT * FROM rw_run($$INSERT INTO {t} VALUES (1, 'again', 0) ON CONFLICT DO NOTHING$$);
SELECT shard_id, rows, same FROM reference_check('plans');
\! for k in 1 2 3; do sqlite3 /tmp/ssfdw_regress/refwrite/shards/r$k.db "SELECT count(*), sum(price), group_concat(note) FROM plans WHERE plan_id >= 5"; done
-- a key a copy already holds: nothing changes
INSERT INTO plans VALUES (2, 'dup', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM rw_run('SELECT 1');
-- a statement that reads the table it writes reads the copy reads come
-- from as it was when the statement started
SELECT * FROM rw_run($$INSERT INTO {t} SELECT plan_id + 100, name, price, note
  FROM {t} WHERE plan_id <= 4$$);
SELECT * FROM rw_run($$DELETE FROM {t} WHERE plan_id > 100$$);
-- reads from another copy: RETURNING and counts are that copy's
ALTER FOREIGN TABLE plans OPTIONS (ADD reference_shard 'r2');
INSERT INTO plans VALUES (7, 'r2 read', 7) RETURNING *;
INSERT INTO plans_native VALUES (7, 'r2 read', 7) RETURNING *;
UPDATE plans SET price = 8 WHERE plan_id = 7 RETURNING plan_id, price;
UPDATE plans_native SET price = 8 WHERE plan_id = 7 RETURNING plan_id, price;
SELECT * FROM rw_run($$DELETE FROM {t} WHERE plan_id = 7$$);
ALTER FOREIGN TABLE plans OPTIONS (DROP reference_shard);
-- batches
ALTER FOREIGN TABLE plans OPTIONS (ADD batch_size '3');
SELECT * FROM rw_run($$INSERT INTO {t} (plan_id, name, price)
  SELECT 20 + g, 'batch' || g, g FROM generate_series(1, 7) g$$);
ALTER FOREIGN TABLE plans OPTIONS (DROP batch_size);

-- ===================================================================
-- COPY
-- ===================================================================
COPY plans FROM STDIN;
30	copied	1	none
31	copied	2	\N
\.
COPY plans_native FROM STDIN;
30	copied	1	none
31	copied	2	\N
\.
SELECT * FROM rw_run('SELECT 1');

-- ===================================================================
-- UPDATE and DELETE: one statement per shard, each on its copy; the
-- count and RETURNING are those of the copy reads come from
-- ===================================================================
EXPLAIN (VERBOSE, COSTS OFF) UPDATE plans SET price = 99 WHERE plan_id = 5;
EXPLAIN (VERBOSE, COSTS OFF) INSERT INTO plans VALUES (7, 'x', 1);
UPDATE plans SET price = 99 WHERE plan_id = 5 RETURNING *;
UPDATE plans_native SET price = 99 WHERE plan_id = 5 RETURNING *;
SELECT * FROM rw_run($$UPDATE {t} SET name = 'gold', note = NULL WHERE price > 20$$);
SELECT * FROM rw_run($$UPDATE {t} SET price = 0 WHERE plan_id = 999$$);
WITH u AS (UPDATE plans SET note = 'x' WHERE plan_id BETWEEN 11 AND 13 RETURNING 1)
SELECT count(*) FROM u;
WITH u AS (UPDATE plans_native SET note = 'x' WHERE plan_id BETWEEN 11 AND 13 RETURNING 1)
SELECT count(*) FROM u;
DELETE FROM plans WHERE plan_id BETWEEN 20 AND 29 RETURNING plan_id, name;
DELETE FROM plans_native WHERE plan_id BETWEEN 20 AND 29 RETURNING plan_id, name;
SELECT * FROM rw_run($$DELETE FROM {t} WHERE name LIKE 'bulk%'$$);
SELECT * FROM rw_run($$DELETE FROM {t} WHERE plan_id >= 30$$);
SELECT shard_id, rows, same FROM reference_check('plans');
-- a pushed join reads each shard's copy: every tenant sees the new names
SELECT o.tenant_id, o.id, p.name FROM orders o JOIN plans p USING (plan_id)
  ORDER BY 1, 2;

-- a table without a primary key: rows found by the statement's conditions
SELECT * FROM rw_run($$INSERT INTO {t} VALUES ('dark_mode', 1), ('new_ui', 0)$$, 'flags');
SELECT * FROM rw_run($$UPDATE {t} SET enabled = 0 WHERE name = 'dark_mode'$$, 'flags');
SELECT * FROM rw_run($$DELETE FROM {t} WHERE enabled = 0$$, 'flags');
SELECT * FROM flags ORDER BY 1, 2;

-- ===================================================================
-- Transactions: the copies commit and roll back together
-- ===================================================================
BEGIN;
SELECT * FROM rw_run($$INSERT INTO {t} VALUES (40, 'tx', 1)$$);
SAVEPOINT sp;
SELECT * FROM rw_run($$DELETE FROM {t} WHERE plan_id <= 4$$);
ROLLBACK TO sp;
SELECT * FROM rw_run($$UPDATE {t} SET price = 2 WHERE plan_id = 40$$);
COMMIT;
BEGIN;
SELECT * FROM rw_run($$INSERT INTO {t} VALUES (41, 'gone', 1)$$);
ROLLBACK;
SELECT * FROM rw_run('SELECT 1');
\! for k in 1 2 3; do sqlite3 /tmp/ssfdw_regress/refwrite/shards/r$k.db "SELECT group_concat(plan_id || ':' || price) FROM (SELECT * FROM plans WHERE plan_id >= 40 ORDER BY 1)"; done

-- ===================================================================
-- Refused, before anything changes
-- ===================================================================
-- row by row: a row read from one copy cannot be found in the others
UPDATE plans SET price = (random() * 0)::int WHERE plan_id = 1;
\echo :LAST_ERROR_SQLSTATE
DELETE FROM plans WHERE plan_id IN (SELECT plan_id FROM plans_native WHERE price > 50);
\echo :LAST_ERROR_SQLSTATE
CREATE FUNCTION rw_trig() RETURNS trigger LANGUAGE plpgsql AS
  $$BEGIN RETURN NEW; END$$;
CREATE TRIGGER rw_trig BEFORE UPDATE ON plans
  FOR EACH ROW EXECUTE FUNCTION rw_trig();
UPDATE plans SET price = 1 WHERE plan_id = 1;
DROP TRIGGER rw_trig ON plans;
-- a tenant-scoped role reads a reference table but writes none
CREATE ROLE regress_rw_scoped;
CREATE USER MAPPING FOR regress_rw_scoped SERVER rw_srv OPTIONS (tenants 't1');
GRANT SELECT, INSERT, UPDATE, DELETE ON plans TO regress_rw_scoped;
SET ROLE regress_rw_scoped;
SELECT count(*) FROM plans;
INSERT INTO plans VALUES (50, 'mine', 1);
\echo :LAST_ERROR_SQLSTATE
UPDATE plans SET price = 1 WHERE plan_id = 1;
\echo :LAST_ERROR_SQLSTATE
DELETE FROM plans;
\echo :LAST_ERROR_SQLSTATE
COPY plans FROM STDIN;
\.
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
-- a shard without the table: the error names it, the other copies keep
-- nothing
INSERT INTO extras VALUES (1, 'one');
\echo :LAST_ERROR_SQLSTATE
UPDATE extras SET v = 'two';
\echo :LAST_ERROR_SQLSTATE
\! for k in 1 2; do sqlite3 /tmp/ssfdw_regress/refwrite/shards/r$k.db "SELECT count(*) FROM extras"; done
SELECT * FROM rw_run('SELECT 1');

-- copies that already differ may not change differently
\! sqlite3 /tmp/ssfdw_regress/refwrite/shards/r3.db "UPDATE plans SET price = 999 WHERE plan_id = 4; INSERT INTO plans(plan_id, name) VALUES (60, 'only_r3')"
SELECT shard_id, rows, same FROM reference_check('plans');
UPDATE plans SET note = 'big' WHERE price > 500;
\echo :LAST_ERROR_SQLSTATE
DELETE FROM plans WHERE plan_id = 60;
\echo :LAST_ERROR_SQLSTATE
INSERT INTO plans VALUES (60, 'everywhere', 1) ON CONFLICT DO NOTHING;
\echo :LAST_ERROR_SQLSTATE
-- a change every copy makes alike still runs
UPDATE plans SET note = 'ok' WHERE plan_id = 4;
SELECT shard_id, rows, same FROM reference_check('plans');
\! for k in 1 2 3; do sqlite3 /tmp/ssfdw_regress/refwrite/shards/r$k.db "SELECT price, note FROM plans WHERE plan_id = 4"; done

DROP USER MAPPING FOR regress_rw_scoped SERVER rw_srv;
REVOKE ALL ON plans FROM regress_rw_scoped;
DROP ROLE regress_rw_scoped;
DROP FUNCTION rw_run(text, text);
DROP FUNCTION rw_trig();
DROP TABLE plans_native, flags_native;
DROP SERVER rw_srv CASCADE;
