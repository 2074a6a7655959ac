--
-- Bad input, one case at a time: a directory or shard file that is
-- missing, unreadable, not SQLite or corrupt; a shard lacking a table or a
-- column; values a column's type cannot take; names and tenant ids with
-- quotes, "%", ".." and "/"; the admin functions given bad arguments.
-- Each must give a clear error with the right SQLSTATE that names what is
-- wrong, or, where the design says so, an empty result or a WARNING.
--
\! bash test/fixtures/errors.sh
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

-- ===================================================================
-- The directory: the control database a server names must exist, be an
-- SQLite database and hold shard_map, and either a shards table or the
-- server's shard_path pattern.
-- ===================================================================
CREATE SERVER err_dir_missing FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/errors/missing/directory.db');
CREATE SERVER err_dir_notadb FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/errors/notadb/directory.db');
CREATE SERVER err_dir_folder FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/errors/shards');
CREATE SERVER err_dir_unreadable FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/errors/unreadable/directory.db');
CREATE SERVER err_dir_nomap FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/errors/nomap/directory.db');
CREATE SERVER err_dir_noshards FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/errors/noshards/directory.db',
           allow_outside_paths 'true');
CREATE SERVER err_dir_badlayout FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/errors/badlayout/directory.db');
CREATE FOREIGN TABLE err_dir_missing_items (tenant_id text, id int, val text)
  SERVER err_dir_missing OPTIONS (table 'items');
CREATE FOREIGN TABLE err_dir_notadb_items (tenant_id text, id int, val text)
  SERVER err_dir_notadb OPTIONS (table 'items');
CREATE FOREIGN TABLE err_dir_folder_items (tenant_id text, id int, val text)
  SERVER err_dir_folder OPTIONS (table 'items');
CREATE FOREIGN TABLE err_dir_unreadable_items (tenant_id text, id int, val text)
  SERVER err_dir_unreadable OPTIONS (table 'items');
CREATE FOREIGN TABLE err_dir_nomap_items (tenant_id text, id int, val text)
  SERVER err_dir_nomap OPTIONS (table 'items');
CREATE FOREIGN TABLE err_dir_noshards_items (tenant_id text, id int, val text)
  SERVER err_dir_noshards OPTIONS (table 'items');
CREATE FOREIGN TABLE err_dir_badlayout_items (tenant_id text, id int, val text)
  SERVER err_dir_badlayout OPTIONS (table 'items');

-- missing file, routed and fanned out, and through the admin functions
SELECT * FROM err_dir_missing_items WHERE tenant_id = 'acme';
SELECT * FROM err_dir_missing_items;
SELECT * FROM shard_list('err_dir_missing');
SELECT * FROM tenant_locate('err_dir_missing', 'acme');
-- a text file, a folder, a file the server cannot read
SELECT * FROM err_dir_notadb_items WHERE tenant_id = 'acme';
SELECT * FROM err_dir_folder_items WHERE tenant_id = 'acme';
SELECT * FROM err_dir_unreadable_items WHERE tenant_id = 'acme';
-- an SQLite file without the directory's tables, or other ones
SELECT * FROM err_dir_nomap_items WHERE tenant_id = 'acme';
SELECT * FROM err_dir_noshards_items WHERE tenant_id = 'acme';
SELECT shard_add('err_dir_noshards', 's1', '/tmp/ssfdw_regress/errors/shards/a.db');
SELECT * FROM err_dir_badlayout_items WHERE tenant_id = 'acme';
-- following the hints: directory_init cannot create a file in a folder
-- that does not exist, but adds the missing tables to an SQLite file, and
-- the next statement sees them (a failed open is not cached)
SELECT directory_init('err_dir_missing');
SELECT directory_init('err_dir_nomap');
SELECT * FROM err_dir_nomap_items WHERE tenant_id = 'acme';
SELECT * FROM err_dir_nomap_items;

SELECT label, regress_sqlstate(stmt) FROM (VALUES
  ('missing', $$SELECT * FROM err_dir_missing_items WHERE tenant_id = 'acme'$$),
  ('missing, shard_list', $$SELECT * FROM shard_list('err_dir_missing')$$),
  ('missing, directory_init', $$SELECT directory_init('err_dir_missing')$$),
  ('not SQLite', $$SELECT * FROM err_dir_notadb_items WHERE tenant_id = 'acme'$$),
  ('folder', $$SELECT * FROM err_dir_folder_items WHERE tenant_id = 'acme'$$),
  ('unreadable', $$SELECT * FROM err_dir_unreadable_items WHERE tenant_id = 'acme'$$),
  ('no shard_map', $$SELECT * FROM err_dir_nomap_items WHERE tenant_id = 'acme'$$),
  ('no shards', $$SELECT * FROM err_dir_noshards_items WHERE tenant_id = 'acme'$$),
  ('no shards, shard_add', $$SELECT shard_add('err_dir_noshards', 's1', '/tmp/ssfdw_regress/errors/shards/a.db')$$),
  ('bad layout', $$SELECT * FROM err_dir_badlayout_items WHERE tenant_id = 'acme'$$)
) AS t(label, stmt);

-- ===================================================================
-- Shards: each tenant below lives on a shard that is bad in its own way.
-- A routed query opens only that shard, so each error is the one shard's.
-- ===================================================================
CREATE SERVER err_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/errors/directory.db');
CREATE FOREIGN TABLE err_items (tenant_id text, id int, val text)
  SERVER err_srv OPTIONS (table 'items');
-- good shards
SELECT * FROM err_items WHERE tenant_id IN ('acme', 'globex') ORDER BY 1, 2;
-- the file does not exist
SELECT * FROM err_items WHERE tenant_id = 'ghost';
-- the file has mode 000: root could read it, the server's user cannot
SELECT * FROM err_items WHERE tenant_id = 'locked';
-- a text file
SELECT * FROM err_items WHERE tenant_id = 'texty';
-- a folder
SELECT * FROM err_items WHERE tenant_id = 'foldered';
-- an SQLite file with garbage in the table's pages: it opens, reading fails
SELECT * FROM err_items WHERE tenant_id = 'broken';
-- an SQLite file cut short: not even its schema can be read
SELECT * FROM err_items WHERE tenant_id = 'cut';
-- a shard without the table
SELECT * FROM err_items WHERE tenant_id = 'bare';
-- a shard whose table lacks column "val": reading the column must fail
-- (SQLite would take "val" for a string literal if it were allowed to), the
-- other columns can be read
SELECT * FROM err_items WHERE tenant_id = 'partial';
SELECT val FROM err_items WHERE tenant_id = 'partial';
SELECT tenant_id, id FROM err_items WHERE tenant_id = 'partial';
-- a tenant mapped to a shard that "shards" does not list, twice (the
-- second time from the backend's directory cache)
SELECT * FROM err_items WHERE tenant_id = 'orphan';
SELECT * FROM err_items WHERE tenant_id = 'orphan';
SELECT * FROM tenant_locate('err_srv', 'orphan');

SELECT label, regress_sqlstate(stmt) FROM (VALUES
  ('missing', $$SELECT * FROM err_items WHERE tenant_id = 'ghost'$$),
  ('unreadable', $$SELECT * FROM err_items WHERE tenant_id = 'locked'$$),
  ('text file', $$SELECT * FROM err_items WHERE tenant_id = 'texty'$$),
  ('folder', $$SELECT * FROM err_items WHERE tenant_id = 'foldered'$$),
  ('garbage pages', $$SELECT * FROM err_items WHERE tenant_id = 'broken'$$),
  ('truncated', $$SELECT * FROM err_items WHERE tenant_id = 'cut'$$),
  ('no table', $$SELECT * FROM err_items WHERE tenant_id = 'bare'$$),
  ('no column', $$SELECT * FROM err_items WHERE tenant_id = 'partial'$$),
  ('shard not listed', $$SELECT * FROM err_items WHERE tenant_id = 'orphan'$$)
) AS t(label, stmt);

-- ===================================================================
-- An unknown tenant in a read is an empty result, and opens no shard:
-- every shard file of this fleet is missing, yet there is no error.
-- ===================================================================
CREATE SERVER err_nofiles FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/errors/nofiles/directory.db');
CREATE FOREIGN TABLE err_nofiles_items (tenant_id text, id int, val text)
  SERVER err_nofiles OPTIONS (table 'items');
SELECT * FROM err_nofiles_items WHERE tenant_id = 'nobody';
SELECT * FROM err_nofiles_items WHERE tenant_id IN ('nobody', 'no one');
SELECT * FROM err_nofiles_items WHERE tenant_id = ANY (ARRAY['nobody', NULL]);
PREPARE err_by_tenant(text) AS
  SELECT * FROM err_nofiles_items WHERE tenant_id = $1;
EXECUTE err_by_tenant('nobody');
EXPLAIN (COSTS OFF) SELECT * FROM err_nofiles_items WHERE tenant_id = 'nobody';
SELECT * FROM tenant_locate('err_nofiles', 'nobody');
SELECT tenant_locate('err_nofiles', 'nobody') IS NULL AS unknown;
-- the tenant it knows does need its (missing) shard
SELECT * FROM err_nofiles_items WHERE tenant_id = 'acme';
EXECUTE err_by_tenant('acme');
DEALLOCATE err_by_tenant;

-- ===================================================================
-- A foreign table must have the tenant column: one named tenant_id, or the
-- one the table option tenant_column names.
-- ===================================================================
CREATE FOREIGN TABLE err_notenant (id int, val text)
  SERVER err_srv OPTIONS (table 'items');
SELECT * FROM err_notenant;
CREATE FOREIGN TABLE err_notenant2 (tenant_id text, id int, val text)
  SERVER err_srv OPTIONS (table 'items', tenant_column 'customer');
SELECT * FROM err_notenant2 WHERE tenant_id = 'acme';
-- the column option renames the column: its SQLite name is what counts
CREATE FOREIGN TABLE err_notenant3 (tenant_id text OPTIONS (column 'owner'),
  id int, val text) SERVER err_srv OPTIONS (table 'items');
SELECT * FROM err_notenant3 WHERE tenant_id = 'acme';
SELECT label, regress_sqlstate(stmt) FROM (VALUES
  ('no tenant_id', $$SELECT * FROM err_notenant$$),
  ('no customer', $$SELECT * FROM err_notenant2 WHERE tenant_id = 'acme'$$)
) AS t(label, stmt);

-- ===================================================================
-- Values of a storage class the column's type cannot take.  The error
-- context names the column, table, shard and rowid.
-- ===================================================================
CREATE FOREIGN TABLE err_vals (tenant_id text, id int, i int, u uuid, t text)
  SERVER err_srv OPTIONS (table 'vals');
-- a blob in an integer column
SELECT i FROM err_vals WHERE tenant_id = 'acme' AND id = 1;
-- text that is not a number in an integer column
SELECT i FROM err_vals WHERE tenant_id = 'acme' AND id = 2;
-- an integer in a uuid column
SELECT u FROM err_vals WHERE tenant_id = 'acme' AND id = 3;
-- a real with a fraction in an integer column
SELECT i FROM err_vals WHERE tenant_id = 'acme' AND id = 4;
-- the good row
SELECT * FROM err_vals WHERE tenant_id = 'acme' AND id = 5;
SELECT label, regress_sqlstate(stmt) FROM (VALUES
  ('blob as integer', $$SELECT i FROM err_vals WHERE tenant_id = 'acme' AND id = 1$$),
  ('text as integer', $$SELECT i FROM err_vals WHERE tenant_id = 'acme' AND id = 2$$),
  ('integer as uuid', $$SELECT u FROM err_vals WHERE tenant_id = 'acme' AND id = 3$$),
  ('real as integer', $$SELECT i FROM err_vals WHERE tenant_id = 'acme' AND id = 4$$)
) AS t(label, stmt);

-- ===================================================================
-- A WITHOUT ROWID table is read all the same (the scan retries without
-- rowid); an error names no rowid then.
-- ===================================================================
CREATE FOREIGN TABLE err_norowid (tenant_id text, id int, n int)
  SERVER err_srv OPTIONS (table 'norowid');
SELECT * FROM err_norowid WHERE tenant_id = 'acme' AND id < 3 ORDER BY id;
SELECT * FROM err_norowid
  WHERE tenant_id IN ('acme', 'o''brien', 'globex') AND id < 3 ORDER BY 1, 2;
SELECT * FROM err_norowid WHERE tenant_id = 'acme' ORDER BY id;

-- ===================================================================
-- on_missing_shard 'skip': a missing shard file is a WARNING naming it,
-- and the other shards' rows are returned.
-- ===================================================================
CREATE SERVER err_skip FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/errors/skip/directory.db',
           on_missing_shard 'skip');
CREATE FOREIGN TABLE err_skip_items (tenant_id text, id int, val text)
  SERVER err_skip OPTIONS (table 'items');
SELECT * FROM err_skip_items ORDER BY 1, 2;
SELECT tenant_id, count(*) FROM err_skip_items GROUP BY 1 ORDER BY 1;
-- routed to the missing shard: the WARNING, and no rows
SELECT * FROM err_skip_items WHERE tenant_id = 't3';
-- routed elsewhere: no WARNING
SELECT * FROM err_skip_items WHERE tenant_id = 't1' ORDER BY 2;
SELECT shard_id, tenants, bytes FROM shard_list('err_skip');
-- 'error', the default, fails instead
ALTER SERVER err_skip OPTIONS (SET on_missing_shard 'error');
SELECT * FROM err_skip_items ORDER BY 1, 2;
SELECT * FROM err_skip_items WHERE tenant_id = 't1' ORDER BY 2;

-- ===================================================================
-- Names and tenant ids with quotes, "%", "..", "/" and blanks.  Tenant ids
-- are bound values: they route and filter exactly; identifiers are quoted.
-- ===================================================================
SELECT * FROM err_items WHERE tenant_id = 'o''brien';
SELECT * FROM err_items WHERE tenant_id = '100%';
SELECT * FROM err_items WHERE tenant_id = 'say "hi"';
SELECT * FROM err_items WHERE tenant_id IN ('..', 'a/b') ORDER BY 1, 2;
SELECT * FROM err_items
  WHERE tenant_id = ANY (ARRAY['o''brien', '100%', 'a/b', '1000']) ORDER BY 1, 2;
SELECT t.tenant, l.shard_id, l.status
  FROM unnest(ARRAY['o''brien', '100%', 'say "hi"', '..', 'a/b', '%', '_']) AS t(tenant),
       LATERAL tenant_locate('err_srv', t.tenant) AS l
  ORDER BY 1;
-- a table and columns whose names hold double quotes, blanks, "%" and "/"
CREATE FOREIGN TABLE err_weird (
  tid text OPTIONS (column 'tenant "id"'),
  c text OPTIONS (column 'col "q" x'),
  pct int OPTIONS (column '100%'),
  ab text OPTIONS (column 'a/b'))
  SERVER err_srv OPTIONS (table 'we"ird table', tenant_column 'tenant "id"');
SELECT * FROM err_weird WHERE tid = 'o''brien';
SELECT * FROM err_weird WHERE tid IN ('acme', '100%') ORDER BY pct;
SELECT * FROM err_weird WHERE tid IN ('acme', '100%') AND c LIKE '%\%';
EXPLAIN (VERBOSE, COSTS OFF)
  SELECT * FROM err_weird WHERE tid IN ('acme', '100%') AND c LIKE '%\%';
-- the foreign table named like the SQLite table, with its columns' names
CREATE FOREIGN TABLE "we""ird table" ("tenant ""id""" text, "col ""q"" x" text,
  "100%" int, "a/b" text) SERVER err_srv OPTIONS (tenant_column 'tenant "id"');
SELECT * FROM "we""ird table" WHERE "tenant ""id""" = '100%';
-- a column, and a table, that do not exist, with quotes in their names
CREATE FOREIGN TABLE err_weird_nocol (
  tid text OPTIONS (column 'tenant "id"'),
  c text OPTIONS (column 'no "such" col'))
  SERVER err_srv OPTIONS (table 'we"ird table', tenant_column 'tenant "id"');
SELECT * FROM err_weird_nocol WHERE tid = 'acme';
CREATE FOREIGN TABLE err_weird_notable (tid text OPTIONS (column 'tenant "id"'))
  SERVER err_srv OPTIONS (table 'no "such" table', tenant_column 'tenant "id"');
SELECT * FROM err_weird_notable WHERE tid = 'acme';

-- ===================================================================
-- Shard ids in a shard_path pattern (no shards table) name files: "..",
-- "." and ids with "/" are refused, every time they are needed, whether
-- routed or fanned out (the refusal must not be cached as "no such
-- tenant" or "no such shard").
-- ===================================================================
CREATE SERVER err_pattern FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/errors/pattern/directory.db',
           shard_path 'shards/%s.db');
CREATE FOREIGN TABLE err_pattern_items (tenant_id text, id int, val text)
  SERVER err_pattern OPTIONS (table 'items');
SELECT * FROM err_pattern_items WHERE tenant_id = 'good';
SELECT * FROM err_pattern_items WHERE tenant_id = 'dots';
SELECT * FROM err_pattern_items WHERE tenant_id = 'dots';
SELECT * FROM err_pattern_items WHERE tenant_id = 'slash';
SELECT * FROM err_pattern_items WHERE tenant_id = 'dot';
SELECT * FROM tenant_locate('err_pattern', 'slash');
SELECT label, regress_sqlstate(stmt) FROM (VALUES
  ('..', $$SELECT * FROM err_pattern_items WHERE tenant_id = 'dots'$$),
  ('x/y', $$SELECT * FROM err_pattern_items WHERE tenant_id = 'slash'$$)
) AS t(label, stmt);
-- a fan-out needs every shard: the first bad id in shard id order fails it
\c -
SELECT * FROM err_pattern_items;
SELECT * FROM err_pattern_items;
SELECT * FROM err_pattern_items;

-- ===================================================================
-- Admin functions given bad arguments.
-- ===================================================================
CREATE SERVER err_admin FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/errors/admin/directory.db');
-- shard_add: a missing file, a text file, a folder, an empty id or path
SELECT shard_add('err_admin', 'one', 'shards/nope.db');
SELECT shard_add('err_admin', 'one', 'shards/text.db');
SELECT shard_add('err_admin', 'one', 'shards');
SELECT shard_add('err_admin', '', 'shards/one.db');
SELECT shard_add('err_admin', 'one', '');
-- NULL arguments are refused
SELECT shard_add('err_admin', NULL, 'shards/one.db');
-- a good shard, then a duplicate id and a duplicate path
SELECT shard_add('err_admin', 'one', 'shards/one.db');
SELECT shard_add('err_admin', 'one', 'shards/two.db');
SELECT shard_add('err_admin', 'uno', 'shards/one.db');
-- the same file by another name is the same shard too: a fan-out would
-- read its rows twice
SELECT shard_add('err_admin', 'uno', '/tmp/ssfdw_regress/errors/admin/shards/one.db');
SELECT shard_add('err_admin', 'eins', './shards/one.db');
SELECT shard_id, path, tenants FROM shard_list('err_admin');
-- tenant_add: an unknown shard, a duplicate tenant, NULL and empty ids
SELECT tenant_add('err_admin', 'acme', 'nope');
SELECT tenant_add('err_admin', 'acme', '');
SELECT tenant_add('err_admin', 'acme', 'one');
SELECT tenant_add('err_admin', 'acme', 'one');
SELECT tenant_add('err_admin', 'acme');
SELECT tenant_add('err_admin', NULL, 'one');
SELECT tenant_add('err_admin', '', 'one');
SELECT tenant_add(NULL, 'beta', 'one');
-- a shard named through shard_path whose file does not exist cannot take a
-- tenant (every fan-out would fail on it)
\! mkdir -p /tmp/ssfdw_regress/errors/pat2 && rm -f /tmp/ssfdw_regress/errors/pat2/* && sqlite3 /tmp/ssfdw_regress/errors/pat2/directory.db "CREATE TABLE shard_map(tenant_id TEXT PRIMARY KEY, shard_id TEXT NOT NULL, status TEXT NOT NULL DEFAULT 'ACTIVE', target_shard_id TEXT, updated_at INTEGER NOT NULL)" && chown -R postgres:postgres /tmp/ssfdw_regress/errors/pat2
CREATE SERVER err_pat2 FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/errors/pat2/directory.db',
           shard_path '%s.db');
SELECT tenant_add('err_pat2', 'x', 'nonexistent');
DROP SERVER err_pat2;
-- tenant_locate: an unknown tenant is NULL
SELECT * FROM tenant_locate('err_admin', 'nobody');
SELECT tenant_locate('err_admin', 'nobody') IS NULL AS unknown;
SELECT shard_id, status FROM tenant_locate('err_admin', 'acme');
SELECT label, regress_sqlstate(stmt) FROM (VALUES
  ('shard_add missing file', $$SELECT shard_add('err_admin', 'one', 'shards/nope.db')$$),
  ('shard_add text file', $$SELECT shard_add('err_admin', 'one', 'shards/text.db')$$),
  ('shard_add empty id', $$SELECT shard_add('err_admin', '', 'shards/one.db')$$),
  ('shard_add duplicate id', $$SELECT shard_add('err_admin', 'one', 'shards/two.db')$$),
  ('shard_add duplicate path', $$SELECT shard_add('err_admin', 'dup', 'shards/one.db')$$),
  ('tenant_add unknown shard', $$SELECT tenant_add('err_admin', 'beta', 'nope')$$),
  ('tenant_add duplicate', $$SELECT tenant_add('err_admin', 'acme', 'one')$$),
  ('tenant_add NULL', $$SELECT tenant_add('err_admin', NULL, 'one')$$),
  ('tenant_add empty', $$SELECT tenant_add('err_admin', '', 'one')$$)
) AS t(label, stmt);

-- Servers that are not this wrapper's, or do not exist.
CREATE FOREIGN DATA WRAPPER err_dummy;
CREATE SERVER err_dummy_srv FOREIGN DATA WRAPPER err_dummy;
SELECT directory_init('err_dummy_srv');
SELECT shard_add('err_dummy_srv', 's1', '/tmp/ssfdw_regress/errors/shards/a.db');
SELECT * FROM shard_list('err_dummy_srv');
SELECT tenant_add('err_dummy_srv', 'acme', 's1');
SELECT * FROM tenant_locate('err_dummy_srv', 'acme');
SELECT directory_init('err_nonexistent');
SELECT shard_add('err_nonexistent', 's1', '/tmp/ssfdw_regress/errors/shards/a.db');
SELECT * FROM shard_list('err_nonexistent');
SELECT tenant_add('err_nonexistent', 'acme', 's1');
SELECT * FROM tenant_locate('err_nonexistent', 'acme');
SELECT label, regress_sqlstate(stmt) FROM (VALUES
  ('other wrapper', $$SELECT * FROM shard_list('err_dummy_srv')$$),
  ('no such server', $$SELECT * FROM shard_list('err_nonexistent')$$)
) AS t(label, stmt);

-- ===================================================================
-- Clean up.
-- ===================================================================
SET client_min_messages TO warning;
DROP SERVER err_dummy_srv;
DROP FOREIGN DATA WRAPPER err_dummy;
DROP SERVER err_dir_missing, err_dir_notadb, err_dir_folder, err_dir_unreadable,
  err_dir_nomap, err_dir_noshards, err_dir_badlayout, err_srv, err_nofiles,
  err_skip, err_pattern, err_admin CASCADE;
DROP FUNCTION regress_sqlstate(text);
RESET client_min_messages;
