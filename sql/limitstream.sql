--
-- ORDER BY ... LIMIT over many shards, merged as the rows come
-- (scanmerge.c): each shard returns its rows in the order exactly, in
-- small batches, and the scan merges them and stops at the limit.  A time
-- key's rows of other stored forms, and a shard whose order cannot be
-- trusted, are sorted into one more source of the merge.  Every answer is
-- compared, in order, with a native table of the same rows.  One tenant's
-- latest rows may be read through the time index instead of the tenant's
-- (timeindex.c).  See test/fixtures/limitstream.sh for the data.
--
\! bash test/fixtures/limitstream.sh
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
RESET client_min_messages;
CREATE SERVER limitstream_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/limitstream/directory.db');
CREATE FOREIGN TABLE items (tenant_id text, id bigint, k bigint,
  created_at timestamp, note text) SERVER limitstream_srv;
CREATE FOREIGN TABLE items_tz (tenant_id text, id bigint, k bigint,
  created_at timestamptz, note text)
  SERVER limitstream_srv OPTIONS (table 'items');
CREATE TABLE items_native (tenant_id text, id bigint, k bigint,
  created_at timestamp, note text);
\i /tmp/ssfdw_regress/limitstream/rows.sql
SET TimeZone = 'UTC';
CREATE VIEW items_native_tz AS
  SELECT tenant_id, id, k, created_at AT TIME ZONE 'UTC' AS created_at, note
  FROM items_native;
\i test/regress_compare.sql

-- Whether the foreign answer is the native one, in order, without listing
-- the rows.
CREATE FUNCTION regress_same_rows(q text) RETURNS text
LANGUAGE sql AS $$
  SELECT CASE WHEN bool_and(same) THEN 'same' ELSE 'DIFFERENT' END || ', ' ||
         count(*) || ' rows'
  FROM regress_same(q, true) WHERE native <> '(no rows)'
$$;

\i test/regress_explain.sql
-- The plan's pushdown lines only.
CREATE FUNCTION regress_pushed(q text) RETURNS SETOF text
LANGUAGE sql AS $$
  SELECT regress_explain_lines('VERBOSE, COSTS OFF',
    '(Pushdown|Shard Order|Rows Per Shard|Shard Merge|Time Key|Time Index|Sort Key|Presorted Key|^ *Limit|Sort$|Foreign Scan)', q)
$$;

-- EXPLAIN ANALYZE: the rows each shard returned, how they were read.
CREATE FUNCTION regress_analyzed(q text) RETURNS SETOF text
LANGUAGE sql AS $$
  SELECT regress_explain_lines('ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF',
    '(Shard Rows|Unbounded|Shard Merge|Foreign Scan|^ *Limit|Incremental Sort)', q)
$$;

-- ===================================================================
-- Keys the shards sort exactly: merged, stopped at the limit
-- ===================================================================
EXPLAIN (VERBOSE, COSTS OFF)
SELECT * FROM items ORDER BY id DESC, tenant_id COLLATE "C" LIMIT 10;
SELECT * FROM regress_same($$SELECT * FROM {t}
  ORDER BY id DESC, tenant_id COLLATE "C" LIMIT 10$$, true);
-- each shard is read only as far as the merge takes its rows (s4 has
-- none); s3, which declares k as text, is read whole and sorted.  s5's
-- statement may or may not have reached its end when the limit stops the
-- scan (its second batch is read ahead on a thread): its mark is left out
SELECT regexp_replace(l, 's5=10( \(stopped\))?', 's5=10') AS regress_analyzed
  FROM regress_analyzed($$SELECT * FROM items
  ORDER BY id DESC, tenant_id COLLATE "C" LIMIT 10$$) l;
SELECT * FROM regress_analyzed($$SELECT * FROM items
  ORDER BY k, id, tenant_id COLLATE "C" LIMIT 10$$);
SELECT * FROM regress_same($$SELECT * FROM {t}
  ORDER BY k, id, tenant_id COLLATE "C" LIMIT 10$$, true);
-- OFFSET
SELECT * FROM regress_same($$SELECT tenant_id, id FROM {t}
  ORDER BY id, tenant_id COLLATE "C" LIMIT 7 OFFSET 5$$, true);
SELECT * FROM regress_same($$SELECT tenant_id, id FROM {t}
  ORDER BY id DESC, tenant_id COLLATE "C" DESC OFFSET 13145$$, true);
-- NULLS FIRST and LAST, in both directions
SELECT q, regress_same_rows(q)
FROM (SELECT format('SELECT tenant_id, id, k FROM {t} ORDER BY k%s, id%s, tenant_id COLLATE "C" LIMIT %s',
                    dir, dir, n) AS q
      FROM unnest(ARRAY['', ' DESC', ' NULLS FIRST', ' DESC NULLS LAST']) dir,
           unnest(ARRAY[1, 12, 40]) n) s;
-- LIMIT 0 reads nothing; a limit beyond the rows returns every row
SELECT * FROM regress_same($$SELECT * FROM {t}
  ORDER BY id, tenant_id COLLATE "C" LIMIT 0$$, true);
SELECT regress_same_rows($$SELECT * FROM {t}
  WHERE tenant_id IN ('a', 'c', 'd')
  ORDER BY id, tenant_id COLLATE "C" LIMIT 5000$$);

-- ===================================================================
-- Ties: keys after the first the shards cannot sort
-- ===================================================================
-- a shard with an index on k (s1) is read on without LIMIT, as far as the
-- merge needs; the others return their first rows and their ties, which
-- the merge sorts (SQLite would sort every row before the first); the
-- merge stops after the rows that tie with the last on the first key
SELECT * FROM regress_pushed($$SELECT * FROM items
  ORDER BY k DESC, note, tenant_id, id LIMIT 10$$);
SELECT * FROM regress_analyzed($$SELECT * FROM items
  ORDER BY k DESC, note, tenant_id, id LIMIT 10$$);
SELECT q, regress_same_rows(q)
FROM (SELECT format('SELECT tenant_id, id, k, note FROM {t} ORDER BY k%s, note, tenant_id, id LIMIT %s OFFSET %s',
                    dir, n, o) AS q
      FROM unnest(ARRAY[' DESC NULLS LAST', ' NULLS FIRST']) dir,
           unnest(ARRAY[3, 30]) n, unnest(ARRAY[0, 4]) o) s;

-- ===================================================================
-- A time key, in every stored form
-- ===================================================================
-- s2 stores created_at as text of other forms and numbers: its rows of
-- those forms near the first are sorted, the canonical ones merged
SELECT * FROM regress_pushed($$SELECT * FROM items
  ORDER BY created_at DESC, id, tenant_id COLLATE "C" LIMIT 15$$);
SELECT * FROM regress_same($$SELECT tenant_id, id, created_at FROM {t}
  WHERE tenant_id IN ('a', 'c')
  ORDER BY created_at DESC NULLS LAST, id, tenant_id COLLATE "C" LIMIT 15$$, true);
SELECT * FROM regress_analyzed($$SELECT * FROM items
  WHERE tenant_id IN ('a', 'c')
  ORDER BY created_at DESC NULLS LAST, id, tenant_id COLLATE "C" LIMIT 15$$);
SELECT q, regress_same_rows(q)
FROM (SELECT format('SELECT tenant_id, id, created_at FROM {t}%s ORDER BY created_at%s, id, tenant_id COLLATE "C" LIMIT %s',
                    tz, dir, n) AS q
      FROM unnest(ARRAY['', '_tz']) tz,
           unnest(ARRAY['', ' DESC', ' NULLS FIRST', ' DESC NULLS LAST']) dir,
           unnest(ARRAY[5, 60, 400]) n) s;
-- with ties after the time
SELECT * FROM regress_pushed($$SELECT * FROM items
  ORDER BY created_at DESC, note, tenant_id, id LIMIT 12$$);
SELECT q, regress_same_rows(q)
FROM (SELECT format('SELECT tenant_id, id, created_at, note FROM {t} ORDER BY created_at%s, note, tenant_id, id LIMIT %s',
                    dir, n) AS q
      FROM unnest(ARRAY['', ' DESC']) dir, unnest(ARRAY[12, 70]) n) s;

-- ===================================================================
-- Read by the fan-out's workers
-- ===================================================================
-- a limit above 1,000 rows: each shard's batches are read by a worker,
-- its statement open between them
SELECT * FROM regress_pushed($$SELECT * FROM items
  ORDER BY id DESC, tenant_id COLLATE "C" LIMIT 1500$$);
SELECT regress_same_rows($$SELECT * FROM {t}
  ORDER BY id DESC, tenant_id COLLATE "C" LIMIT 1500$$);
SELECT regress_same_rows($$SELECT * FROM {t}
  ORDER BY created_at, id, tenant_id COLLATE "C" LIMIT 2500$$);
SELECT regress_same_rows($$SELECT * FROM {t}
  ORDER BY k DESC, note, tenant_id, id LIMIT 1200$$);
-- a small limit whose first shard is slow (quick_shard_ms, a hidden
-- setting): the other shards go to the workers
SET sqlite_shard_fdw.quick_shard_ms = 0;
SELECT regress_same_rows($$SELECT * FROM {t}
  ORDER BY created_at DESC, id, tenant_id COLLATE "C" LIMIT 40$$);
SELECT regress_same_rows($$SELECT * FROM {t}
  ORDER BY k NULLS FIRST, note, tenant_id, id LIMIT 25$$);
RESET sqlite_shard_fdw.quick_shard_ms;
-- one worker
SET sqlite_shard_fdw.fanout_parallelism = 1;
SELECT regress_same_rows($$SELECT * FROM {t}
  ORDER BY id, tenant_id COLLATE "C" LIMIT 1100$$);
RESET sqlite_shard_fdw.fanout_parallelism;

-- ===================================================================
-- Rescans, and a cancel in the middle of a merge
-- ===================================================================
SELECT * FROM regress_same($$SELECT v, (SELECT tenant_id || id FROM {t}
    WHERE id > v ORDER BY id, tenant_id COLLATE "C" LIMIT 1)
  FROM generate_series(295, 302) v$$, true);
SET statement_timeout = '300ms';
SELECT count(pg_sleep(0.01)) FROM (SELECT * FROM items
  ORDER BY id, tenant_id COLLATE "C" LIMIT 2000) s;
RESET statement_timeout;
-- nothing of it is left behind
SELECT regress_same_rows($$SELECT * FROM {t}
  ORDER BY id, tenant_id COLLATE "C" LIMIT 1300$$);

-- ===================================================================
-- One tenant's latest rows: the time index, or the tenant's
-- ===================================================================
-- a large tenant's latest rows: the time index, the tenant as a filter
EXPLAIN (VERBOSE, COSTS OFF)
SELECT * FROM items WHERE tenant_id = 'big' ORDER BY created_at DESC LIMIT 10;
SELECT * FROM regress_same($$SELECT * FROM {t} WHERE tenant_id = 'big'
  ORDER BY created_at DESC LIMIT 10$$, true);
SELECT * FROM regress_pushed($$SELECT * FROM items WHERE tenant_id = 'big'
  ORDER BY created_at LIMIT 2000$$);
SELECT regress_same_rows($$SELECT * FROM {t} WHERE tenant_id = 'big'
  ORDER BY created_at LIMIT 2000$$);
-- a small tenant's: sorted from the tenant's index
SELECT * FROM regress_pushed($$SELECT * FROM items WHERE tenant_id = 'small'
  ORDER BY created_at DESC LIMIT 10$$);
SELECT regress_same_rows($$SELECT * FROM {t} WHERE tenant_id = 'small'
  ORDER BY created_at DESC LIMIT 10$$);
-- a generic plan's tenant: chosen when the shard is read
PREPARE latest(text, int) AS
  SELECT id, created_at FROM items WHERE tenant_id = $1
  ORDER BY created_at DESC LIMIT $2;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (VERBOSE, COSTS OFF) EXECUTE latest('big', 3);
EXECUTE latest('big', 3);
EXECUTE latest('small', 3);
RESET plan_cache_mode;
DEALLOCATE latest;
SELECT id, created_at FROM items_native WHERE tenant_id = 'small'
  ORDER BY created_at DESC LIMIT 3;

-- ===================================================================
-- A time key's second segment: one shard holds most of the first rows
-- ===================================================================
-- each shard's query comes in two segments (shardsql.c): the window of
-- other forms of its first rows and those rows, then the rest.  s1 holds
-- most of the latest rows of late, s5 most of the earliest: the merge
-- reads them beyond their first segment, whose rows of other forms (text
-- with 'T', trailing zeros, offsets of either sign) rank among the rows
-- that follow; with NULLs, ties on the time, in either direction, in a
-- TimeZone other than UTC for timestamptz, and with a range condition
CREATE FOREIGN TABLE items_late (tenant_id text, id bigint, created_at timestamp)
  SERVER limitstream_srv OPTIONS (table 'late');
CREATE FOREIGN TABLE items_late_tz (tenant_id text, id bigint, created_at timestamptz)
  SERVER limitstream_srv OPTIONS (table 'late');
CREATE TABLE items_native_late (tenant_id text, id bigint, created_at timestamp);
\i /tmp/ssfdw_regress/limitstream/late_rows.sql
CREATE VIEW items_native_late_tz AS
  SELECT tenant_id, id, created_at AT TIME ZONE 'UTC' AS created_at
  FROM items_native_late;
SELECT * FROM regress_pushed($$SELECT * FROM items_late
  ORDER BY created_at DESC LIMIT 300$$);
SELECT * FROM regress_pushed($$SELECT * FROM items_late
  ORDER BY created_at DESC, tenant_id, id LIMIT 300$$);
SET TimeZone = 'America/New_York';
SELECT q, regress_same_rows(q)
FROM (SELECT format('SELECT tenant_id, id, created_at FROM {t}_late%s%s ORDER BY created_at%s, tenant_id DESC, id LIMIT %s',
                    tz, w, dir, n) AS q
      FROM unnest(ARRAY['', '_tz']) tz,
           unnest(ARRAY['', ' WHERE created_at >= ''2024-06-01 06:00'' AND created_at < ''2024-06-05 03:00''']) w,
           unnest(ARRAY[' DESC', ' NULLS FIRST', ' DESC NULLS LAST', '']) dir,
           unnest(ARRAY[40, 300, 900]) n) s;
-- without tie-breakers: the rows of each time, in any order
SELECT q, (SELECT bool_and(same) FROM regress_same(q)) AS same
FROM (SELECT format('SELECT created_at FROM {t}_late%s ORDER BY created_at%s LIMIT %s',
                    tz, dir, n) AS q
      FROM unnest(ARRAY['', '_tz']) tz,
           unnest(ARRAY[' DESC', '']) dir,
           unnest(ARRAY[150, 600]) n) s;
SET TimeZone = 'UTC';

DROP SERVER limitstream_srv CASCADE;
DROP VIEW items_native_tz, items_native_late_tz;
DROP TABLE items_native, items_native_late;
DROP FUNCTION regress_same_rows(text), regress_same(text, boolean),
  regress_pushed(text), regress_analyzed(text),
  regress_explain_lines(text, text, text);
