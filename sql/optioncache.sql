--
-- Options kept per backend: a foreign table's and its server's options,
-- and its columns' SQLite names, are read once and kept until a server or
-- a foreign table changes.  Each change below, made in the session that
-- read them, must show in its next query.  See
-- test/fixtures/optioncache.sh.
--
\! bash test/fixtures/optioncache.sh
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
RESET client_min_messages;
CREATE SERVER oc_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/optioncache/directory.db');
CREATE FOREIGN TABLE oc_t (tenant_id text, n int) SERVER oc_srv
  OPTIONS (table 't');
\set VERBOSITY terse

-- ===================================================================
-- The foreign table's options
-- ===================================================================
SELECT sum(n) FROM oc_t;
SELECT sum(n) FROM oc_t WHERE tenant_id = 'k1';
ALTER FOREIGN TABLE oc_t OPTIONS (SET table 'u');
SELECT sum(n) FROM oc_t;
SELECT sum(n) FROM oc_t WHERE tenant_id = 'k1';
ALTER FOREIGN TABLE oc_t OPTIONS (SET table 'nosuch');
SELECT sum(n) FROM oc_t;
-- a change rolled back is forgotten
BEGIN;
ALTER FOREIGN TABLE oc_t OPTIONS (SET table 't');
SELECT sum(n) FROM oc_t;
ROLLBACK;
SELECT sum(n) FROM oc_t;
ALTER FOREIGN TABLE oc_t OPTIONS (SET table 't');
SELECT sum(n) FROM oc_t;

-- ===================================================================
-- Column names: renamed, named by the column option, dropped and added
-- ===================================================================
ALTER FOREIGN TABLE oc_t RENAME COLUMN n TO m;
SELECT sum(m) FROM oc_t;
ALTER FOREIGN TABLE oc_t ALTER COLUMN m OPTIONS (ADD column 'n');
SELECT sum(m) FROM oc_t;
ALTER FOREIGN TABLE oc_t ALTER COLUMN m OPTIONS (DROP column);
SELECT sum(m) FROM oc_t;
ALTER FOREIGN TABLE oc_t DROP COLUMN m;
ALTER FOREIGN TABLE oc_t ADD COLUMN n int;
SELECT sum(n) FROM oc_t;
-- the tenant column renamed: no column names it any more
ALTER FOREIGN TABLE oc_t RENAME COLUMN tenant_id TO tenant;
SELECT count(*) FROM oc_t;
ALTER FOREIGN TABLE oc_t OPTIONS (ADD tenant_column 'tenant');
SELECT count(*) FROM oc_t;
ALTER FOREIGN TABLE oc_t OPTIONS (DROP tenant_column);
ALTER FOREIGN TABLE oc_t RENAME COLUMN tenant TO tenant_id;
SELECT tenant_id, sum(n) FROM oc_t GROUP BY tenant_id ORDER BY tenant_id;

-- ===================================================================
-- The server's options
-- ===================================================================
ALTER SERVER oc_srv OPTIONS (SET directory '/tmp/ssfdw_regress/optioncache/nosuch.db');
SELECT sum(n) FROM oc_t;
ALTER SERVER oc_srv OPTIONS (SET directory '/tmp/ssfdw_regress/optioncache/directory.db');
SELECT sum(n) FROM oc_t;
\! rm /tmp/ssfdw_regress/optioncache/shards/o2.db
SELECT sum(n) FROM oc_t;
ALTER SERVER oc_srv OPTIONS (ADD on_missing_shard 'skip');
SELECT sum(n) FROM oc_t;
-- a second session's change
SELECT current_database() AS oc_db \gset
\setenv OC_DB :oc_db
\! psql -X -q -d "$OC_DB" -c "ALTER SERVER oc_srv OPTIONS (SET on_missing_shard 'error')"
SELECT sum(n) FROM oc_t;

DROP SERVER oc_srv CASCADE;
