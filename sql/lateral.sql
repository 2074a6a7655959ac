--
-- LATERAL references into foreign scans: a scan whose output
-- uses a column of another relation runs inside a loop over it, so every
-- query gives the native table's answer.  Each query runs against the
-- foreign table and against a native table holding the same rows.  See
-- test/fixtures/lateral.sh.
--
\! bash test/fixtures/lateral.sh
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
RESET client_min_messages;
CREATE SERVER lateral_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/lateral/directory.db');
CREATE FOREIGN TABLE items (tenant_id text, id int, v int, grp text)
  SERVER lateral_srv;
CREATE TABLE items_native (tenant_id text, id int, v int, grp text);
\i /tmp/ssfdw_regress/lateral/rows.sql
-- local tables the queries loop over
CREATE TABLE loc (id int, v int, tenant text);
INSERT INTO loc VALUES (1, 7, 'acme'), (2, 3, 'globex'), (3, 12, 'nobody'),
  (4, NULL, 'umbrella'), (5, 6, NULL), (6, 9, 'acme');
CREATE TABLE g (id int);
INSERT INTO g VALUES (1), (2), (6), (9);
ANALYZE loc, g, items_native;

-- regress_same(query [, ordered]): the foreign answer against the native one
\i test/regress_compare.sql

-- ===================================================================
-- A lateral value in the scan's output, below an outer join: the scan
-- must be rescanned per row of loc (a parameterized path), not read once
-- with the value taken from the foreign row
-- ===================================================================
EXPLAIN (VERBOSE, COSTS OFF)
SELECT l.v, s.x FROM loc l,
  LATERAL (SELECT q.x FROM (SELECT l.v AS x, f.id FROM items f) q
           RIGHT JOIN g ON q.id = g.id) s;
SELECT * FROM regress_same($$
SELECT l.v, s.x FROM loc l,
  LATERAL (SELECT q.x FROM (SELECT l.v AS x, f.id FROM {t} f) q
           RIGHT JOIN g ON q.id = g.id) s$$);
SELECT * FROM regress_same($$
SELECT l.id, s.* FROM loc l,
  LATERAL (SELECT q.x, q.y, g.id AS gid
           FROM (SELECT l.v + f.v AS x, l.id * 100 + f.id AS y, f.id
                 FROM {t} f) q
           RIGHT JOIN g ON q.id = g.id) s$$);
-- the same value through LEFT JOIN LATERAL
SELECT * FROM regress_same($$
SELECT l.id, s.* FROM loc l
  LEFT JOIN LATERAL (SELECT f.id, l.v * 10 + f.v AS w FROM {t} f) s ON true$$);

-- ===================================================================
-- A condition that references the outer row
-- ===================================================================
SELECT * FROM regress_same($$
SELECT l.id, s.* FROM loc l,
  LATERAL (SELECT f.id, f.v, l.v AS lv FROM {t} f WHERE f.v > l.v) s$$);
EXPLAIN (VERBOSE, COSTS OFF)
SELECT l.id, s.* FROM loc l
  LEFT JOIN LATERAL (SELECT f.id, l.v AS lv FROM items f
                     WHERE f.v > l.v AND f.grp = 'x') s ON true;
SELECT * FROM regress_same($$
SELECT l.id, s.* FROM loc l
  LEFT JOIN LATERAL (SELECT f.id, l.v AS lv FROM {t} f
                     WHERE f.v > l.v AND f.grp = 'x') s ON true$$);
SELECT * FROM regress_same($$
SELECT l.id, s.* FROM loc l
  LEFT JOIN LATERAL (SELECT f.id, coalesce(f.v, l.v) AS w FROM {t} f
                     WHERE f.id <= l.id + 1) s ON s.w > 5$$);
-- a LIMIT keeps the subquery apart: its condition reads the outer row as
-- a parameter, set anew for each row
SELECT * FROM regress_same($$
SELECT l.id, s.* FROM loc l,
  LATERAL (SELECT f.id, f.v FROM {t} f WHERE f.v > l.v
           ORDER BY f.v DESC, f.id LIMIT 2) s$$);

-- ===================================================================
-- Aggregates inside the lateral subquery
-- ===================================================================
EXPLAIN (VERBOSE, COSTS OFF)
SELECT l.id, s.* FROM loc l,
  LATERAL (SELECT count(*), sum(f.v), max(f.id) FROM items f
           WHERE f.v > l.v) s;
SELECT * FROM regress_same($$
SELECT l.id, s.* FROM loc l,
  LATERAL (SELECT count(*), sum(f.v), max(f.id) FROM {t} f
           WHERE f.v > l.v) s$$);
SELECT * FROM regress_same($$
SELECT l.id, s.* FROM loc l,
  LATERAL (SELECT f.grp, count(*), sum(f.v) + l.v AS total FROM {t} f
           WHERE f.id > l.id GROUP BY f.grp) s$$);
SELECT * FROM regress_same($$
SELECT l.id, s.* FROM loc l,
  LATERAL (SELECT count(*) AS n, min(f.v) FROM {t} f
           GROUP BY f.tenant_id HAVING count(*) > l.id - 3) s$$);
SELECT * FROM regress_same($$
SELECT l.id, (SELECT sum(f.v) FROM {t} f WHERE f.id < l.id) FROM loc l$$);

-- ===================================================================
-- A tenant condition from the outer row: the shards are chosen per row
-- of loc ("chosen at run time")
-- ===================================================================
EXPLAIN (COSTS OFF)
SELECT l.tenant, s.* FROM loc l,
  LATERAL (SELECT count(*), sum(f.v) FROM items f
           WHERE f.tenant_id = l.tenant) s;
SELECT * FROM regress_same($$
SELECT l.tenant, s.* FROM loc l,
  LATERAL (SELECT count(*), sum(f.v) FROM {t} f
           WHERE f.tenant_id = l.tenant) s$$);
SELECT * FROM regress_same($$
SELECT l.tenant, s.* FROM loc l,
  LATERAL (SELECT f.id, f.v FROM {t} f WHERE f.tenant_id = l.tenant
           ORDER BY f.id LIMIT 2) s$$);
EXPLAIN (COSTS OFF)
SELECT l.tenant, s.* FROM loc l
  LEFT JOIN LATERAL (SELECT f.id, l.v AS lv FROM items f
                     WHERE f.tenant_id = l.tenant) s ON true;
SELECT * FROM regress_same($$
SELECT l.tenant, s.* FROM loc l
  LEFT JOIN LATERAL (SELECT f.id, l.v AS lv FROM {t} f
                     WHERE f.tenant_id = l.tenant) s ON true$$);
SELECT * FROM regress_same($$
SELECT l.tenant, s.* FROM loc l
  LEFT JOIN LATERAL (SELECT f.id, l.v AS lv FROM {t} f
                     WHERE f.tenant_id IN (l.tenant, 'globex')) s ON true$$);

DROP FUNCTION regress_same(text, boolean);
DROP TABLE loc, g, items_native;
DROP SERVER lateral_srv CASCADE;
