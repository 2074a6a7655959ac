--
-- Co-located joins: joins of foreign tables of one server on their tenant
-- columns run inside each shard (join.c), routed to one shard when the
-- tenant is given, on every shard otherwise; each table filtered there by
-- the statement's tenants, a user mapping's and the moves.  Every join is
-- compared with the same join of native tables holding the same rows.
-- See test/fixtures/joins.sh for the rows.
--
\! bash test/fixtures/joins.sh
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
RESET client_min_messages;
CREATE SERVER joins_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/joins/directory.db');
CREATE SERVER joins_other FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/joins_other/directory.db');
CREATE FOREIGN TABLE customers (tenant_id text, customer_id int,
  country text, name text) SERVER joins_srv;
CREATE FOREIGN TABLE orders (tenant_id text, order_id int, customer_id int,
  amount bigint, status text) SERVER joins_srv;
CREATE FOREIGN TABLE lines (tenant_id text, order_id int, sku text, qty int)
  SERVER joins_srv;
CREATE FOREIGN TABLE loose (tenant_id text, customer_id int, note text)
  SERVER joins_srv;
CREATE FOREIGN TABLE other_customers (tenant_id text, customer_id int,
  country text, name text) SERVER joins_other OPTIONS (table 'customers');
CREATE TABLE customers_native (tenant_id text, customer_id int,
  country text, name text);
CREATE TABLE orders_native (tenant_id text, order_id int, customer_id int,
  amount bigint, status text);
CREATE TABLE lines_native (tenant_id text, order_id int, sku text, qty int);
\copy (SELECT 1) TO '/dev/null'
\i /tmp/ssfdw_regress/joins/rows.sql

-- regress_same(q): the query over the foreign tables ({c}, {o}, {l}) and
-- over the native ones gives the same rows, counted as a multiset.
CREATE FUNCTION regress_same(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  f text := replace(replace(replace(q, '{c}', 'customers'), '{o}', 'orders'), '{l}', 'lines');
  n text := replace(replace(replace(q, '{c}', 'customers_native'), '{o}', 'orders_native'), '{l}', 'lines_native');
  diff bigint;
  total bigint;
BEGIN
  EXECUTE format('SELECT count(*) FROM ((%s EXCEPT ALL %s) UNION ALL (%s EXCEPT ALL %s)) d',
                 f, n, n, f) INTO diff;
  EXECUTE format('SELECT count(*) FROM (%s) x', f) INTO total;
  RETURN CASE WHEN diff = 0 THEN 'same ' || total || ' rows'
              ELSE diff || ' rows differ' END;
END $$;

-- regress_pushed(q): whether the foreign query's plan pushes a join.
CREATE FUNCTION regress_pushed(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  line text;
  joins int := 0;
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (VERBOSE, COSTS OFF) ' ||
      replace(replace(replace(q, '{c}', 'customers'), '{o}', 'orders'), '{l}', 'lines')
  LOOP
    IF line ~ 'Relations: ' THEN
      joins := joins + 1;
    END IF;
  END LOOP;
  RETURN CASE WHEN joins > 0 THEN 'pushed' ELSE 'not pushed' END;
END $$;

--
-- Inner joins, fan-out and routed
--
EXPLAIN (VERBOSE, COSTS OFF)
SELECT o.order_id, c.name FROM orders o
  JOIN customers c ON c.tenant_id = o.tenant_id AND c.customer_id = o.customer_id;
SELECT o.tenant_id, o.order_id, c.name FROM orders o
  JOIN customers c ON c.tenant_id = o.tenant_id AND c.customer_id = o.customer_id
  ORDER BY 1, 2;
SELECT regress_same($$SELECT o.tenant_id, o.order_id, c.name FROM {o} o
  JOIN {c} c ON c.tenant_id = o.tenant_id AND c.customer_id = o.customer_id$$);
EXPLAIN (VERBOSE, COSTS OFF)
SELECT o.order_id, c.name FROM orders o
  JOIN customers c ON c.tenant_id = o.tenant_id AND c.customer_id = o.customer_id
  WHERE o.tenant_id = 'acme' AND o.amount > 80;
SELECT regress_same($$SELECT o.order_id, c.name FROM {o} o
  JOIN {c} c ON c.tenant_id = o.tenant_id AND c.customer_id = o.customer_id
  WHERE o.tenant_id = 'acme' AND o.amount > 80$$);
-- USING, a parameter, a list of tenants
SELECT regress_same($$SELECT o.order_id, c.name FROM {o} o
  JOIN {c} c USING (tenant_id, customer_id) WHERE tenant_id = 'globex'$$);
PREPARE q(text) AS SELECT o.order_id, c.name FROM orders o
  JOIN customers c USING (tenant_id, customer_id) WHERE tenant_id = $1
  ORDER BY 1;
EXPLAIN (COSTS OFF) EXECUTE q('umbrella');
EXECUTE q('umbrella');
EXECUTE q('nobody');
DEALLOCATE q;
SELECT regress_same($$SELECT o.order_id, c.name FROM {o} o
  JOIN {c} c USING (tenant_id, customer_id)
  WHERE tenant_id IN ('acme', 'globex', 'nobody')$$);
-- three tables, and a condition of each
EXPLAIN (VERBOSE, COSTS OFF)
SELECT c.name, o.order_id, l.sku FROM customers c
  JOIN orders o ON o.tenant_id = c.tenant_id AND o.customer_id = c.customer_id
  JOIN lines l ON l.tenant_id = o.tenant_id AND l.order_id = o.order_id
  WHERE c.country <> 'de' AND l.qty >= 1;
SELECT regress_same($$SELECT c.name, o.order_id, l.sku FROM {c} c
  JOIN {o} o ON o.tenant_id = c.tenant_id AND o.customer_id = c.customer_id
  JOIN {l} l ON l.tenant_id = o.tenant_id AND l.order_id = o.order_id
  WHERE c.country <> 'de' AND l.qty >= 1$$);
-- a condition PostgreSQL evaluates on the joined rows
SELECT regress_pushed($$SELECT o.order_id FROM {o} o JOIN {c} c
  ON c.tenant_id = o.tenant_id AND c.customer_id = o.customer_id
  AND o.amount > c.customer_id * 100$$);
SELECT regress_same($$SELECT o.order_id FROM {o} o JOIN {c} c
  ON c.tenant_id = o.tenant_id AND c.customer_id = o.customer_id
  AND o.amount > c.customer_id * 100$$);

--
-- Outer joins: NULL-extended rows, tenants with rows on one side only
--
EXPLAIN (VERBOSE, COSTS OFF)
SELECT c.name, o.order_id FROM customers c
  LEFT JOIN orders o ON o.tenant_id = c.tenant_id AND o.customer_id = c.customer_id
  AND o.status = 'paid';
SELECT regress_same($$SELECT c.tenant_id, c.name, o.order_id FROM {c} c
  LEFT JOIN {o} o ON o.tenant_id = c.tenant_id AND o.customer_id = c.customer_id
  AND o.status = 'paid'$$);
SELECT regress_same($$SELECT c.tenant_id, c.name, o.order_id FROM {o} o
  RIGHT JOIN {c} c ON o.tenant_id = c.tenant_id AND o.customer_id = c.customer_id
  AND c.country = 'fr'$$);
EXPLAIN (VERBOSE, COSTS OFF)
SELECT c.name, o.order_id FROM customers c
  FULL JOIN orders o ON o.tenant_id = c.tenant_id AND o.customer_id = c.customer_id;
SELECT regress_same($$SELECT c.tenant_id, c.name, o.tenant_id, o.order_id
  FROM {c} c FULL JOIN {o} o
  ON o.tenant_id = c.tenant_id AND o.customer_id = c.customer_id$$);
SELECT regress_same($$SELECT c.tenant_id, c.name, o.tenant_id, o.order_id
  FROM {c} c FULL JOIN {o} o
  ON o.tenant_id = c.tenant_id AND o.customer_id = c.customer_id
  WHERE o.order_id IS NULL OR c.name IS NULL$$);
-- the preserved side's own condition in ON, a filter after the join
SELECT regress_same($$SELECT c.tenant_id, c.name, o.order_id FROM {c} c
  LEFT JOIN {o} o ON o.tenant_id = c.tenant_id AND o.customer_id = c.customer_id
  AND c.country = 'fr'$$);
SELECT regress_same($$SELECT c.tenant_id, c.name FROM {c} c
  LEFT JOIN {o} o ON o.tenant_id = c.tenant_id AND o.customer_id = c.customer_id
  WHERE o.order_id IS NULL$$);
-- routed outer joins: a tenant of the preserved side routes
EXPLAIN (VERBOSE, COSTS OFF)
SELECT c.name, o.order_id FROM customers c
  LEFT JOIN orders o ON o.tenant_id = c.tenant_id AND o.customer_id = c.customer_id
  WHERE c.tenant_id = 'initech';
SELECT regress_same($$SELECT c.name, o.order_id FROM {c} c
  LEFT JOIN {o} o ON o.tenant_id = c.tenant_id AND o.customer_id = c.customer_id
  WHERE c.tenant_id = 'initech'$$);
-- a tenant of the nullable side only: every shard, every customer kept
EXPLAIN (COSTS OFF)
SELECT c.name, o.order_id FROM customers c
  LEFT JOIN orders o ON o.tenant_id = c.tenant_id AND o.customer_id = c.customer_id
  AND o.tenant_id = 'acme';
SELECT regress_same($$SELECT c.tenant_id, c.name, o.order_id FROM {c} c
  LEFT JOIN {o} o ON o.tenant_id = c.tenant_id AND o.customer_id = c.customer_id
  AND o.tenant_id = 'acme'$$);
-- three tables, outer and inner
SELECT regress_same($$SELECT c.name, o.order_id, l.sku FROM {c} c
  LEFT JOIN {o} o ON o.tenant_id = c.tenant_id AND o.customer_id = c.customer_id
  LEFT JOIN {l} l ON l.tenant_id = o.tenant_id AND l.order_id = o.order_id$$);
SELECT regress_same($$SELECT c.name, o.order_id, l.sku FROM {o} o
  FULL JOIN {c} c ON o.tenant_id = c.tenant_id AND o.customer_id = c.customer_id
  FULL JOIN {l} l ON l.tenant_id = o.tenant_id AND l.order_id = o.order_id$$);
SELECT regress_same($$SELECT c.name, o.order_id, l.sku FROM {c} c
  LEFT JOIN ({o} o JOIN {l} l ON l.tenant_id = o.tenant_id AND l.order_id = o.order_id)
  ON o.tenant_id = c.tenant_id AND o.customer_id = c.customer_id$$);

--
-- Aggregates over a pushed join: partial per shard and merged, or whole
-- groups per shard when grouped by the tenant of a table every row holds
--
EXPLAIN (VERBOSE, COSTS OFF)
SELECT c.country, count(*), sum(o.amount) FROM orders o
  JOIN customers c ON c.tenant_id = o.tenant_id AND c.customer_id = o.customer_id
  GROUP BY 1;
SELECT c.country, count(*), sum(o.amount) FROM orders o
  JOIN customers c ON c.tenant_id = o.tenant_id AND c.customer_id = o.customer_id
  GROUP BY 1 ORDER BY 1;
SELECT regress_same($$SELECT c.country, count(*), sum(o.amount) FROM {o} o
  JOIN {c} c ON c.tenant_id = o.tenant_id AND c.customer_id = o.customer_id
  GROUP BY 1$$);
EXPLAIN (VERBOSE, COSTS OFF)
SELECT c.tenant_id, count(o.order_id), max(o.amount), min(c.name COLLATE "C")
  FROM customers c LEFT JOIN orders o
  ON o.tenant_id = c.tenant_id AND o.customer_id = c.customer_id
  GROUP BY 1;
SELECT regress_same($$SELECT c.tenant_id, count(o.order_id), max(o.amount),
  min(c.name COLLATE "C") FROM {c} c LEFT JOIN {o} o
  ON o.tenant_id = c.tenant_id AND o.customer_id = c.customer_id GROUP BY 1$$);
-- grouped by the nullable side's tenant: merged, its NULL group from every shard
EXPLAIN (COSTS OFF)
SELECT o.tenant_id, count(*) FROM customers c LEFT JOIN orders o
  ON o.tenant_id = c.tenant_id AND o.customer_id = c.customer_id GROUP BY 1;
SELECT regress_same($$SELECT o.tenant_id, count(*), sum(o.amount), avg(o.amount)
  FROM {c} c LEFT JOIN {o} o
  ON o.tenant_id = c.tenant_id AND o.customer_id = c.customer_id GROUP BY 1$$);
SELECT regress_same($$SELECT c.country, o.status, count(*), count(DISTINCT l.sku),
  sum(l.qty), avg(o.amount) FROM {c} c
  FULL JOIN {o} o ON o.tenant_id = c.tenant_id AND o.customer_id = c.customer_id
  LEFT JOIN {l} l ON l.tenant_id = o.tenant_id AND l.order_id = o.order_id
  GROUP BY 1, 2$$);
-- routed, and without GROUP BY
EXPLAIN (VERBOSE, COSTS OFF)
SELECT count(*), sum(o.amount) FROM orders o
  JOIN customers c USING (tenant_id, customer_id)
  WHERE tenant_id = 'acme' AND c.country = 'fr';
SELECT regress_same($$SELECT count(*), sum(o.amount) FROM {o} o
  JOIN {c} c USING (tenant_id, customer_id)
  WHERE tenant_id = 'acme' AND c.country = 'fr'$$);
SELECT regress_same($$SELECT count(*), sum(o.amount), min(o.order_id) FROM {o} o
  JOIN {c} c USING (tenant_id, customer_id)$$);
-- top-N over a join of one tenant: its groups are whole in its shard,
-- which sorts and limits them
EXPLAIN (COSTS OFF)
SELECT c.name, sum(o.amount) FROM orders o
  JOIN customers c USING (tenant_id, customer_id)
  WHERE tenant_id = 'acme' GROUP BY c.name ORDER BY 2 DESC LIMIT 2;
SELECT c.name, sum(o.amount) FROM orders o
  JOIN customers c USING (tenant_id, customer_id)
  WHERE tenant_id = 'acme' GROUP BY c.name ORDER BY 2 DESC LIMIT 2;
-- ... and over the fleet, grouped by the tenant: each shard's groups are
-- whole
EXPLAIN (COSTS OFF)
SELECT o.tenant_id, count(*), sum(o.amount) FROM orders o
  JOIN customers c USING (tenant_id, customer_id)
  GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 2;
SELECT regress_same($$SELECT * FROM (SELECT o.tenant_id, count(*), sum(o.amount)
  FROM {o} o JOIN {c} c USING (tenant_id, customer_id)
  GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 2) q$$);
SELECT regress_same($$SELECT * FROM (SELECT c.country, count(*) FROM {o} o
  JOIN {c} c USING (tenant_id, customer_id) WHERE o.tenant_id = 'acme'
  GROUP BY 1 ORDER BY 2 DESC, 1 NULLS FIRST LIMIT 1 OFFSET 1) q$$);

--
-- ORDER BY and LIMIT of a pushed join's rows: each shard sorts and limits,
-- the scan sorts what they return; one shard's rows pass through
--
EXPLAIN (VERBOSE, COSTS OFF)
SELECT o.order_id, c.name FROM orders o
  JOIN customers c USING (tenant_id, customer_id)
  WHERE tenant_id = 'acme' ORDER BY o.amount DESC LIMIT 2;
SELECT o.order_id, c.name FROM orders o
  JOIN customers c USING (tenant_id, customer_id)
  WHERE tenant_id = 'acme' ORDER BY o.amount DESC LIMIT 2;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT c.tenant_id, c.customer_id, o.order_id FROM customers c
  LEFT JOIN orders o ON o.tenant_id = c.tenant_id AND o.customer_id = c.customer_id
  ORDER BY o.order_id NULLS FIRST, c.customer_id DESC, c.tenant_id COLLATE "C"
  LIMIT 4 OFFSET 1;
SELECT c.tenant_id, c.customer_id, o.order_id FROM customers c
  LEFT JOIN orders o ON o.tenant_id = c.tenant_id AND o.customer_id = c.customer_id
  ORDER BY o.order_id NULLS FIRST, c.customer_id DESC, c.tenant_id COLLATE "C"
  LIMIT 4 OFFSET 1;
SELECT regress_same($$(SELECT c.tenant_id, c.customer_id, o.order_id FROM {c} c
  FULL JOIN {o} o ON o.tenant_id = c.tenant_id AND o.customer_id = c.customer_id
  ORDER BY o.amount DESC NULLS LAST, o.order_id, c.customer_id,
  c.tenant_id COLLATE "C" LIMIT 6)$$);
-- keys the query does not output, equal to another table's column: the
-- shards sort by either, and the scan's tuple carries the one they use
EXPLAIN (VERBOSE, COSTS OFF)
SELECT o.order_id FROM orders o
  JOIN customers c ON c.tenant_id = o.tenant_id AND c.customer_id = o.customer_id
  ORDER BY c.customer_id DESC, o.order_id, o.tenant_id COLLATE "C" LIMIT 3;
SELECT regress_same($$(SELECT o.order_id FROM {o} o
  JOIN {c} c ON c.tenant_id = o.tenant_id AND c.customer_id = o.customer_id
  ORDER BY c.customer_id DESC, o.order_id, o.tenant_id COLLATE "C" LIMIT 3)$$);
SELECT regress_same($$(SELECT o.order_id FROM {o} o
  JOIN {c} c ON c.tenant_id = o.tenant_id AND c.customer_id = o.customer_id
  WHERE o.tenant_id = 'acme' ORDER BY o.customer_id, o.order_id LIMIT 2)$$);
-- a key SQLite cannot order as PostgreSQL: sorted and limited by PostgreSQL
EXPLAIN (COSTS OFF)
SELECT o.order_id, c.name FROM orders o
  JOIN customers c USING (tenant_id, customer_id)
  ORDER BY c.name LIMIT 2;

--
-- Refusals: these joins stay in PostgreSQL, and are right
--
-- two servers
EXPLAIN (COSTS OFF)
SELECT c.name, k.name FROM customers c
  JOIN other_customers k USING (tenant_id, customer_id);
SELECT c.name, k.name FROM customers c
  JOIN other_customers k USING (tenant_id, customer_id);
-- no equality of the tenant columns
EXPLAIN (COSTS OFF)
SELECT o.order_id, c.name FROM orders o
  JOIN customers c ON c.customer_id = o.customer_id;
SELECT regress_same($$SELECT o.order_id, c.name FROM {o} o
  JOIN {c} c ON c.customer_id = o.customer_id$$);
-- the tenant equality under OR
SELECT regress_pushed($$SELECT o.order_id FROM {o} o JOIN {c} c
  ON (c.tenant_id = o.tenant_id OR c.name = 'x') AND c.customer_id = o.customer_id$$);
-- a condition of the nullable side SQLite cannot evaluate
SELECT regress_pushed($$SELECT c.name, o.order_id FROM {c} c
  LEFT JOIN {o} o ON o.tenant_id = c.tenant_id AND o.customer_id = c.customer_id
  AND o.status ILIKE 'PAID'$$);
-- a column that the first shard does not declare INTEGER
EXPLAIN (COSTS OFF)
SELECT c.name, x.note FROM customers c
  JOIN loose x ON x.tenant_id = c.tenant_id AND x.customer_id = c.customer_id;
SELECT c.name, x.note FROM customers c
  JOIN loose x ON x.tenant_id = c.tenant_id AND x.customer_id = c.customer_id
  ORDER BY 1, 2;
-- a shard that declares a join key otherwise than the first shard, or
-- lacks a joined table: an error naming it, not another answer
CREATE FOREIGN TABLE mixed (tenant_id text, customer_id int, v text)
  SERVER joins_srv;
CREATE FOREIGN TABLE half (tenant_id text, customer_id int, v text)
  SERVER joins_srv;
SELECT regress_pushed($$SELECT c.name, m.v FROM {c} c
  JOIN mixed m USING (tenant_id, customer_id)$$);
SELECT c.name, m.v FROM customers c JOIN mixed m USING (tenant_id, customer_id)
  WHERE tenant_id = 'acme';
SELECT c.name, m.v FROM customers c JOIN mixed m USING (tenant_id, customer_id);
SET sqlite_shard_fdw.join_pushdown = off;
SELECT c.name, m.v FROM customers c JOIN mixed m USING (tenant_id, customer_id)
  ORDER BY 1;
RESET sqlite_shard_fdw.join_pushdown;
SELECT c.name, h.v FROM customers c JOIN half h USING (tenant_id, customer_id);
-- their SQLSTATEs; routed to the shard that differs, the same error
\set VERBOSITY sqlstate
SELECT c.name, m.v FROM customers c JOIN mixed m USING (tenant_id, customer_id)
  WHERE tenant_id = 'globex';
SELECT c.name, h.v FROM customers c JOIN half h USING (tenant_id, customer_id);
\set VERBOSITY default
SELECT c.name, h.v FROM customers c JOIN half h USING (tenant_id, customer_id)
  WHERE tenant_id = 'acme';
-- switched off
SET sqlite_shard_fdw.join_pushdown = off;
SELECT regress_pushed($$SELECT o.order_id FROM {o} o JOIN {c} c
  USING (tenant_id, customer_id)$$);
RESET sqlite_shard_fdw.join_pushdown;

--
-- A scoped login sees no other tenant through any table of a join
--
CREATE ROLE regress_join_acme;
GRANT SELECT ON customers, orders, lines TO regress_join_acme;
CREATE USER MAPPING FOR regress_join_acme SERVER joins_srv
  OPTIONS (tenants 'acme');
SET ROLE regress_join_acme;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT c.tenant_id, c.name, o.tenant_id, o.order_id FROM customers c
  FULL JOIN orders o ON o.tenant_id = c.tenant_id AND o.customer_id = c.customer_id;
SELECT c.tenant_id, c.name, o.tenant_id, o.order_id FROM customers c
  FULL JOIN orders o ON o.tenant_id = c.tenant_id AND o.customer_id = c.customer_id
  ORDER BY 1, 2, 3, 4;
-- asking for another tenant, on either side, finds nothing of it
SELECT c.name, o.order_id FROM customers c
  LEFT JOIN orders o ON o.tenant_id = c.tenant_id AND o.customer_id = c.customer_id
  WHERE c.tenant_id = 'globex';
SELECT c.tenant_id, o.tenant_id, o.order_id FROM orders o
  RIGHT JOIN customers c ON o.tenant_id = c.tenant_id AND o.customer_id = c.customer_id
  AND o.tenant_id = 'globex' ORDER BY 1, 2, 3;
SELECT count(*), sum(l.qty) FROM lines l
  JOIN orders o USING (tenant_id, order_id) JOIN customers c USING (tenant_id);
SELECT c.tenant_id, o.tenant_id, count(*) FROM customers c
  FULL JOIN orders o ON o.tenant_id = c.tenant_id AND o.customer_id = c.customer_id
  GROUP BY 1, 2 ORDER BY 1, 2;
-- a hostile login: every other tenant's row, through every join form
SELECT count(*) FROM customers c FULL JOIN orders o
  ON o.tenant_id = c.tenant_id AND o.customer_id = c.customer_id
  WHERE c.tenant_id IS DISTINCT FROM 'acme' AND o.tenant_id IS DISTINCT FROM 'acme';
SELECT c.tenant_id, o.tenant_id, l.tenant_id FROM customers c
  FULL JOIN orders o ON o.tenant_id = c.tenant_id
  FULL JOIN lines l ON l.tenant_id = o.tenant_id AND l.order_id = o.order_id
  WHERE coalesce(c.tenant_id, o.tenant_id, l.tenant_id) <> 'acme';
SELECT o.tenant_id, l.sku FROM orders o
  RIGHT JOIN lines l ON l.tenant_id = o.tenant_id AND l.order_id = o.order_id
  WHERE l.tenant_id IN ('globex', 'hooli', 'umbrella');
SELECT regress_pushed($$SELECT c.tenant_id, o.tenant_id, l.tenant_id FROM {c} c
  FULL JOIN {o} o ON o.tenant_id = c.tenant_id
  FULL JOIN {l} l ON l.tenant_id = o.tenant_id AND l.order_id = o.order_id$$);
RESET ROLE;

-- The stale copy of a moving tenant is invisible through a join
SELECT c.name, o.order_id, o.amount FROM customers c
  JOIN orders o USING (tenant_id, customer_id) WHERE tenant_id = 'moved';
EXPLAIN (COSTS OFF)
SELECT c.tenant_id, c.country, o.amount FROM customers c
  LEFT JOIN orders o USING (tenant_id, customer_id) WHERE c.country = 'uk';
SELECT c.tenant_id, c.country, o.amount FROM customers c
  LEFT JOIN orders o USING (tenant_id, customer_id) WHERE c.country = 'uk';
SELECT c.tenant_id, c.country, o.amount FROM orders o
  FULL JOIN customers c ON c.tenant_id = o.tenant_id AND c.customer_id = o.customer_id
  WHERE o.amount > 1000 OR c.country IN ('uk', 'xx');

SET client_min_messages = warning;
DROP SERVER joins_srv, joins_other CASCADE;
RESET client_min_messages;
DROP ROLE regress_join_acme;
DROP TABLE customers_native, orders_native, lines_native;
DROP FUNCTION regress_same(text), regress_pushed(text);
