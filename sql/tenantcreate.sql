--
-- tenant_create and tenant_remove on fleets of one SQLite file per tenant.
-- See test/fixtures/tenantcreate.sh for the fleets and templates.
--
\! bash test/fixtures/tenantcreate.sh
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
RESET client_min_messages;

CREATE SERVER tc_hashed FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/tenantcreate/hashed/directory.db',
           layout 'file_per_tenant', tenant_path 'tenants/%2/%s.db',
           tenant_template 'templates/orders.db');
CREATE SERVER tc_dir FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/tenantcreate/dir/directory.db',
           layout 'file_per_tenant');
CREATE FOREIGN TABLE tc_orders (
  tenant_id text, order_id bigint, status text, amount_cents bigint,
  created_at timestamp
) SERVER tc_hashed OPTIONS (table 'orders');
CREATE FOREIGN TABLE tc_settings (tenant_id text, name text, value text)
  SERVER tc_hashed OPTIONS (table 'settings');
CREATE FOREIGN TABLE tc_dir_orders (
  tenant_id text, order_id bigint, status text, amount_cents bigint,
  created_at timestamp
) SERVER tc_dir OPTIONS (table 'orders');

-- ===================================================================
-- tenant_create: the file from the template, then an INSERT at once
-- ===================================================================
-- acme's file goes in hashed folder 53, which does not exist yet
\! ls /tmp/ssfdw_regress/tenantcreate/hashed/tenants
SELECT tenant_create('tc_hashed', 'acme');
\! ls /tmp/ssfdw_regress/tenantcreate/hashed/tenants/53
-- mode of the directory file, journal mode of the template, its seed row
\! stat -c '%a %U' /tmp/ssfdw_regress/tenantcreate/hashed/directory.db /tmp/ssfdw_regress/tenantcreate/hashed/tenants/53/acme.db
\! sqlite3 /tmp/ssfdw_regress/tenantcreate/hashed/tenants/53/acme.db 'PRAGMA journal_mode; SELECT name FROM sqlite_schema ORDER BY name'
SELECT * FROM tc_settings WHERE tenant_id = 'acme';
SELECT count(*) FROM tc_orders WHERE tenant_id = 'acme';
INSERT INTO tc_orders VALUES ('acme', 1, 'new', 1200, '2026-01-02 03:04:05');
SELECT * FROM tc_orders WHERE tenant_id = 'acme';
SELECT tenant_id, count(*) FROM tc_orders GROUP BY tenant_id ORDER BY 1;
-- a template given by the call
SELECT tenant_create('tc_hashed', 'bcme', 'templates/orders.db');
SELECT * FROM tc_settings WHERE tenant_id IN ('acme', 'bcme') ORDER BY 1;
-- created in a transaction that rolls back: the file goes again
BEGIN;
SELECT tenant_create('tc_hashed', 'ccme');
SELECT count(*) FROM tc_settings WHERE tenant_id = 'ccme';
ROLLBACK;
SELECT count(*) FROM tc_settings WHERE tenant_id = 'ccme';
\! ls /tmp/ssfdw_regress/tenantcreate/hashed/tenants/* | grep -c ccme

-- ===================================================================
-- tenant_create: what is refused
-- ===================================================================
SELECT tenant_create('tc_hashed', 'acme');                 -- 42710
SELECT tenant_create('tc_hashed', 't0001');                -- 42710
SELECT tenant_create('tc_hashed', 'dcme', 'templates/none.db');   -- 58P01
SELECT tenant_create('tc_hashed', 'dcme', 'templates/broken.db'); -- XX001
SELECT tenant_create('tc_hashed', 'dcme', '../outside.db');       -- 42501
SELECT tenant_create('tc_hashed', 'dcme', '/tmp/ssfdw_regress/tenantcreate/outside.db');
SELECT tenant_create('tc_hashed', '../dcme');              -- HV024
SELECT tenant_create('tc_hashed', '');                     -- HV024
SELECT tenant_create('tc_hashed', NULL);
SELECT tenant_create('tc_dir', 'dcme');                    -- no template
\! ls /tmp/ssfdw_regress/tenantcreate/hashed/tenants/* | grep -c -e dcme -e '\.tmp'
-- a role without pg_write_server_files
CREATE ROLE regress_tc_app;
GRANT USAGE ON FOREIGN SERVER tc_hashed TO regress_tc_app;
GRANT EXECUTE ON FUNCTION tenant_create(name, text, text),
  tenant_remove(name, text, boolean) TO regress_tc_app;
SET ROLE regress_tc_app;
SELECT tenant_create('tc_hashed', 'ecme');                 -- 42501
SELECT tenant_remove('tc_hashed', 'acme');                 -- 42501
RESET ROLE;
-- a server that does not keep one file per tenant
CREATE SERVER tc_shared FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/tenantcreate/dir/directory.db');
SELECT tenant_create('tc_shared', 'ecme', 'templates/orders.db');  -- 0A000

-- ===================================================================
-- tenant_create where the directory names the files
-- ===================================================================
SELECT tenant_create('tc_dir', 'dcme', 'templates/orders.db');
SELECT * FROM tenant_locate('tc_dir', 'dcme');
SELECT * FROM shard_list('tc_dir') WHERE shard_id = 'dcme';
INSERT INTO tc_dir_orders VALUES ('dcme', 7, 'new', 700, '2026-01-02 03:04:05');
SELECT tenant_id, count(*) FROM tc_dir_orders GROUP BY tenant_id ORDER BY 1;
SELECT tenant_create('tc_dir', 'dcme', 'templates/orders.db');   -- 42710
-- registered in the transaction: a rollback takes rows and file away
BEGIN;
SELECT tenant_create('tc_dir', 'fcme', 'templates/orders.db');
SELECT count(*) FROM tc_dir_orders WHERE tenant_id = 'fcme';
ROLLBACK;
SELECT * FROM tenant_locate('tc_dir', 'fcme');
\! ls /tmp/ssfdw_regress/tenantcreate/dir/tenants | grep -c fcme

-- ===================================================================
-- tenant_remove: the file goes, the tenant reads nothing
-- ===================================================================
SELECT tenant_remove('tc_hashed', 'acme');                 -- holds rows
SELECT tenant_remove('tc_hashed', 'acme', delete_rows => true);
\! ls /tmp/ssfdw_regress/tenantcreate/hashed/tenants/53
SELECT * FROM tc_orders WHERE tenant_id = 'acme';
INSERT INTO tc_orders VALUES ('acme', 2, 'new', 1, '2026-01-02');  -- 23503
SELECT tenant_remove('tc_hashed', 'acme');                 -- no file
SELECT tenant_remove('tc_hashed', 'bcme');                 -- the seed row
SELECT tenant_id, count(*) FROM tc_orders GROUP BY tenant_id ORDER BY 1;
-- refused while another process writes the file
\! python3 test/fixtures/hold_write_lock.py /tmp/ssfdw_regress/tenantcreate/hashed/tenants/$(printf t0002 | md5sum | cut -c1-2)/t0002.db /tmp/ssfdw_regress/tenantcreate/stop
SELECT tenant_remove('tc_hashed', 't0002', delete_rows => true);  -- 55P03
\! touch /tmp/ssfdw_regress/tenantcreate/stop; sleep 0.3
SELECT count(*) FROM tc_orders WHERE tenant_id = 't0002';
-- where the directory names the files: the rows go with the file
SELECT tenant_remove('tc_dir', 'dcme', delete_rows => true);
SELECT * FROM tenant_locate('tc_dir', 'dcme');
SELECT * FROM shard_list('tc_dir') WHERE shard_id = 'dcme';
\! ls /tmp/ssfdw_regress/tenantcreate/dir/tenants | grep -c dcme
INSERT INTO tc_dir_orders VALUES ('dcme', 8, 'new', 1, '2026-01-02');  -- 23503

-- ===================================================================
-- tenant_remove: the file goes when the transaction commits
-- ===================================================================
SELECT tenant_create('tc_hashed', 'gcme');
INSERT INTO tc_orders VALUES ('gcme', 1, 'new', 100, '2026-01-02');
-- rolled back: the file stays as it was, without the fence
BEGIN;
SELECT tenant_remove('tc_hashed', 'gcme', delete_rows => true);
-- removed already by this transaction: 42704
SELECT tenant_remove('tc_hashed', 'gcme', delete_rows => true);
ROLLBACK;
\! ls /tmp/ssfdw_regress/tenantcreate/hashed/tenants/*/gcme.db | wc -l
\! sqlite3 /tmp/ssfdw_regress/tenantcreate/hashed/tenants/*/gcme.db "SELECT count(*) FROM sqlite_schema WHERE type = 'trigger'"
SELECT count(*) FROM tc_orders WHERE tenant_id = 'gcme';
INSERT INTO tc_orders VALUES ('gcme', 2, 'new', 200, '2026-01-02');
-- until the commit the file is there, and this transaction reads it; a
-- write to it waits for the removal's lock: 55P03
ALTER SERVER tc_hashed OPTIONS (ADD busy_timeout_ms '200');
BEGIN;
SELECT tenant_remove('tc_hashed', 'gcme', delete_rows => true);
SELECT count(*) FROM tc_orders WHERE tenant_id = 'gcme';
INSERT INTO tc_orders VALUES ('gcme', 3, 'new', 300, '2026-01-02');
ROLLBACK;
ALTER SERVER tc_hashed OPTIONS (DROP busy_timeout_ms);
-- a savepoint rolled back keeps it, and lets it go: removed again
BEGIN;
SAVEPOINT s1;
SELECT tenant_remove('tc_hashed', 'gcme', delete_rows => true);
ROLLBACK TO SAVEPOINT s1;
SAVEPOINT s2;
SELECT tenant_remove('tc_hashed', 'gcme', delete_rows => true);
ROLLBACK TO SAVEPOINT s2;
COMMIT;
SELECT count(*) FROM tc_orders WHERE tenant_id = 'gcme';
-- an exception block that fails keeps it too
DO $$
BEGIN
  PERFORM tenant_remove('tc_hashed', 'gcme', delete_rows => true);
  RAISE EXCEPTION 'changed my mind';
EXCEPTION WHEN raise_exception THEN
  RAISE NOTICE 'caught: %', SQLERRM;
END $$;
SELECT count(*) FROM tc_orders WHERE tenant_id = 'gcme';
-- a transaction that cannot be prepared: 0A000
BEGIN;
SELECT tenant_remove('tc_hashed', 'gcme', delete_rows => true);
PREPARE TRANSACTION 'regress_tc_remove';
SELECT count(*) FROM tc_orders WHERE tenant_id = 'gcme';
-- another session's writer waits for the file's lock and, once the
-- removal has committed, fails on the fence naming the tenant (40001)
BEGIN;
SELECT tenant_remove('tc_hashed', 'gcme', delete_rows => true);
\! psql -X -q -d contrib_regression -c "INSERT INTO tc_orders VALUES ('gcme', 3, 'new', 1, '2026-01-02')" > /tmp/ssfdw_regress/tenantcreate/writer.out 2>&1 & sleep 1
\! ls /tmp/ssfdw_regress/tenantcreate/hashed/tenants/*/ | grep gcme
COMMIT;
\! bash test/fixtures/wait_file.sh /tmp/ssfdw_regress/tenantcreate/writer.out ERROR
-- gone with its -wal and -shm files
\! ls /tmp/ssfdw_regress/tenantcreate/hashed/tenants/*/ | grep -c gcme
SELECT count(*) FROM tc_orders WHERE tenant_id = 'gcme';
INSERT INTO tc_orders VALUES ('gcme', 4, 'new', 1, '2026-01-02');  -- 23503
SELECT tenant_remove('tc_hashed', 'gcme');                 -- no file
-- an application's writer waiting for the lock of a rollback-journal
-- file fails on the fence too
BEGIN;
SELECT tenant_remove('tc_hashed', 't0003', delete_rows => true);
\! python3 test/fixtures/wait_write.py /tmp/ssfdw_regress/tenantcreate/hashed/tenants/$(printf t0003 | md5sum | cut -c1-2)/t0003.db /tmp/ssfdw_regress/tenantcreate/app.out "INSERT INTO orders (order_id, status, amount_cents, created_at) VALUES (99, 'new', 1, '2026-01-02')"
COMMIT;
\! bash test/fixtures/wait_file.sh /tmp/ssfdw_regress/tenantcreate/app.out
\! ls /tmp/ssfdw_regress/tenantcreate/hashed/tenants/*/ | grep -c t0003
SELECT count(*) FROM tc_orders WHERE tenant_id = 't0003';
-- where the directory names the files: a rollback keeps rows and file
BEGIN;
SELECT tenant_remove('tc_dir', 't0002', delete_rows => true);
ROLLBACK;
SELECT count(*) FROM tenant_locate('tc_dir', 't0002');
SELECT count(*) FROM tc_dir_orders WHERE tenant_id = 't0002';
-- bad input
SELECT tenant_remove('tc_hashed', '../t0002');             -- HV024
SELECT tenant_remove('tc_hashed', NULL);
SELECT tenant_remove('tc_none', 't0002');

-- ===================================================================
-- tenant_remove with archive_folder: the file is kept there
-- ===================================================================
ALTER SERVER tc_hashed OPTIONS (ADD archive_folder 'archive');
-- rolled back: the file stays, the copy goes
BEGIN;
SELECT tenant_remove('tc_hashed', 't0001');
\! ls /tmp/ssfdw_regress/tenantcreate/hashed/archive | sed 's/\.[0-9]*$/.<time>/'
ROLLBACK;
\! ls /tmp/ssfdw_regress/tenantcreate/hashed/archive | wc -l
SELECT count(*) FROM tc_orders WHERE tenant_id = 't0001';
SELECT tenant_remove('tc_hashed', 't0001');
\! ls /tmp/ssfdw_regress/tenantcreate/hashed/archive | sed 's/\.[0-9]*$/.<time>/'
\! ls /tmp/ssfdw_regress/tenantcreate/hashed/tenants/*/ | grep -c t0001
\! sqlite3 /tmp/ssfdw_regress/tenantcreate/hashed/archive/t0001.db.* 'SELECT count(*) FROM orders'
SELECT count(*) FROM tc_orders WHERE tenant_id = 't0001';
ALTER SERVER tc_dir OPTIONS (ADD archive_folder '../archive');
SELECT tenant_remove('tc_dir', 't0003');                   -- 42501
SELECT count(*) FROM tc_dir_orders WHERE tenant_id = 't0003';

DROP SERVER tc_shared;
DROP SERVER tc_hashed CASCADE;
DROP SERVER tc_dir CASCADE;
DROP OWNED BY regress_tc_app;
DROP ROLE regress_tc_app;
