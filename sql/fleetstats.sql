--
-- Fleet statistics and rebalancing advice: shard_stats, tenant_stats and
-- shard_rebalance_plan on a fleet with a known answer.  See
-- test/fixtures/fleetstats.sh for the sizes.
--
\! bash test/fixtures/fleetstats.sh
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
RESET client_min_messages;
CREATE SERVER stats_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/fleetstats/directory.db',
           max_shard_bytes '1000000');
CREATE FOREIGN TABLE docs (tenant_id text, id bigint, body bytea)
  SERVER stats_srv;

-- regress_state(statement): the SQLSTATE and message of its error, or ok
\i test/regress_state.sql

-- ===================================================================
-- shard_stats: r0 over 80 %, r1 about 31 % with 10 free pages, r2 about
-- 5 % (e's docs and f's copy), r3 missing (NULL sizes), r4 about 34 % with
-- a large write-ahead log
-- ===================================================================
SELECT shard_id, tenants, page_size, wal_bytes,
       bytes = page_count * page_size AS bytes_are_pages,
       used_bytes = bytes AS all_used,
       page_count BETWEEN 195 AND 205 AS r0_pages,
       freelist_count, max_shard_bytes,
       percent BETWEEN 80 AND 85 AS r0_percent, above_70, above_80
  FROM shard_stats('stats_srv') WHERE shard_id = 'r0';
SELECT shard_id, tenants, freelist_count >= 10 AS freed,
       percent BETWEEN 25 AND 40 AS about_31, above_70, above_80
  FROM shard_stats('stats_srv') WHERE shard_id = 'r1';
SELECT shard_id, tenants, percent < 10 AS about_5, above_70, above_80
  FROM shard_stats('stats_srv') WHERE shard_id = 'r2';
SELECT * FROM shard_stats('stats_srv') WHERE shard_id = 'r3';
-- r4 right after a cleanup: its file with its log is far over the limit,
-- its database is not, and neither is flagged
SELECT shard_id, tenants, freelist_count,
       used_bytes = (page_count - freelist_count) * page_size AS used_is_pages,
       wal_bytes > 4 * used_bytes AS large_wal,
       bytes = (pg_stat_file('/tmp/ssfdw_regress/fleetstats/shards/r4.db')).size
               + wal_bytes AS bytes_are_file_and_wal,
       bytes > 2 * max_shard_bytes AS files_over_twice,
       percent BETWEEN 30 AND 40 AS about_34, above_70, above_80
  FROM shard_stats('stats_srv') WHERE shard_id = 'r4';
-- percent is used_bytes against max_shard_bytes
SELECT shard_id, percent = round(100.0 * used_bytes / max_shard_bytes, 1) AS percent_ok
  FROM shard_stats('stats_srv') WHERE bytes IS NOT NULL ORDER BY 1;
-- max_shard_bytes takes PostgreSQL's units, 1024-based, in any case
ALTER SERVER stats_srv OPTIONS (SET max_shard_bytes '3MB');
SELECT DISTINCT max_shard_bytes FROM shard_stats('stats_srv');
ALTER SERVER stats_srv OPTIONS (SET max_shard_bytes '1.5 kb');
SELECT DISTINCT max_shard_bytes FROM shard_stats('stats_srv');
ALTER SERVER stats_srv OPTIONS (SET max_shard_bytes '2 GB');
SELECT DISTINCT max_shard_bytes FROM shard_stats('stats_srv');
ALTER SERVER stats_srv OPTIONS (SET max_shard_bytes '1000000 B');
SELECT DISTINCT max_shard_bytes FROM shard_stats('stats_srv');

-- ===================================================================
-- tenant_stats: rows per table; bytes about a page per doc; shares
-- ===================================================================
SELECT tenant_id, shard_id, rows, table_rows,
       abs(bytes - (table_rows->>'docs')::bigint * 4096) < 5 * 4096 AS bytes_ok,
       estimate
  FROM tenant_stats('stats_srv', 'r0') ORDER BY 1;
SELECT tenant_id, share BETWEEN 55 AND 65 AS a_share
  FROM tenant_stats('stats_srv', 'r0') WHERE tenant_id = 'a';
-- every shard: f counts on r1 (its owner), not on r2 (its copy); empty has
-- no rows; r3's file is missing
SELECT tenant_id, shard_id, rows, table_rows FROM tenant_stats('stats_srv')
  ORDER BY 1;
ALTER SERVER stats_srv OPTIONS (ADD on_missing_shard 'skip');
SELECT tenant_id, shard_id, rows FROM tenant_stats('stats_srv') ORDER BY 1;
ALTER SERVER stats_srv OPTIONS (DROP on_missing_shard);
SELECT regress_state($$SELECT * FROM tenant_stats('stats_srv', 'nope')$$);
SELECT regress_state($$SELECT * FROM tenant_stats(NULL)$$);

-- ===================================================================
-- shard_rebalance_plan
-- ===================================================================
-- under 70 %: one move, b (about 245 kB) from r0 to r2
SELECT step, tenant_id, from_shard, to_shard,
       bytes BETWEEN 60 * 4096 AND 63 * 4096 AS about_60_pages
  FROM shard_rebalance_plan('stats_srv');
SELECT step, tenant_id, from_shard, to_shard
  FROM shard_rebalance_plan('stats_srv', 70);
-- the plan measures shards as shard_stats does: it moves tenants off the
-- shards flagged above 70 %, r0 only (not r4, with its large log)
SELECT (SELECT array_agg(shard_id ORDER BY shard_id)
          FROM shard_stats('stats_srv') WHERE above_70) AS flagged,
       (SELECT array_agg(DISTINCT from_shard ORDER BY from_shard)
          FROM shard_rebalance_plan('stats_srv', 70)) AS planned;
-- under 85 %: nothing to do
SELECT * FROM shard_rebalance_plan('stats_srv', 85);
-- under 40 %: a (about 490 kB) fits nowhere; b and then c go to the
-- emptiest shard, and r0 stays over with a WARNING
SELECT step, tenant_id, from_shard, to_shard
  FROM shard_rebalance_plan('stats_srv', 40);
-- the plan executes nothing
SELECT tenant_id, shard_id FROM tenant_list('stats_srv') ORDER BY 1;
-- bad thresholds
SELECT regress_state($$SELECT * FROM shard_rebalance_plan('stats_srv', 0)$$);
SELECT regress_state($$SELECT * FROM shard_rebalance_plan('stats_srv', -5)$$);
SELECT regress_state($$SELECT * FROM shard_rebalance_plan('stats_srv', 101)$$);
SELECT regress_state($$SELECT * FROM shard_rebalance_plan('stats_srv', 'NaN')$$);
SELECT regress_state($$SELECT * FROM shard_rebalance_plan(NULL)$$);

-- ===================================================================
-- Privileges: admin functions, as shard_add (pg_read_server_files and
-- pg_write_server_files); a tenant-scoped login sees nothing of them.
-- ===================================================================
CREATE ROLE regress_stats_user;
CREATE USER MAPPING FOR regress_stats_user SERVER stats_srv
  OPTIONS (tenants 'e');
GRANT SELECT ON docs TO regress_stats_user;
SET ROLE regress_stats_user;
SELECT count(*) FROM docs;
SELECT regress_state($$SELECT * FROM shard_stats('stats_srv')$$);
SELECT regress_state($$SELECT * FROM tenant_stats('stats_srv')$$);
SELECT regress_state($$SELECT * FROM shard_rebalance_plan('stats_srv')$$);
RESET ROLE;
GRANT USAGE ON FOREIGN SERVER stats_srv TO regress_stats_user;
GRANT EXECUTE ON FUNCTION shard_stats(name), tenant_stats(name, text),
  shard_rebalance_plan(name, float8) TO regress_stats_user;
SET ROLE regress_stats_user;
SELECT regress_state($$SELECT * FROM shard_stats('stats_srv')$$);
SELECT regress_state($$SELECT * FROM tenant_stats('stats_srv')$$);
SELECT regress_state($$SELECT * FROM shard_rebalance_plan('stats_srv')$$);
RESET ROLE;
GRANT pg_read_server_files, pg_write_server_files TO regress_stats_user;
SET ROLE regress_stats_user;
SELECT count(*) FROM shard_stats('stats_srv');
RESET ROLE;
DROP USER MAPPING FOR regress_stats_user SERVER stats_srv;
DROP OWNED BY regress_stats_user;
DROP ROLE regress_stats_user;

SET client_min_messages = warning;
DROP SERVER stats_srv CASCADE;
RESET client_min_messages;
DROP FUNCTION regress_state(text);
