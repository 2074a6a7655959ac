--
-- Statements that read the table they write: INSERT ... SELECT from the
-- same table, UPDATE and DELETE whose subquery reads the table they change.
-- The scan reads the table before the statement writes it, so it sees the
-- table as it was when the statement started, as a native table's scan
-- does.  Compared all along with a native table holding the same rows.
-- The fleet is that of the keyed suite (test/fixtures/keyed.sh): s1 and s3
-- WITHOUT ROWID, s2 a rowid table.
--
\! bash test/fixtures/keyed.sh selfwrite
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
RESET client_min_messages;
CREATE SERVER selfwrite_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/selfwrite/directory.db');
CREATE FOREIGN TABLE items (tenant_id text, sku text, n bigint, qty bigint,
  label text) SERVER selfwrite_srv;
-- more rows than a batch the scan reads at a time
INSERT INTO items SELECT t, 'g', g, g % 10, 'gen ' || g
  FROM unnest(ARRAY['acme', 'globex']) t, generate_series(1, 1200) g;
CREATE TABLE items_n (tenant_id text, sku text, n bigint,
  qty bigint CHECK (qty >= 0), label text, PRIMARY KEY (tenant_id, sku, n));
INSERT INTO items_n SELECT * FROM items;
\i test/regress_items_same.sql
CREATE FUNCTION regress_counts() RETURNS TABLE (tenant_id text, rows bigint)
  LANGUAGE sql AS $$
  SELECT tenant_id, count(*) FROM items GROUP BY 1 ORDER BY 1
$$;
SELECT * FROM regress_counts();
\set VERBOSITY default

-- ===================================================================
-- INSERT ... SELECT from the same table doubles exactly
-- ===================================================================
-- routed: acme (1,204 rows, WITHOUT ROWID shard s1) becomes 2,408
INSERT INTO items SELECT tenant_id, sku, n + 10000, qty, label FROM items
  WHERE tenant_id = 'acme';
INSERT INTO items_n SELECT tenant_id, sku, n + 10000, qty, label FROM items_n
  WHERE tenant_id = 'acme';
SELECT * FROM regress_counts();
SELECT regress_same();
-- every shard
INSERT INTO items SELECT tenant_id, sku, n + 100000, qty, 'copy ' || label
  FROM items;
INSERT INTO items_n SELECT tenant_id, sku, n + 100000, qty, 'copy ' || label
  FROM items_n;
SELECT * FROM regress_counts();
SELECT regress_same();
-- with ORDER BY, with ORDER BY and LIMIT, and with RETURNING
INSERT INTO items SELECT tenant_id, sku, n + 1000000, qty, label FROM items
  WHERE tenant_id = 'globex' ORDER BY n DESC;
INSERT INTO items_n SELECT tenant_id, sku, n + 1000000, qty, label FROM items_n
  WHERE tenant_id = 'globex' ORDER BY n DESC;
WITH i AS (INSERT INTO items SELECT tenant_id, sku, n + 2000000, qty, label
             FROM items ORDER BY tenant_id, sku, n LIMIT 5
           RETURNING tenant_id, sku, n)
SELECT * FROM i ORDER BY 1, 2, 3;
INSERT INTO items_n SELECT tenant_id, sku, n + 2000000, qty, label
  FROM items_n ORDER BY tenant_id, sku, n LIMIT 5;
SELECT * FROM regress_counts();
SELECT regress_same();
-- rows of one shard's tenants written to another's, both read first:
-- acme (s1) and globex (s2) swap copies
INSERT INTO items SELECT CASE tenant_id WHEN 'acme' THEN 'globex'
  ELSE 'acme' END, sku, n + 3000000, qty, label FROM items
  WHERE tenant_id IN ('acme', 'globex') AND n < 3;
INSERT INTO items_n SELECT CASE tenant_id WHEN 'acme' THEN 'globex'
  ELSE 'acme' END, sku, n + 3000000, qty, label FROM items_n
  WHERE tenant_id IN ('acme', 'globex') AND n < 3;
SELECT * FROM regress_counts();
SELECT regress_same();
-- through another foreign table over the same SQLite table, named in
-- other letter case; rolled back
CREATE FOREIGN TABLE items_alias (tenant_id text, sku text, n bigint,
  qty bigint, label text) SERVER selfwrite_srv OPTIONS (table 'ITEMS');
BEGIN;
INSERT INTO items SELECT tenant_id, sku, n + 4000000, qty, label
  FROM items_alias WHERE tenant_id = 'initech';
SELECT * FROM regress_counts();
ROLLBACK;
INSERT INTO items SELECT tenant_id, sku, n + 4000000, qty, label
  FROM items_alias WHERE tenant_id = '42';
INSERT INTO items_n SELECT tenant_id, sku, n + 4000000, qty, label
  FROM items_n WHERE tenant_id = '42';
SELECT * FROM regress_counts();
SELECT regress_same();
-- a join of the table with another that the shards run: read first too
CREATE FOREIGN TABLE loose (tenant_id text, k text, v text)
  SERVER selfwrite_srv;
EXPLAIN (COSTS OFF)
INSERT INTO items SELECT i.tenant_id, i.sku, i.n + 9500000, i.qty, l.v
  FROM loose l JOIN items i ON l.tenant_id = i.tenant_id AND l.v = 'real';
INSERT INTO items SELECT i.tenant_id, i.sku, i.n + 9500000, i.qty, l.v
  FROM loose l JOIN items i ON l.tenant_id = i.tenant_id AND l.v = 'real';
INSERT INTO items_n SELECT tenant_id, sku, n + 9500000, qty, 'real'
  FROM items_n WHERE tenant_id = 'acme';
SELECT * FROM regress_counts();
SELECT regress_same();

-- ===================================================================
-- UPDATE and DELETE whose subquery reads the table they change
-- ===================================================================
UPDATE items SET qty = qty + 1 WHERE (tenant_id, sku, n) IN
  (SELECT tenant_id, sku, n FROM items WHERE qty > 7);
UPDATE items_n SET qty = qty + 1 WHERE (tenant_id, sku, n) IN
  (SELECT tenant_id, sku, n FROM items_n WHERE qty > 7);
SELECT regress_same();
-- the subquery's maximum is the one before the statement
UPDATE items SET qty = qty + (SELECT max(qty) FROM items)
  WHERE tenant_id = 'globex' AND label ~ '^gen 1.$';
UPDATE items_n SET qty = qty + (SELECT max(qty) FROM items_n)
  WHERE tenant_id = 'globex' AND label ~ '^gen 1.$';
SELECT regress_same();
DELETE FROM items WHERE n IN
  (SELECT n - 100000 FROM items WHERE label ~ '^copy gen .*5$');
DELETE FROM items_n WHERE n IN
  (SELECT n - 100000 FROM items_n WHERE label ~ '^copy gen .*5$');
SELECT * FROM regress_counts();
SELECT regress_same();
-- a join with a local table on the tenant column, which would otherwise
-- read the foreign table once per outer row: read once
CREATE TABLE picked (tenant_id text);
INSERT INTO picked VALUES ('42'), ('initech');
ANALYZE picked;
EXPLAIN (COSTS OFF)
UPDATE items SET qty = qty + 1 FROM picked
  WHERE items.tenant_id = picked.tenant_id AND label ~ 'a';
UPDATE items SET qty = qty + 1 FROM picked
  WHERE items.tenant_id = picked.tenant_id AND label ~ 'a';
UPDATE items_n SET qty = qty + 1 FROM picked
  WHERE items_n.tenant_id = picked.tenant_id AND label ~ 'a';
INSERT INTO items SELECT i.tenant_id, sku, n + 9000000, qty, label
  FROM items i JOIN picked USING (tenant_id);
INSERT INTO items_n SELECT i.tenant_id, sku, n + 9000000, qty, label
  FROM items_n i JOIN picked USING (tenant_id);
SELECT * FROM regress_counts();
SELECT regress_same();
-- a subquery that depends on the row reads the table as it was when the
-- statement began: every row is computed (sorted by its identity) before
-- the first is changed
EXPLAIN (COSTS OFF)
DELETE FROM items WHERE qty <
  (SELECT avg(qty) FROM items i WHERE i.tenant_id = items.tenant_id);
DELETE FROM items WHERE qty <
  (SELECT avg(qty) FROM items i WHERE i.tenant_id = items.tenant_id);
DELETE FROM items_n WHERE qty <
  (SELECT avg(qty) FROM items_n i WHERE i.tenant_id = items_n.tenant_id);
SELECT * FROM regress_counts();
SELECT regress_same();
WITH a AS MATERIALIZED (SELECT tenant_id, avg(qty) AS q FROM items GROUP BY 1)
DELETE FROM items USING a WHERE items.tenant_id = a.tenant_id AND qty < a.q;
WITH a AS MATERIALIZED (SELECT tenant_id, avg(qty) AS q FROM items_n GROUP BY 1)
DELETE FROM items_n USING a WHERE items_n.tenant_id = a.tenant_id AND qty < a.q;
SELECT * FROM regress_counts();
SELECT regress_same();
-- a correlated sub-select in SET is computed for each row, never bound
-- once for the statement; so are the outputs of SET (a, b) = (SELECT ...)
EXPLAIN (VERBOSE, COSTS OFF)
UPDATE items AS tg SET (qty) = (SELECT src.qty * 2 FROM items AS src
    WHERE src.tenant_id = tg.tenant_id AND src.sku = tg.sku AND src.n = tg.n)
  WHERE tenant_id = 'initech';
UPDATE items AS tg SET (qty) = (SELECT src.qty * 2 FROM items AS src
    WHERE src.tenant_id = tg.tenant_id AND src.sku = tg.sku AND src.n = tg.n)
  WHERE tenant_id = 'initech';
UPDATE items_n AS tg SET (qty) = (SELECT src.qty * 2 FROM items_n AS src
    WHERE src.tenant_id = tg.tenant_id AND src.sku = tg.sku AND src.n = tg.n)
  WHERE tenant_id = 'initech';
SELECT regress_same();
WITH u AS (UPDATE items AS tg SET (qty, label) =
    (SELECT src.qty + 1, src.label || '+' FROM items AS src
     WHERE src.tenant_id = tg.tenant_id AND src.sku = tg.sku AND src.n = tg.n)
  WHERE n % 97 = 3 RETURNING tenant_id, sku, n, qty, label)
SELECT * FROM u ORDER BY 1, 2, 3;
WITH u AS (UPDATE items_n AS tg SET (qty, label) =
    (SELECT src.qty + 1, src.label || '+' FROM items_n AS src
     WHERE src.tenant_id = tg.tenant_id AND src.sku = tg.sku AND src.n = tg.n)
  WHERE n % 97 = 3 RETURNING tenant_id, sku, n, qty, label)
SELECT * FROM u ORDER BY 1, 2, 3;
SELECT regress_same();
UPDATE items tg SET qty = (SELECT max(qty) FROM items i
    WHERE i.tenant_id = tg.tenant_id) - qty
  WHERE label ~ '7$';
UPDATE items_n tg SET qty = (SELECT max(qty) FROM items_n i
    WHERE i.tenant_id = tg.tenant_id) - qty
  WHERE label ~ '7$';
SELECT regress_same();
-- UPDATE ... FROM and DELETE ... USING a source with several rows for one
-- target row change it once and count it once, as PostgreSQL does
CREATE TABLE twice (n bigint);
INSERT INTO twice SELECT g FROM generate_series(1, 60) g;
INSERT INTO twice SELECT g FROM generate_series(1, 60, 3) g;
UPDATE items SET label = label || '!' FROM twice
  WHERE items.n = twice.n AND items.tenant_id IN ('acme', 'globex');
UPDATE items_n SET label = label || '!' FROM twice
  WHERE items_n.n = twice.n AND items_n.tenant_id IN ('acme', 'globex');
SELECT regress_same();
WITH u AS (UPDATE items SET qty = qty + 1
  FROM (SELECT n FROM twice UNION ALL SELECT n + 3 FROM twice) ss
  WHERE items.n = ss.n AND items.tenant_id = 'globex' RETURNING items.n)
SELECT count(*), count(DISTINCT n), sum(n) FROM u;
WITH u AS (UPDATE items_n SET qty = qty + 1
  FROM (SELECT n FROM twice UNION ALL SELECT n + 3 FROM twice) ss
  WHERE items_n.n = ss.n AND items_n.tenant_id = 'globex' RETURNING items_n.n)
SELECT count(*), count(DISTINCT n), sum(n) FROM u;
SELECT regress_same();
-- a nested loop reads the table again for each source row
SET enable_hashjoin = off;
SET enable_mergejoin = off;
EXPLAIN (COSTS OFF)
UPDATE items SET qty = qty + 2 FROM twice
  WHERE items.n = twice.n + 1 AND items.tenant_id = 'acme' AND label ~ 'gen';
UPDATE items SET qty = qty + 2 FROM twice
  WHERE items.n = twice.n + 1 AND items.tenant_id = 'acme' AND label ~ 'gen';
UPDATE items_n SET qty = qty + 2 FROM twice
  WHERE items_n.n = twice.n + 1 AND items_n.tenant_id = 'acme'
  AND label ~ 'gen';
SELECT regress_same();
DELETE FROM items USING twice
  WHERE items.n = twice.n + 2 AND items.tenant_id = 'acme' AND label ~ 'gen';
DELETE FROM items_n USING twice
  WHERE items_n.n = twice.n + 2 AND items_n.tenant_id = 'acme'
  AND label ~ 'gen';
RESET enable_hashjoin;
RESET enable_mergejoin;
SELECT * FROM regress_counts();
SELECT regress_same();
DELETE FROM items USING twice WHERE items.n = twice.n + 4;
DELETE FROM items_n USING twice WHERE items_n.n = twice.n + 4;
SELECT * FROM regress_counts();
SELECT regress_same();
-- a second scan of the table, which starts when the first one's rows are
-- all read: right while they wait in the insert's batch, refused once
-- some were written (batch_size 1), with nothing written
INSERT INTO items SELECT tenant_id, sku, n + 5000000, qty, label FROM items
  WHERE tenant_id = 'initech'
  UNION ALL SELECT tenant_id, sku, n + 6000000, qty, label FROM items
  WHERE tenant_id = 'initech';
INSERT INTO items_n SELECT tenant_id, sku, n + 5000000, qty, label
  FROM items_n WHERE tenant_id = 'initech'
  UNION ALL SELECT tenant_id, sku, n + 6000000, qty, label FROM items_n
  WHERE tenant_id = 'initech';
SELECT regress_same();
ALTER FOREIGN TABLE items OPTIONS (ADD batch_size '1');
INSERT INTO items SELECT tenant_id, sku, n + 7000000, qty, label FROM items
  WHERE tenant_id = 'initech'
  UNION ALL SELECT tenant_id, sku, n + 8000000, qty, label FROM items
  WHERE tenant_id = 'initech';
SELECT * FROM regress_counts();

-- ===================================================================
-- Clean up
-- ===================================================================
DROP FUNCTION regress_same();
DROP FUNCTION regress_counts();
DROP TABLE items_n, picked, twice;
DROP SERVER selfwrite_srv CASCADE;
