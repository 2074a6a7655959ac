--
-- ORDER BY whose first keys the shards sort and whose last ones they
-- cannot (order.c, shard_order_prefix_path): each shard returns its first
-- OFFSET + LIMIT rows by the prefix plus every row tied with the last on
-- the first key, the scan merges them, PostgreSQL finishes the sort
-- (Incremental Sort) and applies the limit.  Every query is checked
-- against a native table holding the same rows, in order.  See
-- test/fixtures/tiesort.sh for the data.
--
\! bash test/fixtures/tiesort.sh
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
RESET client_min_messages;
CREATE SERVER tiesort_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/tiesort/directory.db');
-- text under the database's collation (not "C"): the shards cannot sort it
CREATE FOREIGN TABLE orders (tenant_id text, order_id bigint, amount bigint,
  created_at timestamp, note text) SERVER tiesort_srv;
CREATE FOREIGN TABLE orders_tz (tenant_id text, order_id bigint,
  amount bigint, created_at timestamptz, note text)
  SERVER tiesort_srv OPTIONS (table 'orders');
CREATE TABLE orders_native (tenant_id text, order_id bigint, amount bigint,
  created_at timestamp, note text);
\i /tmp/ssfdw_regress/tiesort/rows.sql
CREATE VIEW orders_tz_native AS
  SELECT tenant_id, order_id, amount, created_at AT TIME ZONE 'UTC' AS created_at,
         note FROM orders_native;
SET TimeZone = 'UTC';

-- Run q (with {T} for the table, foreign or its native twin) on both and
-- say whether the rows, in order, are the same; return the foreign rows.
CREATE FUNCTION regress_same(q text, t text DEFAULT 'orders',
                             OUT rows text, OUT same boolean)
LANGUAGE plpgsql AS $$
DECLARE
  n text;
BEGIN
  EXECUTE format('SELECT string_agg(s::text, '' '') FROM (%s) s',
                 replace(q, '{T}', t)) INTO rows;
  EXECUTE format('SELECT string_agg(s::text, '' '') FROM (%s) s',
                 replace(q, '{T}', t || '_native')) INTO n;
  same := rows IS NOT DISTINCT FROM n;
END$$;

\i test/regress_explain.sql
-- The plan's nodes and pushdown lines only.
CREATE FUNCTION regress_pushed(q text) RETURNS SETOF text
LANGUAGE sql AS $$
  SELECT regress_explain_lines('VERBOSE, COSTS OFF',
    '(Pushdown|Shard Order|Rows Per Shard|Time Key|Sort Key|Presorted Key|^ *Limit|Sort$|Foreign Scan)', q)
$$;

-- EXPLAIN ANALYZE: the rows each shard returned, the shards not bounded.
CREATE FUNCTION regress_analyzed(q text) RETURNS SETOF text
LANGUAGE sql AS $$
  SELECT regress_explain_lines('ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF',
    '(Shard Rows|Unbounded|Rows Per Shard|Incremental Sort|Presorted Key|^ *Limit)', q)
$$;

-- ===================================================================
-- The BI shape: a time first, tie-breaking keys the shards cannot sort
-- ===================================================================
EXPLAIN (VERBOSE, COSTS OFF)
SELECT * FROM orders ORDER BY created_at DESC, tenant_id, order_id LIMIT 10;
SELECT * FROM regress_same($$SELECT * FROM {T}
  ORDER BY created_at DESC, tenant_id, order_id LIMIT 10$$);
-- each shard returns its ties with the last of its first rows: more than
-- the bound where the limit falls inside a group of equal times
SELECT * FROM regress_analyzed($$SELECT * FROM orders
  ORDER BY created_at DESC, tenant_id, order_id LIMIT 10$$);
-- an integer first key: its shard order, with ties; the shard that
-- declares amount TEXT returns all its rows (Unbounded Shards)
EXPLAIN (VERBOSE, COSTS OFF)
SELECT tenant_id, order_id FROM orders
  ORDER BY amount DESC NULLS LAST, note, tenant_id, order_id LIMIT 6;
SELECT * FROM regress_analyzed($$SELECT tenant_id, order_id FROM orders
  ORDER BY amount DESC NULLS LAST, note, tenant_id, order_id LIMIT 6$$);

-- ===================================================================
-- The same rows as PostgreSQL's, ties at the limit, NULLs, directions
-- ===================================================================
-- NULLs first (DESC), last (ASC), and the other way round
SELECT * FROM regress_same($$SELECT tenant_id, order_id, created_at FROM {T}
  ORDER BY created_at DESC, tenant_id, order_id LIMIT 3$$);
SELECT * FROM regress_same($$SELECT tenant_id, order_id, created_at FROM {T}
  ORDER BY created_at DESC NULLS LAST, tenant_id DESC, order_id LIMIT 12$$);
SELECT * FROM regress_same($$SELECT tenant_id, order_id, created_at FROM {T}
  ORDER BY created_at, tenant_id, order_id DESC LIMIT 12$$);
SELECT * FROM regress_same($$SELECT tenant_id, order_id, created_at FROM {T}
  ORDER BY created_at NULLS FIRST, tenant_id, order_id LIMIT 20$$);
-- the limit inside the group of NULLs, and past it
SELECT * FROM regress_same($$SELECT tenant_id, order_id, created_at FROM {T}
  ORDER BY created_at DESC, note, tenant_id, order_id LIMIT 5 OFFSET 7$$);
SELECT * FROM regress_same($$SELECT tenant_id, order_id, created_at FROM {T}
  ORDER BY created_at DESC, note, tenant_id, order_id LIMIT 5 OFFSET 16$$);
-- LIMIT with OFFSET, LIMIT 0, LIMIT ALL, LIMIT NULL, past the end
SELECT * FROM regress_same($$SELECT tenant_id, order_id FROM {T}
  ORDER BY created_at, note DESC, tenant_id, order_id LIMIT 4 OFFSET 30$$);
SELECT * FROM regress_same($$SELECT order_id FROM {T}
  ORDER BY created_at, tenant_id, order_id LIMIT 0$$);
SELECT * FROM regress_same($$SELECT tenant_id, order_id FROM {T}
  ORDER BY created_at, tenant_id, order_id LIMIT ALL OFFSET 120$$);
SELECT * FROM regress_same($$SELECT tenant_id, order_id FROM {T}
  ORDER BY created_at, tenant_id, order_id LIMIT NULL OFFSET 125$$);
SELECT * FROM regress_same($$SELECT tenant_id, order_id FROM {T}
  ORDER BY created_at DESC, tenant_id, order_id LIMIT 5 OFFSET 500$$);
-- an integer first key, both directions, NULLs either side
SELECT * FROM regress_same($$SELECT tenant_id, order_id, amount FROM {T}
  ORDER BY amount, note NULLS FIRST, tenant_id, order_id LIMIT 9$$);
SELECT * FROM regress_same($$SELECT tenant_id, order_id, amount FROM {T}
  ORDER BY amount DESC, tenant_id, order_id LIMIT 25$$);
SELECT * FROM regress_same($$SELECT tenant_id, order_id, amount FROM {T}
  ORDER BY amount NULLS FIRST, tenant_id DESC, order_id LIMIT 30 OFFSET 2$$);
-- two keys the shards sort, then one they cannot: ties on the first key
SELECT * FROM regress_pushed($$SELECT * FROM orders
  ORDER BY amount, order_id, note LIMIT 5$$);
SELECT * FROM regress_same($$SELECT tenant_id, order_id, amount, note FROM {T}
  ORDER BY amount, order_id, note, tenant_id LIMIT 5$$);
-- every stored time form, ties between forms (t2), as timestamptz too
SELECT * FROM regress_same($$SELECT tenant_id, order_id, created_at FROM {T}
  WHERE tenant_id = 'tc' ORDER BY created_at DESC, note, order_id LIMIT 8$$);
SELECT * FROM regress_same($$SELECT tenant_id, order_id, created_at FROM {T}
  WHERE tenant_id = 'tc' ORDER BY created_at, note DESC, order_id LIMIT 8$$);
SET TimeZone = 'America/New_York';
SELECT * FROM regress_same($$SELECT tenant_id, order_id, created_at FROM {T}
  ORDER BY created_at DESC, tenant_id, order_id LIMIT 15$$, 'orders_tz');
SELECT * FROM regress_same($$SELECT tenant_id, order_id, created_at FROM {T}
  ORDER BY created_at NULLS FIRST, note, tenant_id, order_id LIMIT 15$$,
  'orders_tz');
SET TimeZone = 'UTC';

-- ===================================================================
-- A tenant filter plus the order: one shard, its ties too
-- ===================================================================
EXPLAIN (VERBOSE, COSTS OFF)
SELECT order_id, created_at FROM orders WHERE tenant_id = 'ta'
  ORDER BY created_at DESC, note, order_id LIMIT 4;
SELECT * FROM regress_same($$SELECT order_id, created_at, note FROM {T}
  WHERE tenant_id = 'ta' ORDER BY created_at DESC, note, order_id LIMIT 4$$);
SELECT * FROM regress_same($$SELECT order_id, created_at FROM {T}
  WHERE tenant_id IN ('tb', 'td') AND amount > 0
  ORDER BY created_at, tenant_id, order_id LIMIT 6 OFFSET 1$$);
-- a parameter as LIMIT and OFFSET
PREPARE latest(text, int, int) AS SELECT order_id, created_at FROM orders
  WHERE tenant_id = $1 ORDER BY created_at DESC, note, order_id
  LIMIT $2 OFFSET $3;
SELECT * FROM regress_pushed('EXECUTE latest(''tc'', 3, 2)');
EXECUTE latest('tc', 3, 2);
SELECT order_id, created_at FROM orders_native
  WHERE tenant_id = 'tc' ORDER BY created_at DESC, note, order_id
  LIMIT 3 OFFSET 2;
DEALLOCATE latest;
-- a subquery run again for each outer row, another tenant each time
SELECT * FROM regress_pushed($$SELECT t, (SELECT order_id FROM orders o
  WHERE o.tenant_id = t ORDER BY created_at DESC, note, order_id LIMIT 1)
  FROM unnest(ARRAY['ta', 'tc', 'td', 'tz']) t$$);
SELECT * FROM regress_same($$SELECT t, (SELECT order_id FROM {T} o
  WHERE o.tenant_id = t ORDER BY created_at DESC, note, order_id LIMIT 1),
  (SELECT array_agg(order_id) FROM (SELECT order_id FROM {T} o
     WHERE o.tenant_id = t ORDER BY created_at, note DESC, order_id
     LIMIT 3 OFFSET 1) s)
  FROM unnest(ARRAY['ta', 'tc', 'td', 'tz']) t$$);

-- ===================================================================
-- Every limit up to past the table, both directions, against native
-- ===================================================================
CREATE FUNCTION regress_sweep(OUT queries int, OUT pushed int,
                              OUT different int)
LANGUAGE plpgsql AS $$
DECLARE
  k text;
  dir text;
  n int;
  q text;
  r record;
BEGIN
  queries := 0; pushed := 0; different := 0;
  FOREACH k IN ARRAY ARRAY['created_at', 'amount'] LOOP
    FOREACH dir IN ARRAY ARRAY['', ' DESC', ' NULLS FIRST', ' DESC NULLS LAST'] LOOP
      FOR n IN 1..40 LOOP
        q := format('SELECT tenant_id, order_id, %s FROM {T} ORDER BY %s%s, note, tenant_id, order_id LIMIT %s OFFSET %s',
                    k, k, dir, n, n % 4);
        SELECT * INTO r FROM regress_same(q);
        queries := queries + 1;
        IF NOT r.same THEN
          different := different + 1;
          RAISE NOTICE 'different: %', q;
        END IF;
        IF EXISTS (SELECT 1 FROM regress_pushed(replace(q, '{T}', 'orders')) p
                   WHERE p LIKE '%limited with ties%') THEN
          pushed := pushed + 1;
        END IF;
      END LOOP;
    END LOOP;
  END LOOP;
END$$;
SELECT * FROM regress_sweep();
-- a text first key under the "C" collation, then a numeric
CREATE FOREIGN TABLE orders_c (tenant_id text, order_id bigint,
  amount numeric, created_at timestamp, note text COLLATE "C")
  SERVER tiesort_srv OPTIONS (table 'orders');
CREATE VIEW orders_c_native AS
  SELECT tenant_id, order_id, amount::numeric AS amount, created_at,
         note COLLATE "C" AS note FROM orders_native;
SELECT * FROM regress_pushed($$SELECT * FROM orders_c
  ORDER BY note DESC, amount LIMIT 5$$);
SELECT count(*) AS queries,
       count(*) FILTER (WHERE NOT (regress_same(q, 'orders_c')).same) AS different
  FROM (SELECT format('SELECT tenant_id, order_id, note FROM {T} ORDER BY note%s, amount, tenant_id, order_id LIMIT %s',
                      dir, n) AS q
          FROM unnest(ARRAY['', ' DESC', ' NULLS FIRST', ' DESC NULLS LAST']) dir,
               generate_series(1, 30) n) s;

-- ===================================================================
-- Not this path
-- ===================================================================
-- an order the shards sort whole: the final path sorts and limits it
SELECT * FROM regress_pushed($$SELECT * FROM orders
  ORDER BY created_at DESC, order_id LIMIT 3$$);
-- a first key the shards cannot sort
SELECT * FROM regress_pushed($$SELECT * FROM orders
  ORDER BY note, created_at LIMIT 3$$);
-- an output that computes, a condition PostgreSQL evaluates, no LIMIT
SELECT * FROM regress_pushed($$SELECT order_id, 100 / amount FROM orders
  ORDER BY created_at DESC, tenant_id LIMIT 3$$);
SELECT * FROM regress_pushed($$SELECT * FROM orders WHERE note ILIKE 'a%'
  ORDER BY created_at DESC, tenant_id LIMIT 3$$);
SELECT * FROM regress_pushed($$SELECT * FROM orders
  ORDER BY created_at DESC, tenant_id$$);
SELECT * FROM regress_same($$SELECT order_id, created_at FROM {T}
  WHERE note ILIKE 'a%' ORDER BY created_at DESC, tenant_id, order_id LIMIT 3$$);

DROP SERVER tiesort_srv CASCADE;
DROP VIEW orders_tz_native, orders_c_native;
DROP TABLE orders_native;
DROP FUNCTION regress_same(text, text), regress_pushed(text),
  regress_analyzed(text), regress_explain_lines(text, text, text),
  regress_sweep();
