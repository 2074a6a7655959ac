--
-- Rebalancing that can be applied: a plan run by tenant_move in the same
-- statement, and the procedure shard_rebalance, on a fleet in
-- rollback-journal mode (test/fixtures/rebalance.sh), where a read
-- transaction left open by the plan would block the move's writes until
-- busy_timeout_ms.
--
\! bash test/fixtures/rebalance.sh
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
RESET client_min_messages;
CREATE SERVER rb_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/rebalance/directory.db',
           max_shard_bytes '1000000', busy_timeout_ms '300');
CREATE FOREIGN TABLE docs (tenant_id text, id bigint, body bytea)
  SERVER rb_srv;

-- regress_state(statement): the SQLSTATE and message of its error, or ok
\i test/regress_state.sql

-- every tenant's docs, to compare after the moves
CREATE TABLE rb_before AS
  SELECT tenant_id, count(*) AS docs, sum(length(body)) AS body_bytes
    FROM docs GROUP BY tenant_id;

-- ===================================================================
-- A plan applied in the statement that makes it: g from r0 to r2
-- ===================================================================
SELECT step, tenant_id, from_shard, to_shard
  FROM shard_rebalance_plan('rb_srv');
SELECT p.tenant_id, p.to_shard,
       tenant_move('rb_srv', p.tenant_id, p.to_shard) > 0 AS moved
  FROM shard_rebalance_plan('rb_srv') AS p;
SELECT tenant_id, shard_id, status, source_shard_id, target_shard_id
  FROM tenant_list('rb_srv') ORDER BY 1;
-- the statistics let go of the shards too: e from r2 to r1 in the
-- statement that reads its rows on r2
SELECT t.tenant_id, t.rows,
       tenant_move('rb_srv', 'e', 'r1') > 0 AS e_moved
  FROM tenant_stats('rb_srv', 'r2') AS t WHERE t.tenant_id = 'e';
SELECT tenant_id, shard_id, status FROM tenant_list('rb_srv')
  WHERE tenant_id = 'e';
-- a plan does not count the leftovers of a move not cleaned up: nothing
-- more to do under 70 %
SELECT * FROM shard_rebalance_plan('rb_srv');
SELECT tenant_id, shard_id, rows_deleted FROM tenant_cleanup('rb_srv')
  ORDER BY 1;

-- ===================================================================
-- CALL shard_rebalance: each move committed on its own, with progress
-- ===================================================================
SELECT step, tenant_id, from_shard, to_shard
  FROM shard_rebalance_plan('rb_srv', 40);
-- max_moves 0: the plan, and no move
CALL shard_rebalance('rb_srv', 40, 0);
SELECT tenant_id, shard_id FROM tenant_list('rb_srv') WHERE tenant_id = 'a';
-- a move that fails stops the procedure; the error names the move, which
-- tenant_move resumes
SET sqlite_shard_fdw.move_pause_at = 'copy';
SET statement_timeout = '1s';
CALL shard_rebalance('rb_srv', 40);
RESET statement_timeout;
RESET sqlite_shard_fdw.move_pause_at;
SELECT tenant_id, shard_id, status, target_shard_id FROM tenant_list('rb_srv')
  WHERE tenant_id = 'a';
SELECT tenant_move('rb_srv', 'a', 'r1') > 0 AS resumed;
SELECT tenant_id, shard_id, status, source_shard_id, target_shard_id
  FROM tenant_list('rb_srv') ORDER BY 1;
SELECT tenant_id, source_shard_id, target_shard_id, phase, error
  FROM tenant_moves('rb_srv') ORDER BY move_id;
-- nothing left to do; its leftovers are not counted
CALL shard_rebalance('rb_srv', 40);
SELECT tenant_id, shard_id, rows_deleted FROM tenant_cleanup('rb_srv')
  ORDER BY 1;
-- a few moves at a time
SELECT step, tenant_id, from_shard, to_shard
  FROM shard_rebalance_plan('rb_srv', 35);
CALL shard_rebalance('rb_srv', 35, max_moves => 1);
SELECT tenant_id, shard_id, status FROM tenant_list('rb_srv') ORDER BY 1;
-- every doc is where the directory says, once
SELECT b.tenant_id, a.docs = b.docs AND a.body_bytes = b.body_bytes AS same
  FROM rb_before AS b
  JOIN (SELECT tenant_id, count(*) AS docs, sum(length(body)) AS body_bytes
          FROM docs GROUP BY tenant_id) AS a USING (tenant_id)
  ORDER BY 1;
SELECT tenant_id, shard_id, rows FROM tenant_stats('rb_srv') ORDER BY 1;

-- ===================================================================
-- What the procedure refuses
-- ===================================================================
BEGIN;
CALL shard_rebalance('rb_srv');
ROLLBACK;
-- called from a function, it cannot commit either
CREATE FUNCTION rb_call() RETURNS void LANGUAGE plpgsql
  AS $$ BEGIN CALL shard_rebalance('rb_srv'); END $$;
SELECT rb_call();
DROP FUNCTION rb_call();
-- a DO block may commit
DO $$ BEGIN CALL shard_rebalance('rb_srv'); END $$;
CALL shard_rebalance('rb_srv', 40, -1);
CALL shard_rebalance('rb_srv', 0);
CALL shard_rebalance(NULL);
CALL shard_rebalance('nope');
SELECT regress_state($$SELECT shard_rebalance('rb_srv')$$);
CREATE ROLE regress_rb_user;
GRANT USAGE ON FOREIGN SERVER rb_srv TO regress_rb_user;
SET ROLE regress_rb_user;
CALL shard_rebalance('rb_srv');
RESET ROLE;
GRANT EXECUTE ON PROCEDURE shard_rebalance(name, float8, integer)
  TO regress_rb_user;
SET ROLE regress_rb_user;
CALL shard_rebalance('rb_srv');
RESET ROLE;
DROP OWNED BY regress_rb_user;
DROP ROLE regress_rb_user;

DROP TABLE rb_before;
SET client_min_messages = warning;
DROP SERVER rb_srv CASCADE;
RESET client_min_messages;
DROP FUNCTION regress_state(text);
