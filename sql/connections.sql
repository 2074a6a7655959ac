--
-- Shard handles: the cap on open handles, and the read snapshot each
-- statement (READ COMMITTED) or each transaction (REPEATABLE READ,
-- SERIALIZABLE) keeps on a shard.  See test/fixtures/connections.sh.
--
\! bash test/fixtures/connections.sh
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
RESET client_min_messages;
CREATE SERVER conn_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/connections/directory.db');
CREATE FOREIGN TABLE t (tenant_id text, n int) SERVER conn_srv;

-- The shard files this backend has open, counted from /proc.
SELECT pg_backend_pid() AS backend_pid \gset
\setenv BACKEND_PID :backend_pid
\set open_shards '\\! ls -l /proc/$BACKEND_PID/fd | grep -c "/connections/shards/c[0-9].db$"'

-- ===================================================================
-- sqlite_shard_fdw.max_open_shards: a fan-out over 5 shards still
-- reads every row; afterwards only the most recent handles stay open
-- ===================================================================
SHOW sqlite_shard_fdw.max_open_shards;
SET sqlite_shard_fdw.max_open_shards = 2;
SELECT tenant_id, count(*), sum(n) FROM t GROUP BY tenant_id ORDER BY tenant_id;
:open_shards
SELECT count(*) FROM t;
SELECT count(*) FROM t WHERE n > 5;
:open_shards
-- read one shard after another, in the backend
SET sqlite_shard_fdw.fanout_parallelism = 1;
SELECT tenant_id, count(*) FROM t GROUP BY tenant_id ORDER BY tenant_id;
:open_shards
RESET sqlite_shard_fdw.fanout_parallelism;
-- routed reads reuse and evict handles as they go
SELECT count(*) FROM t WHERE tenant_id = 'k1';
SELECT count(*) FROM t WHERE tenant_id = 'k5';
SELECT count(*) FROM t WHERE tenant_id = 'k3';
:open_shards
-- one statement that reads the same shard twice, and more shards than
-- the cap at once
SET sqlite_shard_fdw.max_open_shards = 1;
SELECT count(*) FROM t a JOIN t b ON a.tenant_id = b.tenant_id AND a.n = b.n
  WHERE a.tenant_id = 'k2' AND b.tenant_id = 'k2';
SELECT count(*) FROM t a JOIN t b ON a.tenant_id = b.tenant_id AND a.n = b.n;
:open_shards
-- a higher cap keeps every handle
RESET sqlite_shard_fdw.max_open_shards;
SELECT count(*) FROM t;
:open_shards
-- the setting's bounds, and its reserved prefix
SET sqlite_shard_fdw.max_open_shards = 0;
SET sqlite_shard_fdw.no_such_setting = 1;

-- ===================================================================
-- REPEATABLE READ: a shard's snapshot lasts for the transaction
-- ===================================================================
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT count(*) FROM t WHERE tenant_id = 'k1';
\! sqlite3 /tmp/ssfdw_regress/connections/shards/c1.db "INSERT INTO t VALUES ('k1', 11)"
SELECT count(*) FROM t WHERE tenant_id = 'k1';
SELECT max(n) FROM t WHERE tenant_id = 'k1';
COMMIT;
SELECT count(*) FROM t WHERE tenant_id = 'k1';
-- A fan-out: every shard keeps the state it had at the first read, even
-- beyond the cap on open handles.
SET sqlite_shard_fdw.max_open_shards = 2;
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT tenant_id, count(*) FROM t GROUP BY tenant_id ORDER BY tenant_id;
:open_shards
\! sqlite3 /tmp/ssfdw_regress/connections/shards/c3.db "INSERT INTO t VALUES ('k3', 11)"
\! sqlite3 /tmp/ssfdw_regress/connections/shards/c5.db "DELETE FROM t WHERE n > 5"
SELECT tenant_id, count(*) FROM t GROUP BY tenant_id ORDER BY tenant_id;
SELECT count(*) FROM t WHERE tenant_id = 'k5';
COMMIT;
:open_shards
SELECT tenant_id, count(*) FROM t GROUP BY tenant_id ORDER BY tenant_id;
RESET sqlite_shard_fdw.max_open_shards;
-- There is no snapshot across shards: a shard first read after another
-- process changed it shows the change.
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT count(*) FROM t WHERE tenant_id = 'k2';
\! sqlite3 /tmp/ssfdw_regress/connections/shards/c2.db "INSERT INTO t VALUES ('k2', 11)"
\! sqlite3 /tmp/ssfdw_regress/connections/shards/c4.db "INSERT INTO t VALUES ('k4', 11)"
SELECT count(*) FROM t WHERE tenant_id = 'k2';
SELECT count(*) FROM t WHERE tenant_id = 'k4';
COMMIT;
SELECT tenant_id, count(*) FROM t WHERE tenant_id IN ('k2', 'k4')
  GROUP BY tenant_id ORDER BY tenant_id;
-- SERIALIZABLE behaves the same.
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT count(*) FROM t WHERE tenant_id = 'k1';
\! sqlite3 /tmp/ssfdw_regress/connections/shards/c1.db "INSERT INTO t VALUES ('k1', 12)"
SELECT count(*) FROM t WHERE tenant_id = 'k1';
COMMIT;
SELECT count(*) FROM t WHERE tenant_id = 'k1';
-- An aborted transaction gives its snapshots up too.
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT count(*) FROM t WHERE tenant_id = 'k1';
SELECT 1 / 0;
ROLLBACK;
\! sqlite3 /tmp/ssfdw_regress/connections/shards/c1.db "INSERT INTO t VALUES ('k1', 13)"
SELECT count(*) FROM t WHERE tenant_id = 'k1';
-- A savepoint rolled back inside the transaction keeps the snapshot.
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT count(*) FROM t WHERE tenant_id = 'k1';
SAVEPOINT s1;
SELECT n / (n - 5) FROM t WHERE tenant_id = 'k1';
ROLLBACK TO SAVEPOINT s1;
\! sqlite3 /tmp/ssfdw_regress/connections/shards/c1.db "INSERT INTO t VALUES ('k1', 14)"
SELECT count(*) FROM t WHERE tenant_id = 'k1';
COMMIT;
SELECT count(*) FROM t WHERE tenant_id = 'k1';

-- ===================================================================
-- READ COMMITTED: every statement sees what was committed before it
-- ===================================================================
BEGIN;
SELECT count(*) FROM t WHERE tenant_id = 'k1';
\! sqlite3 /tmp/ssfdw_regress/connections/shards/c1.db "INSERT INTO t VALUES ('k1', 15)"
SELECT count(*) FROM t WHERE tenant_id = 'k1';
SELECT count(*) FROM t;
\! sqlite3 /tmp/ssfdw_regress/connections/shards/c5.db "INSERT INTO t VALUES ('k5', 6)"
SELECT count(*) FROM t;
COMMIT;
-- outside a transaction block
SELECT count(*) FROM t WHERE tenant_id = 'k3';
\! sqlite3 /tmp/ssfdw_regress/connections/shards/c3.db "DELETE FROM t WHERE n = 11"
SELECT count(*) FROM t WHERE tenant_id = 'k3';
-- after a statement failed in the middle of reading a shard and its
-- savepoint was rolled back
BEGIN;
SAVEPOINT s1;
SELECT n / (n - 5) FROM t WHERE tenant_id = 'k2';
ROLLBACK TO SAVEPOINT s1;
\! sqlite3 /tmp/ssfdw_regress/connections/shards/c2.db "INSERT INTO t VALUES ('k2', 12)"
SELECT count(*) FROM t WHERE tenant_id = 'k2';
COMMIT;
SELECT count(*) FROM t WHERE tenant_id = 'k2';
-- a cursor reads from its own snapshot; while it holds the shard open,
-- later statements of the transaction read that shard at the cursor's
-- state too (one SQLite read transaction per shard handle, as docs/reference/transactions.md
-- says), and see new rows once it is closed
BEGIN;
DECLARE c CURSOR FOR SELECT n FROM t WHERE tenant_id = 'k4';
FETCH 2 FROM c;
\! sqlite3 /tmp/ssfdw_regress/connections/shards/c4.db "INSERT INTO t VALUES ('k4', 0)"
SELECT count(*) FROM t WHERE tenant_id = 'k4';
FETCH ALL FROM c;
CLOSE c;
SELECT count(*) FROM t WHERE tenant_id = 'k4';
COMMIT;

-- ===================================================================
-- Clean up
-- ===================================================================
\unset open_shards
DROP SERVER conn_srv CASCADE;
