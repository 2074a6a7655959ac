--
-- ANALYZE of foreign tables that span every shard of a server.
--
\! bash test/fixtures/analyze.sh
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
RESET client_min_messages;
CREATE SERVER analyze_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/analyze/directory.db');
CREATE FOREIGN TABLE analyze_items (
  tenant_id text, item_id bigint, status text, price float8, qty bigint,
  note text
) SERVER analyze_srv OPTIONS (table 'items');

-- ===================================================================
-- A sample of every row: the default target (30000 rows) exceeds the
-- table, so the statistics are exact.  Each tenant counts once, from the
-- shard that owns it: 1100 + 2000 + 3000 = 6100 rows, not the 6400 the
-- files hold (t02's rows already copied to s2 and t06's leftovers on s3
-- are not counted).
-- ===================================================================
SELECT relpages, reltuples FROM pg_class
  WHERE oid = 'analyze_items'::regclass;
ANALYZE VERBOSE analyze_items;
SELECT relpages >= 1 AS has_pages, reltuples FROM pg_class
  WHERE oid = 'analyze_items'::regclass;
SELECT attname, null_frac, n_distinct, avg_width
  FROM pg_stats WHERE tablename = 'analyze_items' ORDER BY attname;
SELECT most_common_vals, most_common_freqs
  FROM pg_stats WHERE tablename = 'analyze_items' AND attname = 'status';
SELECT histogram_bounds IS NOT NULL AS has_histogram
  FROM pg_stats WHERE tablename = 'analyze_items' AND attname = 'item_id';

-- ===================================================================
-- A real sample: 300 rows of 6100, drawn across the shards; the row
-- count stays exact.
-- ===================================================================
SET default_statistics_target = 1;
ANALYZE VERBOSE analyze_items;
RESET default_statistics_target;
SELECT reltuples FROM pg_class WHERE oid = 'analyze_items'::regclass;
SELECT count(*) = 6 AS all_columns FROM pg_stats
  WHERE tablename = 'analyze_items';
SELECT null_frac BETWEEN 0.99 AND 1 AS note_all_null
  FROM pg_stats WHERE tablename = 'analyze_items' AND attname = 'note';

-- A column list analyzes those columns only, from the same pass.
ANALYZE analyze_items (status);
SELECT reltuples FROM pg_class WHERE oid = 'analyze_items'::regclass;

-- ===================================================================
-- A role restricted to some tenants samples only their rows (ANALYZE
-- reads as the table's owner, whose mapping this is): t02 is owned by
-- s1, so its 200 rows copied to s2 do not count.
-- ===================================================================
CREATE USER MAPPING FOR CURRENT_USER SERVER analyze_srv
  OPTIONS (tenants 't02, t03');
ANALYZE VERBOSE analyze_items;
SELECT reltuples FROM pg_class WHERE oid = 'analyze_items'::regclass;
DROP USER MAPPING FOR CURRENT_USER SERVER analyze_srv;
ANALYZE analyze_items;
SELECT reltuples FROM pg_class WHERE oid = 'analyze_items'::regclass;

-- ===================================================================
-- Tenant columns of other types.  Integer tenants are filtered inside
-- SQLite by their text form: 10 + 5 rows.  uuid tenants are compared
-- here, as the canonical text of the converted value, so the leftovers
-- spelled in upper case on s3 are recognised too: 6 + 2 rows.
-- ===================================================================
CREATE FOREIGN TABLE analyze_nums (tenant bigint, v int)
  SERVER analyze_srv OPTIONS (table 'nums', tenant_column 'tenant');
ANALYZE analyze_nums;
SELECT reltuples FROM pg_class WHERE oid = 'analyze_nums'::regclass;
SELECT attname, n_distinct FROM pg_stats
  WHERE tablename = 'analyze_nums' ORDER BY attname;
CREATE FOREIGN TABLE analyze_uu (tenant uuid, v int)
  SERVER analyze_srv OPTIONS (table 'uu', tenant_column 'tenant');
ANALYZE analyze_uu;
SELECT reltuples FROM pg_class WHERE oid = 'analyze_uu'::regclass;
SELECT most_common_vals, most_common_freqs FROM pg_stats
  WHERE tablename = 'analyze_uu' AND attname = 'tenant';

-- ===================================================================
-- Missing shards: skipped with a WARNING when on_missing_shard is
-- 'skip', an error otherwise.  This directory has no moves, so every row
-- of the three present shards counts: 6400.
-- ===================================================================
\set VERBOSITY terse
CREATE SERVER analyze_skip FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/analyze/missing/directory.db',
           on_missing_shard 'skip', allow_outside_paths 'true');
CREATE FOREIGN TABLE analyze_skip_items (
  tenant_id text, item_id bigint, status text, price float8, qty bigint,
  note text
) SERVER analyze_skip OPTIONS (table 'items');
ANALYZE analyze_skip_items;
SELECT reltuples FROM pg_class WHERE oid = 'analyze_skip_items'::regclass;
ALTER SERVER analyze_skip OPTIONS (SET on_missing_shard 'error');
ANALYZE analyze_skip_items;
\set VERBOSITY default

-- ===================================================================
-- Errors name the shard, the table and the column
-- ===================================================================
-- s2 holds 'abc' in a column declared bigint here.
CREATE FOREIGN TABLE analyze_bad (tenant_id text, qty bigint)
  SERVER analyze_srv OPTIONS (table 'bad_items');
ANALYZE analyze_bad;
-- The same column read as text is fine.
ALTER FOREIGN TABLE analyze_bad ALTER COLUMN qty TYPE text;
ANALYZE analyze_bad;
SELECT reltuples FROM pg_class WHERE oid = 'analyze_bad'::regclass;
-- A table the shards do not have.
CREATE FOREIGN TABLE analyze_nosuch (tenant_id text)
  SERVER analyze_srv OPTIONS (table 'nosuch');
ANALYZE analyze_nosuch;
-- A column the shards do not have.
CREATE FOREIGN TABLE analyze_nocol (tenant_id text, nosuch int)
  SERVER analyze_srv OPTIONS (table 'items');
ANALYZE analyze_nocol;
-- A foreign table without its tenant column.
CREATE FOREIGN TABLE analyze_notenant (item_id bigint)
  SERVER analyze_srv OPTIONS (table 'items');
ANALYZE analyze_notenant;

-- ===================================================================
-- Clean up
-- ===================================================================
DROP FOREIGN TABLE analyze_items, analyze_nums, analyze_uu,
  analyze_skip_items, analyze_bad, analyze_nosuch, analyze_nocol,
  analyze_notenant;
DROP SERVER analyze_srv;
DROP SERVER analyze_skip;
