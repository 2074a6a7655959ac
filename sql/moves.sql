--
-- tenant_move, tenant_moves, tenant_move_abort and tenant_cleanup: what a
-- move refuses before it changes anything, a whole move with its fence,
-- a failed move resumed, an aborted move, and the cleanup.  Kills at each
-- phase, concurrent writers and the moving tenant's fan-out counts are in
-- test/move_kill_test.sh and test/move_writers_test.sh.  See
-- test/fixtures/moves.sh for the fleet.
--
\! bash test/fixtures/moves.sh
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
RESET client_min_messages;
CREATE SERVER mv_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/moves/directory.db');
CREATE FOREIGN TABLE mv_orders (tenant_id text, order_id bigint,
  amount_cents bigint, status text) SERVER mv_srv OPTIONS (table 'orders');
\set VERBOSITY default

-- ===================================================================
-- Refusals, each before anything changes
-- ===================================================================
SELECT tenant_move('mv_srv', 'nobody', 's2');
\echo :LAST_ERROR_SQLSTATE
SELECT tenant_move('mv_srv', 'acme', 's9');
\echo :LAST_ERROR_SQLSTATE
SELECT tenant_move('mv_srv', 'acme', 's1');
\echo :LAST_ERROR_SQLSTATE
SELECT tenant_move('mv_srv', NULL, 's2');
\echo :LAST_ERROR_SQLSTATE
BEGIN;
SELECT tenant_move('mv_srv', 'acme', 's2');
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
-- audit on s5 has no primary key
SELECT tenant_move('mv_srv', 'hooli', 's2');
\echo :LAST_ERROR_SQLSTATE
-- items 1..3 of tenant other on s3 have acme's keys
SELECT tenant_move('mv_srv', 'acme', 's3');
\echo :LAST_ERROR_SQLSTATE
-- items on s4 lacks sku
SELECT tenant_move('mv_srv', 'acme', 's4');
\echo :LAST_ERROR_SQLSTATE
-- a row of shard_map says MIGRATING, set by another tool
SELECT tenant_move('mv_srv', 'foreign_move', 's3');
\echo :LAST_ERROR_SQLSTATE
ALTER SERVER mv_srv OPTIONS (ADD max_shard_bytes '100kB');
\set VERBOSITY terse
SELECT tenant_move('mv_srv', 'acme', 's2');
\set VERBOSITY default
\echo :LAST_ERROR_SQLSTATE
ALTER SERVER mv_srv OPTIONS (DROP max_shard_bytes);
-- crafted files (see the fixture): a schema entry of a table s2 lacks
-- that holds more than one statement (ATTACH, then a write through it),
-- one of an index that deletes the source's rows after its CREATE INDEX,
-- and one that is a CREATE TEMP TABLE; none of their text is run
SELECT tenant_move('mv_srv', 'evil', 's2');
\echo :LAST_ERROR_SQLSTATE
SELECT tenant_move('mv_srv', 'evil_index', 's2');
\echo :LAST_ERROR_SQLSTATE
SELECT tenant_move('mv_srv', 'evil_temp', 's2');
\echo :LAST_ERROR_SQLSTATE
\! bash test/fixtures/moves_peek.sh victim.db "SELECT name FROM sqlite_schema; SELECT count(*) FROM kept"
\! bash test/fixtures/moves_peek.sh shards/s2.db "SELECT type, name FROM sqlite_schema ORDER BY name"
\! bash test/fixtures/moves_peek.sh shards/s7.db "SELECT tenant_id FROM craftix"
-- nothing changed: no move, no trigger, no copied row
SELECT * FROM tenant_moves('mv_srv');
\! bash test/fixtures/moves_peek.sh directory.db "SELECT tenant_id, shard_id, status, target_shard_id FROM shard_map ORDER BY 1"
\! bash test/fixtures/moves_peek.sh shards/s1.db "SELECT count(*) FROM sqlite_schema WHERE name LIKE '\_ssfdw%' ESCAPE '\'"
\! bash test/fixtures/moves_peek.sh shards/s6.db "SELECT count(*) FROM sqlite_schema WHERE name LIKE '\_ssfdw%' ESCAPE '\'"
\! bash test/fixtures/moves_peek.sh shards/s3.db "SELECT count(*) FROM items WHERE tenant_id = 'acme'"

-- ===================================================================
-- A whole move: acme from s1 to s2, where items and notes are created
-- ===================================================================
SELECT count(*), sum(amount_cents) FROM mv_orders;
SELECT tenant_move('mv_srv', 'acme', 's2');
SELECT shard_id, status, source_shard_id, target_shard_id
  FROM tenant_locate('mv_srv', 'acme');
SELECT move_id, tenant_id, source_shard_id, target_shard_id, phase,
       rows_copied, backlog, lock_ms >= 0 AS locked, started_at <= finished_at AS timed,
       cleaned_at, error
  FROM tenant_moves('mv_srv');
-- every row counted once, from s2 now
SELECT count(*), sum(amount_cents) FROM mv_orders;
SELECT count(*), sum(amount_cents) FROM mv_orders WHERE tenant_id = 'acme';
\! bash test/fixtures/moves_peek.sh shards/s2.db "SELECT count(*), sum(amount_cents) FROM orders WHERE tenant_id = 'acme'"
\! bash test/fixtures/moves_peek.sh shards/s2.db "SELECT item_id, sku FROM items WHERE item_id IN (1, 60)"
\! bash test/fixtures/moves_peek.sh shards/s2.db "SELECT note_id, quote(body) FROM notes ORDER BY note_id"
\! bash test/fixtures/moves_peek.sh shards/s2.db "SELECT name FROM sqlite_schema WHERE tbl_name = 'items' ORDER BY name"
-- the application's writes to the old shard fail, naming the new one
\! bash test/fixtures/moves_peek.sh shards/s1.db "INSERT INTO orders VALUES ('acme', 99999, 1, 'open')"
\! bash test/fixtures/moves_peek.sh shards/s1.db "UPDATE orders SET amount_cents = 0 WHERE tenant_id = 'acme' AND order_id = 1"
\! bash test/fixtures/moves_peek.sh shards/s1.db "DELETE FROM items WHERE item_id = 1"
\! bash test/fixtures/moves_peek.sh shards/s1.db "UPDATE orders SET tenant_id = 'acme' WHERE tenant_id = 'initech' AND order_id = 1"
\! bash test/fixtures/moves_peek.sh shards/s1.db "INSERT INTO notes VALUES ('acme', 9, 'x')"
-- other tenants of the old shard write as before
\! bash test/fixtures/moves_peek.sh shards/s1.db "INSERT INTO orders VALUES ('globex', 11, 5, 'open'); SELECT changes()"
\! bash test/fixtures/moves_peek.sh shards/s1.db "SELECT count(*) FROM orders WHERE tenant_id = 'acme'"
-- writes through PostgreSQL go to the new shard
INSERT INTO mv_orders VALUES ('acme', 25001, 3, 'open');
UPDATE mv_orders SET status = 'void' WHERE tenant_id = 'acme' AND order_id = 2;
\! bash test/fixtures/moves_peek.sh shards/s2.db "SELECT order_id, status FROM orders WHERE tenant_id = 'acme' AND order_id IN (2, 25001)"
-- so is an abort: the move has cut over
SELECT tenant_move_abort('mv_srv', 'acme');
\echo :LAST_ERROR_SQLSTATE
-- running the same move again changes nothing
SELECT tenant_move('mv_srv', 'acme', 's2');
\echo :LAST_ERROR_SQLSTATE

-- ===================================================================
-- Cleanup: the old shard's rows, triggers, log and fence go
-- ===================================================================
SELECT * FROM tenant_cleanup('mv_srv', 'acme');
SELECT shard_id, status, source_shard_id, target_shard_id
  FROM tenant_locate('mv_srv', 'acme');
SELECT phase, cleaned_at >= finished_at AS cleaned FROM tenant_moves('mv_srv');
\! bash test/fixtures/moves_peek.sh shards/s1.db "SELECT count(*) FROM orders WHERE tenant_id = 'acme'"
\! bash test/fixtures/moves_peek.sh shards/s1.db "SELECT count(*) FROM sqlite_schema WHERE name LIKE '\_ssfdw%' ESCAPE '\'"
\! bash test/fixtures/moves_peek.sh shards/s1.db "SELECT count(*) FROM orders; SELECT count(*) FROM items; SELECT count(*) FROM notes"
-- nothing left to clean up
SELECT * FROM tenant_cleanup('mv_srv');
SELECT count(*), sum(amount_cents) FROM mv_orders;

-- ===================================================================
-- A move that fails half-way, resumed; one aborted
-- ===================================================================
-- sku 'g-1' of globex is taken on s3 (a unique index, not the key)
SELECT tenant_move('mv_srv', 'globex', 's3');
\echo :LAST_ERROR_SQLSTATE
SELECT tenant_id, phase, error IS NOT NULL AS failed FROM tenant_moves('mv_srv')
  WHERE tenant_id = 'globex';
SELECT shard_id, status, target_shard_id FROM tenant_locate('mv_srv', 'globex');
-- readers still count globex once, from s1
SELECT count(*) FROM mv_orders WHERE tenant_id = 'globex';
SELECT count(*) FROM mv_orders;
-- writes keep going to s1, and are captured
\! bash test/fixtures/moves_peek.sh shards/s1.db "INSERT INTO orders VALUES ('globex', 12, 1, 'new'); DELETE FROM orders WHERE tenant_id = 'globex' AND order_id = 1"
-- the cause is mended; running the move again finishes it
\! bash test/fixtures/moves_peek.sh shards/s3.db "DELETE FROM items WHERE sku = 'g-1'"
SELECT tenant_move('mv_srv', 'globex', 's3');
\! bash test/fixtures/moves_peek.sh shards/s3.db "SELECT order_id, status FROM orders WHERE tenant_id = 'globex' ORDER BY order_id"
SELECT count(*) FROM mv_orders WHERE tenant_id = 'globex';
SELECT tenant_id, phase, error FROM tenant_moves('mv_srv') WHERE tenant_id = 'globex';
SELECT * FROM tenant_cleanup('mv_srv', 'globex', false);
-- a failed move of initech to s3, then aborted; a stale row of initech
-- on s3 (from another tool) is deleted first
\! bash test/fixtures/moves_peek.sh shards/s3.db "INSERT INTO orders VALUES ('initech', 5, 0, 'x')"
\! bash test/fixtures/moves_peek.sh shards/s3.db "CREATE UNIQUE INDEX orders_block ON orders(amount_cents) WHERE amount_cents = 7; INSERT INTO orders VALUES ('zz', 1, 7, 'x')"
SELECT tenant_move('mv_srv', 'initech', 's3');
\echo :LAST_ERROR_SQLSTATE
SELECT shard_id, status, target_shard_id FROM tenant_locate('mv_srv', 'initech');
SELECT tenant_move_abort('mv_srv', 'initech');
SELECT shard_id, status, target_shard_id FROM tenant_locate('mv_srv', 'initech');
SELECT tenant_id, phase FROM tenant_moves('mv_srv') WHERE tenant_id = 'initech';
\! bash test/fixtures/moves_peek.sh shards/s1.db "SELECT count(*) FROM sqlite_schema WHERE name LIKE '\_ssfdw%' ESCAPE '\'"
\! bash test/fixtures/moves_peek.sh shards/s3.db "SELECT count(*) FROM orders WHERE tenant_id = 'initech'"
\! bash test/fixtures/moves_peek.sh shards/s1.db "UPDATE orders SET status = 'ok' WHERE tenant_id = 'initech'; SELECT changes()"
SELECT tenant_move_abort('mv_srv', 'initech');
SELECT count(*), sum(amount_cents) FROM mv_orders;

-- ===================================================================
-- A table the target lacks, with what SQLite's DDL may write: created
-- ===================================================================
SELECT tenant_move('mv_srv', 'auto', 's2') > 0 AS moved;
\! bash test/fixtures/moves_peek.sh shards/s2.db "SELECT type, name FROM sqlite_schema WHERE tbl_name IN ('seqd', 'sqlite_sequence') ORDER BY name"
\! bash test/fixtures/moves_peek.sh shards/s2.db "SELECT id, body, up FROM seqd ORDER BY id"
SELECT * FROM tenant_cleanup('mv_srv', 'auto');

DROP SERVER mv_srv CASCADE;
