--
-- Writes: INSERT, multi-row INSERT, INSERT ... SELECT, COPY and batch
-- insert, each row to the shard of its tenant, inside shard transactions
-- that commit and roll back with PostgreSQL's.  See test/fixtures/writes.sh.
-- "\! bash test/fixtures/writes_peek.sh SHARD SQL" shows what a shard holds.
--
\! bash test/fixtures/writes.sh
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
RESET client_min_messages;
CREATE SERVER writes_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/writes/directory.db');
CREATE FOREIGN TABLE orders (tenant_id text, order_id bigint, status text,
  amount_cents bigint, note text) SERVER writes_srv;
CREATE FOREIGN TABLE customers (tenant_id text, customer_id bigint, name text)
  SERVER writes_srv;
CREATE FOREIGN TABLE invoices (tenant_id text, invoice_id bigint,
  customer_id bigint) SERVER writes_srv;
CREATE FOREIGN TABLE ledger (tenant_id text, entry_id bigint,
  customer_id bigint) SERVER writes_srv;
\set VERBOSITY default

-- ===================================================================
-- INSERT routes each row to its tenant's shard
-- ===================================================================
INSERT INTO orders (tenant_id, amount_cents, note) VALUES ('acme', 100, 'first');
-- SQLite assigns the INTEGER PRIMARY KEY and applies its defaults.
INSERT INTO orders (tenant_id, amount_cents) VALUES ('globex', 250)
  RETURNING order_id, status, amount_cents;
INSERT INTO orders VALUES ('acme', 10, 'paid', 300, 'second'),
  ('globex', 11, 'paid', 400, 'third'), ('acme', 12, 'void', 0, NULL)
  RETURNING *;
\! bash test/fixtures/writes_peek.sh s1 "SELECT * FROM orders ORDER BY order_id"
\! bash test/fixtures/writes_peek.sh s2 "SELECT * FROM orders ORDER BY order_id"
SELECT * FROM orders ORDER BY order_id, tenant_id;
-- MIGRATING writes go to the source, DONE to the target.
INSERT INTO orders (tenant_id, order_id, amount_cents) VALUES
  ('moving', 20, 1), ('done', 21, 2);
\! bash test/fixtures/writes_peek.sh s1 "SELECT tenant_id, order_id FROM orders WHERE order_id >= 20"
\! bash test/fixtures/writes_peek.sh s2 "SELECT tenant_id, order_id FROM orders WHERE order_id >= 20"
EXPLAIN (VERBOSE, COSTS OFF)
INSERT INTO orders (tenant_id, amount_cents) VALUES ('acme', 1) RETURNING order_id;

-- INSERT ... SELECT from a native table and from a foreign table.
CREATE TABLE native_orders (tenant_id text, amount_cents bigint, note text);
INSERT INTO native_orders VALUES ('acme', 500, 'from native'),
  ('globex', 600, 'from native');
INSERT INTO orders (tenant_id, amount_cents, note)
  SELECT tenant_id, amount_cents, note FROM native_orders;
INSERT INTO customers (tenant_id, customer_id, name)
  SELECT tenant_id, order_id, 'customer ' || order_id FROM orders
  WHERE order_id IN (10, 11);
SELECT * FROM customers ORDER BY tenant_id;
SELECT tenant_id, count(*), sum(amount_cents) FROM orders GROUP BY 1 ORDER BY 1;

-- COPY writes every column: one it does not list is NULL, or the foreign
-- table's default.
COPY orders (tenant_id, order_id, amount_cents, note) FROM STDIN;
acme	100	1	copy 0
\.
ALTER FOREIGN TABLE orders ALTER COLUMN status SET DEFAULT 'new';
-- COPY, batched.
ALTER FOREIGN TABLE orders OPTIONS (ADD batch_size '2');
COPY orders (tenant_id, order_id, amount_cents, note) FROM STDIN;
acme	100	1	copy 1
globex	101	2	copy 2
acme	102	3	copy 3
globex	103	4	copy 4
acme	104	5	copy 5
\.
-- A COPY inserts each shard's rows in batches (batch_size rows), each in
-- the order of the shard's primary key; a row that fails is reported with
-- its tenant and COPY line, when its batch is inserted: at the end of the
-- first COPY, and in the middle of the second, whose fifth line fills its
-- shard's batch.  Nothing of a failed COPY stays.
COPY orders (tenant_id, order_id, amount_cents, note) FROM STDIN;
acme	112	1	copy 12
globex	111	1	copy 11
acme	110	1	copy 10
acme	110	1	copy 10 again
globex	113	1	copy 13
\.
COPY orders (tenant_id, order_id, amount_cents, note) FROM STDIN;
acme	112	1	copy 12
globex	111	1	copy 11
acme	110	1	copy 10
acme	113	1	copy 13
globex	111	1	copy 11 again
globex	116	1	copy 16
\.
SELECT count(*) FROM orders WHERE order_id BETWEEN 110 AND 119;
COPY orders (tenant_id, order_id, amount_cents, note) FROM STDIN;
acme	112	1	copy 12
globex	111	1	copy 11
acme	110	1	copy 10
globex	115	1	copy 15
globex	113	1	copy 13
acme	114	1	copy 14
\.
\! bash test/fixtures/writes_peek.sh s1 "SELECT order_id, tenant_id, note FROM orders WHERE order_id BETWEEN 110 AND 119 ORDER BY order_id"
\! bash test/fixtures/writes_peek.sh s2 "SELECT order_id, tenant_id, note FROM orders WHERE order_id BETWEEN 110 AND 119 ORDER BY order_id"
DELETE FROM orders WHERE order_id BETWEEN 110 AND 119;
INSERT INTO orders (tenant_id, amount_cents, note)
  SELECT CASE WHEN i % 2 = 0 THEN 'acme' ELSE 'globex' END, i, 'batch ' || i
  FROM generate_series(1, 2500) i;
SELECT tenant_id, count(*) FROM orders WHERE note LIKE 'batch %' OR note LIKE 'copy %'
  GROUP BY 1 ORDER BY 1;
ALTER FOREIGN TABLE orders OPTIONS (DROP batch_size);
ALTER FOREIGN TABLE orders OPTIONS (ADD batch_size '0');
ALTER SERVER writes_srv OPTIONS (ADD batch_size 'many');

-- ===================================================================
-- ON CONFLICT
-- ===================================================================
INSERT INTO orders VALUES ('acme', 10, 'dup', 1, 'dup') ON CONFLICT DO NOTHING;
INSERT INTO orders VALUES ('acme', 10, 'dup', 1, 'dup') ON CONFLICT DO NOTHING
  RETURNING order_id;
INSERT INTO orders VALUES ('acme', 10, 'dup', 1, 'dup'), ('acme', 30, 'new', 1, 'not dup')
  ON CONFLICT DO NOTHING;
INSERT INTO orders VALUES ('acme', 10, 'dup', 1, 'dup')
  ON CONFLICT (order_id) DO NOTHING;
INSERT INTO orders VALUES ('acme', 10, 'dup', 1, 'dup')
  ON CONFLICT (order_id) DO UPDATE SET status = 'x';

-- ===================================================================
-- Refusals: nothing of the statement is written
-- ===================================================================
INSERT INTO orders (tenant_id, amount_cents) VALUES ('nobody', 2);
INSERT INTO orders (tenant_id, amount_cents) VALUES ('acme', -3);
-- The SQLSTATE and message of each refusal.
CREATE FUNCTION regress_sqlstate(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE q;
  RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
SELECT regress_sqlstate($$INSERT INTO orders (tenant_id, amount_cents) VALUES ('acme', 1), ('nobody', 2)$$);
SELECT regress_sqlstate($$INSERT INTO orders (tenant_id, amount_cents) VALUES ('acme', 1), (NULL, 2)$$);
SELECT regress_sqlstate($$INSERT INTO orders (tenant_id, status) VALUES ('acme', NULL)$$);
SELECT regress_sqlstate($$INSERT INTO orders (tenant_id, amount_cents) VALUES ('acme', 7777), ('globex', -1)$$);
SELECT regress_sqlstate($$INSERT INTO orders (tenant_id, order_id, amount_cents) VALUES ('globex', 11, 1)$$);
SELECT regress_sqlstate($$INSERT INTO orders (tenant_id, amount_cents, note) VALUES ('acme', 1, 'first')$$);
SELECT regress_sqlstate($$INSERT INTO invoices VALUES ('acme', 1, 999)$$);
SELECT count(*) FROM orders WHERE amount_cents = 7777;

-- ===================================================================
-- Transactions
-- ===================================================================
BEGIN;
INSERT INTO orders (tenant_id, order_id, amount_cents) VALUES ('acme', 1000040, 1);
SELECT order_id FROM orders WHERE tenant_id = 'acme' AND order_id = 1000040;
ROLLBACK;
SELECT count(*) FROM orders WHERE order_id = 1000040;
BEGIN;
INSERT INTO orders (tenant_id, order_id, amount_cents) VALUES ('acme', 1000041, 1);
INSERT INTO orders (tenant_id, order_id, amount_cents) VALUES ('globex', 1000042, 1);
SAVEPOINT a;
INSERT INTO orders (tenant_id, order_id, amount_cents) VALUES ('acme', 1000043, 1);
INSERT INTO orders (tenant_id, order_id, amount_cents) VALUES ('globex', 1000044, 1);
ROLLBACK TO a;
INSERT INTO orders (tenant_id, order_id, amount_cents) VALUES ('acme', 1000045, 1);
SAVEPOINT b;
INSERT INTO orders (tenant_id, order_id, amount_cents) VALUES ('globex', 1000046, 1);
RELEASE b;
SELECT tenant_id, order_id FROM orders WHERE order_id BETWEEN 1000040 AND 1000049 ORDER BY 2;
COMMIT;
SELECT tenant_id, order_id FROM orders WHERE order_id BETWEEN 1000040 AND 1000049 ORDER BY 2;
-- A failed statement inside a PL/pgSQL exception block undoes its writes.
DO $$
BEGIN
  INSERT INTO orders (tenant_id, order_id, amount_cents) VALUES ('acme', 1000050, 1);
  BEGIN
    INSERT INTO orders (tenant_id, order_id, amount_cents) VALUES ('globex', 1000051, 1);
    INSERT INTO orders (tenant_id, order_id, amount_cents) VALUES ('acme', 1000052, -5);
  EXCEPTION WHEN check_violation THEN
    RAISE NOTICE 'caught %', SQLERRM;
  END;
END $$;
SELECT tenant_id, order_id FROM orders WHERE order_id BETWEEN 1000050 AND 1000059 ORDER BY 2;
-- An error rolls back every shard the transaction wrote.
BEGIN;
INSERT INTO orders (tenant_id, order_id, amount_cents) VALUES ('acme', 1000060, 1);
INSERT INTO orders (tenant_id, order_id, amount_cents) VALUES ('globex', 1000061, 1);
SELECT 1 / 0;
COMMIT;
SELECT count(*) FROM orders WHERE order_id BETWEEN 1000060 AND 1000069;
-- No two-phase commit.
BEGIN;
INSERT INTO orders (tenant_id, order_id, amount_cents) VALUES ('acme', 1000070, 1);
PREPARE TRANSACTION 'w';
SELECT count(*) FROM orders WHERE order_id = 1000070;
-- A shard that cannot commit: the deferred foreign key of s2 is not
-- satisfied.  That is found before any shard commits: nothing commits.
INSERT INTO customers VALUES ('acme', 1, 'a'), ('globex', 1, 'g');
BEGIN;
INSERT INTO ledger VALUES ('acme', 1000001, 1);
INSERT INTO ledger VALUES ('globex', 1000002, 99);
COMMIT;
SELECT * FROM ledger ORDER BY entry_id;

-- SQLite may roll back a whole shard transaction under a savepoint (an
-- interrupt, a full disk, a trigger's RAISE(ROLLBACK)): the transaction
-- may then neither write that shard again nor commit.
CREATE FOREIGN TABLE fragile (tenant_id text, id bigint, v int)
  SERVER writes_srv;
BEGIN;
INSERT INTO fragile VALUES ('acme', 1, 1);
SAVEPOINT a;
INSERT INTO fragile VALUES ('acme', 2, 999);
ROLLBACK TO a;
INSERT INTO fragile VALUES ('acme', 3, 3);
ROLLBACK;
BEGIN;
INSERT INTO fragile VALUES ('acme', 4, 4), ('globex', 5, 5);
SAVEPOINT a;
INSERT INTO fragile VALUES ('acme', 6, 999);
ROLLBACK TO a;
COMMIT;
SELECT * FROM fragile;
DO $$
BEGIN
  INSERT INTO fragile VALUES ('acme', 7, 7);
  BEGIN
    INSERT INTO fragile VALUES ('acme', 8, 999);
  EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE 'caught: %', SQLERRM;
  END;
END $$;
SELECT * FROM fragile;
INSERT INTO fragile VALUES ('acme', 9, 9);
SELECT * FROM fragile;

-- ===================================================================
-- A tenant-scoped login writes only its tenants
-- ===================================================================
CREATE ROLE regress_writer;
GRANT SELECT, INSERT ON orders TO regress_writer;
CREATE USER MAPPING FOR regress_writer SERVER writes_srv
  OPTIONS (tenants 'acme');
SET ROLE regress_writer;
INSERT INTO orders (tenant_id, order_id, amount_cents) VALUES ('acme', 1000080, 1)
  RETURNING tenant_id, order_id;
INSERT INTO orders (tenant_id, order_id, amount_cents) VALUES ('globex', 1000081, 1);
INSERT INTO orders (tenant_id, order_id, amount_cents) VALUES ('acme', 1000082, 1),
  ('globex', 1000083, 1);
INSERT INTO orders (tenant_id, order_id, amount_cents) VALUES ('acme', 1000080, 1)
  ON CONFLICT DO NOTHING RETURNING *;
COPY orders (tenant_id, order_id, amount_cents) FROM STDIN;
globex	1000084	1
\.
RESET ROLE;
SELECT tenant_id, order_id FROM orders WHERE order_id BETWEEN 1000080 AND 1000089 ORDER BY 2;
DROP USER MAPPING FOR regress_writer SERVER writes_srv;
REVOKE ALL ON orders FROM regress_writer;
DROP ROLE regress_writer;

-- ===================================================================
-- UPDATE and DELETE run as one SQLite statement per shard
-- ===================================================================
INSERT INTO orders (tenant_id, order_id, amount_cents, note) VALUES
  ('acme', 2000001, 10, 'u1'), ('acme', 2000002, 20, 'u2'),
  ('globex', 2000003, 10, 'u3'), ('moving', 2000004, 10, 'u4');
-- a stale copy of the moving tenant on its target: never touched
\! bash test/fixtures/writes_peek.sh s2 "INSERT INTO orders VALUES ('moving', 2000004, 'stale', 10, 'u4')"
EXPLAIN (VERBOSE, COSTS OFF)
UPDATE orders SET status = 'shipped' WHERE tenant_id = 'acme' AND order_id = 2000001;
UPDATE orders SET status = 'shipped' WHERE tenant_id = 'acme' AND order_id = 2000001;
EXPLAIN (VERBOSE, COSTS OFF)
UPDATE orders SET status = 'ten' WHERE amount_cents = 10 AND order_id > 2000000;
UPDATE orders SET status = 'ten' WHERE amount_cents = 10 AND order_id > 2000000;
SELECT tenant_id, order_id, status FROM orders WHERE order_id > 2000000 ORDER BY 2;
\! bash test/fixtures/writes_peek.sh s2 "SELECT tenant_id, order_id, status FROM orders WHERE order_id > 2000000 ORDER BY 2"
-- New values computed once: parameters, stable functions.
PREPARE upd(text, bigint) AS
  UPDATE orders SET status = $1 WHERE tenant_id = 'acme' AND order_id = $2;
EXECUTE upd('by parameter', 2000002);
SET plan_cache_mode = force_generic_plan;
EXECUTE upd('generic', 2000002);
RESET plan_cache_mode;
DEALLOCATE upd;
UPDATE orders SET note = current_setting('TimeZone') WHERE order_id = 2000002;
SELECT status, note FROM orders WHERE order_id = 2000002;
-- Refused: a new tenant.
UPDATE orders SET tenant_id = 'globex' WHERE tenant_id = 'acme';
-- RETURNING: the rows as the shards stored them.
UPDATE orders SET status = 'returned' WHERE order_id > 2000000 AND amount_cents = 10
  RETURNING tenant_id, order_id, status;
UPDATE orders SET note = 'r' WHERE tenant_id = 'acme' AND order_id = 2000002
  RETURNING *;
UPDATE orders SET note = 'r2' WHERE tenant_id = 'acme' AND order_id = 2000002
  RETURNING 1 AS one;
WITH d AS (UPDATE orders SET status = 'cte' WHERE order_id > 2000000
             AND tenant_id IN ('acme', 'globex') RETURNING order_id)
  SELECT count(*), min(order_id), max(order_id) FROM d;
EXPLAIN (VERBOSE, COSTS OFF)
DELETE FROM orders WHERE tenant_id = 'nobody' RETURNING order_id;
DELETE FROM orders WHERE tenant_id = 'nobody' RETURNING order_id;
-- Constraints of the shard, and transactions.
SELECT regress_sqlstate($$UPDATE orders SET amount_cents = -1 WHERE order_id = 2000001$$);
SELECT regress_sqlstate($$UPDATE orders SET status = NULL WHERE order_id = 2000001$$);
BEGIN;
DELETE FROM orders WHERE order_id > 2000000;
SELECT count(*) FROM orders WHERE order_id > 2000000;
ROLLBACK;
SELECT count(*) FROM orders WHERE order_id > 2000000;
BEGIN;
UPDATE orders SET note = 'in savepoint' WHERE order_id = 2000003;
SAVEPOINT s;
DELETE FROM orders WHERE order_id = 2000003;
ROLLBACK TO s;
COMMIT;
SELECT tenant_id, note FROM orders WHERE order_id = 2000003;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
DELETE FROM orders WHERE tenant_id = 'globex' AND order_id = 2000003;
SELECT count(*) FROM orders WHERE order_id = 2000003;
-- A tenant-scoped login changes only its tenants' rows.
CREATE ROLE regress_updater;
GRANT SELECT, UPDATE, DELETE ON orders TO regress_updater;
CREATE USER MAPPING FOR regress_updater SERVER writes_srv
  OPTIONS (tenants 'acme');
SET ROLE regress_updater;
UPDATE orders SET status = 'scoped' WHERE order_id > 2000000
  RETURNING tenant_id, order_id;
DELETE FROM orders WHERE tenant_id = 'moving';
DELETE FROM orders WHERE order_id = 2000004;
UPDATE orders SET tenant_id = 'acme' WHERE tenant_id = 'moving';
RESET ROLE;
SELECT tenant_id, order_id, status FROM orders WHERE order_id > 2000000 ORDER BY 2;
DROP USER MAPPING FOR regress_updater SERVER writes_srv;
REVOKE ALL ON orders FROM regress_updater;
DROP ROLE regress_updater;
DELETE FROM orders WHERE order_id > 2000000;
\! bash test/fixtures/writes_peek.sh s1 "SELECT count(*) FROM orders WHERE order_id > 2000000"
\! bash test/fixtures/writes_peek.sh s2 "SELECT tenant_id, status FROM orders WHERE order_id > 2000000"

-- What cannot run inside the shards runs row by row: the scan reads each
-- shard to its end, PostgreSQL checks the rows, and each is changed by its
-- tenant and rowid.
INSERT INTO orders (tenant_id, order_id, amount_cents, note) VALUES
  ('acme', 4000001, 10, 'r1'), ('acme', 4000002, 20, 'r2'),
  ('globex', 4000003, 30, 'r3');
EXPLAIN (VERBOSE, COSTS OFF)
UPDATE orders SET amount_cents = amount_cents + 1
  WHERE order_id > 4000000 RETURNING order_id, amount_cents;
UPDATE orders SET amount_cents = amount_cents + 1
  WHERE order_id > 4000000 RETURNING order_id, amount_cents;
UPDATE orders SET note = upper(note) WHERE order_id > 4000000 AND note ~ '^r[12]';
DELETE FROM orders WHERE order_id > 4000000 AND note ILIKE 'R2' RETURNING *;
SELECT tenant_id, order_id, amount_cents, note FROM orders
  WHERE order_id > 4000000 ORDER BY 2;
SELECT regress_sqlstate($$UPDATE orders SET amount_cents = amount_cents - 100 WHERE order_id > 4000000$$);
SELECT sum(amount_cents) FROM orders WHERE order_id > 4000000;
-- Each row once, also over more rows than a batch: 1250 rows, +1 each.
SELECT count(*), sum(amount_cents) FROM orders
  WHERE tenant_id = 'acme' AND note LIKE 'batch %';
UPDATE orders SET amount_cents = amount_cents + 1
  WHERE tenant_id = 'acme' AND note LIKE 'batch %';
SELECT count(*), sum(amount_cents) FROM orders
  WHERE tenant_id = 'acme' AND note LIKE 'batch %';
-- A scoped login, row by row.
CREATE ROLE regress_rower;
GRANT SELECT, UPDATE, DELETE ON orders TO regress_rower;
CREATE USER MAPPING FOR regress_rower SERVER writes_srv
  OPTIONS (tenants 'globex');
SET ROLE regress_rower;
UPDATE orders SET amount_cents = amount_cents * 2 WHERE order_id > 4000000
  RETURNING tenant_id, order_id, amount_cents;
DELETE FROM orders WHERE order_id > 4000000 AND note ~ '.' RETURNING tenant_id;
RESET ROLE;
SELECT tenant_id, order_id, amount_cents FROM orders
  WHERE order_id > 4000000 ORDER BY 2;
DROP USER MAPPING FOR regress_rower SERVER writes_srv;
REVOKE ALL ON orders FROM regress_rower;
DROP ROLE regress_rower;
DELETE FROM orders WHERE order_id > 4000000;
-- a WITHOUT ROWID table: each row is changed by its primary key (keyed.sql)
UPDATE customers SET name = upper(name) WHERE tenant_id = 'acme';
UPDATE customers SET name = 'c' WHERE tenant_id = 'acme' AND customer_id = 1;
SELECT * FROM customers WHERE tenant_id = 'acme' ORDER BY customer_id;

-- ===================================================================
-- What reads and writes one table at once, checks and triggers
-- ===================================================================
-- INSERT ... SELECT from the same table: the scan reads the table before
-- the statement writes it (more in selfwrite.sql); a cursor still reading
-- it is in the way of a write.
SELECT count(*) FROM orders WHERE tenant_id = 'acme' AND note LIKE 'batch %';
INSERT INTO orders (tenant_id, amount_cents, note)
  SELECT tenant_id, amount_cents, 'again ' || note FROM orders
  WHERE tenant_id = 'acme' AND note LIKE 'batch %';
BEGIN;
DECLARE c CURSOR FOR SELECT order_id FROM orders WHERE tenant_id = 'acme';
FETCH 1 FROM c;
INSERT INTO orders (tenant_id, amount_cents) VALUES ('acme', 1);
ROLLBACK;
SELECT count(*) FROM orders WHERE note LIKE 'again %';
-- A WITH CHECK OPTION and an AFTER ROW trigger see the whole row, also
-- when RETURNING reads one column.
CREATE VIEW paid_orders AS SELECT * FROM orders WHERE amount_cents > 0
  WITH CHECK OPTION;
INSERT INTO paid_orders (tenant_id, order_id, amount_cents)
  VALUES ('acme', 3000001, 50) RETURNING order_id;
INSERT INTO paid_orders (tenant_id, order_id, amount_cents)
  VALUES ('acme', 3000002, 0) RETURNING order_id;
CREATE FUNCTION regress_show_new() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE NOTICE 'after insert: %', NEW;
  RETURN NEW;
END $$;
CREATE TRIGGER regress_after AFTER INSERT ON orders
  FOR EACH ROW EXECUTE FUNCTION regress_show_new();
INSERT INTO orders (tenant_id, order_id, amount_cents)
  VALUES ('acme', 3000003, 60) RETURNING order_id;
-- with a row trigger, an UPDATE runs row by row
CREATE TRIGGER regress_after_upd AFTER UPDATE ON orders
  FOR EACH ROW EXECUTE FUNCTION regress_show_new();
UPDATE orders SET status = 'x' WHERE order_id = 3000003;
DROP TRIGGER regress_after ON orders;
DROP TRIGGER regress_after_upd ON orders;
DROP FUNCTION regress_show_new();
DROP VIEW paid_orders;
-- Each shard reads the routed tenants it owns: an unregistered tenant's
-- rows on a registered tenant's shard stay out.
\! bash test/fixtures/writes_peek.sh s1 "INSERT INTO orders VALUES ('ghost', 3000010, 'g', 1, 'ghost')"
SELECT count(*) FROM orders WHERE tenant_id IN ('acme', 'ghost') AND order_id = 3000010;
SELECT count(*) FROM orders WHERE tenant_id = 'ghost';
DELETE FROM orders WHERE tenant_id IN ('acme', 'ghost') AND order_id = 3000010;
\! bash test/fixtures/writes_peek.sh s1 "SELECT tenant_id FROM orders WHERE order_id = 3000010"
-- Two columns for the tenant column in different cases: refused.
CREATE FOREIGN TABLE orders_twice (tenant_id text, alias text
  OPTIONS (column 'TENANT_ID'), order_id bigint)
  SERVER writes_srv OPTIONS (table 'orders');
SELECT * FROM orders_twice LIMIT 1;
UPDATE orders_twice SET alias = 'globex' WHERE tenant_id = 'acme';
DROP FOREIGN TABLE orders_twice;

-- ===================================================================
-- Types: what is written reads back unchanged, in SQLite's forms
-- ===================================================================
CREATE FOREIGN TABLE typed (tenant_id text, id bigint, i2 smallint,
  i4 integer, i8 bigint, f4 real, f8 double precision, num numeric,
  b boolean, t text, vc varchar(5), bp char(4), "by" bytea, u uuid, j json,
  jb jsonb, d date, ts timestamp, tz timestamptz) SERVER writes_srv;
SET TimeZone = 'America/New_York';
CREATE TABLE typed_in AS SELECT * FROM typed WHERE false;
INSERT INTO typed_in VALUES
  ('acme', 1, -32768, 2147483647, -9223372036854775808, 1.5, 0.1,
   12345678901234567890.123456789, true, 'text ü', 'vc', 'ab', '\x00ff',
   'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11', '{"a": [1, 2]}', '{"b": 1}',
   '2024-02-29', '2024-02-29 23:59:59.123456', '2024-07-01 12:00:00-04'),
  ('acme', 2, 0, 0, 0, 'NaN', 'Infinity', 'NaN', false, '', '', '',
   '', '00000000-0000-0000-0000-000000000000', 'null', '[]',
   '0001-01-01', '9999-12-31 23:59:59.999999', '2000-01-01 00:00:00+00'),
  ('globex', 3, NULL, NULL, NULL, '-Infinity', '-0', -1.5e-10, NULL, NULL,
   NULL, NULL, NULL, NULL, NULL, NULL, NULL, '1970-01-01', NULL);
INSERT INTO typed SELECT * FROM typed_in;
SELECT * FROM typed ORDER BY id;
-- Every value compares equal to what was inserted.
SELECT i.id, (i.*)::text = (t.*)::text AS same
  FROM typed_in i JOIN typed t USING (id) ORDER BY 1;
\! bash test/fixtures/writes_peek.sh s1 "SELECT id, typeof(b), b, typeof(f8), f8, num, d, ts, tz, u, quote(by) FROM typed ORDER BY id"
RESET TimeZone;
-- A value is fitted to how the shard declares its column, or refused
-- where SQLite would store it otherwise than it reads back.
CREATE FOREIGN TABLE money (tenant_id text, id bigint, price numeric,
  ratio double precision, code text, label text, f double precision)
  SERVER writes_srv;
INSERT INTO money VALUES ('acme', 1, 42, 0.30000000000000004, 'abc', '007',
  0.30000000000000004), ('acme', 2, 1.25, 1e300, NULL, '1e5', 1e-7);
SELECT * FROM money ORDER BY id;
\! bash test/fixtures/writes_peek.sh s1 "SELECT id, typeof(price), price, typeof(code), typeof(label), label, typeof(f), f FROM money ORDER BY id"
SELECT regress_sqlstate($$INSERT INTO money (tenant_id, id, price) VALUES ('acme', 3, 12345678901234567.8901234567)$$);
SELECT regress_sqlstate($$INSERT INTO money (tenant_id, id, code) VALUES ('acme', 3, '007')$$);
INSERT INTO money (tenant_id, id, code) VALUES ('acme', 3, ' 12 ');
INSERT INTO money (tenant_id, id, code) VALUES ('acme', 4, '-12');
SELECT code FROM money WHERE id = 4;
-- a text tenant id the shard would store as the integer 7
CREATE FOREIGN TABLE tcodes (tenant_id text, id bigint) SERVER writes_srv;
INSERT INTO tcodes VALUES ('007', 1);
SELECT count(*) FROM money WHERE id = 3;
-- the same for the new values of an UPDATE that runs inside the shards
SELECT regress_sqlstate($$UPDATE money SET code = '007' WHERE tenant_id = 'acme' AND id = 1$$);
SELECT regress_sqlstate($$UPDATE money SET price = 12345678901234567.8901234567 WHERE tenant_id = 'acme' AND id = 1$$);
UPDATE money SET price = 2.5, code = '-5' WHERE tenant_id = 'acme' AND id = 1;
SELECT price, code FROM money WHERE id = 1;
\! bash test/fixtures/writes_peek.sh s1 "SELECT typeof(price), price, typeof(code) FROM money WHERE id = 1"
-- Values a shard cannot store.
INSERT INTO typed (tenant_id, id, d) VALUES ('acme', 9, 'infinity');
INSERT INTO typed (tenant_id, id, ts) VALUES ('acme', 9, '0001-01-01 00:00:00 BC');
SELECT count(*) FROM typed WHERE id = 9;

-- ===================================================================
-- A fan-out UPDATE or DELETE without RETURNING runs on every shard at
-- once; a failure on one shard fails the statement, and every shard stays
-- as it was
-- ===================================================================
SELECT tenant_id, count(*), min(amount_cents) FROM orders GROUP BY 1 ORDER BY 1;
EXPLAIN (COSTS OFF) UPDATE orders SET status = 'bulk' WHERE amount_cents >= 0;
UPDATE orders SET status = 'bulk' WHERE amount_cents >= 0;
UPDATE orders SET amount_cents = -1 WHERE amount_cents >= 0;
SELECT tenant_id, count(*) FILTER (WHERE status = 'bulk') AS bulk,
  min(amount_cents) FROM orders GROUP BY 1 ORDER BY 1;
BEGIN;
DELETE FROM orders WHERE status = 'bulk';
SELECT count(*) FROM orders;
ROLLBACK;
-- one shard at a time with RETURNING, or without parallelism
EXPLAIN (COSTS OFF) UPDATE orders SET status = 'bulk' RETURNING order_id;
SET sqlite_shard_fdw.fanout_parallelism = 1;
EXPLAIN (COSTS OFF) UPDATE orders SET status = 'bulk';
RESET sqlite_shard_fdw.fanout_parallelism;

-- ===================================================================
-- Prepared writes follow the directory: another process moves a tenant
-- between two executions of the same generic plan, and the next INSERT
-- and UPDATE write the shard it names now (each transaction's BEGIN
-- IMMEDIATE and COMMIT are prepared once per shard handle)
-- ===================================================================
\! sqlite3 /tmp/ssfdw_regress/writes/directory.db "INSERT INTO shard_map VALUES ('hopper', 's1', 'ACTIVE', NULL, 0)"
SET plan_cache_mode = force_generic_plan;
PREPARE ins_p(text, bigint) AS
  INSERT INTO orders (tenant_id, order_id, amount_cents, note)
  VALUES ($1, $2, 5, 'prepared');
PREPARE upd_p(text, bigint) AS
  UPDATE orders SET status = 'updated' WHERE tenant_id = $1 AND order_id = $2
  RETURNING tenant_id, order_id, status;
EXECUTE ins_p('hopper', 3100001);
EXECUTE upd_p('hopper', 3100001);
\! sqlite3 /tmp/ssfdw_regress/writes/directory.db "UPDATE shard_map SET shard_id = 's2' WHERE tenant_id = 'hopper'"
EXECUTE ins_p('hopper', 3100002);
EXECUTE upd_p('hopper', 3100002);
-- the row left on s1 is no longer the tenant's: nothing to update
EXECUTE upd_p('hopper', 3100001);
\! sqlite3 /tmp/ssfdw_regress/writes/directory.db "UPDATE shard_map SET shard_id = 's1' WHERE tenant_id = 'hopper'"
EXECUTE upd_p('hopper', 3100001);
\! bash test/fixtures/writes_peek.sh s1 "SELECT tenant_id, order_id, status FROM orders WHERE tenant_id = 'hopper' ORDER BY order_id"
\! bash test/fixtures/writes_peek.sh s2 "SELECT tenant_id, order_id, status FROM orders WHERE tenant_id = 'hopper' ORDER BY order_id"
DEALLOCATE ins_p;
DEALLOCATE upd_p;
RESET plan_cache_mode;
\! bash test/fixtures/writes_peek.sh s1 "DELETE FROM orders WHERE tenant_id = 'hopper'"
\! bash test/fixtures/writes_peek.sh s2 "DELETE FROM orders WHERE tenant_id = 'hopper'"
\! sqlite3 /tmp/ssfdw_regress/writes/directory.db "DELETE FROM shard_map WHERE tenant_id = 'hopper'"

-- ===================================================================
-- Columns PostgreSQL computes: stored generated columns and BEFORE ROW
-- triggers, compared with native tables
-- ===================================================================
CREATE FOREIGN TABLE gen (tenant_id text, a int,
  b int GENERATED ALWAYS AS (a * 2) STORED) SERVER writes_srv;
CREATE TABLE gen_n (tenant_id text, a int,
  b int GENERATED ALWAYS AS (a * 2) STORED);
INSERT INTO gen (tenant_id, a) VALUES ('acme', 1), ('globex', 2);
INSERT INTO gen_n (tenant_id, a) VALUES ('acme', 1), ('globex', 2);
COPY gen (tenant_id, a) FROM stdin;
acme	3
\.
COPY gen_n (tenant_id, a) FROM stdin;
acme	3
\.
UPDATE gen SET a = a + 20 WHERE a < 3;
UPDATE gen_n SET a = a + 20 WHERE a < 3;
SELECT * FROM gen EXCEPT ALL SELECT * FROM gen_n;
SELECT * FROM gen ORDER BY a;
\! bash test/fixtures/writes_peek.sh s1 "SELECT * FROM gen ORDER BY a"
CREATE FOREIGN TABLE trig (tenant_id text, f1 int, f2 text) SERVER writes_srv;
CREATE TABLE trig_n (tenant_id text, f1 int, f2 text);
CREATE FUNCTION regress_mark() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN NEW.f2 := NEW.f2 || ' triggered'; RETURN NEW; END $$;
CREATE TRIGGER mark BEFORE INSERT OR UPDATE ON trig
  FOR EACH ROW EXECUTE FUNCTION regress_mark();
CREATE TRIGGER mark BEFORE INSERT OR UPDATE ON trig_n
  FOR EACH ROW EXECUTE FUNCTION regress_mark();
INSERT INTO trig VALUES ('acme', 1, 'x'), ('globex', 2, 'y');
INSERT INTO trig_n VALUES ('acme', 1, 'x'), ('globex', 2, 'y');
-- the trigger changes a column the statement does not set: it is written
EXPLAIN (VERBOSE, COSTS OFF) UPDATE trig SET f1 = f1 + 10;
UPDATE trig SET f1 = f1 + 10;
UPDATE trig_n SET f1 = f1 + 10;
SELECT * FROM trig EXCEPT ALL SELECT * FROM trig_n;
SELECT * FROM trig ORDER BY f1;
-- a trigger that changes the tenant is refused as the statement would be
CREATE FUNCTION regress_retenant() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN NEW.tenant_id := 'globex'; RETURN NEW; END $$;
CREATE TRIGGER retenant BEFORE UPDATE ON trig
  FOR EACH ROW EXECUTE FUNCTION regress_retenant();
UPDATE trig SET f1 = 100 WHERE f1 = 11;
SELECT * FROM trig ORDER BY f1;
DROP TABLE gen_n, trig_n;
DROP FOREIGN TABLE gen, trig;
DROP FUNCTION regress_mark(), regress_retenant();

-- ===================================================================
-- Clean up
-- ===================================================================
DROP TABLE native_orders, typed_in;
DROP FUNCTION regress_sqlstate(text);
DROP SERVER writes_srv CASCADE;
