--
-- Options of sqlite_shard_fdw: the validator (which names are valid where,
-- which values), the privileges that guard files and the directory, the
-- user mapping option "tenants", and the extension's settings.
--
\! bash test/fixtures/options.sh
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
RESET client_min_messages;

-- regress_sqlstate(statement): run a statement and undo it; 'ok', or the
-- SQLSTATE and message of its error.  Statements below run once plainly,
-- to show the whole error, and once through this, to show its SQLSTATE.
CREATE OR REPLACE FUNCTION regress_sqlstate(query text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  state text;
  msg text;
BEGIN
  BEGIN
    EXECUTE query;
    RAISE EXCEPTION USING ERRCODE = 'P0099';  -- undo what it did
  EXCEPTION
    WHEN SQLSTATE 'P0099' THEN
      RETURN 'ok';
    WHEN OTHERS THEN
      GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, msg = MESSAGE_TEXT;
      RETURN state || ': ' || msg;
  END;
END
$$;

CREATE SERVER opt_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/options/directory.db');
CREATE FOREIGN TABLE opt_items (tenant_id text, id int)
  SERVER opt_srv OPTIONS (table 'items');

-- ===================================================================
-- Unknown option names, at every level, with the closest valid name of
-- that level as a hint when there is one.
-- ===================================================================
-- server
CREATE SERVER opt_bad FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directry '/tmp/ssfdw_regress/options/directory.db');
CREATE SERVER opt_bad FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/options/directory.db', shardpath 'shards/%s.db');
CREATE SERVER opt_bad FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/options/directory.db', busy_timeout '10');
CREATE SERVER opt_bad FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/options/directory.db', xyzzy '1');
-- options of other levels are not valid on a server
CREATE SERVER opt_bad FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/options/directory.db', table 'items');
CREATE SERVER opt_bad FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/options/directory.db', tenants 'a');
-- foreign table
CREATE FOREIGN TABLE opt_bad (tenant_id text) SERVER opt_srv
  OPTIONS (tenant_colum 'tenant_id');
CREATE FOREIGN TABLE opt_bad (tenant_id text) SERVER opt_srv
  OPTIONS (tables 'items');
CREATE FOREIGN TABLE opt_bad (tenant_id text) SERVER opt_srv
  OPTIONS (tenant 'tenant_id');
CREATE FOREIGN TABLE opt_bad (tenant_id text) SERVER opt_srv
  OPTIONS (column 'x');
CREATE FOREIGN TABLE opt_bad (tenant_id text) SERVER opt_srv
  OPTIONS (directory '/tmp/ssfdw_regress/options/directory.db');
-- column
CREATE FOREIGN TABLE opt_bad (tenant_id text OPTIONS (colum 'tenant_id'))
  SERVER opt_srv;
CREATE FOREIGN TABLE opt_bad (tenant_id text OPTIONS (column_name 'tenant_id'))
  SERVER opt_srv;
CREATE FOREIGN TABLE opt_bad (tenant_id text OPTIONS (tenant_column 'tenant_id'))
  SERVER opt_srv;
-- user mapping
CREATE USER MAPPING FOR CURRENT_USER SERVER opt_srv OPTIONS (tenant 'a');
CREATE USER MAPPING FOR CURRENT_USER SERVER opt_srv OPTIONS (user 'a');
CREATE USER MAPPING FOR CURRENT_USER SERVER opt_srv OPTIONS (password 'a');
-- the wrapper itself takes no options
ALTER FOREIGN DATA WRAPPER sqlite_shard_fdw OPTIONS (ADD directory '/tmp/x.db');

SELECT label, regress_sqlstate(stmt) FROM (VALUES
  ('server directry', $$CREATE SERVER opt_bad FOREIGN DATA WRAPPER sqlite_shard_fdw OPTIONS (directry '/tmp/ssfdw_regress/options/directory.db')$$),
  ('server table', $$CREATE SERVER opt_bad FOREIGN DATA WRAPPER sqlite_shard_fdw OPTIONS (directory '/tmp/ssfdw_regress/options/directory.db', table 'items')$$),
  ('table tenant_colum', $$CREATE FOREIGN TABLE opt_bad (tenant_id text) SERVER opt_srv OPTIONS (tenant_colum 'tenant_id')$$),
  ('column colum', $$CREATE FOREIGN TABLE opt_bad (tenant_id text OPTIONS (colum 'tenant_id')) SERVER opt_srv$$),
  ('mapping tenant', $$CREATE USER MAPPING FOR CURRENT_USER SERVER opt_srv OPTIONS (tenant 'a')$$),
  ('wrapper directory', $$ALTER FOREIGN DATA WRAPPER sqlite_shard_fdw OPTIONS (ADD directory '/tmp/x.db')$$)
) AS t(label, stmt);

-- ===================================================================
-- Bad values.
-- ===================================================================
-- directory: required, not empty, absolute
CREATE SERVER opt_bad FOREIGN DATA WRAPPER sqlite_shard_fdw;
CREATE SERVER opt_bad FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (shard_path 'shards/%s.db');
CREATE SERVER opt_bad FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '');
CREATE SERVER opt_bad FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory 'options/directory.db');
-- busy_timeout_ms: a non-negative integer, at most one hour
CREATE SERVER opt_bad FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/options/directory.db', busy_timeout_ms 'abc');
CREATE SERVER opt_bad FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/options/directory.db', busy_timeout_ms '-1');
CREATE SERVER opt_bad FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/options/directory.db', busy_timeout_ms '99999999999');
CREATE SERVER opt_bad FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/options/directory.db', busy_timeout_ms '3600001');
CREATE SERVER opt_bad FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/options/directory.db', busy_timeout_ms '2147483647');
CREATE SERVER opt_hour FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/options/directory.db', busy_timeout_ms '3600000');
ALTER SERVER opt_hour OPTIONS (SET busy_timeout_ms '0');
DROP SERVER opt_hour;
-- max_shard_bytes: a positive size, with an optional unit
CREATE SERVER opt_bad FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/options/directory.db', max_shard_bytes '0');
CREATE SERVER opt_bad FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/options/directory.db', max_shard_bytes '-5');
CREATE SERVER opt_bad FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/options/directory.db', max_shard_bytes '5 XB');
CREATE SERVER opt_bad FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/options/directory.db', max_shard_bytes 'GB');
CREATE SERVER opt_bad FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/options/directory.db', max_shard_bytes '1e30');
CREATE SERVER opt_bad FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/options/directory.db', max_shard_bytes 'inf');
-- NaN is not a number of bytes, and 0.5 bytes is less than one: both must
-- be refused like '0' (they end up as a cap no shard can be under).
BEGIN;
CREATE SERVER opt_bad FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/options/directory.db', max_shard_bytes 'NaN');
ROLLBACK;
BEGIN;
CREATE SERVER opt_bad FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/options/directory.db', max_shard_bytes '0.5');
ROLLBACK;
-- good sizes
CREATE SERVER opt_size FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/options/directory.db', max_shard_bytes '10GB');
ALTER SERVER opt_size OPTIONS (SET max_shard_bytes '1.5 mb');
ALTER SERVER opt_size OPTIONS (SET max_shard_bytes '4096');
ALTER SERVER opt_size OPTIONS (SET max_shard_bytes '2 TB');
DROP SERVER opt_size;
-- on_missing_shard: error or skip
CREATE SERVER opt_bad FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/options/directory.db', on_missing_shard 'maybe');
CREATE SERVER opt_bad FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/options/directory.db', on_missing_shard '');
-- shard_path: %s exactly once, no other conversion
CREATE SERVER opt_bad FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/options/directory.db', shard_path 'shards/one.db');
CREATE SERVER opt_bad FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/options/directory.db', shard_path 'shards/%d.db');
CREATE SERVER opt_bad FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/options/directory.db', shard_path 'shards/%s/%s.db');
CREATE SERVER opt_bad FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/options/directory.db', shard_path 'shards/%%s.db');
CREATE SERVER opt_bad FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/options/directory.db', shard_path 'shards/%s.db%');
CREATE SERVER opt_bad FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/options/directory.db', shard_path '');
CREATE SERVER opt_pattern FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/options/directory.db', shard_path '100%%/%s.db');
DROP SERVER opt_pattern;
-- names of tables and columns must not be empty
CREATE FOREIGN TABLE opt_bad (tenant_id text) SERVER opt_srv OPTIONS (table '');
CREATE FOREIGN TABLE opt_bad (tenant_id text) SERVER opt_srv
  OPTIONS (tenant_column '');
CREATE FOREIGN TABLE opt_bad (tenant_id text OPTIONS (column '')) SERVER opt_srv;

SELECT label, regress_sqlstate(stmt) FROM (VALUES
  ('no directory', $$CREATE SERVER opt_bad FOREIGN DATA WRAPPER sqlite_shard_fdw$$),
  ('empty directory', $$CREATE SERVER opt_bad FOREIGN DATA WRAPPER sqlite_shard_fdw OPTIONS (directory '')$$),
  ('relative directory', $$CREATE SERVER opt_bad FOREIGN DATA WRAPPER sqlite_shard_fdw OPTIONS (directory 'options/directory.db')$$),
  ('busy_timeout_ms abc', $$CREATE SERVER opt_bad FOREIGN DATA WRAPPER sqlite_shard_fdw OPTIONS (directory '/tmp/ssfdw_regress/options/directory.db', busy_timeout_ms 'abc')$$),
  ('busy_timeout_ms -1', $$CREATE SERVER opt_bad FOREIGN DATA WRAPPER sqlite_shard_fdw OPTIONS (directory '/tmp/ssfdw_regress/options/directory.db', busy_timeout_ms '-1')$$),
  ('busy_timeout_ms 3600001', $$CREATE SERVER opt_bad FOREIGN DATA WRAPPER sqlite_shard_fdw OPTIONS (directory '/tmp/ssfdw_regress/options/directory.db', busy_timeout_ms '3600001')$$),
  ('max_shard_bytes 0', $$CREATE SERVER opt_bad FOREIGN DATA WRAPPER sqlite_shard_fdw OPTIONS (directory '/tmp/ssfdw_regress/options/directory.db', max_shard_bytes '0')$$),
  ('max_shard_bytes 5 XB', $$CREATE SERVER opt_bad FOREIGN DATA WRAPPER sqlite_shard_fdw OPTIONS (directory '/tmp/ssfdw_regress/options/directory.db', max_shard_bytes '5 XB')$$),
  ('max_shard_bytes NaN', $$CREATE SERVER opt_bad FOREIGN DATA WRAPPER sqlite_shard_fdw OPTIONS (directory '/tmp/ssfdw_regress/options/directory.db', max_shard_bytes 'NaN')$$),
  ('max_shard_bytes 10GB', $$CREATE SERVER opt_bad FOREIGN DATA WRAPPER sqlite_shard_fdw OPTIONS (directory '/tmp/ssfdw_regress/options/directory.db', max_shard_bytes '10GB')$$),
  ('on_missing_shard maybe', $$CREATE SERVER opt_bad FOREIGN DATA WRAPPER sqlite_shard_fdw OPTIONS (directory '/tmp/ssfdw_regress/options/directory.db', on_missing_shard 'maybe')$$),
  ('shard_path without %s', $$CREATE SERVER opt_bad FOREIGN DATA WRAPPER sqlite_shard_fdw OPTIONS (directory '/tmp/ssfdw_regress/options/directory.db', shard_path 'shards/one.db')$$),
  ('shard_path %d', $$CREATE SERVER opt_bad FOREIGN DATA WRAPPER sqlite_shard_fdw OPTIONS (directory '/tmp/ssfdw_regress/options/directory.db', shard_path 'shards/%d.db')$$),
  ('empty table', $$CREATE FOREIGN TABLE opt_bad (tenant_id text) SERVER opt_srv OPTIONS (table '')$$)
) AS t(label, stmt);

-- ===================================================================
-- ALTER is checked like CREATE, and a rejected ALTER changes nothing.
-- ===================================================================
CREATE USER MAPPING FOR CURRENT_USER SERVER opt_srv;
ALTER SERVER opt_srv OPTIONS (ADD busy_timeout_ms 'abc');
ALTER SERVER opt_srv OPTIONS (ADD on_missing_shard 'never');
ALTER SERVER opt_srv OPTIONS (ADD shard_path 'shards/%d.db');
ALTER SERVER opt_srv OPTIONS (SET directory 'relative.db');
ALTER SERVER opt_srv OPTIONS (DROP directory);
ALTER SERVER opt_srv OPTIONS (ADD directry '/tmp/x.db');
ALTER FOREIGN TABLE opt_items OPTIONS (SET table '');
ALTER FOREIGN TABLE opt_items OPTIONS (ADD tenant_colum 'tenant_id');
ALTER FOREIGN TABLE opt_items ALTER COLUMN id OPTIONS (ADD colum 'id');
ALTER FOREIGN TABLE opt_items ALTER COLUMN id OPTIONS (ADD column '');
ALTER USER MAPPING FOR CURRENT_USER SERVER opt_srv OPTIONS (ADD tenant 'a');
ALTER USER MAPPING FOR CURRENT_USER SERVER opt_srv OPTIONS (ADD tenants 'a,,b');
SELECT srvoptions FROM pg_foreign_server WHERE srvname = 'opt_srv';
SELECT ftoptions FROM pg_foreign_table WHERE ftrelid = 'opt_items'::regclass;
SELECT attname, attfdwoptions FROM pg_attribute
  WHERE attrelid = 'opt_items'::regclass AND attnum > 0 ORDER BY attnum;
SELECT umoptions FROM pg_user_mappings WHERE srvname = 'opt_srv';
-- good values go through
ALTER SERVER opt_srv OPTIONS (ADD busy_timeout_ms '250', ADD on_missing_shard 'skip',
  ADD max_shard_bytes '1 GB');
ALTER FOREIGN TABLE opt_items OPTIONS (ADD tenant_column 'tenant_id');
ALTER FOREIGN TABLE opt_items ALTER COLUMN id OPTIONS (ADD column 'id');
SELECT srvoptions FROM pg_foreign_server WHERE srvname = 'opt_srv';
SELECT ftoptions FROM pg_foreign_table WHERE ftrelid = 'opt_items'::regclass;
SELECT * FROM opt_items ORDER BY id;

SELECT label, regress_sqlstate(stmt) FROM (VALUES
  ('SET busy_timeout_ms abc', $$ALTER SERVER opt_srv OPTIONS (SET busy_timeout_ms 'abc')$$),
  ('SET busy_timeout_ms -1', $$ALTER SERVER opt_srv OPTIONS (SET busy_timeout_ms '-1')$$),
  ('SET busy_timeout_ms 3600001', $$ALTER SERVER opt_srv OPTIONS (SET busy_timeout_ms '3600001')$$),
  ('DROP directory', $$ALTER SERVER opt_srv OPTIONS (DROP directory)$$),
  ('SET table empty', $$ALTER FOREIGN TABLE opt_items OPTIONS (SET table '')$$),
  ('ADD colum', $$ALTER FOREIGN TABLE opt_items ALTER COLUMN id OPTIONS (ADD colum 'id')$$),
  ('ADD tenants a,,b', $$ALTER USER MAPPING FOR CURRENT_USER SERVER opt_srv OPTIONS (ADD tenants 'a,,b')$$)
) AS t(label, stmt);
DROP USER MAPPING FOR CURRENT_USER SERVER opt_srv;

-- ===================================================================
-- The user mapping option "tenants": comma-separated tenant ids, blanks
-- around them ignored; double quotes keep commas, blanks and doubled
-- double quotes.  The role then sees only those tenants' rows.
-- ===================================================================
-- every tenant, without a mapping
SELECT * FROM opt_items ORDER BY id;
CREATE USER MAPPING FOR CURRENT_USER SERVER opt_srv OPTIONS (tenants 'a, b');
SELECT * FROM opt_items ORDER BY id;
SELECT * FROM opt_items WHERE tenant_id = 'c';
ALTER USER MAPPING FOR CURRENT_USER SERVER opt_srv OPTIONS (SET tenants '"x,y"');
SELECT * FROM opt_items ORDER BY id;
ALTER USER MAPPING FOR CURRENT_USER SERVER opt_srv
  OPTIONS (SET tenants ' "q""t" ,c,	" padded "');
SELECT * FROM opt_items ORDER BY id;
-- a mapping for PUBLIC applies to roles without their own
DROP USER MAPPING FOR CURRENT_USER SERVER opt_srv;
CREATE USER MAPPING FOR PUBLIC SERVER opt_srv OPTIONS (tenants 'c');
SELECT * FROM opt_items ORDER BY id;
DROP USER MAPPING FOR PUBLIC SERVER opt_srv;
-- malformed lists
CREATE USER MAPPING FOR CURRENT_USER SERVER opt_srv OPTIONS (tenants '');
CREATE USER MAPPING FOR CURRENT_USER SERVER opt_srv OPTIONS (tenants 'a,,b');
CREATE USER MAPPING FOR CURRENT_USER SERVER opt_srv OPTIONS (tenants 'a,');
CREATE USER MAPPING FOR CURRENT_USER SERVER opt_srv OPTIONS (tenants ' , a');
CREATE USER MAPPING FOR CURRENT_USER SERVER opt_srv OPTIONS (tenants 'a, ""');
CREATE USER MAPPING FOR CURRENT_USER SERVER opt_srv OPTIONS (tenants '"x,y');
CREATE USER MAPPING FOR CURRENT_USER SERVER opt_srv OPTIONS (tenants '"x""');
CREATE USER MAPPING FOR CURRENT_USER SERVER opt_srv OPTIONS (tenants '"x"y');
SELECT label, regress_sqlstate(stmt) FROM (VALUES
  ('empty', $$CREATE USER MAPPING FOR CURRENT_USER SERVER opt_srv OPTIONS (tenants '')$$),
  ('empty element', $$CREATE USER MAPPING FOR CURRENT_USER SERVER opt_srv OPTIONS (tenants 'a,,b')$$),
  ('unterminated quote', $$CREATE USER MAPPING FOR CURRENT_USER SERVER opt_srv OPTIONS (tenants '"x,y')$$),
  ('text after quote', $$CREATE USER MAPPING FOR CURRENT_USER SERVER opt_srv OPTIONS (tenants '"x"y')$$)
) AS t(label, stmt);

-- ===================================================================
-- Privileges.  Options that name files follow file_fdw: only superusers
-- and roles with the privileges of pg_read_server_files may set them.
-- ===================================================================
CREATE ROLE regress_user;
GRANT USAGE ON FOREIGN DATA WRAPPER sqlite_shard_fdw TO regress_user;
SET ROLE regress_user;
CREATE SERVER opt_user_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/options/directory.db');
SELECT regress_sqlstate($$CREATE SERVER opt_user_srv FOREIGN DATA WRAPPER sqlite_shard_fdw OPTIONS (directory '/tmp/ssfdw_regress/options/directory.db')$$);
RESET ROLE;
GRANT pg_read_server_files TO regress_user;
SET ROLE regress_user;
CREATE SERVER opt_user_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/options/new/directory.db');
ALTER SERVER opt_user_srv OPTIONS (ADD shard_path 'shards/%s.db');
ALTER SERVER opt_user_srv OPTIONS (DROP shard_path);
RESET ROLE;
-- without the privilege, the owner cannot change the file options ...
REVOKE pg_read_server_files FROM regress_user;
SET ROLE regress_user;
ALTER SERVER opt_user_srv
  OPTIONS (SET directory '/tmp/ssfdw_regress/options/directory.db');
ALTER SERVER opt_user_srv OPTIONS (ADD shard_path 'shards/%s.db');
-- ... and, since the validator sees every option of the server, nor any
-- other option (file_fdw behaves the same)
ALTER SERVER opt_user_srv OPTIONS (ADD busy_timeout_ms '100');
SELECT regress_sqlstate($$ALTER SERVER opt_user_srv OPTIONS (ADD shard_path 'shards/%s.db')$$);
RESET ROLE;

-- The admin functions that write are revoked from PUBLIC ...
SET ROLE regress_user;
SELECT directory_init('opt_user_srv');
SELECT shard_add('opt_user_srv', 's1', '../shards/s1.db');
SELECT tenant_add('opt_user_srv', 'a', 's1');
RESET ROLE;
-- ... and, where EXECUTE is granted, check pg_write_server_files themselves.
GRANT EXECUTE ON FUNCTION directory_init(name), shard_add(name, text, text),
  tenant_add(name, text, text, bigint) TO regress_user;
SET ROLE regress_user;
SELECT directory_init('opt_user_srv');
SELECT shard_add('opt_user_srv', 's1', '../shards/s1.db');
SELECT tenant_add('opt_user_srv', 'a', 's1');
SELECT label, regress_sqlstate(stmt) FROM (VALUES
  ('directory_init', $$SELECT directory_init('opt_user_srv')$$),
  ('shard_add', $$SELECT shard_add('opt_user_srv', 's1', '../shards/s1.db')$$),
  ('tenant_add', $$SELECT tenant_add('opt_user_srv', 'a', 's1')$$)
) AS t(label, stmt);
RESET ROLE;
-- shard_add also reads the file it adds: both file roles (sql/paths.sql
-- tries each alone); s1 is outside the directory's folder new/
GRANT pg_write_server_files, pg_read_server_files TO regress_user;
ALTER SERVER opt_user_srv OPTIONS (ADD allow_outside_paths 'true');
SET ROLE regress_user;
SELECT directory_init('opt_user_srv');
SELECT shard_add('opt_user_srv', 's1', '../shards/s1.db');
SELECT tenant_add('opt_user_srv', 'a', 's1');
SELECT * FROM shard_list('opt_user_srv');
SELECT * FROM tenant_locate('opt_user_srv', 'a');
RESET ROLE;

-- Reading the directory needs USAGE on the server.
SET ROLE regress_user;
SELECT * FROM shard_list('opt_srv');
SELECT * FROM tenant_locate('opt_srv', 'a');
SELECT label, regress_sqlstate(stmt) FROM (VALUES
  ('shard_list', $$SELECT * FROM shard_list('opt_srv')$$),
  ('tenant_locate', $$SELECT * FROM tenant_locate('opt_srv', 'a')$$)
) AS t(label, stmt);
RESET ROLE;
GRANT USAGE ON FOREIGN SERVER opt_srv TO regress_user;
SET ROLE regress_user;
SELECT shard_id, tenants FROM shard_list('opt_srv');
SELECT shard_id, status FROM tenant_locate('opt_srv', 'a');
RESET ROLE;

-- ===================================================================
-- Settings: sqlite_shard_fdw.max_open_shards, and the reserved prefix.
-- A new session, where the library is not loaded yet, takes any
-- sqlite_shard_fdw.* name as a placeholder; loading the library removes
-- it, and from then on unknown names are refused.
-- ===================================================================
\c -
SET sqlite_shard_fdw.xyz = 1;
SHOW sqlite_shard_fdw.xyz;
LOAD 'sqlite_shard_fdw';
SHOW sqlite_shard_fdw.xyz;
SET sqlite_shard_fdw.xyz = 1;
SET sqlite_shard_fdw.max_open_shard = 1;
SHOW sqlite_shard_fdw.max_open_shards;
SET sqlite_shard_fdw.max_open_shards = 0;
SET sqlite_shard_fdw.max_open_shards = 'many';
SET sqlite_shard_fdw.max_open_shards = 1;
SHOW sqlite_shard_fdw.max_open_shards;
RESET sqlite_shard_fdw.max_open_shards;
SELECT name, setting, context, vartype, min_val, max_val, boot_val
  FROM pg_settings WHERE name = 'sqlite_shard_fdw.max_open_shards';
SELECT label, regress_sqlstate(stmt) FROM (VALUES
  ('max_open_shards 0', $$SET sqlite_shard_fdw.max_open_shards = 0$$),
  ('unknown setting', $$SET sqlite_shard_fdw.xyz = 1$$)
) AS t(label, stmt);

-- ===================================================================
-- analyze_values: a Boolean, on a server or a foreign table.
-- ===================================================================
ALTER SERVER opt_srv OPTIONS (ADD analyze_values 'maybe');
ALTER FOREIGN TABLE opt_items OPTIONS (ADD analyze_values '');
ALTER SERVER opt_srv OPTIONS (ADD analyze_values 'off');
ALTER FOREIGN TABLE opt_items OPTIONS (ADD analyze_values 'true');
CREATE FOREIGN TABLE opt_bad (tenant_id text OPTIONS (analyze_values 'true'))
  SERVER opt_srv;
CREATE USER MAPPING FOR CURRENT_USER SERVER opt_srv
  OPTIONS (analyze_values 'true');
SELECT label, regress_sqlstate(stmt) FROM (VALUES
  ('not a Boolean', $$ALTER SERVER opt_srv OPTIONS (SET analyze_values 'maybe')$$),
  ('on a column', $$ALTER FOREIGN TABLE opt_items ALTER COLUMN id OPTIONS (analyze_values 'true')$$)
) AS t(label, stmt);
ALTER FOREIGN TABLE opt_items OPTIONS (DROP analyze_values);
ALTER SERVER opt_srv OPTIONS (DROP analyze_values);

-- ===================================================================
-- Clean up.
-- ===================================================================
DROP SERVER opt_user_srv;
REVOKE USAGE ON FOREIGN SERVER opt_srv FROM regress_user;
REVOKE EXECUTE ON FUNCTION directory_init(name), shard_add(name, text, text),
  tenant_add(name, text, text, bigint) FROM regress_user;
REVOKE USAGE ON FOREIGN DATA WRAPPER sqlite_shard_fdw FROM regress_user;
REVOKE pg_write_server_files FROM regress_user;
DROP ROLE regress_user;
DROP SERVER opt_srv CASCADE;
DROP FUNCTION regress_sqlstate(text);
