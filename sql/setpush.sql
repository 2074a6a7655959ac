--
-- UPDATEs whose new values the shards compute from the row (SET i = i + 1):
-- integer arithmetic and casts of the row's integer columns run inside the
-- shards with PostgreSQL's errors, every statement beside the same on a
-- native table; the stored forms an integer column may hold, a shard that
-- declares the columns otherwise, RETURNING, a tenant-scoped role, and
-- what stays row by row.  See test/fixtures/setpush.sh.
--
\! bash test/fixtures/setpush.sh
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
RESET client_min_messages;
CREATE SERVER sp_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/setpush/directory.db');
CREATE FOREIGN TABLE nums (tenant_id text, id int, i2 int2, i4 int,
  i8 bigint, t text) SERVER sp_srv;
CREATE FOREIGN TABLE loose (tenant_id text, id int, n int) SERVER sp_srv;
CREATE FOREIGN TABLE realcol (tenant_id text, id int, small int, big bigint)
  SERVER sp_srv;
CREATE TABLE nums_native (tenant_id text, id int, i2 int2, i4 int,
  i8 bigint, t text);
\copy nums_native FROM '/tmp/ssfdw_regress/setpush/nums.csv' WITH (FORMAT csv)
\set VERBOSITY default

-- sp_exec(q): run q, and say how many rows it changed or how it failed
-- (SQLSTATE, message and detail).
CREATE FUNCTION sp_exec(q text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  n bigint;
  msg text;
  det text;
BEGIN
  EXECUTE q;
  GET DIAGNOSTICS n = ROW_COUNT;
  RETURN n || ' rows';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, det = PG_EXCEPTION_DETAIL;
  RETURN SQLSTATE || ': ' || msg ||
    CASE WHEN det <> '' THEN ' (' || det || ')' ELSE '' END;
END $$;

-- sp_run(q): q with {n} standing for nums and then for nums_native, how
-- each went, and whether the two tables then hold the same rows.
CREATE FUNCTION sp_run(q text, OUT fdw text, OUT native text,
  OUT same boolean)
LANGUAGE plpgsql AS $$
DECLARE
  diff bigint;
BEGIN
  fdw := sp_exec(replace(q, '{n}', 'nums'));
  native := sp_exec(replace(q, '{n}', 'nums_native'));
  SELECT count(*) INTO diff FROM
    ((SELECT * FROM nums EXCEPT ALL SELECT * FROM nums_native)
     UNION ALL
     (SELECT * FROM nums_native EXCEPT ALL SELECT * FROM nums)) d;
  same := diff = 0;
END $$;
SELECT * FROM sp_run('SELECT 1');

-- ===================================================================
-- Arithmetic on the row's own columns, on every shard
-- ===================================================================
EXPLAIN (VERBOSE, COSTS OFF) UPDATE nums SET i4 = i4 + 1 WHERE id < 4 OR id > 5;
SELECT * FROM sp_run('UPDATE {n} SET i4 = i4 + 1 WHERE id < 4 OR id > 5');
EXPLAIN (VERBOSE, COSTS OFF) UPDATE nums SET i8 = 1000 - i8, i2 = i2 * 3 WHERE id <> 4 AND id <> 5;
SELECT * FROM sp_run('UPDATE {n} SET i8 = 1000 - i8, i2 = i2 * 3 WHERE id <> 4 AND id <> 5');
-- a value computed once (a parameter) beside the row's columns
PREPARE sp_add(int) AS UPDATE nums SET i4 = $1 + i4 * 2 WHERE tenant_id = 'b';
EXPLAIN (VERBOSE, COSTS OFF) EXECUTE sp_add(5);
EXECUTE sp_add(5);
UPDATE nums_native SET i4 = 5 + i4 * 2 WHERE tenant_id = 'b';
SELECT * FROM sp_run('SELECT 1');
DEALLOCATE sp_add;
-- division truncates toward zero, as in PostgreSQL
SELECT * FROM sp_run('UPDATE {n} SET i4 = i4 / 2, i8 = i8 / -4 WHERE id IN (1, 2, 6)');
-- the row's other columns, and casts between integer types
EXPLAIN (VERBOSE, COSTS OFF) UPDATE nums SET i8 = i4, i4 = i2 + i4 WHERE tenant_id = 'a';
SELECT * FROM sp_run('UPDATE {n} SET i8 = i4, i4 = i2 + i4 WHERE tenant_id = ''a''');
SELECT * FROM sp_run('UPDATE {n} SET i2 = i4 - 1000 WHERE id = 1');
-- NULLs stay NULL; a NULL value makes every new value NULL
SELECT * FROM sp_run('UPDATE {n} SET i2 = i2 + 1, i4 = i4 * i2 WHERE id = 3');
SELECT * FROM sp_run('UPDATE {n} SET i4 = i4 + NULL::int WHERE id = 2');
SELECT * FROM nums ORDER BY id;

-- ===================================================================
-- Overflow and division by zero: PostgreSQL's errors, nothing changed
-- ===================================================================
SELECT * FROM sp_run('UPDATE {n} SET i2 = i2 + 1 WHERE id = 4');
SELECT * FROM sp_run('UPDATE {n} SET i2 = i2 - 1 WHERE id = 5');
SELECT * FROM sp_run('UPDATE {n} SET i4 = i4 + 1 WHERE id = 4');
SELECT * FROM sp_run('UPDATE {n} SET i4 = i4 * -1 WHERE id = 5');
SELECT * FROM sp_run('UPDATE {n} SET i4 = i4 / -1 WHERE id = 5');
SELECT * FROM sp_run('UPDATE {n} SET i8 = i8 + 1 WHERE id = 4');
SELECT * FROM sp_run('UPDATE {n} SET i8 = i8 * 2 WHERE id = 5');
SELECT * FROM sp_run('UPDATE {n} SET i8 = i8 / -1 WHERE id = 5');
-- int2 + int4 is an int4, then cast to the int2 column
SELECT * FROM sp_run('UPDATE {n} SET i2 = i2 + 100000 WHERE id = 1');
-- int4 + int8 is an int8, then cast to the int4 column
SELECT * FROM sp_run('UPDATE {n} SET i4 = i4 + 3000000000 WHERE id = 1');
SELECT * FROM sp_run('UPDATE {n} SET i4 = i4 / 0 WHERE id = 1');
-- at the bounds, but not beyond them
SELECT * FROM sp_run('UPDATE {n} SET i2 = i2 - 1, i4 = i4 - 1, i8 = i8 - 1 WHERE id = 4');
SELECT * FROM sp_run('UPDATE {n} SET i2 = i2 + 1, i4 = i4 + 1, i8 = i8 + 1 WHERE id = 4');
-- a failure on one shard of several: no shard keeps a change
SELECT * FROM sp_run('UPDATE {n} SET i2 = i2 + 32000 WHERE id >= 4');

-- ===================================================================
-- RETURNING
-- ===================================================================
EXPLAIN (VERBOSE, COSTS OFF)
UPDATE nums SET i4 = i4 - 5 WHERE tenant_id IN ('a', 'b') RETURNING id, i4;
WITH u AS (UPDATE nums SET i4 = i4 - 5 WHERE tenant_id IN ('a', 'b')
           RETURNING id, i4, i8)
SELECT * FROM u ORDER BY id;
WITH u AS (UPDATE nums_native SET i4 = i4 - 5 WHERE tenant_id IN ('a', 'b')
           RETURNING id, i4, i8)
SELECT * FROM u ORDER BY id;
SELECT * FROM sp_run('SELECT 1');
-- a WITH's UPDATE counts no rows of the statement: one row, as PostgreSQL
SELECT * FROM sp_run('WITH u AS (UPDATE {n} SET i4 = i4 + 1 WHERE tenant_id = ''b'' RETURNING id) SELECT count(*) FROM u');
SELECT * FROM sp_run('WITH u AS (UPDATE {n} SET i4 = i4 - 1 WHERE tenant_id = ''b'') SELECT 1');

-- ===================================================================
-- A shard that declares the columns otherwise: s3 declares i4 TEXT and
-- i8 NUMERIC; the computed value is stored as an INSERT stores it
-- ===================================================================
SELECT * FROM sp_run('UPDATE {n} SET i4 = i4 + 2, i8 = i8 * 2 WHERE tenant_id = ''c''');
INSERT INTO nums VALUES ('c', 9, 1, 42, 800, 'ins');
INSERT INTO nums_native VALUES ('c', 9, 1, 42, 800, 'ins');
\! sqlite3 /tmp/ssfdw_regress/setpush/shards/s3.db "SELECT id, i4, typeof(i4), i8, typeof(i8) FROM nums ORDER BY id"
SELECT * FROM sp_run('SELECT 1');

-- ===================================================================
-- What an integer column may hold in a shard: read as the wrapper reads
-- it, or the read's error
-- ===================================================================
EXPLAIN (VERBOSE, COSTS OFF) UPDATE loose SET n = n + 1 WHERE id IN (1, 2, 3, 9);
UPDATE loose SET n = n + 1 WHERE id IN (1, 2, 3, 9);
SELECT id, n FROM loose WHERE id IN (1, 2, 3, 9) ORDER BY id;
\! sqlite3 /tmp/ssfdw_regress/setpush/shards/s1.db "SELECT id, n, typeof(n) FROM loose WHERE id IN (1, 2, 3, 9) ORDER BY id"
-- the same error as a read of the row
SELECT k, sp_exec(format('UPDATE loose SET n = n + 1 WHERE id = %s', k)) AS "update",
       sp_exec(format('SELECT n FROM loose WHERE id = %s', k)) AS "read"
FROM unnest(ARRAY[4, 5, 6, 7, 8, 10, 11]) AS k;
\! sqlite3 /tmp/ssfdw_regress/setpush/shards/s1.db "SELECT id, quote(n) FROM loose WHERE id NOT IN (1, 2, 3, 9) ORDER BY id"

-- ===================================================================
-- REAL affinity (s2): an int4 fits a double; a bigint only up to 2^53,
-- beyond which an INSERT refuses it too
-- ===================================================================
EXPLAIN (VERBOSE, COSTS OFF) UPDATE realcol SET big = big * 2;
UPDATE realcol SET small = small + 1;
UPDATE realcol SET big = big * 2;
SELECT * FROM realcol ORDER BY id;
\! sqlite3 /tmp/ssfdw_regress/setpush/shards/s2.db "SELECT id, small, typeof(small), big, typeof(big) FROM realcol"
UPDATE realcol SET big = 9007199254740992;
UPDATE realcol SET big = big + 1 WHERE tenant_id = 'b';
INSERT INTO realcol VALUES ('b', 3, 1, 9007199254740993);
-- s1 declares the column INTEGER: stored
UPDATE realcol SET big = big + 1 WHERE tenant_id = 'a';
UPDATE realcol SET big = big - 1 WHERE tenant_id = 'b';
SELECT * FROM realcol ORDER BY id;
\! sqlite3 /tmp/ssfdw_regress/setpush/shards/s2.db "SELECT id, big, typeof(big) FROM realcol"

-- ===================================================================
-- A tenant-scoped role changes its tenants' rows only
-- ===================================================================
CREATE ROLE regress_sp_scoped;
CREATE USER MAPPING FOR regress_sp_scoped SERVER sp_srv OPTIONS (tenants 'a');
GRANT SELECT, UPDATE ON nums TO regress_sp_scoped;
SET ROLE regress_sp_scoped;
EXPLAIN (VERBOSE, COSTS OFF) UPDATE nums SET i8 = i8 + i2;
UPDATE nums SET i8 = i8 + i2;
RESET ROLE;
UPDATE nums_native SET i8 = i8 + i2 WHERE tenant_id = 'a';
SELECT * FROM sp_run('SELECT 1');

-- ===================================================================
-- Row by row: what SQLite would not compute as PostgreSQL does
-- ===================================================================
-- upper() and lower() fold only ASCII in SQLite
EXPLAIN (VERBOSE, COSTS OFF) UPDATE nums SET t = upper(t) WHERE tenant_id = 'a';
SELECT * FROM sp_run('UPDATE {n} SET t = upper(t) WHERE tenant_id = ''a''');
-- text concatenation, a volatile value, numeric arithmetic
EXPLAIN (VERBOSE, COSTS OFF) UPDATE nums SET t = t || 'z' WHERE tenant_id = 'b';
SELECT * FROM sp_run('UPDATE {n} SET t = t || ''z'' WHERE tenant_id = ''b''');
EXPLAIN (VERBOSE, COSTS OFF) UPDATE nums SET i4 = i4 + (random() * 0)::int WHERE tenant_id = 'b';
SELECT * FROM sp_run('UPDATE {n} SET i4 = i4 + (random() * 0)::int WHERE tenant_id = ''b''');
EXPLAIN (VERBOSE, COSTS OFF) UPDATE nums SET i4 = (i4 * 1.5)::int WHERE tenant_id = 'b';
SELECT * FROM sp_run('UPDATE {n} SET i4 = (i4 * 1.5)::int WHERE tenant_id = ''b''');
SELECT * FROM nums ORDER BY id;

DROP OWNED BY regress_sp_scoped;
DROP ROLE regress_sp_scoped;
DROP SERVER sp_srv CASCADE;
