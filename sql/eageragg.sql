--
-- Eager aggregation: a foreign table's rows grouped in the shards before a
-- join that PostgreSQL runs (plan/eageragg.c), where that is exact.  Every
-- query runs with sqlite_shard_fdw.eager_aggregate off, on and always over
-- the foreign tables, and over native tables of the same rows; the answers
-- must all be the native one.  See test/fixtures/eageragg.sh for the rows.
--
\! bash test/fixtures/eageragg.sh
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
RESET client_min_messages;
CREATE SERVER eager_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/eageragg/directory.db');
CREATE FOREIGN TABLE orders (tenant_id text, order_id int, customer_id int,
  status text, amount int, price float8, note text) SERVER eager_srv;
CREATE FOREIGN TABLE customers (tenant_id text, customer_id int, name text,
  plan text) SERVER eager_srv;
CREATE TABLE orders_native (tenant_id text, order_id int, customer_id int,
  status text, amount int, price float8, note text);
CREATE TABLE customers_native (tenant_id text, customer_id int, name text,
  plan text);
\copy orders_native FROM '/tmp/ssfdw_regress/eageragg/orders.csv' WITH (FORMAT csv)
\copy customers_native FROM '/tmp/ssfdw_regress/eageragg/customers.csv' WITH (FORMAT csv)
-- a local dimension table, and one keyed by a numeric
CREATE TABLE plans (plan text, label text);
INSERT INTO plans VALUES ('free', 'Free'), ('pro', 'Paid'), ('ent', 'Paid');
CREATE TABLE bands (lo numeric, hi numeric, band text);
INSERT INTO bands VALUES (-100, 0, 'refund'), (0, 500, 'small'),
  (500, 1000, 'large');
ANALYZE orders, customers, orders_native, customers_native, plans, bands;

-- eager_same(q [, ordered]): q over the foreign tables ({o}, {c}) with the
-- setting off, on and always, each against q over the native tables; then
-- the native answer.  Rows compared as text, sorted unless ordered.
CREATE FUNCTION eager_same(q text, ordered boolean DEFAULT false)
RETURNS TABLE (mode text, same boolean, native text)
LANGUAGE plpgsql AS $$
DECLARE
  want text[];
  got text[];
  ord text := CASE WHEN ordered THEN '' ELSE 'ORDER BY r::text' END;
  m text;
  i int;
BEGIN
  EXECUTE format('SELECT coalesce(array_agg(r::text %s), ''{}'') FROM (%s) r', ord,
                 replace(replace(q, '{o}', 'orders_native'), '{c}', 'customers_native'))
    INTO want;
  FOREACH m IN ARRAY ARRAY['off', 'on', 'always'] LOOP
    PERFORM set_config('sqlite_shard_fdw.eager_aggregate', m, true);
    EXECUTE format('SELECT coalesce(array_agg(r::text %s), ''{}'') FROM (%s) r', ord,
                   replace(replace(q, '{o}', 'orders'), '{c}', 'customers'))
      INTO got;
    mode := m;
    same := got IS NOT DISTINCT FROM want;
    native := NULL;
    IF NOT same THEN
      RAISE NOTICE 'foreign (%): %', m, array_to_string(got, ' ', '<NULL>');
    END IF;
    RETURN NEXT;
  END LOOP;
  PERFORM set_config('sqlite_shard_fdw.eager_aggregate', 'on', true);
  mode := 'native';
  same := NULL;
  FOR i IN 1 .. coalesce(cardinality(want), 0) LOOP
    native := want[i];
    RETURN NEXT;
  END LOOP;
END
$$;

-- ===================================================================
-- Grouped early, by cost: Metabase's join on customer_id alone, which
-- matches other tenants' customers and cannot run in the shards
-- ===================================================================
EXPLAIN (VERBOSE, COSTS OFF)
SELECT c.plan, count(*), sum(o.amount) FROM orders o
LEFT JOIN customers c ON o.customer_id = c.customer_id
GROUP BY c.plan ORDER BY c.plan;
SELECT * FROM eager_same($$
SELECT c.plan, count(*), sum(o.amount) FROM {o} o
LEFT JOIN {c} c ON o.customer_id = c.customer_id
GROUP BY c.plan ORDER BY c.plan$$, true);
-- count(*) alone: the foreign table with the most rows is grouped
EXPLAIN (COSTS OFF)
SELECT c.plan, count(*) FROM orders o
LEFT JOIN customers c ON o.customer_id = c.customer_id GROUP BY c.plan;
SELECT * FROM eager_same($$
SELECT c.plan, count(*) FROM {o} o
LEFT JOIN {c} c ON o.customer_id = c.customer_id GROUP BY c.plan$$);
SELECT * FROM eager_same($$
SELECT count(*) FROM {c} c JOIN {o} o ON o.customer_id = c.customer_id
WHERE o.status = 'open'$$);
-- every combinable aggregate, FILTER, avg of integers and of floats
SELECT * FROM eager_same($$
SELECT c.plan, count(*), count(o.amount), sum(o.amount), min(o.amount),
  max(o.amount), avg(o.amount), avg(o.price), sum(o.price),
  min(o.status), max(o.note), count(*) FILTER (WHERE o.status = 'paid'),
  sum(o.amount) FILTER (WHERE o.note IS NULL)
FROM {o} o JOIN {c} c
  ON o.tenant_id = c.tenant_id AND o.customer_id = c.customer_id
GROUP BY c.plan$$);
-- the same join with USING, and the right join that keeps every order
SELECT * FROM eager_same($$
SELECT c.plan, count(*), sum(amount), avg(amount)
FROM {o} o JOIN {c} c USING (tenant_id, customer_id) GROUP BY c.plan$$);
SELECT * FROM eager_same($$
SELECT c.plan, count(*), sum(o.amount), count(c.name)
FROM {c} c RIGHT JOIN {o} o ON o.customer_id = c.customer_id
GROUP BY c.plan$$);

-- ===================================================================
-- Conditions: on the orders alone (inside the grouping), on the
-- customers, on both; HAVING, ORDER BY an aggregate, LIMIT
-- ===================================================================
EXPLAIN (VERBOSE, COSTS OFF)
SELECT c.plan, count(*), sum(o.amount) FROM orders o
JOIN customers c ON o.customer_id = c.customer_id
WHERE o.status = 'paid' AND o.amount > 100 AND c.plan <> 'free'
GROUP BY c.plan;
SELECT * FROM eager_same($$
SELECT c.plan, count(*), sum(o.amount) FROM {o} o
JOIN {c} c ON o.customer_id = c.customer_id
WHERE o.status = 'paid' AND o.amount > 100 AND c.plan <> 'free'
GROUP BY c.plan$$);
SELECT * FROM eager_same($$
SELECT c.plan, count(*), sum(o.amount) FROM {o} o
JOIN {c} c ON o.tenant_id = c.tenant_id AND o.customer_id = c.customer_id
WHERE o.amount > c.customer_id * 20 OR o.status IS NULL
GROUP BY c.plan$$);
SELECT * FROM eager_same($$
SELECT c.plan, o.status, count(*), sum(o.amount) FROM {o} o
JOIN {c} c ON o.tenant_id = c.tenant_id AND o.customer_id = c.customer_id
GROUP BY c.plan, o.status HAVING sum(o.amount) > 20000 OR count(*) < 200
ORDER BY count(*) DESC, c.plan NULLS FIRST, o.status NULLS FIRST LIMIT 5$$, true);
-- no GROUP BY: one row, count 0 and sum NULL when nothing joins
SELECT * FROM eager_same($$
SELECT count(*), sum(o.amount), avg(o.amount), max(o.status) FROM {o} o
JOIN {c} c ON o.customer_id = c.customer_id WHERE c.plan = 'none'$$);
SELECT * FROM eager_same($$
SELECT count(*), sum(o.amount), min(o.price) FROM {o} o
JOIN {c} c ON o.customer_id = c.customer_id$$);
-- a cross join: no column of the orders read outside the aggregates
SELECT * FROM eager_same($$
SELECT count(*), sum(o.amount), v.x FROM {o} o, (VALUES (1), (2)) v(x)
GROUP BY v.x$$);
-- three tables, the third local
SELECT * FROM eager_same($$
SELECT p.label, count(*), sum(o.amount) FROM {o} o
JOIN {c} c ON o.tenant_id = c.tenant_id AND o.customer_id = c.customer_id
JOIN plans p ON p.plan = c.plan GROUP BY p.label$$);
-- a numeric expression of an integer key compared outside
SELECT * FROM eager_same($$
SELECT b.band, count(*), sum(o.amount) FROM {o} o
JOIN bands b ON o.amount::numeric >= b.lo AND o.amount::numeric < b.hi
GROUP BY b.band$$);
-- a prepared statement, its parameters on either side, generic plans
SET plan_cache_mode = force_generic_plan;
SET sqlite_shard_fdw.eager_aggregate = always;
PREPARE eager_q(text, int) AS
SELECT c.plan, count(*), sum(o.amount) FROM orders o
JOIN customers c ON o.customer_id = c.customer_id
WHERE o.status = $1 AND c.customer_id < $2 GROUP BY c.plan;
PREPARE eager_n(text, int) AS
SELECT c.plan, count(*), sum(o.amount) FROM orders_native o
JOIN customers_native c ON o.customer_id = c.customer_id
WHERE o.status = $1 AND c.customer_id < $2 GROUP BY c.plan;
EXPLAIN (COSTS OFF) EXECUTE eager_q('paid', 20);
CREATE TEMP TABLE got AS EXECUTE eager_q('paid', 20);
CREATE TEMP TABLE want AS EXECUTE eager_n('paid', 20);
SELECT (SELECT array_agg(g::text ORDER BY g::text) FROM got g) =
       (SELECT array_agg(w::text ORDER BY w::text) FROM want w) AS same,
       (SELECT count(*) FROM want) AS groups;
DROP TABLE got, want;
CREATE TEMP TABLE got AS EXECUTE eager_q('void', 7);
CREATE TEMP TABLE want AS EXECUTE eager_n('void', 7);
SELECT (SELECT array_agg(g::text ORDER BY g::text) FROM got g) =
       (SELECT array_agg(w::text ORDER BY w::text) FROM want w) AS same,
       (SELECT count(*) FROM want) AS groups;
DROP TABLE got, want;
DEALLOCATE eager_q;
DEALLOCATE eager_n;
RESET sqlite_shard_fdw.eager_aggregate;
RESET plan_cache_mode;

-- ===================================================================
-- Not grouped early, and still right: each plan below reads the orders'
-- rows (no grouping under the join) even with the setting always
-- ===================================================================
SET sqlite_shard_fdw.eager_aggregate = always;
-- the orders on the nullable side of an outer join: a customer without
-- orders counts once in count(*), in no group of orders
EXPLAIN (COSTS OFF)
SELECT c.plan, count(*), count(o.order_id) FROM customers c
LEFT JOIN orders o ON o.customer_id = c.customer_id + 35 GROUP BY c.plan;
-- a key whose equal values can differ (a float), a whole row, an
-- aggregate of both tables, DISTINCT, ORDER BY in an aggregate, an
-- ordered-set aggregate, a window function, a grouping set, a sub-select
EXPLAIN (COSTS OFF)
SELECT c.plan, count(*) FROM orders o
JOIN customers c ON o.price = c.customer_id GROUP BY c.plan;
EXPLAIN (COSTS OFF)
SELECT count(*) FROM orders o JOIN customers c ON o.customer_id = c.customer_id
GROUP BY o;
EXPLAIN (COSTS OFF)
SELECT c.plan, count(c.name), sum(o.amount) FROM orders o
JOIN customers c ON o.customer_id = c.customer_id GROUP BY c.plan;
EXPLAIN (COSTS OFF)
SELECT c.plan, count(DISTINCT o.status) FROM orders o
JOIN customers c ON o.customer_id = c.customer_id GROUP BY c.plan;
EXPLAIN (COSTS OFF)
SELECT c.plan, string_agg(o.status, ',' ORDER BY o.order_id) FROM orders o
JOIN customers c ON o.customer_id = c.customer_id GROUP BY c.plan;
EXPLAIN (COSTS OFF)
SELECT c.plan, percentile_disc(0.5) WITHIN GROUP (ORDER BY o.amount)
FROM orders o JOIN customers c ON o.customer_id = c.customer_id
GROUP BY c.plan;
EXPLAIN (COSTS OFF)
SELECT c.plan, sum(o.amount), rank() OVER (ORDER BY sum(o.amount))
FROM orders o JOIN customers c ON o.customer_id = c.customer_id
GROUP BY c.plan;
EXPLAIN (COSTS OFF)
SELECT c.plan, sum(o.amount) FROM orders o
JOIN customers c ON o.customer_id = c.customer_id GROUP BY ROLLUP (c.plan);
EXPLAIN (COSTS OFF)
SELECT c.plan, sum(o.amount) FROM orders o
JOIN customers c ON o.customer_id = c.customer_id
WHERE o.status IN (SELECT status FROM orders_native WHERE amount > 990)
GROUP BY c.plan;
-- and their answers
RESET sqlite_shard_fdw.eager_aggregate;
SELECT * FROM eager_same($$
SELECT c.plan, count(*), count(o.order_id), sum(o.amount) FROM {c} c
LEFT JOIN {o} o ON o.customer_id = c.customer_id + 35 GROUP BY c.plan$$);
SELECT * FROM eager_same($$
SELECT c.plan, count(*) FROM {o} o
JOIN {c} c ON o.price = c.customer_id GROUP BY c.plan$$);
SELECT * FROM eager_same($$
SELECT c.plan, count(c.name), sum(o.amount), count(DISTINCT o.status)
FROM {o} o JOIN {c} c ON o.customer_id = c.customer_id GROUP BY c.plan$$);
SELECT * FROM eager_same($$
SELECT c.plan, sum(o.amount) FROM {o} o
JOIN {c} c ON o.customer_id = c.customer_id GROUP BY ROLLUP (c.plan)$$);

-- ===================================================================
-- Privileges: the grouped table is read with the query's own checks
-- ===================================================================
CREATE ROLE regress_eager_reader;
GRANT SELECT ON customers, plans TO regress_eager_reader;
CREATE USER MAPPING FOR regress_eager_reader SERVER eager_srv;
SET ROLE regress_eager_reader;
SET sqlite_shard_fdw.eager_aggregate = always;
SELECT c.plan, count(*), sum(o.amount) FROM orders o
JOIN customers c ON o.customer_id = c.customer_id GROUP BY c.plan;
RESET sqlite_shard_fdw.eager_aggregate;
RESET ROLE;
DROP USER MAPPING FOR regress_eager_reader SERVER eager_srv;
REVOKE ALL ON customers, plans FROM regress_eager_reader;
DROP ROLE regress_eager_reader;

-- a scoped login: the grouped scan reads only its tenants' rows
CREATE ROLE regress_eager_scoped;
GRANT SELECT ON customers, orders TO regress_eager_scoped;
GRANT SELECT ON customers_native, orders_native TO regress_eager_scoped;
CREATE USER MAPPING FOR regress_eager_scoped SERVER eager_srv
  OPTIONS (tenants 't02,t07');
SET ROLE regress_eager_scoped;
-- the same answer as the native tables' rows of its two tenants
SET sqlite_shard_fdw.eager_aggregate = always;
EXPLAIN (COSTS OFF)
SELECT c.plan, count(*), sum(o.amount), max(o.tenant_id) FROM orders o
LEFT JOIN customers c ON o.customer_id = c.customer_id GROUP BY c.plan
ORDER BY 1;
SELECT c.plan, count(*), sum(o.amount), max(o.tenant_id) FROM orders o
LEFT JOIN customers c ON o.customer_id = c.customer_id GROUP BY c.plan
ORDER BY 1;
SELECT c.plan, count(*), sum(o.amount), max(o.tenant_id)
FROM (SELECT * FROM orders_native WHERE tenant_id IN ('t02', 't07')) o
LEFT JOIN (SELECT * FROM customers_native WHERE tenant_id IN ('t02', 't07')) c
  ON o.customer_id = c.customer_id
GROUP BY c.plan ORDER BY 1;
RESET sqlite_shard_fdw.eager_aggregate;
RESET ROLE;
DROP USER MAPPING FOR regress_eager_scoped SERVER eager_srv;
REVOKE ALL ON customers, orders, customers_native, orders_native
  FROM regress_eager_scoped;
DROP ROLE regress_eager_scoped;

-- a bad setting
SET sqlite_shard_fdw.eager_aggregate = sometimes;

DROP FUNCTION eager_same(text, boolean);
DROP TABLE plans, bands, orders_native, customers_native;
DROP FOREIGN TABLE orders, customers;
DROP SERVER eager_srv;
