--
-- ORDER BY ... LIMIT pushed into the shards (order.c): a routed scan's
-- shard runs ORDER BY, OFFSET and LIMIT itself; a fan-out's shards each
-- return their first OFFSET + LIMIT rows and the scan sorts them.  Every
-- query is checked against native tables holding the same rows, in
-- order.  See test/fixtures/ordering.sh for the data.
--
\! bash test/fixtures/ordering.sh
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
RESET client_min_messages;
CREATE SERVER ordering_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/ordering/directory.db');
CREATE FOREIGN TABLE orders (tenant_id text COLLATE "C", order_id bigint,
  status text COLLATE "C", amount bigint, created_at timestamp, day date,
  note text COLLATE "en-x-icu")
  SERVER ordering_srv;
CREATE FOREIGN TABLE times (tenant_id text COLLATE "C", id int,
  ts timestamp, d date) SERVER ordering_srv;
CREATE FOREIGN TABLE times_tz (tenant_id text COLLATE "C", id int,
  ts timestamptz, d date) SERVER ordering_srv OPTIONS (table 'times');
CREATE TABLE orders_native (tenant_id text COLLATE "C", order_id bigint,
  status text COLLATE "C", amount bigint, created_at timestamp, day date,
  note text COLLATE "en-x-icu");
CREATE TABLE times_native (tenant_id text COLLATE "C", id int,
  ts timestamp, d date);
\i /tmp/ssfdw_regress/ordering/rows.sql
CREATE VIEW times_tz_native AS
  SELECT tenant_id, id, ts AT TIME ZONE 'UTC' AS ts, d FROM times_native;

-- Run q (with {T} for the table and {O} for orders, each the foreign
-- table or its native twin) on both and say whether the rows, in order,
-- are the same; return the foreign rows.
CREATE FUNCTION regress_same(q text, t text DEFAULT 'orders',
                             OUT rows text, OUT same boolean)
LANGUAGE plpgsql AS $$
DECLARE
  n text;
BEGIN
  EXECUTE format('SELECT string_agg(s::text, '' '') FROM (%s) s',
                 replace(replace(q, '{T}', t), '{O}', 'orders')) INTO rows;
  EXECUTE format('SELECT string_agg(s::text, '' '') FROM (%s) s',
                 replace(replace(q, '{T}', t || '_native'), '{O}',
                         'orders_native')) INTO n;
  same := rows IS NOT DISTINCT FROM n;
END$$;

\i test/regress_explain.sql
-- The plan's pushdown lines only.
CREATE FUNCTION regress_pushed(q text) RETURNS SETOF text
LANGUAGE sql AS $$
  SELECT regress_explain_lines('VERBOSE, COSTS OFF',
    '(Pushdown|Shard Order|Rows Per Shard|Time Key|Sort Key|^ *Limit|^ *Sort|SQLite query)', q)
$$;

-- EXPLAIN ANALYZE: the rows each shard returned, the shards not bounded.
CREATE FUNCTION regress_analyzed(q text) RETURNS SETOF text
LANGUAGE sql AS $$
  SELECT regress_explain_lines('ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF',
    '(Shard Rows|Unbounded|Rows Per Shard)', q)
$$;

SET TimeZone = 'UTC';

-- ===================================================================
-- Routed: the tenant's shard sorts and limits; its rows pass through
-- ===================================================================
EXPLAIN (VERBOSE, COSTS OFF)
SELECT * FROM orders WHERE tenant_id = 'ta' ORDER BY order_id DESC LIMIT 5;
SELECT * FROM regress_same($$SELECT order_id, status FROM {T}
  WHERE tenant_id = 'ta' ORDER BY order_id DESC LIMIT 5$$);
EXPLAIN (VERBOSE, COSTS OFF)
SELECT order_id FROM orders WHERE tenant_id = 'ta'
  ORDER BY status, amount DESC NULLS LAST, order_id LIMIT 4 OFFSET 3;
SELECT * FROM regress_same($$SELECT order_id, status, amount FROM {T}
  WHERE tenant_id = 'ta'
  ORDER BY status, amount DESC NULLS LAST, order_id LIMIT 4 OFFSET 3$$);
-- without LIMIT, the routed path is ordered: no Sort above the scan
EXPLAIN (VERBOSE, COSTS OFF)
SELECT order_id FROM orders WHERE tenant_id = 'tb' ORDER BY amount, order_id;
SELECT * FROM regress_same($$SELECT order_id, amount FROM {T}
  WHERE tenant_id = 'tb' ORDER BY amount, order_id$$);

-- ===================================================================
-- Fan-out: each shard's first OFFSET + LIMIT rows, sorted by the scan
-- ===================================================================
EXPLAIN (VERBOSE, COSTS OFF)
SELECT * FROM orders ORDER BY status NULLS FIRST, order_id DESC LIMIT 6 OFFSET 2;
SELECT * FROM regress_same($$SELECT tenant_id, order_id, status FROM {T}
  ORDER BY status NULLS FIRST, order_id DESC LIMIT 6 OFFSET 2$$);
SELECT * FROM regress_same($$SELECT tenant_id, order_id, amount FROM {T}
  ORDER BY amount DESC, tenant_id, order_id LIMIT 10$$);
SELECT * FROM regress_same($$SELECT tenant_id, order_id FROM {T}
  WHERE amount > 20 ORDER BY tenant_id DESC, order_id LIMIT 7$$);
SELECT * FROM regress_same($$SELECT tenant_id, order_id FROM {T}
  WHERE tenant_id IN ('ta', 'tb') ORDER BY order_id, tenant_id LIMIT 5$$);
-- LIMIT without ORDER BY: each shard stops at the limit; rows are counted
SELECT * FROM regress_pushed('SELECT * FROM orders LIMIT 3');
SELECT count(*) FROM (SELECT * FROM orders LIMIT 3) s;
SELECT count(*) FROM (SELECT * FROM orders LIMIT 100 OFFSET 55) s;
-- LIMIT 0, OFFSET past the end, LIMIT ALL, a parameter
SELECT * FROM regress_same($$SELECT order_id FROM {T} ORDER BY order_id LIMIT 0$$);
SELECT * FROM regress_same($$SELECT order_id FROM {T}
  ORDER BY order_id LIMIT 5 OFFSET 1000$$);
SELECT * FROM regress_same($$SELECT tenant_id, order_id FROM {T}
  WHERE order_id > 25 ORDER BY order_id, tenant_id LIMIT ALL$$);
PREPARE top_ta(text, int, int) AS SELECT order_id, amount FROM orders
  WHERE tenant_id = $1 ORDER BY amount NULLS FIRST, order_id LIMIT $2 OFFSET $3;
SELECT * FROM regress_pushed('EXECUTE top_ta(''ta'', 3, 1)');
EXECUTE top_ta('ta', 3, 1);
SELECT order_id, amount FROM orders_native
  WHERE tenant_id = 'ta' ORDER BY amount NULLS FIRST, order_id LIMIT 3 OFFSET 1;
SELECT * FROM regress_same($$SELECT order_id FROM {T}
  ORDER BY order_id LIMIT -1$$);

-- ===================================================================
-- Dates and times: canonical text in SQLite's order, other forms checked
-- ===================================================================
EXPLAIN (VERBOSE, COSTS OFF)
SELECT * FROM orders ORDER BY created_at DESC, order_id LIMIT 3;
SELECT * FROM regress_same($$SELECT tenant_id, order_id, created_at FROM {T}
  ORDER BY created_at DESC, tenant_id, order_id LIMIT 7$$);
SELECT * FROM regress_same($$SELECT tenant_id, order_id, created_at FROM {T}
  ORDER BY created_at NULLS FIRST, tenant_id, order_id LIMIT 7$$);
SELECT * FROM regress_same($$SELECT tenant_id, order_id, day FROM {T}
  WHERE tenant_id = 'tb' ORDER BY day DESC, order_id LIMIT 5 OFFSET 2$$);
-- every stored form, as the first key in both directions
SELECT * FROM regress_same($$SELECT id, ts FROM {T}
  ORDER BY ts DESC, id LIMIT 4$$, 'times');
-- nearly the largest offset: 16's 09:01 at -14:59 is 17's 00:00 the next
-- day, 15 hours after 17's text
SELECT * FROM regress_same($$SELECT id, ts FROM {T}
  WHERE tenant_id = 'tb' AND id > 15 ORDER BY ts DESC, id LIMIT 1$$, 'times');
SELECT * FROM regress_same($$SELECT id, ts FROM {T}
  ORDER BY ts, id LIMIT 4$$, 'times');
SELECT * FROM regress_same($$SELECT id, ts FROM {T}
  ORDER BY ts DESC NULLS LAST, id LIMIT 20$$, 'times');
SELECT * FROM regress_same($$SELECT id, ts FROM {T}
  WHERE tenant_id = 'ta' ORDER BY ts NULLS FIRST, id LIMIT 3 OFFSET 1$$, 'times');
SELECT * FROM regress_same($$SELECT id, d FROM {T}
  ORDER BY d DESC, id LIMIT 3$$, 'times');
SELECT * FROM regress_same($$SELECT id, d FROM {T}
  ORDER BY d, id LIMIT 5$$, 'times');
SELECT * FROM regress_same($$SELECT id, ts FROM {T}
  ORDER BY ts DESC, id LIMIT 3$$, 'times_tz');
SET TimeZone = 'America/New_York';
SELECT * FROM regress_same($$SELECT id, ts FROM {T}
  ORDER BY ts, id LIMIT 6$$, 'times_tz');
SET TimeZone = 'UTC';
-- a time key after another key is sorted by PostgreSQL, the keys before
-- it by the shards, with ties (sql/tiesort.sql)
SELECT * FROM regress_pushed('SELECT * FROM times ORDER BY tenant_id, ts LIMIT 3');

-- ... and over a join the shards run, a time column of any of its tables,
-- NULL-extended ones included: every stored form, routed and fanned out
EXPLAIN (VERBOSE, COSTS OFF)
SELECT t.id, t.ts, o.status FROM times t
  JOIN orders o ON o.tenant_id = t.tenant_id AND o.order_id = t.id
  ORDER BY t.ts DESC, t.id LIMIT 4;
SELECT * FROM regress_same($$SELECT t.id, t.ts, o.status FROM {T} t
  JOIN {O} o ON o.tenant_id = t.tenant_id AND o.order_id = t.id
  ORDER BY t.ts DESC, t.id LIMIT 4$$, 'times');
SELECT * FROM regress_same($$SELECT t.id, t.ts, o.amount FROM {T} t
  JOIN {O} o ON o.tenant_id = t.tenant_id AND o.order_id = t.id
  ORDER BY t.ts, t.id LIMIT 5$$, 'times');
SELECT * FROM regress_same($$SELECT t.id, t.ts, o.order_id FROM {T} t
  JOIN {O} o ON o.tenant_id = t.tenant_id AND o.order_id = t.id
  ORDER BY t.ts DESC NULLS LAST, t.id LIMIT 20$$, 'times');
SELECT * FROM regress_same($$SELECT t.id, t.ts, o.order_id FROM {T} t
  JOIN {O} o ON o.tenant_id = t.tenant_id AND o.order_id = t.id
  ORDER BY t.ts NULLS FIRST, t.id LIMIT 20$$, 'times');
SELECT * FROM regress_same($$SELECT t.id, t.ts FROM {T} t
  JOIN {O} o ON o.tenant_id = t.tenant_id AND o.order_id = t.id
  WHERE t.tenant_id = 'tb' AND t.id > 15 ORDER BY t.ts DESC, t.id LIMIT 1$$,
  'times');
SELECT * FROM regress_same($$SELECT t.id, t.ts, o.note FROM {T} t
  JOIN {O} o ON o.tenant_id = t.tenant_id AND o.order_id = t.id
  WHERE t.tenant_id = 'ta' ORDER BY t.ts NULLS FIRST, t.id LIMIT 3 OFFSET 1$$,
  'times');
SELECT * FROM regress_same($$SELECT t.id, t.d, o.day FROM {T} t
  JOIN {O} o ON o.tenant_id = t.tenant_id AND o.order_id = t.id
  ORDER BY t.d DESC, t.id LIMIT 3$$, 'times');
SELECT * FROM regress_same($$SELECT t.id, t.d FROM {T} t
  JOIN {O} o ON o.tenant_id = t.tenant_id AND o.order_id = t.id
  ORDER BY t.d, t.id LIMIT 5$$, 'times');
SET TimeZone = 'America/New_York';
SELECT * FROM regress_same($$SELECT t.id, t.ts, o.status FROM {T} t
  JOIN {O} o ON o.tenant_id = t.tenant_id AND o.order_id = t.id
  ORDER BY t.ts, t.id LIMIT 6$$, 'times_tz');
SELECT * FROM regress_same($$SELECT t.id, t.ts FROM {T} t
  JOIN {O} o ON o.tenant_id = t.tenant_id AND o.order_id = t.id
  ORDER BY t.ts DESC, t.id LIMIT 3$$, 'times_tz');
SET TimeZone = 'UTC';
-- the key of the NULL-extended side of a left join, and the other table's
-- time column (ties: only the times are compared)
SELECT * FROM regress_same($$SELECT o.tenant_id, o.order_id, t.ts FROM {O} o
  LEFT JOIN {T} t ON t.tenant_id = o.tenant_id AND t.id = o.order_id
  ORDER BY t.ts DESC NULLS LAST, o.tenant_id, o.order_id LIMIT 6$$, 'times');
SELECT * FROM regress_same($$SELECT o.tenant_id, o.order_id, t.ts FROM {O} o
  LEFT JOIN {T} t ON t.tenant_id = o.tenant_id AND t.id = o.order_id
  ORDER BY t.ts NULLS FIRST, o.tenant_id, o.order_id LIMIT 6$$, 'times');
SELECT * FROM regress_same($$SELECT o.created_at FROM {O} o
  JOIN {T} t ON t.tenant_id = o.tenant_id AND t.id = o.order_id
  ORDER BY o.created_at DESC LIMIT 10$$, 'times');
SELECT * FROM regress_same($$SELECT o.created_at, o.day FROM {O} o
  LEFT JOIN {T} t ON t.tenant_id = o.tenant_id AND t.id = o.order_id
  WHERE o.tenant_id = 'ta' ORDER BY o.created_at NULLS FIRST LIMIT 9$$,
  'times');
EXPLAIN (VERBOSE, COSTS OFF)
SELECT o.order_id, t.ts FROM orders o
  LEFT JOIN times t ON t.tenant_id = o.tenant_id AND t.id = o.order_id
  WHERE o.tenant_id = 'ta' ORDER BY t.ts NULLS FIRST, o.order_id LIMIT 2;
-- a time key after another key is still sorted by PostgreSQL
SELECT * FROM regress_pushed($$SELECT t.id FROM times t
  JOIN orders o ON o.tenant_id = t.tenant_id AND o.order_id = t.id
  ORDER BY t.id, t.ts LIMIT 3$$);

-- A sorted, limited fan-out reads its shards in the backend while each
-- answers quickly (handing a shard of a few indexed rows to a thread and
-- back costs more than reading it): at least the first, as EXPLAIN ANALYZE
-- counts them; beyond 1,000 rows a shard, the threads read them all
\i test/regress_scan_node.sql
CREATE FUNCTION regress_backend_reads(q text) RETURNS int
LANGUAGE sql AS $$
  SELECT coalesce((regress_scan_node(q) ->> 'Shards Read In Backend')::int, 0)
$$;
SELECT regress_backend_reads('SELECT * FROM times ORDER BY ts DESC, id LIMIT 3') >= 1 AS quick_in_backend,
       regress_backend_reads('SELECT * FROM orders ORDER BY order_id LIMIT 5') >= 1 AS quick_by_id,
       regress_backend_reads('SELECT * FROM orders ORDER BY order_id LIMIT 1001') AS beyond_1000,
       regress_backend_reads('SELECT * FROM orders WHERE tenant_id = ''ta'' ORDER BY order_id LIMIT 5') AS routed;
-- a shard slower than sqlite_shard_fdw.quick_shard_ms (a hidden setting;
-- 0: every shard) sends the rest to the threads: only the first is read
-- in the backend, and the answer is the same
SET sqlite_shard_fdw.quick_shard_ms = 0;
SELECT regress_backend_reads('SELECT * FROM times ORDER BY ts DESC, id LIMIT 3') AS first_only;
SELECT * FROM regress_same($$SELECT id, ts FROM {T}
  ORDER BY ts DESC, id LIMIT 4$$, 'times');
SELECT * FROM regress_same($$SELECT tenant_id, order_id, created_at FROM {T}
  ORDER BY created_at NULLS FIRST, tenant_id, order_id LIMIT 7$$);
RESET sqlite_shard_fdw.quick_shard_ms;

-- ===================================================================
-- Keyset pagination: a row comparison runs in the shards
-- ===================================================================
EXPLAIN (VERBOSE, COSTS OFF)
SELECT tenant_id, order_id FROM orders WHERE (amount, order_id) < (40, 9)
  ORDER BY amount DESC, order_id DESC LIMIT 4;
SELECT * FROM regress_same($$SELECT tenant_id, order_id, amount FROM {T}
  WHERE (amount, order_id) < (40, 9)
  ORDER BY amount DESC, order_id DESC, tenant_id LIMIT 4$$);
SELECT * FROM regress_same($$SELECT tenant_id, order_id, amount FROM {T}
  WHERE tenant_id = 'ta' AND (amount, order_id) >= (40, 9)
  ORDER BY amount, order_id LIMIT 4$$);
SELECT * FROM regress_same($$SELECT tenant_id, order_id FROM {T}
  WHERE (created_at, order_id) <= ('2024-03-04 10:00', 12)
  ORDER BY created_at DESC, order_id DESC, tenant_id LIMIT 5$$);
SELECT * FROM regress_same($$SELECT tenant_id, order_id FROM {T}
  WHERE (status, order_id) > ('paid', 3)
  ORDER BY status, order_id, tenant_id LIMIT 5$$);

-- ===================================================================
-- Not pushed: PostgreSQL sorts and limits, with the same answer
-- ===================================================================
-- a collation SQLite does not order by
SELECT * FROM regress_pushed('SELECT * FROM orders ORDER BY note LIMIT 3');
SELECT * FROM regress_same($$SELECT note FROM {T} ORDER BY note, tenant_id, order_id LIMIT 3$$);
-- an expression, a condition PostgreSQL evaluates, a computed output
SELECT * FROM regress_pushed('SELECT * FROM orders ORDER BY amount + 1 LIMIT 3');
SELECT * FROM regress_pushed('SELECT * FROM orders WHERE note ILIKE ''N1%'' ORDER BY order_id LIMIT 3');
SELECT * FROM regress_pushed('SELECT order_id, 100 / amount FROM orders ORDER BY order_id LIMIT 3');
SELECT order_id, 100 / amount FROM orders ORDER BY order_id, tenant_id LIMIT 3;
-- WITH TIES, FOR UPDATE, a join, an aggregate
SELECT * FROM regress_pushed('SELECT * FROM orders ORDER BY amount FETCH FIRST 2 ROWS WITH TIES');
SELECT * FROM regress_same($$SELECT * FROM (SELECT order_id FROM {T}
  ORDER BY amount FETCH FIRST 2 ROWS WITH TIES) w ORDER BY 1$$);
-- OFFSET alone
SELECT * FROM regress_pushed('SELECT * FROM orders ORDER BY order_id OFFSET 50');
-- a shard that declares status INTEGER and amount TEXT (o3, tenant td)
-- returns all its rows, unsorted, and the scan sorts them
SELECT * FROM regress_pushed($$SELECT * FROM orders WHERE tenant_id = 'td' ORDER BY status, order_id LIMIT 2$$);
SELECT * FROM regress_same($$SELECT order_id, status FROM {T}
  WHERE tenant_id = 'td' ORDER BY status, order_id LIMIT 2$$);
SELECT * FROM regress_analyzed($$SELECT * FROM orders
  WHERE tenant_id IN ('td', 'tb') ORDER BY status, order_id LIMIT 2$$);
SELECT * FROM regress_same($$SELECT order_id, amount FROM {T}
  WHERE tenant_id = 'td' ORDER BY amount DESC, order_id LIMIT 3$$);
SELECT * FROM regress_same($$SELECT tenant_id, order_id, status FROM {T}
  ORDER BY status DESC, tenant_id, order_id LIMIT 4$$);

-- ===================================================================
-- A tenant-scoped login sees only its tenant through a pushed order
-- ===================================================================
CREATE ROLE regress_order_tb;
GRANT SELECT ON orders, times TO regress_order_tb;
CREATE USER MAPPING FOR regress_order_tb SERVER ordering_srv
  OPTIONS (tenants 'tb');
SET ROLE regress_order_tb;
SELECT DISTINCT tenant_id FROM (SELECT * FROM orders
  ORDER BY status, order_id LIMIT 50) s;
SELECT tenant_id, order_id FROM orders ORDER BY order_id DESC LIMIT 3;
SELECT DISTINCT tenant_id FROM (SELECT * FROM orders
  ORDER BY created_at DESC LIMIT 50) s;
SELECT DISTINCT tenant_id FROM (SELECT * FROM times ORDER BY ts LIMIT 50) s;
SELECT count(*) FROM (SELECT * FROM orders WHERE tenant_id = 'ta'
  ORDER BY order_id LIMIT 5) s;
RESET ROLE;
DROP USER MAPPING FOR regress_order_tb SERVER ordering_srv;
DROP OWNED BY regress_order_tb;
DROP ROLE regress_order_tb;

DROP SERVER ordering_srv CASCADE;
DROP VIEW times_tz_native;
DROP TABLE orders_native, times_native;
DROP FUNCTION regress_same(text, text), regress_pushed(text),
  regress_analyzed(text), regress_explain_lines(text, text, text),
  regress_backend_reads(text),
  regress_scan_node(text);
