--
-- The directory: directory_init, shard_add, shard_list, tenant_add with
-- and without placement, tenant_locate, and the per-statement change
-- check that makes changes by other processes visible at once.
-- See test/fixtures/directory.sh for the shard files.
--
\! bash test/fixtures/directory.sh
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
RESET client_min_messages;
CREATE SERVER dir_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/directory/dir.db');
CREATE FOREIGN TABLE dir_orders (tenant_id text, order_id bigint, note text)
  SERVER dir_srv OPTIONS (table 'orders');

-- ===================================================================
-- Before directory_init the file does not exist
-- ===================================================================
SELECT count(*) FROM dir_orders;
SELECT * FROM shard_list('dir_srv');
SELECT tenant_add('dir_srv', 'acme');
\! test -e /tmp/ssfdw_regress/directory/dir.db || echo "dir.db does not exist"

-- ===================================================================
-- directory_init creates the file and its tables; again, it changes
-- nothing
-- ===================================================================
SELECT directory_init('dir_srv');
\! stat -c '%U %F' /tmp/ssfdw_regress/directory/dir.db
\! sqlite3 /tmp/ssfdw_regress/directory/dir.db .schema
SELECT * FROM shard_list('dir_srv');
SELECT count(*) FROM dir_orders;
SELECT shard_add('dir_srv', 'big', 'shards/big.db');
SELECT directory_init('dir_srv');
SELECT shard_id, path FROM shard_list('dir_srv');
\! sqlite3 /tmp/ssfdw_regress/directory/dir.db .schema
-- Only for a sqlite_shard_fdw server.
CREATE FOREIGN DATA WRAPPER regress_other_fdw;
CREATE SERVER regress_not_ours FOREIGN DATA WRAPPER regress_other_fdw;
SELECT directory_init('regress_not_ours');
SELECT * FROM shard_list('regress_not_ours');
SELECT directory_init('no_such_server');

-- ===================================================================
-- shard_add: a relative path is taken from the directory's folder
-- ===================================================================
SELECT shard_add('dir_srv', 'small1', 'shards/small1.db');
SELECT shard_add('dir_srv', 'small2', '/tmp/ssfdw_regress/directory/shards/small2.db');
SELECT shard_add('dir_srv', 'gone', 'shards/gone.db');
-- errors: the id or the path already present, no file, not a database,
-- an empty id or path
SELECT shard_add('dir_srv', 'big', 'shards/small2_copy.db');
SELECT shard_add('dir_srv', 'big2', 'shards/big.db');
-- the same file spelled another way is the same shard: adding it twice
-- would make every fan-out read its rows twice
SELECT shard_add('dir_srv', 'big3', '/tmp/ssfdw_regress/directory/shards/big.db');
SELECT shard_add('dir_srv', 'small1_again', './shards/small1.db');
SELECT shard_add('dir_srv', 'nofile', 'shards/no_such_file.db');
SELECT shard_add('dir_srv', 'text', 'shards/not_a_db.db');
SELECT shard_add('dir_srv', '', 'shards/small2_copy.db');
SELECT shard_add('dir_srv', 'empty_path', '');
\! sqlite3 /tmp/ssfdw_regress/directory/dir.db "SELECT shard_id, path FROM shards ORDER BY shard_id"

-- ===================================================================
-- shard_list: tenants and bytes; bytes is NULL when the file is gone
-- ===================================================================
SELECT shard_id, path, tenants, bytes > 0 AS has_bytes
  FROM shard_list('dir_srv') ORDER BY shard_id;
\! rm /tmp/ssfdw_regress/directory/shards/gone.db
SELECT shard_id, tenants, bytes IS NULL AS missing
  FROM shard_list('dir_srv') ORDER BY shard_id;
SELECT bytes > 300000 AS big_is_big FROM shard_list('dir_srv')
  WHERE shard_id = 'big';
SELECT count(DISTINCT bytes) = 1 AS smalls_same_size FROM shard_list('dir_srv')
  WHERE shard_id IN ('small1', 'small2');

-- ===================================================================
-- tenant_add on a given shard
-- ===================================================================
SELECT tenant_add('dir_srv', 'acme', 'big');
SELECT tenant_add('dir_srv', 'x1', 'small1');
SELECT tenant_add('dir_srv', 'x2', 'small1');
-- errors: an unknown shard, a tenant already placed, an empty or NULL id
SELECT tenant_add('dir_srv', 'y1', 'no_such_shard');
SELECT tenant_add('dir_srv', 'acme', 'small2');
SELECT tenant_add('dir_srv', 'acme');
SELECT tenant_add('dir_srv', '');
SELECT tenant_add('dir_srv', NULL);
SELECT tenant_add(NULL, 'y1');
\! sqlite3 /tmp/ssfdw_regress/directory/dir.db "SELECT tenant_id, shard_id, status, target_shard_id, typeof(updated_at) FROM shard_map ORDER BY tenant_id"
SELECT shard_id, tenants FROM shard_list('dir_srv') ORDER BY shard_id;

-- ===================================================================
-- Placement: the smallest expected load (the file, or the tenants times
-- the average tenant, whichever is larger) under max_shard_bytes, the
-- fewest tenants on a tie; a missing file never (see also placement.sql)
-- ===================================================================
-- small1 and small2 have the same size; small2 has fewer tenants.
SELECT tenant_add('dir_srv', 't_a');
SELECT tenant_add('dir_srv', 't_b');
-- now 2 and 2: a tie on both counts, the first shard by id
SELECT tenant_add('dir_srv', 't_c');
SELECT tenant_add('dir_srv', 't_d');
SELECT tenant_add('dir_srv', 't_e');
SELECT shard_id, tenants FROM shard_list('dir_srv') ORDER BY shard_id;
-- small2 grows past small1 (still far below big), by less than the
-- average tenant: small1's four tenants without rows count as average
-- ones, so small2 takes the next tenant, then small1 on a tie.
\! sqlite3 /tmp/ssfdw_regress/directory/shards/small2.db "CREATE TABLE pad(b); INSERT INTO pad VALUES (zeroblob(50000))"
SELECT s1.bytes < s2.bytes AS small1_smaller, s2.bytes < b.bytes AS small2_below_big
  FROM shard_list('dir_srv') s1, shard_list('dir_srv') s2, shard_list('dir_srv') b
  WHERE s1.shard_id = 'small1' AND s2.shard_id = 'small2' AND b.shard_id = 'big';
SELECT tenant_add('dir_srv', 't_f');
SELECT tenant_add('dir_srv', 't_g');
-- max_shard_bytes: every shard over it is an error ...
ALTER SERVER dir_srv OPTIONS (ADD max_shard_bytes '8kB');
SELECT tenant_add('dir_srv', 't_h');
-- ... a shard at or under it may still take the tenant
ALTER SERVER dir_srv OPTIONS (SET max_shard_bytes '1MB');
SELECT tenant_add('dir_srv', 't_h');
ALTER SERVER dir_srv OPTIONS (DROP max_shard_bytes);
-- an explicit shard is taken as given, whatever its size
SELECT tenant_add('dir_srv', 't_i', 'big');
SELECT shard_id, tenants, bytes IS NULL AS missing
  FROM shard_list('dir_srv') ORDER BY shard_id;

-- ===================================================================
-- tenant_locate: ACTIVE, MIGRATING (the source answers), DONE (the
-- target answers), unknown
-- ===================================================================
SELECT * FROM tenant_locate('dir_srv', 'acme');
SELECT * FROM tenant_locate('dir_srv', 'x1');
SELECT tenant_locate('dir_srv', 'nobody') IS NULL AS unknown;
\! sqlite3 /tmp/ssfdw_regress/directory/dir.db "UPDATE shard_map SET status = 'MIGRATING', target_shard_id = 'small2' WHERE tenant_id = 'x1'"
SELECT * FROM tenant_locate('dir_srv', 'x1');
\! sqlite3 /tmp/ssfdw_regress/directory/dir.db "UPDATE shard_map SET status = 'DONE' WHERE tenant_id = 'x1'"
SELECT * FROM tenant_locate('dir_srv', 'x1');
-- a DONE tenant counts on its new shard
SELECT shard_id, tenants FROM shard_list('dir_srv') ORDER BY shard_id;
\! sqlite3 /tmp/ssfdw_regress/directory/dir.db "UPDATE shard_map SET status = 'ACTIVE', target_shard_id = NULL WHERE tenant_id = 'x1'"
SELECT * FROM tenant_locate('dir_srv', 'x1');

-- ===================================================================
-- Changes made by another process are seen by the very next statement
-- ===================================================================
-- A tenant looked up and found missing (and so remembered as missing) ...
SELECT tenant_locate('dir_srv', 'newco') IS NULL AS unknown;
SELECT count(*) FROM dir_orders WHERE tenant_id = 'newco';
-- ... is found once the application adds it.
\! sqlite3 /tmp/ssfdw_regress/directory/dir.db "INSERT INTO shard_map VALUES ('newco', 'small2', 'ACTIVE', NULL, 0)"
SELECT shard_id, status FROM tenant_locate('dir_srv', 'newco');
EXPLAIN (VERBOSE, COSTS OFF) SELECT * FROM dir_orders WHERE tenant_id = 'newco';
SELECT * FROM dir_orders WHERE tenant_id = 'newco' ORDER BY order_id;
-- Moved by an UPDATE of shard_map: the next statement reads the new shard.
\! sqlite3 /tmp/ssfdw_regress/directory/dir.db "UPDATE shard_map SET shard_id = 'big' WHERE tenant_id = 'newco'"
EXPLAIN (VERBOSE, COSTS OFF) SELECT * FROM dir_orders WHERE tenant_id = 'newco';
SELECT * FROM dir_orders WHERE tenant_id = 'newco' ORDER BY order_id;
SELECT shard_id FROM tenant_locate('dir_srv', 'newco');
-- The same inside one transaction: each statement checks again.
BEGIN;
SELECT count(*) FROM dir_orders WHERE tenant_id = 'newco';
\! sqlite3 /tmp/ssfdw_regress/directory/dir.db "UPDATE shard_map SET shard_id = 'small2' WHERE tenant_id = 'newco'"
SELECT count(*) FROM dir_orders WHERE tenant_id = 'newco';
SELECT shard_id FROM tenant_locate('dir_srv', 'newco');
COMMIT;
-- A shard's file changed in the shards table.
\! sqlite3 /tmp/ssfdw_regress/directory/dir.db "UPDATE shards SET path = 'shards/small2_copy.db' WHERE shard_id = 'small2'"
SELECT * FROM dir_orders WHERE tenant_id = 'newco' ORDER BY order_id;
SELECT path FROM tenant_locate('dir_srv', 'newco');
\! sqlite3 /tmp/ssfdw_regress/directory/dir.db "UPDATE shards SET path = 'shards/small2.db' WHERE shard_id = 'small2'"
SELECT count(*) FROM dir_orders WHERE tenant_id = 'newco';
-- Removed: unknown again.
\! sqlite3 /tmp/ssfdw_regress/directory/dir.db "DELETE FROM shard_map WHERE tenant_id = 'newco'"
SELECT tenant_locate('dir_srv', 'newco') IS NULL AS unknown;
SELECT count(*) FROM dir_orders WHERE tenant_id = 'newco';
-- A shard whose file is gone fails a fan-out until it leaves the
-- directory.
SELECT count(*) FROM dir_orders;
\! sqlite3 /tmp/ssfdw_regress/directory/dir.db "DELETE FROM shards WHERE shard_id = 'gone'"
SELECT count(*) FROM dir_orders;
-- A new shard appears in fan-outs and listings.
\! sqlite3 /tmp/ssfdw_regress/directory/dir.db "INSERT INTO shards VALUES ('z_copy', 'shards/small2_copy.db')"
SELECT shard_id, tenants FROM shard_list('dir_srv') ORDER BY shard_id;
SELECT count(*) FROM dir_orders;
\! sqlite3 /tmp/ssfdw_regress/directory/dir.db "DELETE FROM shards WHERE shard_id = 'z_copy'"
SELECT count(*) FROM dir_orders;
-- Tenants placed by this session are seen at once as well.
SELECT tenant_add('dir_srv', 'newco', 'small2');
SELECT count(*) FROM dir_orders WHERE tenant_id = 'newco';

-- ===================================================================
-- Who may call what: writes need pg_write_server_files, reads USAGE
-- on the server
-- ===================================================================
CREATE ROLE regress_dir_user;
SET ROLE regress_dir_user;
SELECT tenant_add('dir_srv', 'y1');
SELECT * FROM tenant_locate('dir_srv', 'acme');
SELECT shard_id FROM shard_list('dir_srv') ORDER BY shard_id;
RESET ROLE;
GRANT USAGE ON FOREIGN SERVER dir_srv TO regress_dir_user;
GRANT EXECUTE ON FUNCTION tenant_add(name, text, text, bigint),
  shard_add(name, text, text), directory_init(name) TO regress_dir_user;
SET ROLE regress_dir_user;
SELECT shard_id, status FROM tenant_locate('dir_srv', 'acme');
SELECT shard_id FROM shard_list('dir_srv') ORDER BY shard_id;
SELECT tenant_add('dir_srv', 'y1');
SELECT shard_add('dir_srv', 'copy', 'shards/small2_copy.db');
SELECT directory_init('dir_srv');
RESET ROLE;
GRANT pg_write_server_files TO regress_dir_user;
SET ROLE regress_dir_user;
SELECT tenant_add('dir_srv', 'y1', 'small1');
RESET ROLE;

-- ===================================================================
-- A directory created empty: no shards to place a tenant on
-- ===================================================================
CREATE SERVER dir_empty FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/directory/empty/dir.db');
SELECT directory_init('dir_empty');
SELECT * FROM shard_list('dir_empty');
SELECT tenant_add('dir_empty', 'acme');
SELECT tenant_locate('dir_empty', 'acme') IS NULL AS unknown;

-- ===================================================================
-- Clean up
-- ===================================================================
REVOKE ALL ON FUNCTION tenant_add(name, text, text, bigint),
  shard_add(name, text, text), directory_init(name) FROM regress_dir_user;
DROP SERVER dir_srv CASCADE;
DROP SERVER dir_empty;
DROP SERVER regress_not_ours;
DROP FOREIGN DATA WRAPPER regress_other_fdw;
DROP ROLE regress_dir_user;
