--
-- UPDATE and DELETE of foreign tables that are partitions of a partitioned
-- table or children in an inheritance tree, joined with other tables, with
-- rows moving between partitions: each statement runs on the foreign
-- tables and on native tables holding the same rows, and the two are
-- compared after every statement.  See test/fixtures/partitions.sh.
--
\! bash test/fixtures/partitions.sh
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
RESET client_min_messages;
CREATE SERVER part_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/partitions/directory.db');
\set VERBOSITY default

-- pt: partitions p_low (foreign, tenant first), p_high (foreign, tenant
-- last) and p_top (native); pt_n the same rows in native partitions
CREATE TABLE pt (tenant_id text, a int, b text) PARTITION BY RANGE (a);
CREATE FOREIGN TABLE p_low PARTITION OF pt FOR VALUES FROM (0) TO (10)
  SERVER part_srv;
CREATE FOREIGN TABLE p_high (a int, b text, tenant_id text) SERVER part_srv;
ALTER TABLE pt ATTACH PARTITION p_high FOR VALUES FROM (10) TO (20);
CREATE TABLE p_top PARTITION OF pt FOR VALUES FROM (20) TO (100);
CREATE TABLE pt_n (tenant_id text, a int, b text) PARTITION BY RANGE (a);
CREATE TABLE pn_low PARTITION OF pt_n FOR VALUES FROM (0) TO (10);
CREATE TABLE pn_high (a int, b text, tenant_id text);
ALTER TABLE pt_n ATTACH PARTITION pn_high FOR VALUES FROM (10) TO (20);
CREATE TABLE pn_top PARTITION OF pt_n FOR VALUES FROM (20) TO (100);
INSERT INTO pt_n SELECT * FROM pt;
-- where each row is, on both sides
CREATE FUNCTION regress_pt() RETURNS TABLE (side text, part text, r text)
  LANGUAGE sql AS $$
  SELECT 'foreign', tableoid::regclass::text, format('%s %s %s', tenant_id, a, b)
    FROM pt
  UNION ALL
  SELECT 'native', replace(tableoid::regclass::text, 'pn_', 'p_'),
    format('%s %s %s', tenant_id, a, b) FROM pt_n
  ORDER BY 2, 3, 1
$$;
CREATE FUNCTION regress_pt_same() RETURNS text LANGUAGE sql AS $$
  SELECT CASE WHEN count(*) = 0 THEN 'same' ELSE 'differ: ' ||
    string_agg(format('%s %s', part, r), '; ') END
  FROM (SELECT part, r FROM regress_pt() WHERE side = 'foreign'
        EXCEPT ALL SELECT part, r FROM regress_pt() WHERE side = 'native'
        UNION ALL
        (SELECT part, r FROM regress_pt() WHERE side = 'native'
         EXCEPT ALL SELECT part, r FROM regress_pt() WHERE side = 'foreign')) d
$$;
SELECT part, r FROM regress_pt() WHERE side = 'foreign';
SELECT regress_pt_same();

-- ===================================================================
-- Partitions whose tenant column is at different positions
-- ===================================================================
EXPLAIN (VERBOSE, COSTS OFF) DELETE FROM pt WHERE b LIKE '%e';
WITH d AS (DELETE FROM pt WHERE b LIKE '%e' RETURNING *)
SELECT * FROM d ORDER BY a, tenant_id;
WITH d AS (DELETE FROM pt_n WHERE b LIKE '%e' RETURNING *)
SELECT * FROM d ORDER BY a, tenant_id;
SELECT regress_pt_same();
WITH u AS (UPDATE pt SET b = b || '!' WHERE b ~ 'o' RETURNING *)
SELECT * FROM u ORDER BY a, tenant_id;
WITH u AS (UPDATE pt_n SET b = b || '!' WHERE b ~ 'o' RETURNING *)
SELECT * FROM u ORDER BY a, tenant_id;
SELECT regress_pt_same();

-- ===================================================================
-- An UPDATE that moves rows between partitions
-- ===================================================================
-- out of a foreign partition: refused, as PostgreSQL refuses it, before
-- anything changes, whether row by row or with a constant run inside the
-- shards
UPDATE pt SET a = a + 10 WHERE a IN (2, 12);
EXPLAIN (VERBOSE, COSTS OFF) UPDATE p_low SET a = 12 WHERE a = 2;
UPDATE p_low SET a = 12 WHERE a = 2;
UPDATE pt SET a = 12 WHERE a = 2;
SELECT regress_pt_same();
-- within its bounds a row stays in its foreign partition, inside the shards
EXPLAIN (VERBOSE, COSTS OFF) UPDATE p_low SET b = 'deux' WHERE a = 2;
UPDATE pt SET a = 4, b = 'deux' WHERE a = 2;
UPDATE pt_n SET a = 4, b = 'deux' WHERE a = 2;
SELECT regress_pt_same();
-- from a native partition into a foreign one, through the shard of its
-- tenant
INSERT INTO pt VALUES ('globex', 30, 'thirty');
INSERT INTO pt_n VALUES ('globex', 30, 'thirty');
WITH u AS (UPDATE pt SET a = a - 20 WHERE a >= 30 RETURNING *)
SELECT * FROM u ORDER BY a, tenant_id;
WITH u AS (UPDATE pt_n SET a = a - 20 WHERE a >= 30 RETURNING *)
SELECT * FROM u ORDER BY a, tenant_id;
SELECT regress_pt_same();
SELECT part, r FROM regress_pt() WHERE side = 'foreign';
-- of a tenant the directory does not know: refused, nothing changes
INSERT INTO pt VALUES ('nobody', 31, 'lost');
INSERT INTO pt_n VALUES ('nobody', 31, 'lost');
UPDATE pt SET a = 13 WHERE a = 31;
SELECT regress_pt_same();
DELETE FROM pt WHERE a = 31;
DELETE FROM pt_n WHERE a = 31;
-- changing a foreign partition's tenant is refused as for any foreign table
UPDATE pt SET tenant_id = 'globex' WHERE a = 4;
SELECT regress_pt_same();

-- ===================================================================
-- Inheritance: a native parent with a foreign child, joined
-- ===================================================================
CREATE TABLE parent (tenant_id text, a int, b text);
CREATE FOREIGN TABLE kids (tenant_id text, a int, b text) SERVER part_srv;
ALTER FOREIGN TABLE kids INHERIT parent;
CREATE FOREIGN TABLE src (tenant_id text, a int, b text) SERVER part_srv;
INSERT INTO parent VALUES ('acme', 1, 'p1'), ('acme', 2, 'p2');
CREATE TABLE parent_n (tenant_id text, a int, b text);
CREATE TABLE kids_n () INHERITS (parent_n);
CREATE TABLE src_n AS SELECT * FROM src;
INSERT INTO parent_n SELECT * FROM ONLY parent;
INSERT INTO kids_n SELECT * FROM kids;
CREATE FUNCTION regress_inh_same() RETURNS text LANGUAGE sql AS $$
  SELECT CASE WHEN count(*) = 0 THEN 'same' ELSE 'differ: ' ||
    string_agg(r, '; ') END
  FROM ((SELECT tableoid::regclass::text || ' ' || p::text AS r FROM parent p
         EXCEPT ALL
         SELECT replace(tableoid::regclass::text, '_n', '') || ' ' || p::text
         FROM parent_n p)
        UNION ALL
        (SELECT replace(tableoid::regclass::text, '_n', '') || ' ' || p::text
         FROM parent_n p
         EXCEPT ALL
         SELECT tableoid::regclass::text || ' ' || p::text FROM parent p)) d
$$;
SELECT regress_inh_same();
-- several source rows for a = 2: each target row is changed once
EXPLAIN (COSTS OFF)
UPDATE parent SET b = parent.b || src.b FROM src WHERE parent.a = src.a
  RETURNING *;
WITH u AS (UPDATE parent SET b = parent.b || src.b FROM src
           WHERE parent.a = src.a RETURNING parent.tenant_id, parent.a)
SELECT * FROM u ORDER BY 1, 2;
WITH u AS (UPDATE parent_n SET b = parent_n.b || src_n.b FROM src_n
           WHERE parent_n.a = src_n.a RETURNING parent_n.tenant_id, parent_n.a)
SELECT * FROM u ORDER BY 1, 2;
-- which of the source rows a row was changed with is not defined: compare
-- the rows changed, not the values
SELECT a, count(*) FROM parent WHERE b ~ '(x|y|z)$' GROUP BY 1 ORDER BY 1;
SELECT a, count(*) FROM parent_n WHERE b ~ '(x|y|z)$' GROUP BY 1 ORDER BY 1;
UPDATE parent SET b = 'reset ' || a;
UPDATE parent_n SET b = 'reset ' || a;
SELECT regress_inh_same();
WITH d AS (DELETE FROM parent USING src WHERE parent.a = src.a
           RETURNING parent.*)
SELECT * FROM d ORDER BY 1, 2;
WITH d AS (DELETE FROM parent_n USING src_n WHERE parent_n.a = src_n.a
           RETURNING parent_n.*)
SELECT * FROM d ORDER BY 1, 2;
SELECT regress_inh_same();
SELECT tableoid::regclass, * FROM parent ORDER BY a, tenant_id;

-- ===================================================================
-- Clean up
-- ===================================================================
DROP FUNCTION regress_pt(), regress_pt_same(), regress_inh_same();
DROP TABLE pt, pt_n, parent, parent_n, src_n CASCADE;
DROP SERVER part_srv CASCADE;
