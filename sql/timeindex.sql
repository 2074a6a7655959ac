--
-- Time index: a routed read of one tenant over a time range finds its rows
-- through the index on the time column where the range holds fewer rows
-- than the tenant, by writing the tenant filter in the form no index
-- serves ("+"tenant_id"); elsewhere (a small tenant, a wide range, a
-- shard without the time index or with one on (tenant, time)) SQLite
-- keeps its choice.  A tenant's first rows of a range by time read the
-- canonical rows under the range of text alone.  A shard's indexes are read
-- again when its schema changes.  Answers are checked against a native
-- table with the same rows.  See test/fixtures/timeindex.sh for the data.
--
\! bash test/fixtures/timeindex.sh
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
RESET client_min_messages;
CREATE SERVER timeindex_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/timeindex/directory.db');
CREATE FOREIGN TABLE ti_ev (tenant_id text, id int, created_at timestamp,
                            amount int)
  SERVER timeindex_srv OPTIONS (table 'ev');
SET DateStyle = 'ISO, MDY';
CREATE TABLE ti_ev_native AS SELECT * FROM ti_ev;
SELECT tenant_id, count(*), count(created_at), min(created_at),
       max(created_at)
FROM ti_ev_native GROUP BY tenant_id ORDER BY tenant_id;

-- Whether a query gives the native table's rows (as multisets).
CREATE FUNCTION regress_ti_same(q text) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  same boolean;
BEGIN
  EXECUTE format($f$
    SELECT NOT EXISTS (
      (SELECT r::text FROM (%1$s) r
       EXCEPT ALL SELECT r::text FROM (%2$s) r)
      UNION ALL
      (SELECT r::text FROM (%2$s) r
       EXCEPT ALL SELECT r::text FROM (%1$s) r))$f$,
    q, replace(q, 'FROM ti_ev ', 'FROM ti_ev_native '))
    INTO same;
  RETURN same;
END
$$;

-- ===================================================================
-- Before ANALYZE: the tenant's rows counted in its index, as far as needed
-- ===================================================================
-- one day of a big tenant: the time index, the tenant filter with "+";
-- SQLite's plan of that SQL searches the time index
\o /tmp/ssfdw_regress/timeindex/explain.txt
EXPLAIN (VERBOSE, COSTS OFF)
SELECT count(*), sum(amount) FROM ti_ev
WHERE tenant_id = 'big_a' AND created_at >= '2024-06-01' AND created_at < '2024-06-02';
\o
\! sed 's/ *$//' /tmp/ssfdw_regress/timeindex/explain.txt
\! python3 test/fixtures/sqlite_plan.py /tmp/ssfdw_regress/timeindex/shards/a.db < /tmp/ssfdw_regress/timeindex/explain.txt
-- nine months of it: the tenant's index (the range holds more than half
-- the tenant's rows)
EXPLAIN (VERBOSE, COSTS OFF)
SELECT count(*), sum(amount) FROM ti_ev
WHERE tenant_id = 'big_a' AND created_at >= '2024-01-01' AND created_at < '2024-10-01';
-- a shard without statistics, WITHOUT ROWID, the column TEXT (one range
-- of text there), where SQLite, given the tenant filter as it is written
-- otherwise, reads the tenant's rows through its primary key
\! sqlite3 /tmp/ssfdw_regress/timeindex/shards/b.db "EXPLAIN QUERY PLAN SELECT id FROM ev WHERE (created_at >= ?1 AND created_at < ?2) AND (tenant_id = ?3 AND tenant_id COLLATE BINARY = ?3)"
\o /tmp/ssfdw_regress/timeindex/explain.txt
EXPLAIN (VERBOSE, COSTS OFF)
SELECT id, amount FROM ti_ev
WHERE tenant_id = 'big_b' AND created_at >= '2024-06-01' AND created_at < '2024-06-02';
\o
\! sed 's/ *$//' /tmp/ssfdw_regress/timeindex/explain.txt
\! python3 test/fixtures/sqlite_plan.py /tmp/ssfdw_regress/timeindex/shards/b.db < /tmp/ssfdw_regress/timeindex/explain.txt
-- a shard that lacks the time index: the tenant's index
EXPLAIN (VERBOSE, COSTS OFF)
SELECT count(*), sum(amount) FROM ti_ev
WHERE tenant_id = 'big_c' AND created_at >= '2024-06-01' AND created_at < '2024-06-02';
-- a shard with an index on (tenant_id, created_at), which serves both
EXPLAIN (VERBOSE, COSTS OFF)
SELECT count(*), sum(amount) FROM ti_ev
WHERE tenant_id = 'big_d' AND created_at >= '2024-06-01' AND created_at < '2024-06-02';
-- two tenants on two shards, one lacking the index: only the other
EXPLAIN (VERBOSE, COSTS OFF)
SELECT date_trunc('day', created_at) AS day, count(*), sum(amount) FROM ti_ev
WHERE tenant_id IN ('big_a', 'big_c')
  AND created_at >= '2024-06-01' AND created_at < '2024-06-03'
GROUP BY 1;
-- a bound known only when the query runs: decided then
EXPLAIN (VERBOSE, COSTS OFF)
SELECT count(*) FROM ti_ev
WHERE tenant_id = 'big_a' AND created_at >= now() - interval '1 day';
-- as the query ran, with EXPLAIN ANALYZE
EXPLAIN (ANALYZE, VERBOSE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT count(*) FROM ti_ev
WHERE tenant_id = 'big_a' AND created_at >= '2024-06-01'::date - 1
  AND created_at < '2024-06-02';

-- ===================================================================
-- After ANALYZE: the tenants' sizes from PostgreSQL's statistics
-- ===================================================================
ANALYZE ti_ev;
-- a small tenant over a day: the tenant's index (its rows are fewer)
EXPLAIN (VERBOSE, COSTS OFF)
SELECT id, amount FROM ti_ev
WHERE tenant_id = 'small_b' AND created_at >= '2024-06-01' AND created_at < '2024-06-02';
-- the big one over a day: the time index
EXPLAIN (VERBOSE, COSTS OFF)
SELECT count(*), sum(amount) FROM ti_ev
WHERE tenant_id = 'big_a' AND created_at >= '2024-06-01' AND created_at < '2024-06-02';
-- a generic plan of a prepared statement: decided when it runs
SET plan_cache_mode = force_generic_plan;
PREPARE ti_q(text, timestamp, timestamp) AS
SELECT count(*), sum(amount) FROM ti_ev
WHERE tenant_id = $1 AND created_at >= $2 AND created_at < $3;
EXPLAIN (VERBOSE, COSTS OFF) EXECUTE ti_q('big_a', '2024-06-01', '2024-06-02');
EXECUTE ti_q('big_a', '2024-06-01', '2024-06-02');
EXECUTE ti_q('small_a', '2024-01-01', '2025-01-01');
RESET plan_cache_mode;

-- ===================================================================
-- Every answer is the native table's
-- ===================================================================
SELECT q, regress_ti_same(q) AS same_as_native
FROM (VALUES
  -- one day, each tenant
  ($$SELECT count(*), sum(amount) FROM ti_ev WHERE tenant_id = 'big_a' AND created_at >= '2024-06-01' AND created_at < '2024-06-02'$$),
  ($$SELECT count(*), sum(amount) FROM ti_ev WHERE tenant_id = 'big_b' AND created_at >= '2024-06-01' AND created_at < '2024-06-02'$$),
  ($$SELECT count(*), sum(amount) FROM ti_ev WHERE tenant_id = 'big_c' AND created_at >= '2024-06-01' AND created_at < '2024-06-02'$$),
  ($$SELECT count(*), sum(amount) FROM ti_ev WHERE tenant_id = 'big_d' AND created_at >= '2024-06-01' AND created_at < '2024-06-02'$$),
  ($$SELECT count(*), sum(amount) FROM ti_ev WHERE tenant_id = 'small_a' AND created_at >= '2024-06-01' AND created_at < '2024-06-02'$$),
  -- a tenant whose id differs only in case, under the column's NOCASE
  ($$SELECT tenant_id, count(*), sum(amount) FROM ti_ev WHERE tenant_id IN ('big_b', 'BIG_B') AND created_at >= '2024-06-01' AND created_at < '2024-06-02' GROUP BY 1$$),
  ($$SELECT count(*), sum(amount) FROM ti_ev WHERE tenant_id = 'BIG_B' AND created_at >= '2024-06-01' AND created_at < '2024-06-02'$$),
  -- the rows themselves, every stored form among them
  ($$SELECT id, created_at, amount FROM ti_ev WHERE tenant_id = 'big_a' AND created_at >= '2024-03-01' AND created_at < '2024-03-02 12:00'$$),
  ($$SELECT id, created_at, amount FROM ti_ev WHERE tenant_id = 'big_b' AND created_at BETWEEN '2024-03-01' AND '2024-03-02 12:00'$$),
  ($$SELECT id, created_at FROM ti_ev WHERE tenant_id = 'big_a' AND created_at > '2024-12-30 12:00'$$),
  ($$SELECT id, created_at FROM ti_ev WHERE tenant_id = 'big_a' AND created_at < '2024-01-01 06:00'$$),
  -- the groupings BI tools send
  ($$SELECT date_trunc('day', created_at) AS day, count(*), sum(amount) FROM ti_ev WHERE tenant_id = 'big_a' AND created_at >= '2024-06-01' AND created_at < '2024-06-08' GROUP BY 1$$),
  ($$SELECT date_trunc('hour', created_at) AS h, count(*) FROM ti_ev WHERE tenant_id = 'big_b' AND created_at >= '2024-06-01' AND created_at < '2024-06-02' GROUP BY 1$$),
  ($$SELECT CAST(created_at AS date) AS day, count(*) FROM ti_ev WHERE tenant_id IN ('big_a', 'big_c', 'small_a') AND created_at >= '2024-06-01' AND created_at < '2024-06-03' GROUP BY 1$$),
  ($$SELECT tenant_id, count(*), max(created_at) FROM ti_ev WHERE tenant_id IN ('big_a', 'big_b', 'big_d') AND CAST(created_at AS date) = '2024-06-01' GROUP BY 1$$),
  -- empty ranges
  ($$SELECT count(*), sum(amount) FROM ti_ev WHERE tenant_id = 'big_a' AND created_at >= '2025-06-01' AND created_at < '2025-06-02'$$),
  ($$SELECT count(*), sum(amount) FROM ti_ev WHERE tenant_id = 'big_a' AND created_at >= '2024-06-02' AND created_at < '2024-06-01'$$),
  ($$SELECT id FROM ti_ev WHERE tenant_id = 'big_b' AND created_at >= '2023-06-01' AND created_at < '2023-06-02'$$),
  -- NULL times: in no range, and found by IS NULL
  ($$SELECT count(*) FROM ti_ev WHERE tenant_id = 'big_a' AND created_at IS NULL$$),
  ($$SELECT count(*), count(created_at) FROM ti_ev WHERE tenant_id = 'big_a' AND (created_at >= '2024-06-01' OR created_at IS NULL)$$),
  -- wide ranges, one side only
  ($$SELECT count(*), sum(amount) FROM ti_ev WHERE tenant_id = 'small_b' AND created_at >= '2024-01-01'$$),
  ($$SELECT count(*), sum(amount) FROM ti_ev WHERE tenant_id = 'big_a' AND created_at < '2024-12-01'$$),
  -- a tenant the directory does not know
  ($$SELECT count(*) FROM ti_ev WHERE tenant_id = 'nobody' AND created_at >= '2024-06-01' AND created_at < '2024-06-02'$$)
) v(q);

-- ===================================================================
-- A tenant's first rows of a range by time (ORDER BY ... LIMIT, as
-- Metabase sends it): the canonical rows are read under the range of text
-- alone, which an index on (tenant_id, created_at) serves from its end
-- in the order asked where the ranges of every stored form, an OR, would
-- have SQLite read every entry of the tenant (shard d)
-- ===================================================================
\! sqlite3 /tmp/ssfdw_regress/timeindex/shards/d.db "EXPLAIN QUERY PLAN SELECT id FROM ev WHERE ((created_at >= 1 AND created_at <= 2) OR (created_at >= '2024-05-31' AND created_at < '2024-06-02') OR (created_at >= '' AND created_at < '0') OR created_at >= ':') AND tenant_id = 'big_d' ORDER BY created_at DESC LIMIT 2000"
\! sqlite3 /tmp/ssfdw_regress/timeindex/shards/d.db "EXPLAIN QUERY PLAN SELECT id FROM ev WHERE (created_at >= '2024-05-31' AND created_at < '2024-06-02') AND tenant_id = 'big_d' ORDER BY created_at DESC LIMIT 2000"
SELECT q, regress_ti_same(q) AS same_as_native
FROM (VALUES
  -- a day, fewer rows than the limit: every stored form
  ($$SELECT id, created_at, amount FROM ti_ev WHERE tenant_id = 'big_d' AND created_at >= '2024-03-01' AND created_at < '2024-03-02' ORDER BY created_at DESC LIMIT 2000$$),
  ($$SELECT id, created_at, amount FROM ti_ev WHERE tenant_id = 'big_a' AND created_at >= '2024-03-01' AND created_at < '2024-03-02' ORDER BY created_at DESC LIMIT 2000$$),
  ($$SELECT id, created_at, amount FROM ti_ev WHERE tenant_id = 'big_b' AND created_at >= '2024-03-01' AND created_at < '2024-03-02' ORDER BY created_at DESC LIMIT 2000$$),
  ($$SELECT id, created_at, amount FROM ti_ev WHERE tenant_id = 'big_c' AND created_at >= '2024-03-01' AND created_at < '2024-03-02' ORDER BY created_at DESC LIMIT 2000$$),
  -- the limit filled, both directions, an offset
  ($$SELECT id, created_at FROM ti_ev WHERE tenant_id = 'big_d' AND created_at >= '2024-03-01' AND created_at < '2024-04-01' ORDER BY created_at DESC LIMIT 7$$),
  ($$SELECT id, created_at FROM ti_ev WHERE tenant_id = 'big_d' AND created_at >= '2024-03-01' AND created_at < '2024-04-01' ORDER BY created_at LIMIT 7$$),
  ($$SELECT id, created_at FROM ti_ev WHERE tenant_id = 'big_d' AND created_at BETWEEN '2024-03-01' AND '2024-04-01' ORDER BY created_at DESC LIMIT 5 OFFSET 3$$),
  ($$SELECT id, created_at FROM ti_ev WHERE tenant_id = 'big_b' AND created_at >= '2024-03-01' AND created_at < '2024-04-01' ORDER BY created_at DESC LIMIT 7$$),
  -- one side of the range only
  ($$SELECT id, created_at FROM ti_ev WHERE tenant_id = 'big_d' AND created_at < '2024-06-01 12:00' ORDER BY created_at DESC LIMIT 9$$),
  ($$SELECT id, created_at FROM ti_ev WHERE tenant_id = 'big_d' AND created_at > '2024-06-01 12:00' ORDER BY created_at LIMIT 9$$),
  -- no range: NULL first, descending
  ($$SELECT created_at FROM ti_ev WHERE tenant_id = 'big_d' ORDER BY created_at DESC LIMIT 209$$),
  ($$SELECT id, created_at FROM ti_ev WHERE tenant_id = 'big_d' ORDER BY created_at DESC NULLS LAST LIMIT 9$$),
  -- ties broken by the next key
  ($$SELECT id, created_at FROM ti_ev WHERE tenant_id = 'big_d' AND created_at >= '2024-03-01' AND created_at < '2024-04-01' ORDER BY created_at DESC, id LIMIT 7$$),
  -- an empty range
  ($$SELECT id FROM ti_ev WHERE tenant_id = 'big_d' AND created_at >= '2023-03-01' AND created_at < '2023-04-01' ORDER BY created_at DESC LIMIT 7$$)
) v(q);

-- the same as timestamptz, in a TimeZone other than UTC
CREATE FOREIGN TABLE ti_evz (tenant_id text, id int, created_at timestamptz,
                             amount int)
  SERVER timeindex_srv OPTIONS (table 'ev');
SET TimeZone = 'UTC';
CREATE TABLE ti_evz_native AS SELECT * FROM ti_evz;
SET TimeZone = 'America/New_York';
SELECT t, (SELECT count(*) FROM (
             ((SELECT * FROM ti_evz WHERE tenant_id = t AND created_at >= '2024-03-10' AND created_at < '2024-03-11' ORDER BY created_at DESC LIMIT 2000)
              EXCEPT ALL
              (SELECT * FROM ti_evz_native WHERE tenant_id = t AND created_at >= '2024-03-10' AND created_at < '2024-03-11' ORDER BY created_at DESC LIMIT 2000))
             UNION ALL
             ((SELECT * FROM ti_evz_native WHERE tenant_id = t AND created_at >= '2024-03-10' AND created_at < '2024-03-11' ORDER BY created_at DESC LIMIT 2000)
              EXCEPT ALL
              (SELECT * FROM ti_evz WHERE tenant_id = t AND created_at >= '2024-03-10' AND created_at < '2024-03-11' ORDER BY created_at DESC LIMIT 2000))) d) AS differing,
       (SELECT count(*) FROM (SELECT 1 FROM ti_evz WHERE tenant_id = t AND created_at >= '2024-03-10' AND created_at < '2024-03-11' ORDER BY created_at DESC LIMIT 2000) r) AS rows
FROM unnest(ARRAY['big_a', 'big_b', 'big_d']) t;
SELECT id, created_at FROM ti_evz WHERE tenant_id = 'big_d' AND created_at < '2024-03-10 04:00' ORDER BY created_at DESC LIMIT 5;
SELECT id, created_at FROM ti_evz_native WHERE tenant_id = 'big_d' AND created_at < '2024-03-10 04:00' ORDER BY created_at DESC LIMIT 5;
RESET TimeZone;

-- ===================================================================
-- A shard's indexes are read again when its schema changes
-- ===================================================================
\! sqlite3 /tmp/ssfdw_regress/timeindex/shards/a.db "CREATE INDEX ev_tenant_created ON ev(tenant_id, created_at)"
-- an index on (tenant_id, created_at) now: SQLite's choice
EXPLAIN (VERBOSE, COSTS OFF)
SELECT count(*), sum(amount) FROM ti_ev
WHERE tenant_id = 'big_a' AND created_at >= '2024-06-01' AND created_at < '2024-06-02';
\! sqlite3 /tmp/ssfdw_regress/timeindex/shards/a.db "DROP INDEX ev_tenant_created"
-- and without it again: the time index
EXPLAIN (VERBOSE, COSTS OFF)
SELECT count(*), sum(amount) FROM ti_ev
WHERE tenant_id = 'big_a' AND created_at >= '2024-06-01' AND created_at < '2024-06-02';
