--
-- Paths and privileges: shard files must stay in the directory's folder
-- unless the server allows otherwise; adding a shard (a file the server
-- then reads) needs both file roles; placement skips shard files that
-- cannot hold a tenant; a WAL shard in a folder the server cannot write
-- is refused every time, with what is missing; directory_init's file mode.
-- See test/fixtures/paths.sh for the files.  After each error, its
-- SQLSTATE.
--
\! bash test/fixtures/paths.sh
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
RESET client_min_messages;
\set SHOW_CONTEXT never

-- ===================================================================
-- Shard paths from the directory's shards table.  Inside the folder:
-- relative, absolute, or with ".." that stays inside.
-- ===================================================================
CREATE SERVER paths_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/paths/fleet/directory.db');
CREATE FOREIGN TABLE paths_items (tenant_id text, v text)
  SERVER paths_srv OPTIONS (table 'items');
SELECT * FROM paths_items WHERE tenant_id = 'acme';
SELECT * FROM paths_items WHERE tenant_id = 't_absin';
SELECT * FROM paths_items WHERE tenant_id = 't_dot';
-- Outside: "..", an absolute path, a symbolic link.  Refused before the
-- file is opened, routed or fanned out, and by the admin functions.
SELECT * FROM paths_items WHERE tenant_id = 't_up';
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM paths_items WHERE tenant_id = 't_abs';
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM paths_items WHERE tenant_id = 't_link';
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) FROM paths_items;
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM tenant_locate('paths_srv', 't_up');
-- The operator may allow it; the next statement sees the change, and
-- taking it back refuses the paths again (nothing resolved is kept).
ALTER SERVER paths_srv OPTIONS (ADD allow_outside_paths 'true');
SELECT * FROM paths_items WHERE tenant_id IN ('t_up', 't_abs', 't_link')
  ORDER BY tenant_id;
SELECT tenant_id, v FROM paths_items ORDER BY tenant_id;
SELECT shard_id, path FROM tenant_locate('paths_srv', 't_up');
ALTER SERVER paths_srv OPTIONS (SET allow_outside_paths 'off');
SELECT * FROM paths_items WHERE tenant_id = 't_up';
\echo :LAST_ERROR_SQLSTATE
ALTER SERVER paths_srv OPTIONS (SET allow_outside_paths 'maybe');
\echo :LAST_ERROR_SQLSTATE

-- ===================================================================
-- Shard paths from a shard_path pattern.
-- ===================================================================
CREATE SERVER paths_etc FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/paths/pattern/directory.db',
           shard_path '../../../../etc/%s');
CREATE FOREIGN TABLE paths_etc_items (tenant_id text, v text)
  SERVER paths_etc OPTIONS (table 'items');
SELECT * FROM paths_etc_items WHERE tenant_id = 'p_etc';
\echo :LAST_ERROR_SQLSTATE
CREATE SERVER paths_up FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/paths/pattern/directory.db',
           shard_path '../other/%s.db');
CREATE FOREIGN TABLE paths_up_items (tenant_id text, v text)
  SERVER paths_up OPTIONS (table 'items');
SELECT * FROM paths_up_items WHERE tenant_id = 'p_up';
\echo :LAST_ERROR_SQLSTATE
ALTER SERVER paths_up OPTIONS (ADD allow_outside_paths 'true');
SELECT * FROM paths_up_items WHERE tenant_id = 'p_up';

-- ===================================================================
-- shard_add: the same rule, checked before the file is even looked at
-- (a file that does not exist gives the same answer as one that does).
-- ===================================================================
SELECT shard_add('paths_srv', 'up2', '../other/up.db');
\echo :LAST_ERROR_SQLSTATE
SELECT shard_add('paths_srv', 'nope', '../other/no_such_file.db');
\echo :LAST_ERROR_SQLSTATE
SELECT shard_add('paths_srv', 'abs2', '/tmp/ssfdw_regress/paths/other/abs.db');
\echo :LAST_ERROR_SQLSTATE
SELECT shard_add('paths_srv', 'etc', '/etc/passwd');
\echo :LAST_ERROR_SQLSTATE
SELECT shard_add('paths_srv', 'link2', 'shards/../shards/link.db');
\echo :LAST_ERROR_SQLSTATE
-- an empty file is no SQLite database, whatever SQLite would make of it
SELECT shard_add('paths_srv', 'empty', '../broken/empty.db');
\echo :LAST_ERROR_SQLSTATE
-- allowed, the path is checked no more, the file still is
ALTER SERVER paths_srv OPTIONS (SET allow_outside_paths 'true');
SELECT shard_add('paths_srv', 'empty', '../broken/empty.db');
\echo :LAST_ERROR_SQLSTATE
SELECT shard_add('paths_srv', 'up2', '../other/up.db');
\echo :LAST_ERROR_SQLSTATE
SELECT shard_add('paths_srv', 'secret', '../other/secret.db');
ALTER SERVER paths_srv OPTIONS (DROP allow_outside_paths);

-- ===================================================================
-- Privileges.  shard_add names a file the server then reads: it needs
-- pg_read_server_files as well as pg_write_server_files.  Only a role
-- with pg_read_server_files may set allow_outside_paths.
-- ===================================================================
CREATE ROLE regress_paths_writer;
CREATE ROLE regress_paths_reader;
GRANT pg_write_server_files TO regress_paths_writer;
GRANT pg_read_server_files TO regress_paths_reader;
GRANT USAGE ON FOREIGN DATA WRAPPER sqlite_shard_fdw
  TO regress_paths_writer, regress_paths_reader;
GRANT USAGE ON FOREIGN SERVER paths_srv
  TO regress_paths_writer, regress_paths_reader;
GRANT EXECUTE ON FUNCTION shard_add(name, text, text),
  tenant_add(name, text, text, bigint), directory_init(name),
  directory_init(name, text)
  TO regress_paths_writer, regress_paths_reader;
\! sqlite3 /tmp/ssfdw_regress/paths/fleet/shards/d.db "CREATE TABLE items(tenant_id TEXT, v TEXT)" && chown postgres /tmp/ssfdw_regress/paths/fleet/shards/d.db
SET ROLE regress_paths_writer;
SELECT shard_add('paths_srv', 'd', 'shards/d.db');
\echo :LAST_ERROR_SQLSTATE
-- tenant_add names no file: pg_write_server_files is enough
SELECT tenant_add('paths_srv', 'w_new', 'a');
-- a role without pg_read_server_files cannot set the option, nor change
-- any option of a server that names files
CREATE SERVER paths_writer_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (allow_outside_paths 'true',
           directory '/tmp/ssfdw_regress/paths/fleet/directory.db');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
SET ROLE regress_paths_reader;
SELECT shard_add('paths_srv', 'd', 'shards/d.db');
\echo :LAST_ERROR_SQLSTATE
SELECT tenant_add('paths_srv', 'r_new', 'a');
\echo :LAST_ERROR_SQLSTATE
SELECT directory_init('paths_srv');
\echo :LAST_ERROR_SQLSTATE
-- the reader owns this server: it may set the option on it
CREATE SERVER paths_reader_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/paths/fleet/directory.db',
           allow_outside_paths 'true');
RESET ROLE;
-- ... and a role with both may add it
GRANT pg_read_server_files TO regress_paths_writer;
SET ROLE regress_paths_writer;
SELECT shard_add('paths_srv', 'd', 'shards/d.db');
SELECT shard_add('paths_srv', 'up3', '../other/up.db');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
-- The owner of a server who lacks pg_read_server_files is told why it
-- may not change even an option that names no file.
ALTER SERVER paths_reader_srv OWNER TO regress_paths_writer;
REVOKE pg_read_server_files FROM regress_paths_writer;
SET ROLE regress_paths_writer;
ALTER SERVER paths_reader_srv OPTIONS (ADD busy_timeout_ms '100');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
DROP SERVER paths_reader_srv;

-- ===================================================================
-- tenant_add: placement skips shards whose file cannot hold a tenant,
-- although each is smaller than the good one; naming one is refused
-- with the reason.
-- ===================================================================
CREATE SERVER paths_broken FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/paths/broken/directory.db');
SELECT shard_id, tenants, bytes IS NOT NULL AS has_file
  FROM shard_list('paths_broken') ORDER BY shard_id;
SELECT tenant_add('paths_broken', 'newbie');
SELECT tenant_add('paths_broken', 'newbie2');
SELECT tenant_add('paths_broken', 'x', 'empty');
\echo :LAST_ERROR_SQLSTATE
SELECT tenant_add('paths_broken', 'x', 'text');
\echo :LAST_ERROR_SQLSTATE
SELECT tenant_add('paths_broken', 'x', 'folder');
\echo :LAST_ERROR_SQLSTATE
SELECT tenant_add('paths_broken', 'x', 'link');
\echo :LAST_ERROR_SQLSTATE
SELECT tenant_add('paths_broken', 'x', 'walro');
\echo :LAST_ERROR_SQLSTATE
SELECT shard_id, tenants FROM shard_list('paths_broken') ORDER BY shard_id;
-- without the good shard nothing can take a tenant
\! sqlite3 /tmp/ssfdw_regress/paths/broken/directory.db "DELETE FROM shard_map; DELETE FROM shards WHERE shard_id = 'good'"
SELECT tenant_add('paths_broken', 'newbie3');
\echo :LAST_ERROR_SQLSTATE

-- ===================================================================
-- A WAL shard in a folder the server cannot write: refused every time,
-- also while another process has it open (which is when SQLite alone
-- would read it); a rollback-journal shard there reads fine.
-- ===================================================================
CREATE SERVER paths_ro FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/paths/rofleet/directory.db');
CREATE FOREIGN TABLE paths_ro_items (tenant_id text, v text)
  SERVER paths_ro OPTIONS (table 'items');
SELECT * FROM paths_ro_items WHERE tenant_id = 'd1';
SELECT * FROM paths_ro_items WHERE tenant_id = 'w1';
\echo :LAST_ERROR_SQLSTATE
\! bash test/fixtures/paths.sh hold /tmp/ssfdw_regress/paths/rofleet/ro/wal.db read
\! ls /tmp/ssfdw_regress/paths/rofleet/ro
SELECT * FROM paths_ro_items WHERE tenant_id = 'w1';
\echo :LAST_ERROR_SQLSTATE
\! bash test/fixtures/paths.sh release
SELECT * FROM paths_ro_items;
\echo :LAST_ERROR_SQLSTATE
-- the same for a directory in WAL mode
CREATE SERVER paths_rodir FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/paths/rodir/directory.db');
SELECT * FROM shard_list('paths_rodir');
\echo :LAST_ERROR_SQLSTATE

-- ===================================================================
-- A shard that cannot be opened says so once, with SQLite's reason: here
-- another process holds its write lock past the busy timeout.
-- ===================================================================
CREATE SERVER paths_lock FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/paths/lock/directory.db',
           busy_timeout_ms '50');
CREATE FOREIGN TABLE paths_lock_items (tenant_id text, v text)
  SERVER paths_lock OPTIONS (table 'items');
\! bash test/fixtures/paths.sh hold /tmp/ssfdw_regress/paths/lock/l.db exclusive
SELECT * FROM paths_lock_items WHERE tenant_id = 'l1';
\echo :LAST_ERROR_SQLSTATE
\! bash test/fixtures/paths.sh release
SELECT * FROM paths_lock_items WHERE tenant_id = 'l1';

-- ===================================================================
-- directory_init creates the file with mode 0660 (the application
-- shares it), or the mode given; an existing file keeps its mode.  A
-- file that is not SQLite is data corruption, not a connection failure.
-- ===================================================================
CREATE SERVER paths_init1 FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/paths/init/default.db');
CREATE SERVER paths_init2 FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/paths/init/private.db');
CREATE SERVER paths_init3 FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/paths/init/text.db');
SELECT directory_init('paths_init1');
SELECT directory_init('paths_init2', '0600');
SELECT directory_init('paths_init1', '0600');
\! cd /tmp/ssfdw_regress/paths/init && stat -c '%n %a %U' default.db private.db
\! sqlite3 /tmp/ssfdw_regress/paths/init/default.db .tables
SELECT directory_init('paths_init2', '0400');
\echo :LAST_ERROR_SQLSTATE
SELECT directory_init('paths_init2', '1777');
\echo :LAST_ERROR_SQLSTATE
SELECT directory_init('paths_init2', 'rw-rw----');
\echo :LAST_ERROR_SQLSTATE
SELECT directory_init('paths_init3');
\echo :LAST_ERROR_SQLSTATE

-- ===================================================================
-- Clean up
-- ===================================================================
DROP SERVER paths_srv, paths_etc, paths_up, paths_broken, paths_ro,
  paths_rodir, paths_lock, paths_init1, paths_init2, paths_init3 CASCADE;
REVOKE EXECUTE ON FUNCTION shard_add(name, text, text),
  tenant_add(name, text, text, bigint), directory_init(name),
  directory_init(name, text)
  FROM regress_paths_writer, regress_paths_reader;
REVOKE USAGE ON FOREIGN DATA WRAPPER sqlite_shard_fdw
  FROM regress_paths_writer, regress_paths_reader;
DROP ROLE regress_paths_writer, regress_paths_reader;
