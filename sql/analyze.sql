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
-- s1, so its 200 rows copied to s2 do not count.  A mapping with
-- "tenants" turns value statistics off by default (see the end of this
-- file); here the table asks for them.
-- ===================================================================
CREATE USER MAPPING FOR CURRENT_USER SERVER analyze_srv
  OPTIONS (tenants 't02, t03');
ALTER FOREIGN TABLE analyze_items OPTIONS (ADD analyze_values 'true');
ANALYZE VERBOSE analyze_items;
SELECT reltuples FROM pg_class WHERE oid = 'analyze_items'::regclass;
SELECT most_common_vals, most_common_freqs
  FROM pg_stats WHERE tablename = 'analyze_items' AND attname = 'tenant_id';
ALTER FOREIGN TABLE analyze_items OPTIONS (DROP analyze_values);
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
-- Statistics and tenant-scoped roles.  The planner hands a column's
-- statistics to the function of any operator a role that may read the
-- table defines: eqsel compares each most common value with the
-- constant, scalarltsel each histogram bound.  A role limited to t01
-- (SELECT on the table, no USAGE on the server) would read every
-- tenant's values through EXPLAIN.  Once a mapping of the server has
-- "tenants", ANALYZE records the row count only, and removes the value
-- statistics an earlier ANALYZE left.  (item_id keeps 5 most common
-- values and 6 histogram bounds, to keep the output short.)
-- ===================================================================
ALTER FOREIGN TABLE analyze_items ALTER COLUMN item_id SET STATISTICS 5;
CREATE STATISTICS analyze_items_ext (mcv) ON tenant_id, status
  FROM analyze_items;
-- regress_stats(): the statistics rows of analyze_items, of its columns and
-- of its extended statistics object.
CREATE FUNCTION pg_temp.regress_stats(OUT columns bigint, OUT extended bigint)
LANGUAGE sql AS $$
  SELECT (SELECT count(*) FROM pg_statistic
            WHERE starelid = 'analyze_items'::regclass),
         (SELECT count(*) FROM pg_statistic_ext_data d
            JOIN pg_statistic_ext s ON s.oid = d.stxoid
            WHERE s.stxrelid = 'analyze_items'::regclass)
$$;
ANALYZE analyze_items;
SELECT * FROM pg_temp.regress_stats();

CREATE ROLE regress_analyze_scoped;
CREATE USER MAPPING FOR regress_analyze_scoped SERVER analyze_srv
  OPTIONS (tenants 't01');
GRANT SELECT ON analyze_items TO regress_analyze_scoped;
ANALYZE VERBOSE analyze_items;
-- The fleet's total stays visible: one number, nothing of any tenant.
SELECT reltuples FROM pg_class WHERE oid = 'analyze_items'::regclass;
SELECT * FROM pg_temp.regress_stats();

-- The attack, as the scoped role: operators whose function prints what it
-- is given, and a plan of a condition with each; then the row estimates
-- of an existing tenant and of a made-up one.
SET ROLE regress_analyze_scoped;
CREATE FUNCTION pg_temp.regress_leak(a text, b text) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
  RAISE NOTICE 'leaked %', a;
  RETURN false;
END
$$;
CREATE OPERATOR pg_temp.=== (FUNCTION = pg_temp.regress_leak,
  LEFTARG = text, RIGHTARG = text, RESTRICT = eqsel);
-- (Not LANGUAGE sql: the planner would inline it, and the condition would
-- no longer be an operator with an estimator.)
CREATE FUNCTION pg_temp.regress_leak(a bigint, b bigint) RETURNS boolean
LANGUAGE plpgsql AS $$
  BEGIN RETURN pg_temp.regress_leak(a::text, b::text); END
$$;
CREATE OPERATOR pg_temp.<<< (FUNCTION = pg_temp.regress_leak,
  LEFTARG = bigint, RIGHTARG = bigint, RESTRICT = scalarltsel);
CREATE FUNCTION pg_temp.regress_attack(OUT visible_stats bigint,
                                       OUT t05 float8, OUT nosuch float8)
LANGUAGE plpgsql AS $$
DECLARE
  plan json;
BEGIN
  SELECT count(*) INTO visible_stats FROM pg_stats
    WHERE tablename = 'analyze_items';
  EXECUTE $q$EXPLAIN SELECT 1 FROM analyze_items
             WHERE tenant_id OPERATOR(pg_temp.===) 'x'$q$;
  EXECUTE $q$EXPLAIN SELECT 1 FROM analyze_items
             WHERE status OPERATOR(pg_temp.===) 'x'$q$;
  EXECUTE $q$EXPLAIN SELECT 1 FROM analyze_items
             WHERE item_id OPERATOR(pg_temp.<<<) 2000$q$;
  EXECUTE $q$EXPLAIN (FORMAT JSON) SELECT * FROM analyze_items
             WHERE tenant_id = 't05'$q$ INTO plan;
  t05 := plan->0->'Plan'->>'Plan Rows';
  EXECUTE $q$EXPLAIN (FORMAT JSON) SELECT * FROM analyze_items
             WHERE tenant_id = 'nosuch'$q$ INTO plan;
  nosuch := plan->0->'Plan'->>'Plan Rows';
END
$$;
-- Nothing to print, and the same estimate for both.
SELECT * FROM pg_temp.regress_attack();
RESET ROLE;

-- With analyze_values 'true' on the table, the same attack prints every
-- tenant id, other tenants' values and the histogram's bounds, and the
-- estimates tell an existing tenant from a made-up one.
ALTER FOREIGN TABLE analyze_items OPTIONS (ADD analyze_values 'true');
ANALYZE analyze_items;
SET ROLE regress_analyze_scoped;
SELECT * FROM pg_temp.regress_attack();
RESET ROLE;

-- The server's option applies where the table has none; the table's wins.
ALTER FOREIGN TABLE analyze_items OPTIONS (DROP analyze_values);
ALTER SERVER analyze_srv OPTIONS (ADD analyze_values 'on');
ANALYZE analyze_items;
SELECT * FROM pg_temp.regress_stats();
ALTER FOREIGN TABLE analyze_items OPTIONS (ADD analyze_values 'off');
ANALYZE analyze_items;
SELECT * FROM pg_temp.regress_stats();
ALTER FOREIGN TABLE analyze_items OPTIONS (DROP analyze_values);
ALTER SERVER analyze_srv OPTIONS (DROP analyze_values);

-- A PUBLIC mapping with "tenants" counts too; a mapping without does not.
DROP USER MAPPING FOR regress_analyze_scoped SERVER analyze_srv;
CREATE USER MAPPING FOR regress_analyze_scoped SERVER analyze_srv;
ANALYZE analyze_items;
SELECT * FROM pg_temp.regress_stats();
CREATE USER MAPPING FOR PUBLIC SERVER analyze_srv OPTIONS (tenants 't01');
ANALYZE analyze_items;
SELECT * FROM pg_temp.regress_stats();

-- A local table inheriting from the foreign one: ANALYZE writes the
-- statistics of the table alone, then those of the whole tree, whose
-- sample then holds the local rows only.
CREATE TABLE analyze_items_local () INHERITS (analyze_items);
INSERT INTO analyze_items_local (tenant_id, item_id, status)
  VALUES ('t01', 1, 'local'), ('t01', 2, 'local');
ALTER FOREIGN TABLE analyze_items OPTIONS (ADD analyze_values 'true');
ANALYZE analyze_items;
SELECT inherited, count(*) FROM pg_stats
  WHERE tablename = 'analyze_items' GROUP BY inherited ORDER BY inherited;
ALTER FOREIGN TABLE analyze_items OPTIONS (DROP analyze_values);
ANALYZE analyze_items;
SELECT inherited, attname, most_common_vals FROM pg_stats
  WHERE tablename = 'analyze_items' AND attname IN ('tenant_id', 'status')
  ORDER BY inherited, attname;
DROP TABLE analyze_items_local;

DROP USER MAPPING FOR PUBLIC SERVER analyze_srv;
DROP USER MAPPING FOR regress_analyze_scoped SERVER analyze_srv;
DROP OWNED BY regress_analyze_scoped;
DROP ROLE regress_analyze_scoped;
DROP STATISTICS analyze_items_ext;
ALTER FOREIGN TABLE analyze_items ALTER COLUMN item_id SET STATISTICS -1;

-- ===================================================================
-- Clean up
-- ===================================================================
DROP FOREIGN TABLE analyze_items, analyze_nums, analyze_uu,
  analyze_skip_items, analyze_bad, analyze_nosuch, analyze_nocol,
  analyze_notenant;
DROP SERVER analyze_srv;
DROP SERVER analyze_skip;
