--
-- Time pushdown: conditions on timestamp, timestamptz and date columns run
-- in the shards as an exact check plus an index range on the stored
-- column, with values of any time type (converted as PostgreSQL compares
-- them, in the session's TimeZone), and SQLite uses the index.  Every
-- condition is checked against a native table holding the rows as the
-- wrapper reads them.  See test/fixtures/timepush.sh for the data.
--
\! bash test/fixtures/timepush.sh
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
RESET client_min_messages;
CREATE SERVER timepush_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/timepush/directory.db');
CREATE FOREIGN TABLE ev (
  tenant_id text, id int, ts timestamp, tz timestamptz OPTIONS (column 'ts'),
  tt timestamp, d date, n int
) SERVER timepush_srv;
SET TimeZone = 'America/New_York';
SET DateStyle = 'ISO, MDY';
-- the rows as the wrapper reads them, with no condition pushed
CREATE TABLE ev_native AS SELECT * FROM ev;
SELECT * FROM ev_native ORDER BY id;

-- The ids a condition selects from the foreign table, whether the foreign
-- and the native table return the same rows (as multisets), and whether
-- the shards evaluate the whole condition (no Filter in the plan).
CREATE FUNCTION regress_check(cond text, OUT ids int[],
                              OUT same_as_native boolean, OUT pushed boolean)
LANGUAGE plpgsql AS $$
DECLARE
  line text;
BEGIN
  EXECUTE format('SELECT array_agg(id ORDER BY id) FROM ev WHERE %s', cond)
    INTO ids;
  EXECUTE format($q$
    SELECT NOT EXISTS (
      (SELECT fr::text FROM ev fr WHERE %1$s
       EXCEPT ALL SELECT nr::text FROM ev_native nr WHERE %1$s)
      UNION ALL
      (SELECT nr::text FROM ev_native nr WHERE %1$s
       EXCEPT ALL SELECT fr::text FROM ev fr WHERE %1$s))$q$, cond)
    INTO same_as_native;
  pushed := true;
  FOR line IN EXECUTE format('EXPLAIN (VERBOSE, COSTS OFF) SELECT id FROM ev WHERE %s', cond)
  LOOP
    IF line LIKE '%Filter:%' THEN
      pushed := false;
    END IF;
  END LOOP;
END
$$;

-- ===================================================================
-- The SQL: an exact check and an index range of the stored column
-- ===================================================================
-- numbers (Unix seconds) sort before text in SQLite: the range has a
-- numeric part and a text part, each two seconds / fifteen hours and a
-- minute wider than the bound, for rounding and offsets
EXPLAIN (VERBOSE, COSTS OFF)
SELECT id FROM ev WHERE ts >= '2024-03-10 07:00';
-- both bounds of one column make one range (max() and min() of bounds
-- from several conditions, here of two foreign columns of one SQLite
-- column); the exact checks run last, only where the others hold
EXPLAIN (VERBOSE, COSTS OFF)
SELECT id FROM ev WHERE ts >= '2024-03-10' AND ts < '2024-03-11' AND tz < '2024-03-12'::date AND n > 2;
-- BETWEEN, =, IN, <> (no range for <>, nor under OR or NOT)
EXPLAIN (VERBOSE, COSTS OFF)
SELECT id FROM ev WHERE ts BETWEEN '2024-03-10' AND '2024-03-11';
EXPLAIN (VERBOSE, COSTS OFF)
SELECT id FROM ev WHERE ts = '2024-03-11' AND d IN ('2024-03-10', '2024-03-12');
EXPLAIN (VERBOSE, COSTS OFF)
SELECT id FROM ev WHERE ts <> '2024-03-11' AND (tt < '2024-03-10' OR tt > '2024-03-11');
-- a timestamptz value against a timestamp column: its first and last
-- timestamp, in the session's TimeZone, computed when the scan starts
EXPLAIN (VERBOSE, COSTS OFF)
SELECT id FROM ev WHERE ts >= now() - interval '30 days';
EXPLAIN (VERBOSE, COSTS OFF)
SELECT id FROM ev WHERE ts = '2024-03-10 03:00-04'::timestamptz;
-- the date of a timestamp, against a timestamp
EXPLAIN (VERBOSE, COSTS OFF)
SELECT id FROM ev WHERE CAST(ts AS date) > '2024-03-10 12:00'::timestamp;

-- ===================================================================
-- SQLite's plan of that SQL uses the index
-- ===================================================================
\o /tmp/ssfdw_regress/timepush/explain.txt
EXPLAIN (VERBOSE, COSTS OFF)
SELECT id FROM ev WHERE ts >= '2024-03-10' AND ts < '2024-03-11';
\o
\! python3 test/fixtures/sqlite_plan.py /tmp/ssfdw_regress/timepush/shards/t1.db < /tmp/ssfdw_regress/timepush/explain.txt
\o /tmp/ssfdw_regress/timepush/explain.txt
EXPLAIN (VERBOSE, COSTS OFF)
SELECT id FROM ev WHERE tt >= now() - interval '30 days';
\o
\! python3 test/fixtures/sqlite_plan.py /tmp/ssfdw_regress/timepush/shards/t1.db < /tmp/ssfdw_regress/timepush/explain.txt
\o /tmp/ssfdw_regress/timepush/explain.txt
EXPLAIN (VERBOSE, COSTS OFF)
SELECT id FROM ev WHERE d < current_date - 7;
\o
\! python3 test/fixtures/sqlite_plan.py /tmp/ssfdw_regress/timepush/shards/t1.db < /tmp/ssfdw_regress/timepush/explain.txt
\o /tmp/ssfdw_regress/timepush/explain.txt
EXPLAIN (VERBOSE, COSTS OFF)
SELECT count(*) FROM ev WHERE ts >= '2024-01-01' AND tenant_id = 'b';
\o
\! python3 test/fixtures/sqlite_plan.py /tmp/ssfdw_regress/timepush/shards/t2.db < /tmp/ssfdw_regress/timepush/explain.txt

-- ===================================================================
-- Every form gives the native table's rows, and runs in the shards
-- ===================================================================
CREATE TABLE regress_conds (n serial, cond text);
INSERT INTO regress_conds (cond) VALUES
  -- timestamp against timestamp
  ($$ts >= '2024-03-10 07:00'$$), ($$ts > '2024-03-10 07:00'$$),
  ($$ts < '2024-03-11'$$), ($$ts <= '2024-03-10 23:59:59.999999'$$),
  ($$ts = '2024-03-11 00:00'$$), ($$ts <> '2024-03-11 00:00'$$),
  ($$ts BETWEEN '2024-03-10' AND '2024-03-11'$$),
  ($$ts NOT BETWEEN '2024-03-10' AND '2024-03-11'$$),
  ($$ts IN ('2024-03-11 00:00', '2024-03-10 07:00', NULL)$$),
  ($$ts = ANY ('{2024-03-10 05:00, 2024-03-11 05:00}')$$),
  ($$'2024-03-10 07:00' < ts$$),
  ($$ts >= '0001-01-01' AND ts <= '9999-12-31 23:59:59'$$),
  ($$ts > '-infinity'$$), ($$ts < 'infinity'$$), ($$ts > 'infinity'$$),
  ($$ts >= '1969-12-31' AND ts < '1970-01-02'$$),
  -- timestamp against timestamptz and date, in New York's time
  ($$ts >= '2024-03-10 03:00-04'::timestamptz$$),
  ($$ts < '2024-03-10 03:00 America/New_York'::timestamptz$$),
  ($$ts = '2024-03-10 07:00+00'::timestamptz$$),
  ($$ts <> '2024-03-10 07:00+00'::timestamptz$$),
  ($$ts > '2024-03-10 07:00+00'::timestamptz$$),
  ($$ts <= '2024-03-10 07:00+00'::timestamptz$$),
  ($$ts BETWEEN '2024-03-10 00:00+00'::timestamptz AND '2024-03-11'::date$$),
  ($$ts >= '2024-03-11'::date$$), ($$ts < '2024-03-11'::date$$),
  ($$ts < 'infinity'::timestamptz$$), ($$ts > '-infinity'::date$$),
  -- values computed once per statement
  ($$ts >= now() - interval '100000 days'$$),
  ($$ts >= '2024-03-11'::timestamptz - interval '1 day'$$),
  ($$ts < to_timestamp(1710054000)$$),
  ($$ts <= to_timestamp(1710054000.5)$$),
  ($$ts >= current_date - 100000$$),
  ($$ts < date_trunc('month', '2024-03-20'::timestamptz)$$),
  -- timestamptz against timestamp (local times: 02:30 does not exist on
  -- 2024-03-10, 01:30 happens twice on 2024-11-03) and date
  ($$tz >= '2024-03-10 03:00'::timestamp$$),
  ($$tz = '2024-03-10 02:30'::timestamp$$),
  ($$tz >= '2024-03-10 02:30'::timestamp$$),
  ($$tz BETWEEN '2024-11-03 01:00'::timestamp AND '2024-11-03 01:59'::timestamp$$),
  ($$tz > '2024-11-03 01:30'::timestamp$$),
  ($$tz < '2024-03-10'::date$$), ($$tz >= '2024-03-11'::date$$),
  ($$tz = '2024-03-10 07:00+00'$$),
  ($$tz >= now() - interval '100000 days'$$),
  -- a TEXT column
  ($$tt >= '2024-03-10 12:00'$$), ($$tt < '2024-03-10 07:00'::timestamptz$$),
  ($$tt BETWEEN '2024-03-10' AND '2024-03-11'$$),
  ($$tt IN ('2024-03-11 00:00', '2024-03-09 00:00')$$),
  -- a date column against dates, timestamps and timestamptz
  ($$d >= '2024-03-10'$$), ($$d < '2024-03-11'$$), ($$d = '2024-03-10'$$),
  ($$d IN ('2024-03-10', '2024-03-12')$$),
  ($$d >= '2024-03-10 12:00'::timestamp$$),
  ($$d > '2024-03-10 12:00'::timestamp$$),
  ($$d = '2024-03-10 00:00'::timestamp$$),
  ($$d = '2024-03-10 00:01'::timestamp$$),
  ($$d <= '2024-03-10 12:00'::timestamp$$),
  ($$d < '2024-03-10 05:00+00'::timestamptz$$),
  ($$d <= '2024-03-10'::timestamptz$$),
  ($$d >= '2024-03-10 00:00-04'::timestamptz$$),
  ($$d < current_date - 7$$), ($$d < 'infinity'::timestamp$$),
  ($$d >= '0001-01-01' AND d <= '9999-12-31'$$),
  -- the date of a timestamp
  ($$ts::date = '2024-03-10'$$),
  ($$ts::date >= '2024-03-10 12:00'::timestamp$$),
  ($$ts::date < '2024-03-11 00:00'::timestamptz$$),
  -- with other conditions, routed and not
  ($$ts >= '2024-03-10' AND ts < '2024-03-11' AND n > 2$$),
  ($$ts >= '2024-03-10' AND tz < '2024-03-12'::date AND d <= '2024-03-12'$$),
  ($$tenant_id = 'b' AND ts >= '2024-01-01' AND ts < '2024-07-01'$$),
  ($$tenant_id = 'a' AND ts >= '2024-03-10 12:00'::timestamptz$$),
  ($$(ts < '2024-03-10' OR ts > '2024-03-11') AND n < 100$$),
  ($$NOT (ts >= '2024-03-10')$$),
  -- a lower and an upper bound of one column are one check (BETWEEN),
  -- exclusive bounds and the infinities too
  ($$ts > '2024-03-10 07:00' AND ts < '2024-03-11 00:00'$$),
  ($$ts > '2024-03-10 07:00' AND ts <= '2024-03-11 00:00'$$),
  ($$ts > '-infinity' AND ts < 'infinity'$$),
  ($$ts > 'infinity' AND ts < 'infinity'$$),
  ($$ts >= '-infinity' AND ts < '-infinity'$$),
  ($$d > '2024-03-09' AND d < '2024-03-11'$$),
  ($$d > '-infinity' AND d < 'infinity'$$),
  ($$tz > '2024-03-10 02:30'::timestamp AND tz < '2024-03-11'::date$$),
  ($$ts < '2024-03-11' AND ts >= '2024-03-10 07:00' AND ts > '2024-03-10 05:00'$$);
SELECT n, cond, c.* FROM regress_conds, regress_check(cond) c ORDER BY n;

-- ===================================================================
-- A parameter of another time type, under a generic plan
-- ===================================================================
SET plan_cache_mode = force_generic_plan;
PREPARE q(timestamptz) AS SELECT array_agg(id ORDER BY id) FROM ev WHERE ts >= $1;
EXPLAIN (VERBOSE, COSTS OFF) EXECUTE q('2024-03-10 07:00+00');
EXECUTE q('2024-03-10 07:00+00');
SET TimeZone = 'Asia/Kolkata';
EXECUTE q('2024-03-10 07:00+00');
SELECT array_agg(id ORDER BY id) FROM ev_native WHERE ts >= '2024-03-10 07:00+00'::timestamptz;
SET TimeZone = 'America/New_York';
DEALLOCATE q;
RESET plan_cache_mode;

-- ===================================================================
-- A stored value the wrapper cannot read is its error where the range
-- reaches it, and not read outside it
-- ===================================================================
\! sqlite3 /tmp/ssfdw_regress/timepush/shards/t1.db "INSERT INTO ev VALUES ('a', 50, '2024-03-10 25:00', '2024-03-10 25:00', NULL, 50)"
SELECT id FROM ev WHERE ts >= '2024-03-10 12:00' ORDER BY id;
SELECT id FROM ev WHERE ts >= '2024-03-12' ORDER BY id;
\! sqlite3 /tmp/ssfdw_regress/timepush/shards/t1.db "DELETE FROM ev WHERE id = 50"

-- ===================================================================
-- Time buckets: one number per row (ssfdw_bucket), no text formatted
-- ===================================================================
EXPLAIN (VERBOSE, COSTS OFF)
SELECT date_trunc('month', ts), extract(dow FROM d), count(*) FROM ev GROUP BY 1, 2;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT ts::date, count(*), min(ts), max(d) FROM ev WHERE ts >= '2024-03-01' GROUP BY 1;
-- every unit and field, on a DATETIME and a TEXT column and on dates,
-- against the native table, by the reading threads and by SQLite
CREATE FUNCTION regress_buckets(q text, OUT same_as_native boolean,
                                OUT groups bigint, OUT pushed boolean)
LANGUAGE plpgsql AS $$
DECLARE
  line text;
BEGIN
  EXECUTE format($f$
    SELECT NOT EXISTS ((%1$s EXCEPT ALL %2$s) UNION ALL (%2$s EXCEPT ALL %1$s))$f$,
    replace(q, '{t}', 'ev'), replace(q, '{t}', 'ev_native')) INTO same_as_native;
  EXECUTE format('SELECT count(*) FROM (%s) g', replace(q, '{t}', 'ev')) INTO groups;
  -- grouped in the shards, on no text made per row
  pushed := false;
  FOR line IN EXECUTE 'EXPLAIN (VERBOSE, COSTS OFF) ' || replace(q, '{t}', 'ev')
  LOOP
    IF line LIKE '%Pushdown: %aggregates%' OR line LIKE '%Pushdown: whole groups%' THEN
      pushed := true;
    END IF;
    IF line LIKE '%strftime%' OR line LIKE '%ssfdw_time(%' THEN
      pushed := false;
      EXIT;
    END IF;
  END LOOP;
END
$$;
CREATE TABLE regress_bucket_q (n serial, q text);
INSERT INTO regress_bucket_q (q)
SELECT format('SELECT %s, count(*), sum(n), min(id) FROM {t} GROUP BY 1', k)
FROM unnest(ARRAY[
  'date_trunc(''minute'', ts)', 'date_trunc(''hour'', ts)',
  'date_trunc(''day'', ts)', 'date_trunc(''week'', ts)',
  'date_trunc(''month'', ts)', 'date_trunc(''quarter'', ts)',
  'date_trunc(''year'', ts)', 'date_trunc(''hour'', tt)',
  'date_trunc(''week'', tt)', 'ts::date', 'CAST(tt AS date)',
  'extract(year FROM ts)', 'extract(quarter FROM ts)',
  'extract(month FROM ts)', 'extract(day FROM ts)', 'extract(hour FROM ts)',
  'extract(minute FROM ts)', 'extract(dow FROM ts)',
  'extract(isodow FROM ts)', 'extract(doy FROM ts)',
  'date_part(''hour'', tt)', 'date_part(''doy'', ts)',
  'date_trunc(''day'', d::timestamp)', 'date_trunc(''week'', d::timestamp)',
  'date_trunc(''month'', d::timestamp)', 'date_trunc(''quarter'', d::timestamp)',
  'date_trunc(''year'', d::timestamp)', 'date_trunc(''month'', d)',
  'date_trunc(''week'', d)', 'extract(year FROM d)', 'extract(quarter FROM d)',
  'extract(month FROM d)', 'extract(day FROM d)', 'extract(dow FROM d)',
  'extract(isodow FROM d)', 'extract(doy FROM d)', 'date_part(''dow'', d)']) k;
INSERT INTO regress_bucket_q (q) VALUES
  ('SELECT tenant_id, date_trunc(''month'', ts), count(*) FROM {t} GROUP BY 1, 2'),
  ('SELECT date_trunc(''year'', d::timestamp), extract(hour FROM ts), count(*) FROM {t} WHERE ts >= ''2024-01-01'' GROUP BY 1, 2');
SELECT n, q, b.* FROM regress_bucket_q, regress_buckets(q) b ORDER BY n;
SET sqlite_shard_fdw.thread_aggregation = off;
SELECT n, q, b.* FROM regress_bucket_q, regress_buckets(q) b
  WHERE NOT b.same_as_native OR NOT b.pushed ORDER BY n;
RESET sqlite_shard_fdw.thread_aggregation;
-- min and max of time columns are numbers too (ssfdw_usecs, ssfdw_days)
SELECT * FROM regress_buckets('SELECT tenant_id, min(ts), max(tz), min(d), max(tt), count(*) FROM {t} GROUP BY 1');
-- a reader keeps the last date it read (ten bytes, YYYY-MM-DD) from row to
-- row: dates that differ in their last byte alone are read apart, and a
-- time of a kept date is still checked
\! sqlite3 /tmp/ssfdw_regress/timepush/shards/t1.db "INSERT INTO ev VALUES ('a', 60, '2024-03-11 10:00:00', NULL, NULL, 60), ('a', 61, '2024-03-12 10:00:00', NULL, NULL, 61), ('a', 62, '2024-03-21 10:00:00', NULL, NULL, 62), ('a', 63, '2024-03-11 23:59:59', NULL, NULL, 63)"
SELECT ts::date, count(*), min(ts), max(ts), sum(n) FROM ev
  WHERE ts >= '2024-03-11' AND ts < '2024-03-22' AND id >= 60 GROUP BY 1 ORDER BY 1;
SELECT count(*) FILTER (WHERE ts >= '2024-03-11 12:00') AS late, min(ts), max(ts)
  FROM ev WHERE ts BETWEEN '2024-03-11' AND '2024-03-21 10:00' AND id >= 60;
\! sqlite3 /tmp/ssfdw_regress/timepush/shards/t1.db "INSERT INTO ev VALUES ('a', 64, '2024-03-11 24:00:00', NULL, NULL, 64)"
SELECT count(*) FROM ev WHERE ts >= '2024-03-11' AND id >= 60;
SELECT min(ts) FROM ev WHERE id >= 60;
\! sqlite3 /tmp/ssfdw_regress/timepush/shards/t1.db "DELETE FROM ev WHERE id >= 60"
-- a time the wrapper cannot read is its error, naming the shard
\! sqlite3 /tmp/ssfdw_regress/timepush/shards/t1.db "INSERT INTO ev VALUES ('a', 50, '2024-03-10 25:00', 'now', NULL, 50)"
SELECT date_trunc('day', ts), count(*) FROM ev GROUP BY 1;
SELECT extract(year FROM tt), count(*) FROM ev GROUP BY 1;
\! sqlite3 /tmp/ssfdw_regress/timepush/shards/t1.db "DELETE FROM ev WHERE id = 50"

DROP SERVER timepush_srv CASCADE;
DROP TABLE ev_native, regress_conds, regress_bucket_q;
DROP FUNCTION regress_check, regress_buckets;
