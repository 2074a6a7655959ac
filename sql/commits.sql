--
-- Commits of shard writes: the commit log of several shards, SERIALIZABLE,
-- planning reads that end before the statement runs, and handles after an
-- error.  The cases that need a second process (a lock held, a cancel
-- during COMMIT, a backend killed between two shard commits) are in
-- test/commit_test.sh; see test/fixtures/commits.sh.
--
\! bash test/fixtures/commits.sh
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
RESET client_min_messages;
CREATE SERVER commits_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/commits/directory.db');
CREATE FOREIGN TABLE t (tenant_id text, id bigint, v text) SERVER commits_srv;

-- ===================================================================
-- A commit of several shards: recorded in the commit log before the
-- first shard commits, removed once all have
-- ===================================================================
SELECT count(*) FROM shard_commits('commits_srv');
BEGIN;
INSERT INTO t VALUES ('a', 10, 'x'), ('b', 10, 'x'), ('c', 10, 'x');
COMMIT;
SELECT tenant_id, id, v FROM t WHERE id = 10 ORDER BY tenant_id;
-- the log file exists now, and holds no unfinished commit
\! test -f /tmp/ssfdw_regress/commits/directory.db.commits && echo exists
\! sqlite3 /tmp/ssfdw_regress/commits/directory.db.commits "SELECT count(*) FROM commits; SELECT count(*) FROM commit_shards"
SELECT count(*) FROM shard_commits('commits_srv');
SELECT shard_commit_forget('commits_srv', 12345);
-- a commit that failed half-way stays listed until forgotten
\! sqlite3 /tmp/ssfdw_regress/commits/directory.db.commits "INSERT INTO commits VALUES (7, 0, 0, 0, '999', 'failed', 'disk I/O error'); INSERT INTO commit_shards VALUES (7, 1, 'k1', '/x/k1.db', 1), (7, 2, 'k2', '/x/k2.db', 0)"
SELECT commit_id, started_at, backend_pid, state, xid, error, commit_order,
       shard_id, path, committed
  FROM shard_commits('commits_srv');
SELECT shard_commit_forget('commits_srv', 7);
SELECT count(*) FROM shard_commits('commits_srv');
-- the log names shards and files: not for everyone
CREATE ROLE regress_commits_user;
GRANT USAGE ON FOREIGN SERVER commits_srv TO regress_commits_user;
GRANT EXECUTE ON FUNCTION shard_commits(name) TO regress_commits_user;
SET ROLE regress_commits_user;
SELECT count(*) FROM shard_commits('commits_srv');
RESET ROLE;
REVOKE ALL ON FOREIGN SERVER commits_srv FROM regress_commits_user;
REVOKE ALL ON FUNCTION shard_commits(name) FROM regress_commits_user;
DROP ROLE regress_commits_user;

-- ===================================================================
-- A deferred foreign key that is not satisfied is found before any
-- shard commits: nothing commits
-- ===================================================================
\! sqlite3 /tmp/ssfdw_regress/commits/shards/k3.db "CREATE TABLE p(id INTEGER PRIMARY KEY); CREATE TABLE f(tenant_id TEXT, pid INTEGER REFERENCES p(id) DEFERRABLE INITIALLY DEFERRED)"
\! sqlite3 /tmp/ssfdw_regress/commits/shards/k1.db "CREATE TABLE f(tenant_id TEXT, pid INTEGER)"
CREATE FOREIGN TABLE f (tenant_id text, pid int) SERVER commits_srv;
BEGIN;
INSERT INTO f VALUES ('a', 1);
INSERT INTO f VALUES ('c', 1);
COMMIT;
SELECT count(*) FROM f;

-- ===================================================================
-- SERIALIZABLE: PostgreSQL's check runs before the shards commit; a
-- transaction it lets through commits every shard
-- ===================================================================
BEGIN ISOLATION LEVEL SERIALIZABLE;
INSERT INTO t VALUES ('a', 20, 's'), ('b', 20, 's');
UPDATE t SET v = 'S' WHERE tenant_id = 'c' AND id = 1;
COMMIT;
SELECT tenant_id, id, v FROM t WHERE id = 20 OR v = 'S' ORDER BY tenant_id, id;

-- ===================================================================
-- Planning reads the routed shard for its row estimate; that read ends
-- before the statement runs.  In rollback-journal mode an open read
-- would hold a shared lock, and another process's write could not
-- commit (with no busy timeout: at once "database is locked").
-- ===================================================================
-- (a foreign table of its own: no estimate of it is cached yet)
CREATE FOREIGN TABLE t_plan (tenant_id text, id bigint, v text)
  SERVER commits_srv OPTIONS (table 't');
BEGIN;
EXPLAIN (COSTS OFF) SELECT * FROM t_plan WHERE tenant_id = 'a';
\! sqlite3 /tmp/ssfdw_regress/commits/shards/k1.db "INSERT INTO t VALUES ('a', 30, 'outside')" && echo written
COMMIT;
-- a statement's own read stays until the next statement (READ COMMITTED)
BEGIN;
SELECT count(*) FROM t WHERE tenant_id = 'a';
\! sqlite3 /tmp/ssfdw_regress/commits/shards/k1.db "INSERT INTO t VALUES ('a', 31, 'outside')" 2>&1 || echo refused
COMMIT;
SELECT id, v FROM t WHERE tenant_id = 'a' AND id >= 30 ORDER BY id;

-- ===================================================================
-- An error in the middle of a fan-out above the handle cap: the scans'
-- handles outlive the abort until the scans are gone
-- ===================================================================
SET sqlite_shard_fdw.max_open_shards = 1;
SET sqlite_shard_fdw.fanout_parallelism = 1;
SELECT tenant_id, id, 1 / (id - 2) FROM t ORDER BY 1, 2;
BEGIN;
DECLARE c CURSOR FOR SELECT tenant_id, id, 1 / (id - 2) FROM t;
FETCH 1 FROM c;
FETCH ALL FROM c;
ROLLBACK;
SELECT tenant_id, count(*) FROM t GROUP BY 1 ORDER BY 1;
RESET sqlite_shard_fdw.fanout_parallelism;
RESET sqlite_shard_fdw.max_open_shards;

-- ===================================================================
-- A commit of one shard in WAL mode writes its changed pages and no more:
-- the last of them marks the commit (the row and its key: two frames of
-- the shard's WAL, 4096 + 24 bytes each), with no extra frame of the
-- database's first page
-- ===================================================================
INSERT INTO t VALUES ('b', 40, 'w');
SELECT (pg_stat_file('/tmp/ssfdw_regress/commits/shards/k2.db-wal')).size AS wal_before \gset
INSERT INTO t VALUES ('b', 41, 'w');
SELECT ((pg_stat_file('/tmp/ssfdw_regress/commits/shards/k2.db-wal')).size
        - :wal_before) / (4096 + 24) AS wal_frames;
SELECT id, v FROM t WHERE tenant_id = 'b' AND id >= 40 ORDER BY id;

-- ===================================================================
-- Clean up
-- ===================================================================
DROP SERVER commits_srv CASCADE;
