--
-- char(n), varchar(n) and domain tenant columns: the stored value, byte for
-- byte, is the tenant; a char(n) value names the tenant of its text without
-- the pad ('a'::char(3) is tenant "a").  Reads, INSERT and COPY, UPDATE and
-- DELETE inside the shards and row by row, and a tenant-scoped login all
-- follow that rule: a statement that names tenant "a" reads and changes the
-- rows stored as 'a' and never the decoys stored as 'a  ', ' a' or 'A'
-- (tenants the directory does not know), which PostgreSQL's char(3) reads
-- alike.  Each statement is compared with the same statement on a native
-- table of the known tenants' rows (n_tc, ...); a statement over every
-- shard with a native table of every row (all_tc, ...).
-- See test/fixtures/chartenant.sh.
--
\! bash test/fixtures/chartenant.sh
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
RESET client_min_messages;
CREATE SERVER ct_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/chartenant/directory.db');
CREATE DOMAIN regress_chdom AS char(3) CHECK (VALUE <> 'zzz');
CREATE FOREIGN TABLE tc (tenant_id char(3), id int, v int, note text)
  SERVER ct_srv;
CREATE FOREIGN TABLE tv (tenant_id varchar(3), id int, v int, note text)
  SERVER ct_srv;
CREATE FOREIGN TABLE td (tenant_id regress_chdom, id int, v int, note text)
  SERVER ct_srv;
CREATE FOREIGN TABLE tk (tenant_id char(3), id int, v int, note text)
  SERVER ct_srv;
-- the native tables: the known tenants' rows, and every row
CREATE TABLE n_tc (LIKE tc);
CREATE TABLE n_tv (LIKE tv);
CREATE TABLE n_td (LIKE td);
CREATE TABLE n_tk (LIKE tk);
INSERT INTO n_tc VALUES ('a', 1, 10, 'one'), ('a', 2, 20, 'two'),
  ('b', 6, 60, 'six');
INSERT INTO n_tv SELECT * FROM n_tc;
INSERT INTO n_td SELECT * FROM n_tc;
INSERT INTO n_tk SELECT * FROM n_tc;
CREATE TABLE all_tc (LIKE tc);
INSERT INTO all_tc VALUES ('a', 1, 10, 'one'), ('a', 2, 20, 'two'),
  ('a  ', 3, 30, 'decoy pad'), (' a', 4, 40, 'decoy lead'),
  ('A', 5, 50, 'decoy case'), ('b', 6, 60, 'six'), ('a  ', 7, 70, 'decoy pad'),
  ('b', 20, 200, 'decoy long pad');
CREATE TABLE all_tv (LIKE tv);
INSERT INTO all_tv SELECT * FROM all_tc;
UPDATE all_tv SET tenant_id = 'a  ' WHERE id IN (3, 7);
UPDATE all_tv SET tenant_id = 'b  ' WHERE id = 20;

-- regress_same(stmt): stmt, where {t} stands for a table, run on each
-- foreign table and on its native table (n_ and the same name); whether the
-- rows it returns are the native ones (as text, sorted), and those rows.
-- A data-modifying stmt runs on both.
CREATE FUNCTION regress_same(stmt text)
RETURNS TABLE (tbl text, same boolean, native text)
LANGUAGE plpgsql AS $$
DECLARE
  want text;
  got text;
BEGIN
  FOREACH tbl IN ARRAY ARRAY['tc', 'tv', 'td', 'tk'] LOOP
    EXECUTE format('WITH r AS (%s) SELECT coalesce(string_agg(r::text, '' '' ORDER BY r::text), ''(none)'') FROM r',
                   replace(stmt, '{t}', 'n_' || tbl)) INTO want;
    EXECUTE format('WITH r AS (%s) SELECT coalesce(string_agg(r::text, '' '' ORDER BY r::text), ''(none)'') FROM r',
                   replace(stmt, '{t}', tbl)) INTO got;
    same := got = want;
    native := want;
    IF NOT same THEN
      native := want || ' | foreign: ' || got;
    END IF;
    RETURN NEXT;
  END LOOP;
END
$$;

-- regress_contents(): for each foreign table, the rows of the known
-- tenants that differ from the native table's (none when the same), read
-- routed, and what the shards hold of the decoys.
CREATE FUNCTION regress_contents()
RETURNS TABLE (tbl text, diff text)
LANGUAGE plpgsql AS $$
BEGIN
  FOREACH tbl IN ARRAY ARRAY['tc', 'tv', 'td', 'tk'] LOOP
    EXECUTE format($q$
      SELECT coalesce(string_agg(d, ' ' ORDER BY d), 'same') FROM (
        (SELECT 'foreign ' || r::text AS d FROM
           (SELECT * FROM %1$I WHERE tenant_id IN ('a', 'b')
            EXCEPT ALL SELECT * FROM %2$I) r)
        UNION ALL
        (SELECT 'native ' || r::text FROM
           (SELECT * FROM %2$I
            EXCEPT ALL SELECT * FROM %1$I WHERE tenant_id IN ('a', 'b')) r)) x
      $q$, tbl, 'n_' || tbl) INTO diff;
    RETURN NEXT;
  END LOOP;
END
$$;

CREATE FUNCTION regress_sqlstate(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE q;
  RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

-- the decoys as the shards hold them: untouched by every statement that
-- names tenant a, and never read by one
\! bash test/fixtures/chartenant.sh peek s1 "SELECT group_concat(quote(tenant_id) || id || '=' || v, ' ') FROM (SELECT * FROM tc WHERE id IN (3, 4, 5, 7) UNION ALL SELECT * FROM tv WHERE id IN (3, 4, 5, 7) UNION ALL SELECT * FROM td WHERE id IN (3, 4, 5, 7) UNION ALL SELECT * FROM tk WHERE id IN (3, 4, 5, 7))"
\set VERBOSITY default

-- ===================================================================
-- Reads: a routed read of tenant a reads the rows stored as 'a' on a's
-- shard, not the decoys; a read over every shard sees every row
-- ===================================================================
EXPLAIN (VERBOSE, COSTS OFF) SELECT id, v FROM tc WHERE tenant_id = 'a';
SELECT id, v FROM tc WHERE tenant_id = 'a' ORDER BY id;
SELECT * FROM regress_same($$SELECT id, v FROM {t} WHERE tenant_id = 'a'$$);
-- the pad typed in, a char(3) value, = ANY, IN, OR
SELECT * FROM regress_same($$SELECT id, v FROM {t} WHERE tenant_id = 'a  '$$);
SELECT * FROM regress_same($$SELECT id, v FROM {t} WHERE tenant_id = 'a'::char(3)$$);
SELECT * FROM regress_same($$SELECT id FROM {t} WHERE tenant_id = ANY ('{a,b}')$$);
SELECT * FROM regress_same($$SELECT id FROM {t} WHERE tenant_id IN ('a', 'b', 'c')$$);
SELECT * FROM regress_same($$SELECT id FROM {t} WHERE tenant_id = 'a' OR tenant_id = 'b'$$);
SELECT * FROM regress_same($$SELECT tenant_id, count(*), sum(v) FROM {t} WHERE tenant_id = 'a' GROUP BY 1$$);
-- a decoy's tenant is one the directory does not know: nothing
SELECT * FROM regress_same($$SELECT id FROM {t} WHERE tenant_id = ' a' OR tenant_id = 'A'$$);
-- a parameter: a generic plan routes at executor start
PREPARE ct_q(char(3)) AS SELECT id FROM tc WHERE tenant_id = $1 ORDER BY id;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (VERBOSE, COSTS OFF) EXECUTE ct_q('a');
EXECUTE ct_q('a');
EXECUTE ct_q('a  ');
RESET plan_cache_mode;
DEALLOCATE ct_q;
-- a join on the tenant column with char(3) values of another relation
SELECT f.id FROM tc f JOIN (VALUES ('a'::char(3)), ('b'), ('A  ')) n(t)
  ON f.tenant_id = n.t ORDER BY 1;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SELECT f.id FROM tc f JOIN (VALUES ('a'::char(3)), ('b'), ('A  ')) n(t)
  ON f.tenant_id = n.t ORDER BY 1;
RESET enable_hashjoin;
RESET enable_mergejoin;
-- over every shard: every row, a decoy as a row of its tenant; char(3)
-- reads 'a  ' as 'a', so the decoys' stored form is shown by the shards
SELECT id, tenant_id, tenant_id::text = 'a' AS reads_as_a FROM tc ORDER BY id;
SELECT id, tenant_id, length(tenant_id) FROM tv ORDER BY id;
SELECT count(*) FROM tk;

-- ===================================================================
-- INSERT and COPY: 'a' is tenant a, stored as 'a'
-- ===================================================================
SELECT * FROM regress_same($$INSERT INTO {t} VALUES ('a', 8, 80, 'ins') RETURNING *$$);
-- the pad typed in is the same char(3) value; in a varchar(3) another one
SELECT regress_sqlstate($$INSERT INTO tc VALUES ('a  ', 9, 90, 'ins pad')$$);
SELECT regress_sqlstate($$INSERT INTO td VALUES ('a  ', 9, 90, 'ins pad')$$);
SELECT regress_sqlstate($$INSERT INTO tk VALUES ('a  ', 9, 90, 'ins pad')$$);
SELECT regress_sqlstate($$INSERT INTO tv VALUES ('a  ', 9, 90, 'ins pad')$$);
INSERT INTO n_tc VALUES ('a  ', 9, 90, 'ins pad');
INSERT INTO n_td VALUES ('a  ', 9, 90, 'ins pad');
INSERT INTO n_tk VALUES ('a  ', 9, 90, 'ins pad');
COPY tc FROM STDIN;
b	10	100	copy
a	11	110	copy
\.
COPY tk FROM STDIN;
b	10	100	copy
a	11	110	copy
\.
COPY td FROM STDIN;
b	10	100	copy
a	11	110	copy
\.
COPY tv FROM STDIN;
b	10	100	copy
a	11	110	copy
\.
INSERT INTO n_tc VALUES ('b', 10, 100, 'copy'), ('a', 11, 110, 'copy');
INSERT INTO n_td VALUES ('b', 10, 100, 'copy'), ('a', 11, 110, 'copy');
INSERT INTO n_tk VALUES ('b', 10, 100, 'copy'), ('a', 11, 110, 'copy');
INSERT INTO n_tv VALUES ('b', 10, 100, 'copy'), ('a', 11, 110, 'copy');
\! bash test/fixtures/chartenant.sh peek s1 "SELECT 'tc', group_concat(quote(tenant_id) || id, ' ') FROM tc WHERE id >= 8 UNION ALL SELECT 'tv', group_concat(quote(tenant_id) || id, ' ') FROM tv WHERE id >= 8 UNION ALL SELECT 'td', group_concat(quote(tenant_id) || id, ' ') FROM td WHERE id >= 8 UNION ALL SELECT 'tk', group_concat(quote(tenant_id) || id, ' ') FROM tk WHERE id >= 8"
\! bash test/fixtures/chartenant.sh peek s2 "SELECT 'tc', group_concat(quote(tenant_id) || id, ' ') FROM tc WHERE id >= 8 UNION ALL SELECT 'tk', group_concat(quote(tenant_id) || id, ' ') FROM tk WHERE id >= 8"
-- a tenant the directory does not know is named without the pad
INSERT INTO tc VALUES ('c', 12, 120, 'unknown');
INSERT INTO td VALUES ('A', 12, 120, 'unknown');
SELECT * FROM regress_contents();

-- ===================================================================
-- UPDATE and DELETE of tenant a: inside the shards, and row by row (a
-- condition PostgreSQL evaluates)
-- ===================================================================
EXPLAIN (VERBOSE, COSTS OFF) UPDATE tc SET v = v + 1 WHERE tenant_id = 'a';
SELECT * FROM regress_same($$UPDATE {t} SET v = v + 1 WHERE tenant_id = 'a' RETURNING id, v$$);
EXPLAIN (VERBOSE, COSTS OFF)
UPDATE tc SET v = v + 1 WHERE tenant_id = 'a' AND note ~ 'o';
SELECT * FROM regress_same($$UPDATE {t} SET v = v + 1 WHERE tenant_id = 'a' AND note ~ 'o' RETURNING id, v$$);
SELECT * FROM regress_same($$UPDATE {t} SET v = v + 100 WHERE tenant_id IN ('a', 'b') AND note ~ 'y' RETURNING id, v$$);
SELECT * FROM regress_same($$UPDATE {t} SET note = note || '!' WHERE tenant_id = 'a  ' AND note ~ '^t' RETURNING id, note$$);
SELECT * FROM regress_contents();
\! bash test/fixtures/chartenant.sh peek s1 "SELECT group_concat(quote(tenant_id) || id || '=' || v, ' ') FROM (SELECT * FROM tc WHERE id IN (3, 4, 5, 7) UNION ALL SELECT * FROM tv WHERE id IN (3, 4, 5, 7) UNION ALL SELECT * FROM td WHERE id IN (3, 4, 5, 7) UNION ALL SELECT * FROM tk WHERE id IN (3, 4, 5, 7))"
\! bash test/fixtures/chartenant.sh peek s2 "SELECT group_concat(quote(tenant_id) || id || '=' || v, ' ') FROM (SELECT * FROM tc WHERE id IN (7, 20) UNION ALL SELECT * FROM tv WHERE id IN (7, 20) UNION ALL SELECT * FROM tk WHERE id IN (7, 20))"
SELECT * FROM regress_same($$DELETE FROM {t} WHERE tenant_id = 'a' AND note ~ 'copy' RETURNING id$$);
SELECT * FROM regress_same($$DELETE FROM {t} WHERE tenant_id = 'a' AND id = 9 RETURNING id$$);
SELECT * FROM regress_contents();
\! bash test/fixtures/chartenant.sh peek s1 "SELECT group_concat(quote(tenant_id) || id || '=' || v, ' ') FROM (SELECT * FROM tc WHERE id IN (3, 4, 5, 7) UNION ALL SELECT * FROM tv WHERE id IN (3, 4, 5, 7) UNION ALL SELECT * FROM td WHERE id IN (3, 4, 5, 7) UNION ALL SELECT * FROM tk WHERE id IN (3, 4, 5, 7))"

-- ===================================================================
-- A tenant-scoped login (tenants 'a') with a char(3) tenant column
-- ===================================================================
CREATE ROLE regress_ct_a;
GRANT SELECT, INSERT, UPDATE, DELETE ON tc, n_tc TO regress_ct_a;
CREATE USER MAPPING FOR regress_ct_a SERVER ct_srv OPTIONS (tenants 'a');
SET ROLE regress_ct_a;
SELECT id, v FROM tc ORDER BY id;
SELECT count(*) FROM tc WHERE tenant_id = 'a  ';
INSERT INTO tc VALUES ('a', 13, 130, 'scoped') RETURNING *;
UPDATE tc SET v = v + 1 WHERE note ~ 'scoped|one' RETURNING id, v;
UPDATE tc SET v = v + 1 WHERE id = 13 RETURNING id, v;
DELETE FROM tc WHERE note ~ 'scoped' RETURNING id;
INSERT INTO tc VALUES ('b', 14, 140, 'scoped');
RESET ROLE;
UPDATE n_tc SET v = v + 1 WHERE id = 1;
SELECT * FROM regress_contents();
DROP USER MAPPING FOR regress_ct_a SERVER ct_srv;
REVOKE ALL ON tc, n_tc FROM regress_ct_a;
DROP ROLE regress_ct_a;

-- ===================================================================
-- Over every shard, the decoys are changed where they are, as rows of
-- their tenants: row by row as inside the shards, as on a native table
-- of every row (all_tc, all_tv)
-- ===================================================================
DELETE FROM tc WHERE id >= 8 AND id < 20;
DELETE FROM tv WHERE id >= 8 AND id < 20;
UPDATE all_tc a SET v = n.v, note = n.note FROM n_tc n WHERE a.id = n.id;
UPDATE all_tv a SET v = n.v, note = n.note FROM n_tv n WHERE a.id = n.id;
-- regress_all(): the rows that differ between tc and all_tc, tv and all_tv
CREATE FUNCTION regress_all()
RETURNS TABLE (tbl text, diff text)
LANGUAGE plpgsql AS $$
BEGIN
  FOREACH tbl IN ARRAY ARRAY['tc', 'tv'] LOOP
    EXECUTE format($q$
      SELECT coalesce(string_agg(d, ' ' ORDER BY d), 'same') FROM (
        (SELECT 'foreign ' || r::text AS d FROM
           (SELECT * FROM %1$I EXCEPT ALL SELECT * FROM %2$I) r)
        UNION ALL
        (SELECT 'native ' || r::text FROM
           (SELECT * FROM %2$I EXCEPT ALL SELECT * FROM %1$I) r)) x
      $q$, tbl, 'all_' || tbl) INTO diff;
    RETURN NEXT;
  END LOOP;
END
$$;
SELECT * FROM regress_all();
EXPLAIN (VERBOSE, COSTS OFF) UPDATE tc SET v = v + 1000 WHERE note ~ '.';
UPDATE tc SET v = v + 1000 WHERE note ~ '.' RETURNING id, v;
UPDATE all_tc SET v = v + 1000 WHERE note ~ '.';
EXPLAIN (VERBOSE, COSTS OFF) UPDATE tv SET v = v + 1000 WHERE note ~ '.';
UPDATE tv SET v = v + 1000 WHERE note ~ '.' RETURNING id, v;
UPDATE all_tv SET v = v + 1000 WHERE note ~ '.';
SELECT * FROM regress_all();
UPDATE tc SET v = v - 1000 RETURNING id, v;
UPDATE all_tc SET v = v - 1000;
UPDATE tv SET v = v - 1000 RETURNING id, v;
UPDATE all_tv SET v = v - 1000;
SELECT * FROM regress_all();
-- a WITHOUT ROWID table, each row found again by the key the scan kept
WITH u AS (UPDATE tk SET v = v + 1 WHERE note ~ 'decoy' RETURNING id, v)
SELECT * FROM u ORDER BY id;
-- inside the shards, and row by row
EXPLAIN (VERBOSE, COSTS OFF) DELETE FROM tc WHERE id = 5;
DELETE FROM tc WHERE id = 5 RETURNING id;
DELETE FROM tc WHERE note ~ 'decoy (lead|long)' RETURNING id;
DELETE FROM all_tc WHERE id = 5 OR note ~ 'decoy (lead|long)';
DELETE FROM tv WHERE note ~ 'decoy (case|long)' RETURNING id;
DELETE FROM all_tv WHERE note ~ 'decoy (case|long)';
SELECT * FROM regress_all();
\! bash test/fixtures/chartenant.sh peek s1 "SELECT 'tc', group_concat(quote(tenant_id) || id || '=' || v, ' ') FROM tc UNION ALL SELECT 'tv', group_concat(quote(tenant_id) || id || '=' || v, ' ') FROM tv UNION ALL SELECT 'tk', group_concat(quote(tenant_id) || id || '=' || v, ' ') FROM tk"
\! bash test/fixtures/chartenant.sh peek s2 "SELECT 'tc', group_concat(quote(tenant_id) || id || '=' || v, ' ') FROM tc UNION ALL SELECT 'tv', group_concat(quote(tenant_id) || id || '=' || v, ' ') FROM tv UNION ALL SELECT 'tk', group_concat(quote(tenant_id) || id || '=' || v, ' ') FROM tk"

DROP SERVER ct_srv CASCADE;
DROP TABLE n_tc, n_tv, n_td, n_tk, all_tc, all_tv;
DROP DOMAIN regress_chdom;
DROP FUNCTION regress_same(text), regress_contents(), regress_all(),
  regress_sqlstate(text);
