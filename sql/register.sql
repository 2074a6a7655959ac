--
-- The directory inside PostgreSQL transactions: directory_init, shard_add
-- and tenant_add commit with the transaction and vanish with its rollback;
-- unknown tenants on INSERT, and auto_register, which places them in the
-- same transaction.  See test/fixtures/register.sh.
--
\! bash test/fixtures/register.sh
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
RESET client_min_messages;
CREATE SERVER reg_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/register/directory.db');
CREATE FOREIGN TABLE orders (tenant_id text, order_id bigint,
  amount_cents bigint) SERVER reg_srv;
\set VERBOSITY default
\set dirdb '/tmp/ssfdw_regress/register/directory.db'

-- ===================================================================
-- tenant_add: seen by the transaction's own statements, by nobody else
-- before the commit, gone with a rollback
-- ===================================================================
BEGIN;
SELECT tenant_add('reg_srv', 'tx_a', 's2');
SELECT shard_id, status FROM tenant_locate('reg_srv', 'tx_a');
INSERT INTO orders VALUES ('tx_a', 1, 100);
SELECT * FROM orders WHERE tenant_id = 'tx_a';
-- another connection sees neither the tenant nor its row yet
\! sqlite3 /tmp/ssfdw_regress/register/directory.db "SELECT count(*) FROM shard_map WHERE tenant_id = 'tx_a'"
\! sqlite3 /tmp/ssfdw_regress/register/shards/s2.db "SELECT count(*) FROM orders"
-- and cannot write the directory while the transaction holds it
\! sqlite3 /tmp/ssfdw_regress/register/directory.db ".timeout 0" "INSERT INTO shard_map VALUES ('other', 's1', 'ACTIVE', NULL, 0)" 2>&1 | sed 's/^.*database is locked.*$/database is locked/'
ROLLBACK;
SELECT tenant_locate('reg_srv', 'tx_a') IS NULL AS unknown;
\! sqlite3 /tmp/ssfdw_regress/register/directory.db "SELECT count(*) FROM shard_map WHERE tenant_id = 'tx_a'"
\! sqlite3 /tmp/ssfdw_regress/register/shards/s2.db "SELECT count(*) FROM orders"
-- committed: the directory first, then the shard
BEGIN;
SELECT tenant_add('reg_srv', 'tx_a', 's2');
INSERT INTO orders VALUES ('tx_a', 1, 100);
COMMIT;
\! sqlite3 /tmp/ssfdw_regress/register/directory.db "SELECT tenant_id, shard_id FROM shard_map WHERE tenant_id = 'tx_a'"
SELECT * FROM orders WHERE tenant_id = 'tx_a';

-- ===================================================================
-- Savepoints and exception blocks undo directory writes too
-- ===================================================================
BEGIN;
SELECT tenant_add('reg_srv', 'sp_a', 's1');
SAVEPOINT one;
SELECT tenant_add('reg_srv', 'sp_b', 's2');
SELECT shard_id FROM tenant_locate('reg_srv', 'sp_b');
ROLLBACK TO one;
SELECT tenant_locate('reg_srv', 'sp_b') IS NULL AS sp_b_unknown;
SAVEPOINT two;
SELECT tenant_add('reg_srv', 'sp_c', 's2');
RELEASE two;
DO $$
BEGIN
  PERFORM tenant_add('reg_srv', 'sp_d', 's1');
  PERFORM tenant_add('reg_srv', 'sp_a', 's1');
EXCEPTION WHEN unique_violation THEN
  RAISE NOTICE 'caught: %', SQLERRM;
END $$;
SELECT tenant_locate('reg_srv', 'sp_d') IS NULL AS sp_d_unknown;
-- the same tenant again after the rollback to the savepoint
SELECT tenant_add('reg_srv', 'sp_b', 's1');
COMMIT;
\! sqlite3 /tmp/ssfdw_regress/register/directory.db "SELECT tenant_id, shard_id FROM shard_map WHERE tenant_id LIKE 'sp_%' ORDER BY 1"
-- an error aborts the transaction and its directory writes
BEGIN;
SELECT tenant_add('reg_srv', 'err_a', 's1');
SELECT tenant_add('reg_srv', 'err_b', 'no_such_shard');
COMMIT;
SELECT tenant_locate('reg_srv', 'err_a') IS NULL AS err_a_unknown;

-- ===================================================================
-- shard_add, tenant_add on the new shard and its rows, in one transaction
-- ===================================================================
BEGIN;
SELECT shard_add('reg_srv', 'spare', 'shards/spare.db');
SELECT shard_id, tenants FROM shard_list('reg_srv') ORDER BY shard_id;
SELECT tenant_add('reg_srv', 'on_spare', 'spare');
INSERT INTO orders VALUES ('on_spare', 7, 700);
SELECT tenant_id, count(*) FROM orders GROUP BY 1 ORDER BY 1;
ROLLBACK;
SELECT shard_id, tenants FROM shard_list('reg_srv') ORDER BY shard_id;
\! sqlite3 /tmp/ssfdw_regress/register/shards/spare.db "SELECT count(*) FROM orders"
BEGIN;
SELECT shard_add('reg_srv', 'spare', 'shards/spare.db');
SELECT tenant_add('reg_srv', 'on_spare', 'spare');
INSERT INTO orders VALUES ('on_spare', 7, 700);
COMMIT;
SELECT tenant_id, count(*) FROM orders GROUP BY 1 ORDER BY 1;
-- PREPARE TRANSACTION is refused once the directory was written
BEGIN;
SELECT tenant_add('reg_srv', 'prepared', 's1');
PREPARE TRANSACTION 'reg';
SELECT tenant_locate('reg_srv', 'prepared') IS NULL AS unknown;

-- ===================================================================
-- directory_init in a transaction: its tables vanish with a rollback
-- (the empty file it created stays)
-- ===================================================================
CREATE SERVER reg_new FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/register/new/directory.db');
\! mkdir -p /tmp/ssfdw_regress/register/new && cp /tmp/ssfdw_regress/register/shards/s2.db /tmp/ssfdw_regress/register/new/n1.db && chown -R postgres /tmp/ssfdw_regress/register/new
BEGIN;
SELECT directory_init('reg_new');
SELECT shard_add('reg_new', 'n1', 'n1.db');
SELECT shard_id FROM shard_list('reg_new');
ROLLBACK;
\! ls -s /tmp/ssfdw_regress/register/new/directory.db
SELECT shard_id FROM shard_list('reg_new');
BEGIN;
SELECT directory_init('reg_new');
SELECT shard_add('reg_new', 'n1', 'n1.db');
COMMIT;
SELECT shard_id FROM shard_list('reg_new');

-- ===================================================================
-- Placement looks at every shard's file while this backend has the shards
-- open: the locks of its SQLite handles stay.  Were they dropped, a
-- process closing its last handle of a WAL shard would take itself for
-- the last user and delete the -wal and -shm files under this backend's
-- handle, whose next write would then be lost.
-- ===================================================================
SELECT count(*) FROM orders;
SELECT tenant_add('reg_srv', 'placed_while_open') IS NOT NULL AS placed;
\! sqlite3 /tmp/ssfdw_regress/register/shards/s1.db "SELECT count(*) FROM orders"
\! test -e /tmp/ssfdw_regress/register/shards/s1.db-wal && echo "s1.db-wal is still there"
INSERT INTO orders VALUES ('acme', 90, 9);
\! sqlite3 /tmp/ssfdw_regress/register/shards/s1.db "SELECT tenant_id, order_id FROM orders WHERE order_id = 90"

-- ===================================================================
-- Unknown tenants: 23503 naming the tenant, a NULL tenant 23502
-- ===================================================================
INSERT INTO orders VALUES ('nobody', 1, 1);
INSERT INTO orders VALUES (NULL, 1, 1);
COPY orders FROM STDIN;
acme	30	1
nobody	31	1
\.
SELECT count(*) FROM orders WHERE order_id IN (30, 31);

-- ===================================================================
-- auto_register: INSERT and COPY place unknown tenants as tenant_add
-- would, inside the same transaction
-- ===================================================================
ALTER FOREIGN TABLE orders OPTIONS (ADD auto_register 'true');
BEGIN;
INSERT INTO orders VALUES ('auto_a', 40, 1) RETURNING *;
SELECT shard_id FROM tenant_locate('reg_srv', 'auto_a');
\! sqlite3 /tmp/ssfdw_regress/register/directory.db "SELECT count(*) FROM shard_map WHERE tenant_id = 'auto_a'"
ROLLBACK;
SELECT tenant_locate('reg_srv', 'auto_a') IS NULL AS auto_a_unknown;
-- several new tenants in one statement, and COPY
INSERT INTO orders SELECT 'auto_' || g, 40 + g, g FROM generate_series(1, 3) g;
COPY orders FROM STDIN;
auto_copy	50	1
auto_1	51	1
\.
SELECT tenant_id, count(*) FROM orders WHERE tenant_id LIKE 'auto%'
  GROUP BY 1 ORDER BY 1;
SELECT count(*) AS placed FROM shard_list('reg_srv');
\! sqlite3 /tmp/ssfdw_regress/register/directory.db "SELECT tenant_id, status FROM shard_map WHERE tenant_id LIKE 'auto%' ORDER BY 1"
-- a NULL tenant is still 23502
INSERT INTO orders VALUES (NULL, 1, 1);
-- a failed statement registers nothing
INSERT INTO orders VALUES ('auto_fail', 60, 1), ('auto_fail', 60, 1);
SELECT tenant_locate('reg_srv', 'auto_fail') IS NULL AS auto_fail_unknown;
-- the server's option, which the table's overrides
ALTER FOREIGN TABLE orders OPTIONS (DROP auto_register);
ALTER SERVER reg_srv OPTIONS (ADD auto_register 'on');
INSERT INTO orders VALUES ('auto_srv', 70, 1);
ALTER FOREIGN TABLE orders OPTIONS (ADD auto_register 'false');
INSERT INTO orders VALUES ('auto_off', 71, 1);
ALTER FOREIGN TABLE orders OPTIONS (DROP auto_register);
SELECT shard_id IS NOT NULL AS auto_srv_known FROM tenant_locate('reg_srv', 'auto_srv');
-- a session that turns sqlite_shard_fdw.auto_register off refuses unknown
-- tenants (23503) whatever the options say; a known tenant still writes,
-- and a tenant registered before says nothing more
SET sqlite_shard_fdw.auto_register = off;
INSERT INTO orders VALUES ('nobdy', 72, 1);
SELECT tenant_locate('reg_srv', 'nobdy') IS NULL AS nobdy_unknown;
INSERT INTO orders VALUES ('auto_srv', 73, 1);
RESET sqlite_shard_fdw.auto_register;
INSERT INTO orders VALUES ('auto_srv', 74, 1);
-- bad values
ALTER FOREIGN TABLE orders OPTIONS (ADD auto_register 'maybe');
ALTER SERVER reg_srv OPTIONS (SET auto_register '');

-- ===================================================================
-- Who may: setting auto_register needs pg_write_server_files; a scoped
-- login registers only its own tenants
-- ===================================================================
CREATE ROLE regress_reg_owner;
CREATE FOREIGN TABLE owned (tenant_id text, order_id bigint,
  amount_cents bigint) SERVER reg_srv OPTIONS (table 'orders');
ALTER FOREIGN TABLE owned OWNER TO regress_reg_owner;
SET ROLE regress_reg_owner;
ALTER FOREIGN TABLE owned OPTIONS (ADD auto_register 'false');
RESET ROLE;
DROP FOREIGN TABLE owned;
CREATE ROLE regress_reg_scoped;
GRANT USAGE ON FOREIGN SERVER reg_srv TO regress_reg_scoped;
GRANT SELECT, INSERT ON orders TO regress_reg_scoped;
CREATE USER MAPPING FOR regress_reg_scoped SERVER reg_srv
  OPTIONS (tenants 'acme, scoped_new');
SET ROLE regress_reg_scoped;
INSERT INTO orders VALUES ('someone_else', 80, 1);
INSERT INTO orders VALUES ('scoped_new', 81, 1);
SELECT tenant_id, order_id FROM orders ORDER BY order_id;
RESET ROLE;
SELECT tenant_locate('reg_srv', 'someone_else') IS NULL AS someone_else_unknown;
SELECT shard_id IS NOT NULL AS scoped_new_known FROM tenant_locate('reg_srv', 'scoped_new');

-- ===================================================================
-- Clean up
-- ===================================================================
DROP SERVER reg_srv CASCADE;
DROP SERVER reg_new;
DROP ROLE regress_reg_owner, regress_reg_scoped;
