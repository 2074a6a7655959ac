--
-- Tenant lists and leftovers: a scan over several named tenants reads, on
-- each shard, only the tenants that shard owns; shard_orphans() finds rows
-- of tenants a shard does not own.  See test/fixtures/orphans.sh.
--
\! bash test/fixtures/orphans.sh
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
RESET client_min_messages;
CREATE SERVER orphans_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/orphans/directory.db');
CREATE FOREIGN TABLE orders (tenant_id text, order_id bigint, amount bigint)
  SERVER orphans_srv;
CREATE FOREIGN TABLE items (tenant_id text, item_id bigint, qty bigint)
  SERVER orphans_srv;
CREATE FOREIGN TABLE accounts (account_id int, v int)
  SERVER orphans_srv OPTIONS (tenant_column 'account_id');
CREATE FOREIGN TABLE korders (tenant_id text, order_id bigint, amount bigint)
  SERVER orphans_srv;

-- ===================================================================
-- a is owned by s0; s1 still holds two of its orders (a foreign tool's
-- move, not cleaned up).  Every form of tenant list reads a from s0 only.
-- ===================================================================
SELECT tenant_id, order_id, amount FROM orders WHERE tenant_id = 'a'
  ORDER BY 1, 2;
SELECT tenant_id, order_id, amount FROM orders WHERE tenant_id IN ('a', 'b')
  ORDER BY 1, 2;
SELECT tenant_id, order_id, amount FROM orders
  WHERE tenant_id = ANY (ARRAY['a', 'b']) ORDER BY 1, 2;
PREPARE by_list(text[]) AS
  SELECT tenant_id, order_id, amount FROM orders WHERE tenant_id = ANY ($1)
  ORDER BY 1, 2;
EXECUTE by_list(ARRAY['a', 'b']);
EXECUTE by_list(ARRAY['b', 'a', 'c']);
DEALLOCATE by_list;
SELECT tenant_id, order_id, amount FROM orders
  WHERE tenant_id = ANY (ARRAY(SELECT x FROM unnest(ARRAY['a', 'b']) x))
  ORDER BY 1, 2;
SET plan_cache_mode = force_generic_plan;
PREPARE by_list2(text[]) AS
  SELECT tenant_id, order_id, amount FROM orders WHERE tenant_id = ANY ($1)
  ORDER BY 1, 2;
EXECUTE by_list2(ARRAY['a', 'b']);
DEALLOCATE by_list2;
RESET plan_cache_mode;
SELECT o.tenant_id, o.order_id, o.amount
  FROM (VALUES (ARRAY['a', 'b'])) v(arr), LATERAL
  (SELECT * FROM orders WHERE tenant_id = ANY (v.arr)) o ORDER BY 1, 2;
SELECT tenant_id, order_id, amount FROM orders
  WHERE tenant_id = ANY (string_to_array('a,b', ',')) ORDER BY 1, 2;
BEGIN;
UPDATE orders SET amount = amount + 1 WHERE tenant_id IN ('a', 'b');
DELETE FROM orders WHERE tenant_id = ANY (ARRAY['a', 'b']) RETURNING *;
ROLLBACK;
SELECT tenant_id, count(*), sum(amount) FROM orders
  WHERE tenant_id IN ('a', 'b') GROUP BY tenant_id ORDER BY 1;
SELECT count(*), sum(amount) FROM orders WHERE tenant_id IN ('a', 'b');
SELECT tenant_id, amount FROM orders WHERE tenant_id IN ('a', 'b')
  ORDER BY amount DESC LIMIT 3;
SELECT tenant_id, item_id, qty FROM items WHERE tenant_id IN ('a', 'b')
  ORDER BY 1, 2;
SELECT account_id, v FROM accounts WHERE account_id IN (7, 8) ORDER BY 1, 2;

-- ===================================================================
-- An OR of tenant equalities is a tenant list: routed, exact per shard.
-- (It used to read every shard, and a's leftovers on s1 with them.)
-- ===================================================================
EXPLAIN (VERBOSE, COSTS OFF)
SELECT order_id FROM orders WHERE tenant_id = 'a' OR tenant_id = 'b';
SELECT tenant_id, order_id, amount FROM orders
  WHERE tenant_id = 'a' OR tenant_id = 'b' ORDER BY 1, 2;
SELECT tenant_id, order_id, amount FROM orders
  WHERE 'a' = tenant_id OR tenant_id = 'nobody' ORDER BY 1, 2;
PREPARE by_or(text, text) AS
  SELECT tenant_id, order_id, amount FROM orders
  WHERE tenant_id = $1 OR tenant_id = $2 ORDER BY 1, 2;
EXECUTE by_or('a', 'c');
DEALLOCATE by_or;
SELECT account_id, v FROM accounts WHERE account_id = 7 OR account_id = 8
  ORDER BY 1, 2;
-- An arm that is no tenant equality: every shard, and PostgreSQL filters.
EXPLAIN (COSTS OFF)
SELECT order_id FROM orders WHERE tenant_id = 'a' OR amount > 1000;
BEGIN;
UPDATE orders SET amount = amount + 1000 WHERE tenant_id = 'a' OR tenant_id = 'b';
SELECT tenant_id, order_id, amount FROM orders WHERE amount > 1000 ORDER BY 1, 2;
ROLLBACK;

-- ===================================================================
-- Moving tenants count once, on the owner, in every kind of scan: m
-- MIGRATING s1 -> s2 (copy of order 1 on s2), d DONE s2 -> s0 (leftovers
-- on s2), n ACTIVE s2 with target s0 (copy of order 1 on s0).
-- ===================================================================
SELECT tenant_id, count(*), sum(amount) FROM orders
  WHERE tenant_id IN ('m', 'd', 'n') GROUP BY 1 ORDER BY 1;
SELECT tenant_id, count(*), sum(amount) FROM orders GROUP BY 1 ORDER BY 1;
SET sqlite_shard_fdw.thread_aggregation = off;
SELECT tenant_id, count(*), sum(amount) FROM orders GROUP BY 1 ORDER BY 1;
RESET sqlite_shard_fdw.thread_aggregation;
SELECT count(*), sum(amount) FROM orders WHERE tenant_id <> 'a';
SET sqlite_shard_fdw.aggregate_pushdown = off;
SELECT count(*), sum(amount) FROM orders WHERE tenant_id <> 'a';
RESET sqlite_shard_fdw.aggregate_pushdown;
SELECT tenant_id, amount FROM orders WHERE tenant_id IN ('m', 'd', 'n')
  ORDER BY amount DESC LIMIT 4;
SELECT tenant_id, order_id, amount FROM orders
  WHERE tenant_id <> 'a' ORDER BY amount DESC LIMIT 5;
SET sqlite_shard_fdw.fanout_parallelism = 1;
SELECT tenant_id, count(*) FROM orders WHERE tenant_id <> 'a'
  GROUP BY 1 ORDER BY 1;
RESET sqlite_shard_fdw.fanout_parallelism;
-- A row-by-row UPDATE over every shard changes a's rows on s0, once each,
-- and a's leftovers on s1 where they are: their rowids never name rows on
-- s0 (it used to change s0's rows 1 and 2 twice, and the leftovers' values
-- went there).
BEGIN;
UPDATE orders SET amount = amount + 1000 WHERE amount > 0 AND tenant_id <> 'ghost';
SELECT tenant_id, order_id, amount FROM orders WHERE tenant_id = 'a' ORDER BY 2;
SELECT tenant_id, order_id, amount FROM orders WHERE amount < 1000 ORDER BY 1, 2;
DELETE FROM orders WHERE amount > 0 AND tenant_id <> 'ghost' AND order_id = 1;
SELECT tenant_id, order_id, amount FROM orders ORDER BY 1, 2, 3;
ROLLBACK;
-- The same by primary key, in a WITHOUT ROWID table: a's leftovers on s1
-- are changed where they are, once each, and their keys never name rows
-- on s0.
BEGIN;
UPDATE korders SET amount = amount + 1000 WHERE amount > 0;
SELECT tenant_id, order_id, amount FROM korders WHERE tenant_id = 'a' ORDER BY 2;
SELECT tenant_id, order_id, amount FROM korders ORDER BY 1, 2, 3;
ROLLBACK;
-- A direct UPDATE over every shard changes b, c, d, m and n's 10 rows,
-- not the copies and leftovers of m, d and n.
BEGIN;
EXPLAIN (COSTS OFF)
UPDATE orders SET amount = 0 WHERE tenant_id NOT IN ('a', 'ghost');
UPDATE orders SET amount = 0 WHERE tenant_id NOT IN ('a', 'ghost');
DELETE FROM orders WHERE tenant_id IN ('m', 'd', 'n')
  RETURNING tenant_id, order_id, amount;
ROLLBACK;
-- auto_register is for INSERT and COPY: a row-by-row UPDATE or DELETE of
-- ghost's leftover does not register ghost (it used to, then change a row
-- on the shard it placed ghost on).
ALTER FOREIGN TABLE orders OPTIONS (ADD auto_register 'true');
BEGIN;
UPDATE orders SET amount = amount + 1 WHERE tenant_id ~ '^ghost$';
SELECT count(*) FROM tenant_list('orphans_srv') WHERE tenant_id = 'ghost';
SELECT tenant_id, order_id, amount FROM orders WHERE tenant_id ~ '^ghost$';
ROLLBACK;
BEGIN;
DELETE FROM orders WHERE tenant_id ~ '^ghost$';
SELECT count(*) FROM tenant_list('orphans_srv') WHERE tenant_id = 'ghost';
ROLLBACK;
ALTER FOREIGN TABLE orders OPTIONS (DROP auto_register);
-- One UPDATE or DELETE changes the same rows whether it runs inside the
-- shards (Direct Modify) or row by row (a condition PostgreSQL evaluates):
-- each row on the shard the scan read it from, a's leftovers on s1 and
-- ghost's row on s2 included (row by row used to skip the first and refuse
-- the second), and of the moving tenants m, d and n only the owner's rows
-- (a stale copy changed would come back in RETURNING).  The amounts' last
-- digit names the shard of each row.
\set row_list 'SELECT string_agg(format(''%s/%s/%s'', tenant_id, order_id, amount), '' '' ORDER BY tenant_id, order_id, amount)'
BEGIN;
EXPLAIN (COSTS OFF) UPDATE orders SET amount = 0 WHERE order_id = 1;
WITH u AS (UPDATE orders SET amount = 0 WHERE order_id = 1
           RETURNING tenant_id, order_id, amount)
:row_list AS changed FROM u \gset direct_
:row_list AS rows FROM orders \gset direct_
ROLLBACK;
BEGIN;
EXPLAIN (COSTS OFF)
UPDATE orders SET amount = 0 WHERE order_id = 1 AND amount::text ~ '.';
WITH u AS (UPDATE orders SET amount = 0 WHERE order_id = 1
           AND amount::text ~ '.' RETURNING tenant_id, order_id, amount)
:row_list AS changed FROM u \gset by_row_
:row_list AS rows FROM orders \gset by_row_
ROLLBACK;
SELECT :'direct_changed' AS changed, :'direct_rows' AS rows;
SELECT :'direct_changed' = :'by_row_changed' AS same_changed,
       :'direct_rows' = :'by_row_rows' AS same_rows;
-- DELETE, of orders and of korders (WITHOUT ROWID: rows found by key).
BEGIN;
EXPLAIN (COSTS OFF) DELETE FROM orders WHERE order_id = 1;
WITH d AS (DELETE FROM orders WHERE order_id = 1 RETURNING *)
:row_list AS deleted FROM d \gset direct_
WITH d AS (DELETE FROM korders WHERE order_id = 1 RETURNING *)
:row_list AS kdeleted FROM d \gset direct_
ROLLBACK;
BEGIN;
EXPLAIN (COSTS OFF)
DELETE FROM orders WHERE order_id = 1 AND amount::text ~ '.';
WITH d AS (DELETE FROM orders WHERE order_id = 1 AND amount::text ~ '.'
           RETURNING *)
:row_list AS deleted FROM d \gset by_row_
WITH d AS (DELETE FROM korders WHERE order_id = 1 AND amount::text ~ '.'
           RETURNING *)
:row_list AS kdeleted FROM d \gset by_row_
ROLLBACK;
SELECT :'direct_deleted' AS deleted, :'direct_kdeleted' AS kdeleted;
SELECT :'direct_deleted' = :'by_row_deleted' AS same_deleted,
       :'direct_kdeleted' = :'by_row_kdeleted' AS same_kdeleted;
-- A scoped login changes its own tenants' rows only, on the shard that
-- owns them, either way, whatever it asks: a's leftovers on s1 stay as
-- they are.
CREATE ROLE regress_orphans_hostile;
GRANT SELECT, UPDATE, DELETE ON orders TO regress_orphans_hostile;
CREATE USER MAPPING FOR regress_orphans_hostile SERVER orphans_srv
  OPTIONS (tenants 'a');
BEGIN;
SET LOCAL ROLE regress_orphans_hostile;
EXPLAIN (COSTS OFF) UPDATE orders SET amount = -1;
WITH u AS (UPDATE orders SET amount = -1 RETURNING tenant_id)
SELECT tenant_id, count(*) FROM u GROUP BY 1 ORDER BY 1;
EXPLAIN (COSTS OFF)
UPDATE orders SET amount = -2 WHERE amount::text ~ '.' OR tenant_id <> 'a';
WITH u AS (UPDATE orders SET amount = -2 WHERE amount::text ~ '.'
           OR tenant_id <> 'a' RETURNING tenant_id)
SELECT tenant_id, count(*) FROM u GROUP BY 1 ORDER BY 1;
RESET ROLE;
SELECT tenant_id, amount, count(*) FROM orders WHERE amount < 0
  GROUP BY 1, 2 ORDER BY 1, 2;
ROLLBACK;
BEGIN;
SET LOCAL ROLE regress_orphans_hostile;
WITH u AS (DELETE FROM orders WHERE tenant_id <> 'b' RETURNING tenant_id)
SELECT tenant_id, count(*) FROM u GROUP BY 1 ORDER BY 1;
RESET ROLE;
SELECT tenant_id, count(*) FROM orders WHERE tenant_id IN ('a', 'b')
  OR amount % 10 = 1 GROUP BY 1 ORDER BY 1;
ROLLBACK;
BEGIN;
SET LOCAL ROLE regress_orphans_hostile;
WITH u AS (DELETE FROM orders WHERE amount::text ~ '.' OR tenant_id = 'b'
           RETURNING tenant_id)
SELECT tenant_id, count(*) FROM u GROUP BY 1 ORDER BY 1;
RESET ROLE;
SELECT tenant_id, count(*) FROM orders WHERE tenant_id IN ('a', 'b')
  OR amount % 10 = 1 GROUP BY 1 ORDER BY 1;
ROLLBACK;
DROP USER MAPPING FOR regress_orphans_hostile SERVER orphans_srv;
REVOKE ALL ON orders FROM regress_orphans_hostile;
DROP ROLE regress_orphans_hostile;

-- ===================================================================
-- shard_orphans: what each shard holds for tenants it does not own.
-- Rows of a, ghost and d's leftovers are read by fan-outs until cleaned
-- up (the directory does not record a's old home, nor ghost at all).
-- ===================================================================
SELECT * FROM shard_orphans('orphans_srv') ORDER BY 1, 2, 3 NULLS FIRST;
SELECT * FROM shard_orphans('orphans_srv', 'account_id') ORDER BY 1, 2, 3;
-- no table has such a column: nothing
SELECT * FROM shard_orphans('orphans_srv', 'no_such_column');
-- after cleanup of a's leftovers on s1 nothing of a is left over
\! sqlite3 /tmp/ssfdw_regress/orphans/shards/s1.db "DELETE FROM orders WHERE tenant_id = 'a'; DELETE FROM items WHERE tenant_id = 'a'; DELETE FROM korders WHERE tenant_id = 'a'"
SELECT shard_id, table_name, tenant_id, reason FROM shard_orphans('orphans_srv')
  WHERE tenant_id = 'a';

-- regress_state(statement): the SQLSTATE and message of its error, or ok
\i test/regress_state.sql

-- ===================================================================
-- Rows of no tenant (items on s2: a NULL, and 1.5, a real, which is no
-- tenant's id) are changed where they are by an UPDATE or DELETE over
-- every shard, row by row as inside the shards (the NULL's row used to
-- fail with 23502, a not-null violation, though nothing wrote a NULL; 1.5,
-- read as the text '1.5', was looked for as tenant '1.5' and missed).
-- ===================================================================
BEGIN;
EXPLAIN (COSTS OFF) UPDATE items SET qty = 0 WHERE item_id IN (1, 2);
UPDATE items SET qty = 0 WHERE item_id IN (1, 2) RETURNING *;
ROLLBACK;
BEGIN;
EXPLAIN (COSTS OFF)
UPDATE items SET qty = 0 WHERE item_id IN (1, 2) AND qty::text ~ '.';
UPDATE items SET qty = 0 WHERE item_id IN (1, 2) AND qty::text ~ '.'
  RETURNING *;
ROLLBACK;
BEGIN;
DELETE FROM items WHERE item_id IN (1, 2) RETURNING *;
ROLLBACK;
BEGIN;
DELETE FROM items WHERE item_id IN (1, 2) AND qty::text ~ '.' RETURNING *;
ROLLBACK;
-- A tenant-scoped login reads and changes no row of no tenant.
CREATE ROLE regress_orphans_scoped;
GRANT SELECT, UPDATE, DELETE ON items TO regress_orphans_scoped;
CREATE USER MAPPING FOR regress_orphans_scoped SERVER orphans_srv
  OPTIONS (tenants 'a');
BEGIN;
SET LOCAL ROLE regress_orphans_scoped;
UPDATE items SET qty = -1 RETURNING *;
UPDATE items SET qty = -2 WHERE qty::text ~ '.' RETURNING *;
DELETE FROM items WHERE qty::text ~ '.' RETURNING *;
ROLLBACK;
DROP USER MAPPING FOR regress_orphans_scoped SERVER orphans_srv;
REVOKE ALL ON items FROM regress_orphans_scoped;
DROP ROLE regress_orphans_scoped;
-- A NULL written as a tenant is refused the same way whichever path the
-- statement takes: INSERT (23502), an UPDATE of the tenant column inside
-- the shards or row by row (0A000, as any change of the tenant column).
SELECT regress_state($$INSERT INTO items VALUES (NULL, 9, 9)$$);
SELECT regress_state($$UPDATE items SET tenant_id = NULL WHERE item_id = 1$$);
SELECT regress_state($$UPDATE items SET tenant_id = NULL
  WHERE item_id = 1 AND qty::text ~ '.'$$);
SELECT tenant_id, item_id, qty FROM items ORDER BY 2, 1;

-- Bad input
SELECT regress_state($$SELECT * FROM shard_orphans(NULL)$$);
SELECT regress_state($$SELECT * FROM shard_orphans('orphans_srv', '')$$);
SELECT regress_state($$SELECT * FROM shard_orphans('no_such_server')$$);

-- An admin function: what shard_add needs (pg_read_server_files and
-- pg_write_server_files), not only USAGE; never for a tenant-scoped role.
CREATE ROLE regress_orphans_user;
GRANT USAGE ON FOREIGN SERVER orphans_srv TO regress_orphans_user;
CREATE USER MAPPING FOR regress_orphans_user SERVER orphans_srv
  OPTIONS (tenants 'b');
SET ROLE regress_orphans_user;
SELECT regress_state($$SELECT * FROM shard_orphans('orphans_srv')$$);
RESET ROLE;
GRANT EXECUTE ON FUNCTION shard_orphans(name, text) TO regress_orphans_user;
SET ROLE regress_orphans_user;
SELECT regress_state($$SELECT * FROM shard_orphans('orphans_srv')$$);
RESET ROLE;
GRANT pg_write_server_files TO regress_orphans_user;
SET ROLE regress_orphans_user;
SELECT regress_state($$SELECT * FROM shard_orphans('orphans_srv')$$);
RESET ROLE;
GRANT pg_read_server_files TO regress_orphans_user;
SET ROLE regress_orphans_user;
SELECT count(*) FROM shard_orphans('orphans_srv');
RESET ROLE;

DROP USER MAPPING FOR regress_orphans_user SERVER orphans_srv;
DROP OWNED BY regress_orphans_user;
DROP ROLE regress_orphans_user;
DROP FUNCTION regress_state(text);
SET client_min_messages = warning;
DROP SERVER orphans_srv CASCADE;
RESET client_min_messages;
