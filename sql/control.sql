--
-- The control plane: tenant_list, tenant_remove, shard_remove, and
-- directories with fewer columns than directory_init creates.  See
-- test/fixtures/control.sh for where every tenant and row lives.
--
\! bash test/fixtures/control.sh
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
RESET client_min_messages;
CREATE SERVER control_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/control/main/directory.db');
CREATE FOREIGN TABLE orders (tenant_id text, order_id bigint, amount bigint)
  SERVER control_srv;
CREATE FOREIGN TABLE ledger (account text, entry bigint)
  SERVER control_srv OPTIONS (tenant_column 'account');

-- regress_state(statement): the SQLSTATE and message of its error, or ok
\i test/regress_state.sql

-- ===================================================================
-- tenant_list
-- ===================================================================
SELECT * FROM tenant_list('control_srv');
SELECT * FROM tenant_list('control_srv', 'c1');
SELECT * FROM tenant_list('control_srv', 'c3');
SELECT regress_state($$SELECT * FROM tenant_list('control_srv', 'nope')$$);
SELECT regress_state($$SELECT * FROM tenant_list(NULL)$$);
SELECT regress_state($$SELECT * FROM tenant_list('no_such_server')$$);

-- ===================================================================
-- tenant_remove
-- ===================================================================
\set VERBOSITY default
-- t1 has rows in orders and notes (found in the shard's schema: no
-- foreign table reads notes)
SELECT tenant_remove('control_srv', 't1');
-- t3's rows are in ledger, whose tenant column is "account"
SELECT tenant_remove('control_srv', 't3');
-- moving tenants, either phase
SELECT tenant_remove('control_srv', 't4');
SELECT tenant_remove('control_srv', 't5', true);
SELECT regress_state($$SELECT tenant_remove('control_srv', 't1')$$);
SELECT regress_state($$SELECT tenant_remove('control_srv', 't4')$$);
SELECT regress_state($$SELECT tenant_remove('control_srv', 'nobody')$$);
SELECT regress_state($$SELECT tenant_remove('control_srv', NULL)$$);
SELECT regress_state($$SELECT tenant_remove(NULL, 't1')$$);
-- the rows are counted under the shard's write lock, held to the commit:
-- a REPEATABLE READ snapshot older than a row of t2 another process wrote
-- since cannot take it (40001); a new transaction sees the row and refuses
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT count(*) FROM orders WHERE tenant_id = 't2';
\! runuser -u postgres -- sqlite3 /tmp/ssfdw_regress/control/main/shards/c0.db "INSERT INTO orders VALUES ('t2', 1, 5)"
SELECT tenant_remove('control_srv', 't2');
ROLLBACK;
SELECT regress_state($$SELECT tenant_remove('control_srv', 't2')$$);
\! runuser -u postgres -- sqlite3 /tmp/ssfdw_regress/control/main/shards/c0.db "DELETE FROM orders WHERE tenant_id = 't2'"
-- t2 has no rows: removed; a rollback brings it back
BEGIN;
SELECT tenant_remove('control_srv', 't2');
SELECT * FROM tenant_locate('control_srv', 't2');
ROLLBACK;
SELECT * FROM tenant_locate('control_srv', 't2');
SELECT tenant_remove('control_srv', 't2');
SELECT * FROM tenant_locate('control_srv', 't2');
\! sqlite3 /tmp/ssfdw_regress/control/main/directory.db "SELECT count(*) FROM shard_map WHERE tenant_id = 't2'"
-- delete_rows: the rows go with the tenant, in the transaction
BEGIN;
SELECT tenant_remove('control_srv', 't1', delete_rows => true);
SELECT count(*) FROM orders WHERE tenant_id = 't1';
ROLLBACK;
SELECT count(*) FROM orders WHERE tenant_id = 't1';
SELECT tenant_remove('control_srv', 't1', delete_rows => true);
SELECT tenant_remove('control_srv', 't3', delete_rows => true);
\! sqlite3 /tmp/ssfdw_regress/control/main/shards/c0.db "SELECT 'c0', (SELECT count(*) FROM orders WHERE tenant_id = 't1'), (SELECT count(*) FROM notes)"
\! sqlite3 /tmp/ssfdw_regress/control/main/shards/c1.db "SELECT 'c1', count(*) FROM ledger"
SELECT tenant_id, shard_id FROM tenant_list('control_srv');

-- ===================================================================
-- shard_remove
-- ===================================================================
-- c1 answers for t4 and t5; c0 is t5's source, c2 t4's target
SELECT shard_remove('control_srv', 'c1');
SELECT shard_remove('control_srv', 'c0');
SELECT shard_remove('control_srv', 'c2');
SELECT regress_state($$SELECT shard_remove('control_srv', 'c1')$$);
SELECT regress_state($$SELECT shard_remove('control_srv', 'c0')$$);
SELECT regress_state($$SELECT shard_remove('control_srv', 'c2')$$);
SELECT regress_state($$SELECT shard_remove('control_srv', 'nope')$$);
SELECT regress_state($$SELECT shard_remove('control_srv', NULL)$$);
BEGIN;
SELECT shard_remove('control_srv', 'c3');
SELECT shard_id FROM shard_list('control_srv');
ROLLBACK;
SELECT shard_id FROM shard_list('control_srv');
SELECT shard_remove('control_srv', 'c3');
SELECT shard_id FROM shard_list('control_srv');
\! ls /tmp/ssfdw_regress/control/main/shards/c3.db
-- the removed shard no longer takes tenants
SELECT regress_state($$SELECT tenant_add('control_srv', 'new', 'c3')$$);

-- ===================================================================
-- Privileges: tenant_list needs USAGE on the server; tenant_remove and
-- shard_remove write the directory, as tenant_add: pg_write_server_files.
-- ===================================================================
CREATE ROLE regress_control_user;
SET ROLE regress_control_user;
SELECT regress_state($$SELECT * FROM tenant_list('control_srv')$$);
SELECT regress_state($$SELECT tenant_remove('control_srv', 't4')$$);
RESET ROLE;
GRANT USAGE ON FOREIGN SERVER control_srv TO regress_control_user;
GRANT EXECUTE ON FUNCTION tenant_remove(name, text, boolean),
  shard_remove(name, text) TO regress_control_user;
SET ROLE regress_control_user;
SELECT count(*) FROM tenant_list('control_srv');
-- a tenant-scoped role (user mapping option "tenants") lists its tenants only
RESET ROLE;
CREATE USER MAPPING FOR regress_control_user SERVER control_srv
  OPTIONS (tenants 't5,nobody');
SET ROLE regress_control_user;
SELECT tenant_id, shard_id FROM tenant_list('control_srv');
SELECT tenant_id, shard_id FROM tenant_list('control_srv', 'c1');
SELECT count(*) FROM tenant_list('control_srv', 'c2');
RESET ROLE;
DROP USER MAPPING FOR regress_control_user SERVER control_srv;
SET ROLE regress_control_user;
SELECT regress_state($$SELECT tenant_remove('control_srv', 't4')$$);
SELECT regress_state($$SELECT shard_remove('control_srv', 'c2')$$);
RESET ROLE;
GRANT pg_write_server_files TO regress_control_user;
SET ROLE regress_control_user;
SELECT regress_state($$SELECT shard_remove('control_srv', 'c2')$$);
RESET ROLE;
DROP OWNED BY regress_control_user;
DROP ROLE regress_control_user;

-- ===================================================================
-- A hand-written shard_map with only tenant_id and shard_id: every
-- tenant ACTIVE; reading, listing, adding and removing work.
-- ===================================================================
CREATE SERVER bare_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/control/bare/directory.db',
           shard_path 'shards/%s.db');
CREATE FOREIGN TABLE bare_orders (tenant_id text, order_id bigint, amount bigint)
  SERVER bare_srv OPTIONS (table 'orders');
SELECT * FROM bare_orders ORDER BY 1, 2;
SELECT * FROM bare_orders WHERE tenant_id = 'acme' ORDER BY 2;
SELECT count(*) FROM bare_orders WHERE tenant_id IN ('acme', 'globex');
SELECT * FROM tenant_locate('bare_srv', 'globex');
SELECT shard_id, tenants FROM shard_list('bare_srv');
SELECT * FROM tenant_list('bare_srv');
SELECT tenant_add('bare_srv', 'initech', 'b2');
INSERT INTO bare_orders VALUES ('initech', 1, 7);
SELECT * FROM bare_orders WHERE tenant_id = 'initech';
SELECT regress_state($$SELECT tenant_remove('bare_srv', 'initech')$$);
SELECT tenant_remove('bare_srv', 'initech', true);
\! sqlite3 /tmp/ssfdw_regress/control/bare/directory.db "SELECT * FROM shard_map ORDER BY 1"
-- without a shards table there is no shard to remove
SELECT regress_state($$SELECT shard_remove('bare_srv', 'b1')$$);
-- columns added later are read from the next statement on: the directory
-- now says globex is DONE on b1 (which holds none of its rows); reads follow
\! sqlite3 /tmp/ssfdw_regress/control/bare/directory.db "ALTER TABLE shard_map ADD COLUMN status TEXT; ALTER TABLE shard_map ADD COLUMN target_shard_id TEXT; UPDATE shard_map SET status = 'DONE', target_shard_id = 'b1' WHERE tenant_id = 'globex'"
SELECT * FROM tenant_locate('bare_srv', 'globex');
SELECT * FROM bare_orders WHERE tenant_id = 'globex';
SELECT shard_id, tenants FROM shard_list('bare_srv');

-- A shard_map without a column reading needs, a shards table without
-- path: the error lists the columns expected.
CREATE SERVER broken_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/control/broken/directory.db',
           shard_path 'shards/%s.db');
CREATE FOREIGN TABLE broken_orders (tenant_id text, order_id bigint)
  SERVER broken_srv OPTIONS (table 'orders');
SELECT * FROM broken_orders;
SELECT regress_state($$SELECT * FROM broken_orders$$);
SELECT regress_state($$SELECT * FROM tenant_list('broken_srv')$$);
CREATE SERVER nocol_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/control/nocol/directory.db');
SELECT * FROM shard_list('nocol_srv');
SELECT regress_state($$SELECT tenant_remove('nocol_srv', 'x')$$);

SET client_min_messages = warning;
DROP SERVER control_srv, bare_srv, broken_srv, nocol_srv CASCADE;
RESET client_min_messages;
DROP FUNCTION regress_state(text);
