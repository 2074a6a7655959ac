--
-- Bucket forms: the grouping keys BI tools write around time buckets
-- (Metabase's casts of extract, its Sunday weeks and report time zone,
-- Grafana's $__timeGroup, Superset's minute grains) and numeric bins run
-- in the shards: each shard groups by a stand-in of the column (the time
-- on a grid, the date, the first integer of a bin, the stored value) and
-- the merge computes the key of each group's stand-in.  Every answer is
-- compared with a native table of the same rows, in UTC and in another
-- TimeZone.  The rows are those of the time pushdown suite (every stored
-- form the wrapper reads, NULLs, years 1 and 9999): see
-- test/fixtures/timepush.sh.
--
\! bash test/fixtures/timepush.sh
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
RESET client_min_messages;
CREATE SERVER bucketforms_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/timepush/directory.db');
CREATE FOREIGN TABLE items (
  tenant_id text, id int, ts timestamp, tz timestamptz OPTIONS (column 'ts'),
  tt timestamp, d date, n int
) SERVER bucketforms_srv OPTIONS (table 'ev');
SET DateStyle = 'ISO, MDY';
SET TimeZone = 'UTC';
CREATE TABLE items_native AS SELECT * FROM items;
\i test/regress_compare.sql

-- Whether the shards group by a key (the grouping is pushed).
CREATE FUNCTION regress_pushed(query text) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  line text;
  pushed boolean := false;
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (VERBOSE, COSTS OFF) ' || replace(query, '{t}', 'items')
  LOOP
    IF line LIKE '%Pushdown: partial aggregates%' THEN
      pushed := true;
    END IF;
  END LOOP;
  RETURN pushed;
END
$$;

-- The forms, one per row: the key, the column it reads.
CREATE TABLE regress_forms (k text, col text);
INSERT INTO regress_forms VALUES
  -- Metabase: extract cast to integer
  ('CAST(extract(minute FROM {c}) AS integer)', 'ts'),
  ('CAST(extract(hour FROM {c}) AS integer)', 'ts'),
  ('CAST(extract(day FROM {c}) AS integer)', 'ts'),
  ('CAST(extract(doy FROM {c}) AS integer)', 'ts'),
  ('CAST(extract(week FROM {c}) AS integer)', 'ts'),
  ('CAST(extract(month FROM {c}) AS integer)', 'ts'),
  ('CAST(extract(quarter FROM {c}) AS integer)', 'ts'),
  ('CAST(extract(year FROM {c}) AS integer)', 'ts'),
  ('(CAST(extract(dow FROM {c}) AS integer) + 1)', 'ts'),
  ('CASE WHEN (((CAST(extract(dow FROM {c}) AS integer) + 1) + 1) % 7) = 0 THEN 7 ELSE (((CAST(extract(dow FROM {c}) AS integer) + 1) + 1) % 7) END', 'ts'),
  ('CAST(extract(isodow FROM {c}) AS integer)', 'ts'),
  -- Metabase: the week starting on Sunday
  ('(date_trunc(''week'', ({c} + INTERVAL ''1 day'')) + INTERVAL ''-1 day'')', 'ts'),
  ('CAST((date_trunc(''week'', ({c} + INTERVAL ''1 day'')) + INTERVAL ''-1 day'') AS date)', 'ts'),
  -- Metabase: the report time zone
  ('date_trunc(''day'', timezone(''America/New_York'', timezone(''UTC'', {c})))', 'ts'),
  ('date_trunc(''hour'', timezone(''Asia/Kolkata'', timezone(''UTC'', {c})))', 'ts'),
  ('CAST(extract(hour FROM timezone(''Asia/Kolkata'', timezone(''UTC'', {c}))) AS integer)', 'ts'),
  ('timezone(''America/New_York'', timezone(''UTC'', {c}))', 'ts'),
  -- Grafana's $__timeGroup
  ('floor(extract(epoch from {c})/300)*300', 'ts'),
  ('floor(extract(epoch from {c})/3600)*3600', 'ts'),
  ('floor(extract(epoch from {c})/604800)*604800', 'ts'),
  ('floor(extract(epoch from {c})/7)*7', 'ts'),
  -- Superset's minute grains
  ('date_trunc(''hour'', {c}) + INTERVAL ''5 minute'' * floor(extract(minute FROM {c}) / 5)', 'ts'),
  ('date_trunc(''hour'', {c}) + INTERVAL ''15 minute'' * floor(extract(minute FROM {c}) / 15)', 'ts'),
  ('date_trunc(''hour'', {c}) + INTERVAL ''30 minute'' * floor(extract(minute FROM {c}) / 30)', 'ts'),
  -- numeric bins
  ('floor(({c} / 5.0)) * 5.0', 'n'),
  ('floor((({c} - 1.0) / 4)) * 4 + 1.0', 'n');
-- timestamptz and date columns read the same forms, text columns too
INSERT INTO regress_forms
  SELECT k, c FROM regress_forms, unnest(ARRAY['tz', 'tt', 'd']) c
  WHERE col = 'ts' AND NOT (c = 'd' AND (k LIKE '%minute FROM%' OR k LIKE '%hour FROM%'));
INSERT INTO regress_forms VALUES
  ('CAST((CAST(date_trunc(''week'', CAST(({c} + INTERVAL ''1 day'') AS date)) AS date) + INTERVAL ''-1 day'') AS date)', 'd'),
  ('date_trunc(''day'', timezone(''Asia/Kolkata'', {c}))', 'tz'),
  ('CAST(extract(hour FROM timezone(''Australia/Lord_Howe'', {c})) AS integer)', 'tz');

-- ===================================================================
-- The SQL each shard runs: a stand-in of the column
-- ===================================================================
EXPLAIN (VERBOSE, COSTS OFF)
SELECT CAST(extract(hour FROM ts) AS integer), count(*) FROM items GROUP BY 1;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT (date_trunc('week', (tz + INTERVAL '1 day')) + INTERVAL '-1 day'), count(*)
  FROM items GROUP BY 1;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT floor(extract(epoch from ts)/300)*300 AS "time", count(*) FROM items GROUP BY 1;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT date_trunc('hour', ts) + INTERVAL '15 minute' * floor(extract(minute FROM ts) / 15),
       sum(n) FROM items GROUP BY 1;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT floor((n / 5000.0)) * 5000.0, count(*) FROM items GROUP BY 1;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT date_trunc('day', timezone('America/New_York', timezone('UTC', ts))), count(*)
  FROM items GROUP BY 1;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT CAST(extract(dow FROM d) AS integer), count(*) FROM items GROUP BY 1;

-- ===================================================================
-- Every form on every column: pushed, and the native answer
-- ===================================================================
SELECT col, k FROM regress_forms
  WHERE NOT regress_pushed(format('SELECT %s, count(*) FROM {t} GROUP BY 1',
                                  replace(k, '{c}', col)))
  ORDER BY 1, 2;
SELECT col, k FROM regress_forms
  WHERE NOT (SELECT bool_and(same) FROM regress_same(
    format('SELECT %s AS key, count(*), sum(n), min(id), max(id) FROM {t} GROUP BY 1',
           replace(k, '{c}', col))))
  ORDER BY 1, 2;
-- in another TimeZone (daylight saving time, half hours)
SET TimeZone = 'America/New_York';
SELECT col, k FROM regress_forms
  WHERE NOT (SELECT bool_and(same) FROM regress_same(
    format('SELECT %s AS key, count(*), sum(n), min(id), max(id) FROM {t} GROUP BY 1',
           replace(k, '{c}', col))))
  ORDER BY 1, 2;
SET TimeZone = 'Australia/Lord_Howe';
SELECT col, k FROM regress_forms
  WHERE NOT (SELECT bool_and(same) FROM regress_same(
    format('SELECT %s AS key, count(*), sum(n), min(id), max(id) FROM {t} GROUP BY 1',
           replace(k, '{c}', col))))
  ORDER BY 1, 2;
-- grouped by SQLite instead of the reading threads
SET sqlite_shard_fdw.thread_aggregation = off;
SELECT col, k FROM regress_forms
  WHERE NOT (SELECT bool_and(same) FROM regress_same(
    format('SELECT %s AS key, count(*), sum(n), min(id), max(id) FROM {t} GROUP BY 1',
           replace(k, '{c}', col))))
  ORDER BY 1, 2;
RESET sqlite_shard_fdw.thread_aggregation;
-- with a time range (Grafana's $__timeFilter), and an empty one
SELECT col, k FROM regress_forms
  WHERE NOT (SELECT bool_and(same) FROM regress_same(
    format('SELECT %s AS key, count(*) FROM {t} WHERE ts BETWEEN ''2024-03-10T05:00:00Z'' AND ''2024-03-11T06:00:00Z'' GROUP BY 1',
           replace(k, '{c}', col))))
  ORDER BY 1, 2;
SELECT col, k FROM regress_forms
  WHERE NOT (SELECT bool_and(same) FROM regress_same(
    format('SELECT %s AS key, count(*) FROM {t} WHERE ts BETWEEN ''2030-01-01T00:00:00Z'' AND ''2030-01-02T00:00:00Z'' GROUP BY 1',
           replace(k, '{c}', col))))
  ORDER BY 1, 2;
RESET TimeZone;

-- Some answers in full, in New York time
SET TimeZone = 'America/New_York';
SELECT * FROM regress_same('SELECT (date_trunc(''week'', (tz + INTERVAL ''1 day'')) + INTERVAL ''-1 day'') AS w, count(*) FROM {t} GROUP BY 1');
SELECT * FROM regress_same('SELECT CAST(extract(hour FROM tz) AS integer) AS h, count(*) FROM {t} WHERE tz >= ''2024-03-10'' AND tz < ''2024-03-12'' GROUP BY 1');
SELECT * FROM regress_same('SELECT floor(extract(epoch from ts)/3600)*3600 AS "time", count(*) FROM {t} GROUP BY 1');
SELECT * FROM regress_same('SELECT floor((n / 5.0)) * 5.0 AS bin, count(*) FROM {t} GROUP BY 1');
RESET TimeZone;

-- over a join the shards run
SELECT * FROM regress_same('SELECT CAST(extract(hour FROM a.tz) AS integer) AS h, count(*), sum(b.n) FROM {t} a JOIN {t} b ON a.tenant_id = b.tenant_id AND a.id = b.id GROUP BY 1');
SELECT regress_pushed('SELECT CAST(extract(hour FROM a.tz) AS integer) AS h, count(*), sum(b.n) FROM {t} a JOIN {t} b ON a.tenant_id = b.tenant_id AND a.id = b.id GROUP BY 1');
-- a generic plan: the grid is bound, and the key computed, in the
-- TimeZone of each execution (the native answers after the foreign ones)
SET plan_cache_mode = force_generic_plan;
PREPARE regress_week(int) AS
  SELECT (date_trunc('week', (tz + INTERVAL '1 day')) + INTERVAL '-1 day') AS w,
         count(*) FROM items WHERE n > $1 GROUP BY 1 ORDER BY 1;
PREPARE regress_week_native(int) AS
  SELECT (date_trunc('week', (tz + INTERVAL '1 day')) + INTERVAL '-1 day') AS w,
         count(*) FROM items_native WHERE n > $1 GROUP BY 1 ORDER BY 1;
SET TimeZone = 'Pacific/Kiritimati';
EXECUTE regress_week(4);
EXECUTE regress_week_native(4);
SET TimeZone = 'Pacific/Pago_Pago';
EXECUTE regress_week(4);
EXECUTE regress_week_native(4);
EXPLAIN (COSTS OFF) EXECUTE regress_week(4);
DEALLOCATE regress_week;
DEALLOCATE regress_week_native;
RESET plan_cache_mode;
RESET TimeZone;

-- ===================================================================
-- Grafana's filters: a time range, and epoch seconds of a time
-- ===================================================================
-- $__timeFilter: a time range as any
EXPLAIN (VERBOSE, COSTS OFF)
SELECT floor(extract(epoch from ts)/300)*300 AS "time", count(*) FROM items
  WHERE ts BETWEEN '2024-03-10T05:00:00Z' AND '2024-03-11T06:00:00Z' GROUP BY 1;
-- CAST(extract(epoch FROM x) AS bigint) compared with integers: the time
-- compared with the first and last times of each integer (PostgreSQL's
-- cast rounds half away from zero), with its index range
EXPLAIN (VERBOSE, COSTS OFF)
SELECT id FROM items
  WHERE extract(epoch from ts)::bigint BETWEEN 1710054000 AND 1710115200;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT id FROM items WHERE extract(epoch from tz)::bigint >= $$1710054000$$::int;
CREATE TABLE regress_epoch_conds (cond text);
INSERT INTO regress_epoch_conds
  SELECT format('extract(epoch from %s)::bigint %s %s', c, op, v)
  FROM unnest(ARRAY['ts', 'tz', 'tt']) c,
       unnest(ARRAY['=', '<>', '<', '<=', '>', '>=']) op,
       unnest(ARRAY['1710054000', '1710054001', '1710115200', '-86400',
                    '0', '-1', '1', '253402300799', '9223372036854775807',
                    '(-9223372036854775807)', '(-3000)::smallint',
                    '32767::smallint', '1710115199::int']) v
  WHERE v NOT LIKE '%smallint' OR op = '<';
INSERT INTO regress_epoch_conds VALUES
  ('extract(epoch from ts)::bigint BETWEEN 1710054000 AND 1710115200'),
  ('CAST(extract(epoch FROM tz) AS bigint) BETWEEN -86401 AND 0'),
  ('extract(epoch from tt)::bigint >= 1710054000 AND extract(epoch from tt)::bigint <= 1710054000'),
  ('extract(epoch from ts)::bigint BETWEEN 1 AND 0');
-- pushed (no Filter in the plan), and the rows of the native table, in
-- UTC and in New York
CREATE FUNCTION regress_filtered(cond text) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  line text;
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (VERBOSE, COSTS OFF) SELECT id FROM items WHERE ' || cond
  LOOP
    IF line LIKE '%Filter:%' THEN
      RETURN true;
    END IF;
  END LOOP;
  RETURN false;
END
$$;
SELECT cond FROM regress_epoch_conds
  WHERE regress_filtered(cond)
     OR NOT (SELECT bool_and(same) FROM regress_same(
               format('SELECT id FROM {t} WHERE %s', cond)))
  ORDER BY 1;
SET TimeZone = 'America/New_York';
SELECT cond FROM regress_epoch_conds
  WHERE NOT (SELECT bool_and(same) FROM regress_same(
               format('SELECT id FROM {t} WHERE %s', cond)))
  ORDER BY 1;
RESET TimeZone;
SELECT * FROM regress_same('SELECT id FROM {t} WHERE extract(epoch from ts)::bigint BETWEEN 1710054000 AND 1710115200');
-- extract(epoch FROM x) itself, a numeric with the microseconds as a
-- fraction, compared with numerics (Grafana's $__unixEpochFilter on a
-- subquery's epoch column): the time compared with the first and last
-- times of the numeric, in every TimeZone alike; fractions between two
-- microseconds, infinities, NaN (above them) and NULL
EXPLAIN (VERBOSE, COSTS OFF)
SELECT id FROM items WHERE extract(epoch from ts) BETWEEN 1710054000 AND 1710115200;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT floor(("time")/3600)*3600 AS "time", count(*) AS "orders"
  FROM (SELECT extract(epoch from ts) AS "time", n FROM items) t
  WHERE "time" >= 1710054000 AND "time" <= 1710115200 GROUP BY 1 ORDER BY 1;
TRUNCATE regress_epoch_conds;
INSERT INTO regress_epoch_conds
  SELECT format('extract(epoch from %s) %s %s', c, op, v)
  FROM unnest(ARRAY['ts', 'tz', 'tt']) c,
       unnest(ARRAY['=', '<>', '<', '<=', '>', '>=']) op,
       unnest(ARRAY['1710054000', '1710054000.5', '1710054000.4999995',
                    '1710055800.123456', '1710055800.1234565',
                    '1710115200', '1710115199.999999', '1710115199.9999996',
                    '-86400.25', '0', '-62135596800', '253402300799',
                    '$$NaN$$::numeric', '$$Infinity$$::numeric',
                    '$$-Infinity$$::numeric']) v;
INSERT INTO regress_epoch_conds VALUES
  ('extract(epoch from ts) BETWEEN 1710054000 AND 1710115200'),
  ('extract(epoch from tz) BETWEEN 1710054000.5 AND 1710055800.123456'),
  ('extract(epoch from tt) >= 1710054000 AND extract(epoch from tt) < 1710115200.5'),
  ('EXTRACT(EPOCH FROM ts) BETWEEN 1 AND 0');
SELECT cond FROM regress_epoch_conds
  WHERE regress_filtered(cond)
     OR NOT (SELECT bool_and(same) FROM regress_same(
               format('SELECT id FROM {t} WHERE %s', cond)))
  ORDER BY 1;
SET TimeZone = 'America/New_York';
SELECT cond FROM regress_epoch_conds
  WHERE NOT (SELECT bool_and(same) FROM regress_same(
               format('SELECT id FROM {t} WHERE %s', cond)))
  ORDER BY 1;
SET TimeZone = 'Asia/Kolkata';
SELECT cond FROM regress_epoch_conds
  WHERE NOT (SELECT bool_and(same) FROM regress_same(
               format('SELECT id FROM {t} WHERE %s', cond)))
  ORDER BY 1;
SELECT * FROM regress_same('SELECT floor(("time")/3600)*3600 AS "time", count(*) FROM (SELECT extract(epoch from tz) AS "time" FROM {t}) t WHERE "time" >= 1710054000 AND "time" <= 1710115200 GROUP BY 1');
RESET TimeZone;
SELECT * FROM regress_same('SELECT floor(("time")/3600)*3600 AS "time", count(*) FROM (SELECT extract(epoch from ts) AS "time" FROM {t}) t WHERE "time" >= 1710054000 AND "time" <= 1710115200 GROUP BY 1');
-- a parameter of a generic plan: bound when the scan starts
SET plan_cache_mode = force_generic_plan;
PREPARE regress_epoch(numeric) AS
  SELECT id FROM items WHERE extract(epoch from ts) >= $1 ORDER BY id;
EXPLAIN (VERBOSE, COSTS OFF) EXECUTE regress_epoch(1710054000.5);
EXECUTE regress_epoch(1710054000.5);
EXECUTE regress_epoch(1710115199.9999996);
EXECUTE regress_epoch(NULL);
DEALLOCATE regress_epoch;
RESET plan_cache_mode;
-- not the epoch of a date, nor against a float: PostgreSQL filters
EXPLAIN (VERBOSE, COSTS OFF)
SELECT id FROM items WHERE extract(epoch from d) >= 1710054000;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT id FROM items WHERE extract(epoch from ts)::float8 >= 1710054000;
DROP TABLE regress_epoch_conds;
DROP FUNCTION regress_filtered(text);

-- ===================================================================
-- Not pushed: keys the stand-ins do not decide
-- ===================================================================
-- a second of a time, an epoch not floored, a grid of a fraction of a
-- second, a shift by less than the unit, two zones in one key, a
-- volatile function
SELECT k, regress_pushed(format('SELECT %s, count(*) FROM {t} GROUP BY 1', k))
FROM (VALUES
  ('CAST(extract(second FROM ts) AS integer)'),
  ('extract(epoch from ts)'),
  ('floor(extract(epoch from ts)/0.5)*0.5'),
  ('date_trunc(''day'', ts + INTERVAL ''90 minutes'')'),
  ('date_trunc(''day'', tz + INTERVAL ''1 hour'')'),
  ('date_trunc(''day'', timezone(''Asia/Kolkata'', tz)) - date_trunc(''day'', tz)::timestamp'),
  ('floor((n / 2.5)) * 2.5'),
  ('floor(extract(hour FROM ts) + random())')) v(k)
ORDER BY 1;

DROP FUNCTION regress_pushed(text);
DROP TABLE regress_forms, items_native;
DROP FUNCTION regress_same(text, boolean);
DROP SERVER bucketforms_srv CASCADE;
