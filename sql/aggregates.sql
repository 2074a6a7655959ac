--
-- Aggregate pushdown: grouped queries
-- answered inside the shards give PostgreSQL's answer exactly.  Grouped by
-- the tenant column, each shard answers whole groups; otherwise each shard
-- returns partial aggregates that the backend merges; what cannot be
-- computed exactly in SQLite fetches rows.  Every query runs against the
-- foreign table with aggregate pushdown on and off, and against a native
-- table holding the same rows.  See test/fixtures/aggregates.sh.
--
\! bash test/fixtures/aggregates.sh
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
RESET client_min_messages;
-- ISO dates, so that time buckets sort and read in calendar order
SET DateStyle = ISO;
CREATE SERVER agg_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/aggregates/directory.db');
CREATE FOREIGN TABLE sales (
  tenant_id text, id int, status text, amount bigint, qty int, f float8,
  flag boolean, flagt boolean, flagx boolean, name text,
  created_at timestamp, created_unix timestamp
) SERVER agg_srv;
CREATE FOREIGN TABLE dirty (tenant_id text, id int, amount bigint, flag boolean,
  q int) SERVER agg_srv;
CREATE FOREIGN TABLE measures (tenant_id text, id int, f float8)
  SERVER agg_srv;

-- The same rows in PostgreSQL.  Timestamps are read the way SQLite reads
-- them (an offset applied, UTC otherwise; integers are Unix seconds).
CREATE TABLE sales_raw (
  tenant_id text, id int, status text, amount bigint, qty int, f float8,
  flag int, flagt text, flagx text, name text,
  created_at text, created_unix bigint
);
\i /tmp/ssfdw_regress/aggregates/rows.sql
SET TimeZone = 'UTC';
CREATE TABLE sales_native AS
SELECT tenant_id, id, status, amount, qty, f, flag::boolean AS flag,
       flagt::boolean AS flagt, flagx::boolean AS flagx, name,
       created_at::timestamptz AT TIME ZONE 'UTC' AS created_at,
       to_timestamp(created_unix) AT TIME ZONE 'UTC' AS created_unix
FROM sales_raw;
RESET TimeZone;
CREATE TABLE measures_native (tenant_id text, id int, f float8);
INSERT INTO measures_native VALUES ('acme', 1, 'Infinity'),
  ('acme', 2, '-Infinity'), ('acme', 3, 1.5), ('umbrella', 4, 2.5),
  ('globex', 5, 0.5), ('hooli', 6, -1.5);

-- regress_result(query, ordered): the rows of query as text, sorted
-- unless ordered, or the SQLSTATE and message of the error it raised.
CREATE FUNCTION regress_result(query text, ordered boolean) RETURNS text[]
LANGUAGE plpgsql AS $$
DECLARE
  result text[];
BEGIN
  EXECUTE format('SELECT coalesce(array_agg(r::text %s), ''{}'') FROM (%s) r',
                 CASE WHEN ordered THEN '' ELSE 'ORDER BY r::text' END,
                 query) INTO result;
  RETURN result;
EXCEPTION WHEN OTHERS THEN
  RETURN ARRAY['ERROR ' || SQLSTATE || ': ' || SQLERRM];
END
$$;

-- regress_agg(query [, ordered] [, tbl]): run query, where {t} stands for
-- the table (sales, or tbl), against the native table and against the
-- foreign table three ways: aggregates pushed and grouped on the reading
-- threads (the default), pushed and grouped by SQLite
-- (sqlite_shard_fdw.thread_aggregation off), and not pushed
-- (sqlite_shard_fdw.aggregate_pushdown off).  Shows the pushdown EXPLAIN
-- reports by default, whether each foreign answer equals the native one
-- (rows compared as text, so numeric scale counts; sorted unless the
-- query's own order is tested), and the native answer, one row per line.
-- A foreign answer that differs is shown in a NOTICE.
CREATE FUNCTION regress_agg(query text, ordered boolean DEFAULT false,
                            tbl text DEFAULT 'sales')
RETURNS TABLE (pushdown text, threads boolean, sqlite boolean,
               "rows" boolean, native text)
LANGUAGE plpgsql AS $$
DECLARE
  fq text := replace(query, '{t}', tbl);
  want text[] := regress_result(replace(query, '{t}', tbl || '_native'),
                                ordered);
  got text[];
  plan json;
  mode text;
  i int;
BEGIN
  EXECUTE 'EXPLAIN (FORMAT JSON, COSTS OFF) ' || fq INTO plan;
  SELECT string_agg(DISTINCT p #>> '{}', ', ') INTO pushdown
    FROM jsonb_path_query(plan::jsonb, 'strict $.**.Pushdown') p;
  FOREACH mode IN ARRAY ARRAY['threads', 'sqlite', 'rows'] LOOP
    PERFORM set_config('sqlite_shard_fdw.thread_aggregation',
                       (mode = 'threads')::text, true);
    PERFORM set_config('sqlite_shard_fdw.aggregate_pushdown',
                       (mode <> 'rows')::text, true);
    got := regress_result(fq, ordered);
    IF got IS DISTINCT FROM want THEN
      RAISE NOTICE '%: %', mode, array_to_string(got, ' ', '<NULL>');
    END IF;
    CASE mode
      WHEN 'threads' THEN threads := got IS NOT DISTINCT FROM want;
      WHEN 'sqlite' THEN sqlite := got IS NOT DISTINCT FROM want;
      ELSE "rows" := got IS NOT DISTINCT FROM want;
    END CASE;
  END LOOP;
  PERFORM set_config('sqlite_shard_fdw.thread_aggregation', 'on', true);
  PERFORM set_config('sqlite_shard_fdw.aggregate_pushdown', 'on', true);
  IF cardinality(want) = 0 THEN
    native := '(no rows)';
    RETURN NEXT;
  END IF;
  FOR i IN 1 .. cardinality(want) LOOP
    native := want[i];
    RETURN NEXT;
    pushdown := NULL;
    threads := NULL;
    sqlite := NULL;
    "rows" := NULL;
  END LOOP;
END
$$;

-- regress_modes(query): query's answer (or error) from the foreign table
-- in the three ways above, for values no native table can hold.
CREATE FUNCTION regress_modes(query text)
RETURNS TABLE (mode text, result text)
LANGUAGE plpgsql AS $$
BEGIN
  FOREACH mode IN ARRAY ARRAY['threads', 'sqlite', 'rows'] LOOP
    PERFORM set_config('sqlite_shard_fdw.thread_aggregation',
                       (mode = 'threads')::text, true);
    PERFORM set_config('sqlite_shard_fdw.aggregate_pushdown',
                       (mode <> 'rows')::text, true);
    result := array_to_string(regress_result(query, false), ' ', '<NULL>');
    RETURN NEXT;
  END LOOP;
  PERFORM set_config('sqlite_shard_fdw.thread_aggregation', 'on', true);
  PERFORM set_config('sqlite_shard_fdw.aggregate_pushdown', 'on', true);
END
$$;

-- Every row reads back as the native table holds it, and the fleet
-- holds what the fixture says.
SELECT * FROM regress_agg('SELECT * FROM {t}');
SELECT tenant_id, count(*) FROM sales GROUP BY tenant_id ORDER BY 1;

-- ===================================================================
-- The three kinds of pushdown, as EXPLAIN shows them
-- ===================================================================
-- grouped by the tenant column: whole groups per shard
EXPLAIN (VERBOSE, COSTS OFF)
SELECT tenant_id, count(*), sum(amount), avg(qty), min(f), max(name COLLATE "C")
  FROM sales GROUP BY tenant_id;
-- grouped otherwise: partial aggregates, merged (sum(bigint) as the sums
-- of its high and low 32 bits, avg as sum and count)
EXPLAIN (VERBOSE, COSTS OFF)
SELECT status, count(*), count(qty), sum(amount), avg(amount), sum(qty),
       avg(qty), sum(f), avg(f), min(qty), max(f), bool_and(flag),
       bool_or(flagt)
  FROM sales GROUP BY status;
-- no grouping at all: partial aggregates too
EXPLAIN (VERBOSE, COSTS OFF)
SELECT count(*), sum(amount) FROM sales;
-- counting rows, ungrouped: SQLite counts (no "Grouped By" line), unless
-- values must be checked on the way (qty against int4's range)
EXPLAIN (VERBOSE, COSTS OFF)
SELECT count(*) FROM sales WHERE amount > 0;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT count(*), count(qty) FROM sales;
-- count(DISTINCT x): each shard's distinct values, counted once
EXPLAIN (VERBOSE, COSTS OFF)
SELECT status, count(DISTINCT name) FROM sales GROUP BY status;
-- not pushable: rows
EXPLAIN (VERBOSE, COSTS OFF)
SELECT status, string_agg(name, ',' ORDER BY name) FROM sales GROUP BY status;
-- time buckets
EXPLAIN (VERBOSE, COSTS OFF)
SELECT date_trunc('month', created_at), count(*) FROM sales GROUP BY 1;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT extract(isodow FROM created_unix), count(*) FROM sales GROUP BY 1;
-- routed: one shard
EXPLAIN (VERBOSE, COSTS OFF)
SELECT status, count(*) FROM sales WHERE tenant_id = 'acme' GROUP BY status;

-- ===================================================================
-- Without GROUP BY
-- ===================================================================
SELECT * FROM regress_agg('SELECT count(*), count(status), count(amount), count(name) FROM {t}');
SELECT * FROM regress_agg('SELECT count(*), count(qty) FROM {t} WHERE amount > 0');
SELECT * FROM regress_agg($$SELECT count(*) FROM {t} WHERE tenant_id IN ('acme', 'zeta')$$);
-- sum(bigint) leaves int8's range inside shard a1 and across the fleet:
-- PostgreSQL's sum(bigint) is numeric
SELECT * FROM regress_agg('SELECT sum(amount) FROM {t}');
SELECT * FROM regress_agg($$SELECT sum(amount) FROM {t} WHERE tenant_id = 'acme'$$);
SELECT * FROM regress_agg('SELECT sum(amount) FROM {t} WHERE amount > 0');
SELECT * FROM regress_agg('SELECT sum(amount) FROM {t} WHERE amount < 0');
-- sum(integer) is bigint, beyond int4's range
SELECT * FROM regress_agg('SELECT sum(qty) FROM {t}');
SELECT * FROM regress_agg('SELECT sum(qty) FROM {t} WHERE qty > 0');
-- avg of integers: numeric, with PostgreSQL's scale
SELECT * FROM regress_agg('SELECT avg(qty), avg(amount) FROM {t}');
SELECT * FROM regress_agg('SELECT avg(qty), avg(amount) FROM {t} WHERE amount BETWEEN -100 AND 100');
SELECT * FROM regress_agg('SELECT avg(amount) FROM {t} WHERE amount > 0');
-- double precision, compared rounded (the order in which rows are summed
-- changes the last bits)
SELECT * FROM regress_agg('SELECT round(sum(f)::numeric, 3), round(avg(f)::numeric, 3) FROM {t}');
SELECT * FROM regress_agg('SELECT min(f), max(f), min(qty), max(qty), min(amount), max(amount) FROM {t}');
SELECT * FROM regress_agg('SELECT bool_and(flag), bool_or(flag), bool_and(flagt), bool_or(flagt) FROM {t}');
SELECT * FROM regress_agg('SELECT bool_and(flagx), bool_or(flagx) FROM {t}');
SELECT * FROM regress_agg('SELECT bool_and(flag), bool_or(NOT flag) FROM {t} WHERE tenant_id IN (''globex'', ''hooli'')');
-- expressions over aggregates
SELECT * FROM regress_agg('SELECT sum(amount) / count(amount), max(qty)::bigint - min(qty), count(*) * 2 FROM {t}');

-- ===================================================================
-- Text: min and max are pushed under the C collation only
-- ===================================================================
SELECT * FROM regress_agg('SELECT min(name COLLATE "C"), max(name COLLATE "C") FROM {t}');
SELECT * FROM regress_agg('SELECT min(name), max(name) FROM {t}');
SELECT * FROM regress_agg('SELECT min(name COLLATE "en-x-icu"), max(name COLLATE "en-x-icu") FROM {t}');
SELECT * FROM regress_agg('SELECT status, min(name COLLATE "C"), max(name COLLATE "C") FROM {t} GROUP BY status');
SELECT * FROM regress_agg('SELECT tenant_id, min(name COLLATE "C"), max(name) FROM {t} GROUP BY tenant_id');

-- ===================================================================
-- count(DISTINCT x): a value on several shards counts once; the shards
-- declare name COLLATE NOCASE, yet 'apple' and 'Apple' differ
-- ===================================================================
SELECT * FROM regress_agg('SELECT count(DISTINCT name) FROM {t}');
SELECT * FROM regress_agg('SELECT count(DISTINCT name), count(DISTINCT status), count(*) FROM {t}');
SELECT * FROM regress_agg('SELECT status, count(DISTINCT name), count(name), sum(qty) FROM {t} GROUP BY status');
SELECT * FROM regress_agg('SELECT count(DISTINCT amount), count(DISTINCT tenant_id), count(DISTINCT f) FROM {t}');
SELECT * FROM regress_agg('SELECT tenant_id, count(DISTINCT name) FROM {t} GROUP BY tenant_id');
SELECT * FROM regress_agg('SELECT count(DISTINCT name COLLATE "C") FROM {t}');

-- ===================================================================
-- GROUP BY a column that is not the tenant's, the tenant's, two keys
-- ===================================================================
SELECT * FROM regress_agg('SELECT status, count(*), count(amount), sum(amount), avg(amount), sum(qty), avg(qty), min(qty), max(amount), bool_and(flag), bool_or(flagt) FROM {t} GROUP BY status');
SELECT * FROM regress_agg('SELECT status, round(sum(f)::numeric, 3), round(avg(f)::numeric, 3), min(f), max(f) FROM {t} GROUP BY status');
SELECT * FROM regress_agg('SELECT name, count(*), sum(qty) FROM {t} GROUP BY name');
SELECT * FROM regress_agg('SELECT qty, count(*) FROM {t} GROUP BY qty');
SELECT * FROM regress_agg('SELECT f, count(*) FROM {t} GROUP BY f');
SELECT * FROM regress_agg('SELECT amount, count(*) FROM {t} GROUP BY amount');
-- a boolean key: not pushed
SELECT * FROM regress_agg('SELECT flag, count(*), sum(amount) FROM {t} GROUP BY flag');
SELECT * FROM regress_agg('SELECT tenant_id, count(*), count(amount), sum(amount), avg(amount), sum(qty), avg(qty), round(sum(f)::numeric, 3), min(f), max(qty), bool_and(flag), bool_or(flagt) FROM {t} GROUP BY tenant_id');
SELECT * FROM regress_agg('SELECT tenant_id, status, count(*), sum(amount), avg(qty) FROM {t} GROUP BY tenant_id, status');
SELECT * FROM regress_agg('SELECT status, name, count(*), sum(amount) FROM {t} GROUP BY status, name');
SELECT * FROM regress_agg('SELECT status, tenant_id, count(*) FROM {t} GROUP BY status, tenant_id');
-- a key not in the select list, and keys as expressions of keys
SELECT * FROM regress_agg('SELECT count(*), sum(amount) FROM {t} GROUP BY status');
SELECT * FROM regress_agg('SELECT status || ''!'', count(*) FROM {t} GROUP BY status');
SELECT * FROM regress_agg('SELECT upper(status), count(*) FROM {t} GROUP BY upper(status)');
-- DISTINCT over aggregates
SELECT * FROM regress_agg('SELECT DISTINCT count(*) FROM {t} GROUP BY status');

-- ===================================================================
-- Zero rows, an unknown tenant, a tenant without rows, an empty shard
-- ===================================================================
SELECT * FROM regress_agg('SELECT count(*), count(amount), sum(amount), sum(qty), avg(qty), avg(amount), sum(f), avg(f), min(name COLLATE "C"), max(f), bool_and(flag), count(DISTINCT name) FROM {t} WHERE id < 0');
SELECT * FROM regress_agg($$SELECT count(*), sum(amount), avg(qty), max(qty), bool_or(flag) FROM {t} WHERE tenant_id = 'nobody'$$);
SELECT * FROM regress_agg($$SELECT count(*), sum(amount), avg(qty) FROM {t} WHERE tenant_id = 'ghost'$$);
SELECT * FROM regress_agg($$SELECT count(*), sum(amount), avg(qty) FROM {t} WHERE tenant_id = 'vacant'$$);
SELECT * FROM regress_agg('SELECT status, count(*) FROM {t} WHERE id < 0 GROUP BY status');
SELECT * FROM regress_agg($$SELECT tenant_id, count(*) FROM {t} WHERE tenant_id IN ('ghost', 'vacant', 'nobody') GROUP BY tenant_id$$);
-- every shard but one is empty for this condition
SELECT * FROM regress_agg('SELECT status, count(*), sum(amount), avg(qty) FROM {t} WHERE id = 12 GROUP BY status');
SELECT * FROM regress_agg('SELECT count(*), sum(amount), avg(qty) FROM {t} WHERE amount IS NULL');

-- ===================================================================
-- HAVING, ORDER BY and LIMIT over aggregates
-- ===================================================================
SELECT * FROM regress_agg('SELECT status, count(*) FROM {t} GROUP BY status HAVING count(*) > 4');
-- on an aggregate not in the select list
SELECT * FROM regress_agg('SELECT status FROM {t} GROUP BY status HAVING sum(amount) > 0');
SELECT * FROM regress_agg('SELECT status, count(*) FROM {t} GROUP BY status HAVING avg(qty) < 1000 AND min(name COLLATE "C") = ''Banana''');
SELECT * FROM regress_agg('SELECT tenant_id FROM {t} GROUP BY tenant_id HAVING bool_or(flag) AND count(DISTINCT name) > 1');
SELECT * FROM regress_agg('SELECT tenant_id, sum(amount) FROM {t} GROUP BY tenant_id HAVING sum(amount) < 0 OR max(qty) > 100');
SELECT * FROM regress_agg('SELECT count(*) FROM {t} HAVING count(*) > 100');
SELECT * FROM regress_agg('SELECT status, sum(amount) FROM {t} GROUP BY status ORDER BY sum(amount) DESC NULLS LAST', true);
SELECT * FROM regress_agg('SELECT tenant_id, sum(amount) FROM {t} GROUP BY tenant_id ORDER BY 2 DESC NULLS LAST, 1 LIMIT 2', true);
SELECT * FROM regress_agg('SELECT tenant_id, count(*) FROM {t} GROUP BY tenant_id ORDER BY count(*), tenant_id LIMIT 3', true);
SELECT * FROM regress_agg('SELECT name, count(*) FROM {t} GROUP BY name ORDER BY count(*) DESC, name COLLATE "C" LIMIT 3 OFFSET 1', true);
SELECT * FROM regress_agg('SELECT status, avg(qty) FROM {t} GROUP BY status ORDER BY avg(qty) NULLS FIRST LIMIT 2', true);
EXPLAIN (VERBOSE, COSTS OFF)
SELECT tenant_id, sum(amount) FROM sales GROUP BY tenant_id
  ORDER BY 2 DESC NULLS LAST, 1 LIMIT 2;

-- ===================================================================
-- Time buckets over the mixed stored forms (text with and without
-- offsets, Unix seconds)
-- ===================================================================
SELECT * FROM regress_agg($$SELECT date_trunc('day', created_at), count(*) FROM {t} GROUP BY 1$$);
SELECT * FROM regress_agg($$SELECT date_trunc('week', created_at), count(*) FROM {t} GROUP BY 1$$);
SELECT * FROM regress_agg($$SELECT date_trunc('month', created_at), count(*), sum(qty) FROM {t} GROUP BY 1$$);
SELECT * FROM regress_agg($$SELECT date_trunc('year', created_at), count(*), sum(amount) FROM {t} GROUP BY 1$$);
SELECT * FROM regress_agg($$SELECT date_trunc('hour', created_at), count(*) FROM {t} GROUP BY 1$$);
SELECT * FROM regress_agg($$SELECT date_trunc('minute', created_at), extract(minute FROM created_at), count(*) FROM {t} WHERE tenant_id IN ('globex', 'hooli') GROUP BY 1, 2$$);
SELECT * FROM regress_agg($$SELECT date_trunc('day', created_unix), count(*) FROM {t} GROUP BY 1$$);
SELECT * FROM regress_agg($$SELECT date_trunc('week', created_unix), count(*) FROM {t} GROUP BY 1$$);
SELECT * FROM regress_agg($$SELECT date_trunc('month', created_unix), count(*) FROM {t} GROUP BY 1$$);
SELECT * FROM regress_agg($$SELECT date_trunc('year', created_unix), count(*) FROM {t} GROUP BY 1$$);
SELECT * FROM regress_agg($$SELECT extract(year FROM created_at), count(*) FROM {t} GROUP BY 1$$);
SELECT * FROM regress_agg($$SELECT extract(month FROM created_at), count(*) FROM {t} GROUP BY 1$$);
SELECT * FROM regress_agg($$SELECT extract(quarter FROM created_at), count(*) FROM {t} GROUP BY 1$$);
SELECT * FROM regress_agg($$SELECT extract(dow FROM created_at), count(*) FROM {t} GROUP BY 1$$);
SELECT * FROM regress_agg($$SELECT extract(isodow FROM created_at), count(*) FROM {t} GROUP BY 1$$);
SELECT * FROM regress_agg($$SELECT extract(doy FROM created_at), count(*) FROM {t} GROUP BY 1$$);
SELECT * FROM regress_agg($$SELECT extract(day FROM created_at), extract(hour FROM created_at), count(*) FROM {t} GROUP BY 1, 2$$);
SELECT * FROM regress_agg($$SELECT extract(year FROM created_unix), extract(quarter FROM created_unix), count(*) FROM {t} GROUP BY 1, 2$$);
SELECT * FROM regress_agg($$SELECT extract(dow FROM created_unix), extract(isodow FROM created_unix), extract(doy FROM created_unix), count(*) FROM {t} GROUP BY 1, 2, 3$$);
SELECT * FROM regress_agg($$SELECT date_part('month', created_at), date_part('dow', created_unix), count(*) FROM {t} GROUP BY 1, 2$$);
SELECT * FROM regress_agg($$SELECT status, date_trunc('month', created_at) AS m, count(*), sum(amount) FROM {t} GROUP BY status, m$$);
SELECT * FROM regress_agg($$SELECT tenant_id, date_trunc('year', created_at), count(*) FROM {t} GROUP BY 1, 2$$);
SELECT * FROM regress_agg($$SELECT date_trunc('month', created_at), count(*) FROM {t} GROUP BY 1 ORDER BY 1 DESC NULLS LAST LIMIT 3$$, true);
-- units that are not pushed (extract(week) is grouped by its day, a
-- bucket form: sql/bucketforms.sql)
SELECT * FROM regress_agg($$SELECT date_trunc('quarter', created_at), count(*) FROM {t} GROUP BY 1$$);
SELECT * FROM regress_agg($$SELECT extract(epoch FROM created_at), count(*) FROM {t} GROUP BY 1$$);
SELECT * FROM regress_agg($$SELECT extract(week FROM created_unix), count(*) FROM {t} GROUP BY 1$$);
-- a date column is a grouping key itself: the shards group the days the
-- wrapper reads, as the Unix seconds of their midnights
CREATE FOREIGN TABLE sales_days (tenant_id text, id int, status text,
  amount bigint, created_at date, created_unix date)
  SERVER agg_srv OPTIONS (table 'sales');
CREATE TABLE sales_days_native AS
SELECT tenant_id, id, status, amount, created_at::date AS created_at,
       created_unix::date AS created_unix
FROM sales_native;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT created_at, count(*), sum(amount) FROM sales_days GROUP BY created_at;
SELECT * FROM regress_agg('SELECT created_at, count(*), sum(amount) FROM {t} GROUP BY created_at', false, 'sales_days');
SELECT * FROM regress_agg('SELECT created_unix, status, count(*) FROM {t} GROUP BY 1, 2', false, 'sales_days');
SELECT * FROM regress_agg('SELECT tenant_id, created_unix, max(amount) FROM {t} GROUP BY 1, 2', false, 'sales_days');
SELECT * FROM regress_agg('SELECT created_at, count(*) FROM {t} GROUP BY 1 ORDER BY 1 DESC NULLS LAST LIMIT 3', true, 'sales_days');
SELECT * FROM regress_agg($$SELECT created_unix, count(*) FROM {t} WHERE created_unix >= '1970-01-01' GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 2$$, true, 'sales_days');
SELECT * FROM regress_agg('SELECT count(DISTINCT created_unix) FROM {t}', false, 'sales_days');
-- a top-N report by tenant and day: each shard returns its first groups,
-- whatever storage class the dates have (TEXT here)
EXPLAIN (COSTS OFF)
SELECT tenant_id, created_at, count(*) FROM sales_days
  GROUP BY 1, 2 ORDER BY 2, tenant_id COLLATE "C" LIMIT 3;
SELECT * FROM regress_agg('SELECT tenant_id, created_at, count(*) FROM {t} GROUP BY 1, 2 ORDER BY 2 NULLS FIRST, tenant_id COLLATE "C" LIMIT 3', true, 'sales_days');
SELECT * FROM regress_agg('SELECT tenant_id, created_unix, sum(amount) FROM {t} GROUP BY 1, 2 ORDER BY 2 DESC NULLS LAST, tenant_id COLLATE "C" LIMIT 4 OFFSET 1', true, 'sales_days');
-- and its time buckets: extract of its fields, date_part and date_trunc of
-- it cast to timestamp (as date_part resolves), for units of a day or more
EXPLAIN (VERBOSE, COSTS OFF)
SELECT extract(year FROM created_at), date_trunc('month', created_at::timestamp),
       date_part('dow', created_unix), count(*)
  FROM sales_days GROUP BY 1, 2, 3;
SELECT * FROM regress_agg('SELECT extract(year FROM created_at), extract(quarter FROM created_unix), count(*) FROM {t} GROUP BY 1, 2', false, 'sales_days');
SELECT * FROM regress_agg('SELECT extract(month FROM created_at), extract(day FROM created_unix), extract(dow FROM created_at), count(*) FROM {t} GROUP BY 1, 2, 3', false, 'sales_days');
SELECT * FROM regress_agg('SELECT extract(isodow FROM created_unix), extract(doy FROM created_at), count(*) FROM {t} GROUP BY 1, 2', false, 'sales_days');
SELECT * FROM regress_agg($$SELECT date_part('year', created_at), date_part('dow', created_unix), count(*) FROM {t} GROUP BY 1, 2$$, false, 'sales_days');
SELECT * FROM regress_agg($$SELECT date_trunc('week', created_at::timestamp), date_trunc('year', CAST(created_unix AS timestamp)), count(*) FROM {t} GROUP BY 1, 2$$, false, 'sales_days');
SELECT * FROM regress_agg($$SELECT date_trunc('month', created_unix::timestamp), date_trunc('day', created_at::timestamp), sum(amount) FROM {t} GROUP BY 1, 2$$, false, 'sales_days');
SELECT * FROM regress_agg($$SELECT tenant_id, extract(month FROM created_at), count(*) FROM {t} GROUP BY 1, 2$$, false, 'sales_days');
-- date_trunc(unit, d) resolves to the timestamptz version, a time in the
-- session's TimeZone: the shards group by the unit's first day, and the
-- merge computes date_trunc of that date as PostgreSQL does
EXPLAIN (VERBOSE, COSTS OFF)
SELECT date_trunc('month', created_at), count(*) FROM sales_days GROUP BY 1;
SET TimeZone = 'America/Sao_Paulo';
SELECT * FROM regress_agg($$SELECT date_trunc('month', created_at), count(*), sum(amount) FROM {t} GROUP BY 1$$, false, 'sales_days');
SELECT * FROM regress_agg($$SELECT date_trunc('week', created_unix), date_trunc('YEAR', created_at), count(*) FROM {t} GROUP BY 1, 2$$, false, 'sales_days');
SELECT * FROM regress_agg($$SELECT tenant_id, date_trunc('day', created_unix), count(*) FROM {t} GROUP BY 1, 2$$, false, 'sales_days');
SELECT * FROM regress_agg($$SELECT date_trunc('month', created_at), count(*) FROM {t} GROUP BY 1 HAVING date_trunc('month', created_at) > '2024-01-01' ORDER BY 1 LIMIT 3$$, true, 'sales_days');
SET TimeZone = 'Asia/Kathmandu';
SELECT * FROM regress_agg($$SELECT date_trunc('month', created_at), count(*) FROM {t} GROUP BY 1$$, false, 'sales_days');
RESET TimeZone;
-- a prepared statement reads the TimeZone when it runs, as PostgreSQL does
PREPARE days_month AS
  SELECT date_trunc('month', created_at) AS m, count(*) FROM sales_days
  WHERE created_at >= '2024-05-01' GROUP BY 1 ORDER BY 1;
SET TimeZone = 'UTC';
EXECUTE days_month;
SET TimeZone = 'Pacific/Kiritimati';
EXECUTE days_month;
RESET TimeZone;
DEALLOCATE days_month;
-- where a zone skipped a day (Pacific/Apia, 2011-12-30), two days are one
-- bucket of date_trunc('day', d): the shards do not rank such groups
SET TimeZone = 'Pacific/Apia';
EXPLAIN (COSTS OFF)
SELECT tenant_id, date_trunc('day', created_at), count(*) FROM sales_days
  GROUP BY 1, 2 ORDER BY 3 DESC LIMIT 1;
RESET TimeZone;
-- on a timestamptz column, date_trunc(unit, tz) also depends on the
-- TimeZone: the shards group by the time rounded down to a grid on which
-- every local boundary of the unit falls (ssfdw_tz_grid, its step and
-- start bound when the query runs), and the merge adds up the groups of
-- each bucket
CREATE FOREIGN TABLE sales_tz (tenant_id text, id int, status text,
  amount bigint, created_at timestamptz, created_unix timestamptz)
  SERVER agg_srv OPTIONS (table 'sales');
CREATE TABLE sales_tz_native AS
SELECT tenant_id, id, status, amount, created_at AT TIME ZONE 'UTC' AS created_at,
       created_unix AT TIME ZONE 'UTC' AS created_unix
FROM sales_native;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT date_trunc('day', created_at), count(*) FROM sales_tz GROUP BY 1;
-- regress_tz_buckets(zone, tbl, query): regress_agg of query, whose %1$L
-- stands for the unit, for each unit of date_trunc, in TimeZone zone
CREATE FUNCTION regress_tz_buckets(zone text, tbl text, query text)
RETURNS TABLE (unit text, pushdown text, threads boolean, sqlite boolean,
               "rows" boolean)
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('TimeZone', zone, true);
  FOREACH unit IN ARRAY ARRAY['minute', 'hour', 'day', 'week', 'month',
                              'quarter', 'year'] LOOP
    SELECT r.pushdown, r.threads, r.sqlite, r."rows"
      INTO pushdown, threads, sqlite, "rows"
      FROM regress_agg(format(query, unit), false, tbl) r
      LIMIT 1;
    RETURN NEXT;
  END LOOP;
END
$$;
\set sales_q 'SELECT date_trunc(%1$L, created_at), date_trunc(%1$L, created_unix), count(*), sum(amount), max(id) FROM {t} GROUP BY 1, 2'
BEGIN;
SELECT * FROM regress_tz_buckets('UTC', 'sales_tz', :'sales_q');
SELECT * FROM regress_tz_buckets('America/New_York', 'sales_tz', :'sales_q');
SELECT * FROM regress_tz_buckets('Asia/Kathmandu', 'sales_tz', :'sales_q');
COMMIT;
-- times 1799 s apart across the DST changes of 2023-2024, and 800009 s
-- apart from 1750 on (local mean time, the first standard times)
CREATE FOREIGN TABLE ticks (tenant_id text, id int, t timestamptz)
  SERVER agg_srv;
CREATE TABLE ticks_native AS
SELECT 'acme' AS tenant_id, k AS id, to_timestamp(1696118400 + k * 1799) AS t
  FROM generate_series(0, 11999) k
UNION ALL
SELECT 'globex', 100000 + k, to_timestamp(-6940713600 + k::bigint * 800009)
  FROM generate_series(0, 11999) k
UNION ALL
SELECT 'initech', 200000 + k, to_timestamp(10036857600 + k::bigint * 259217)
  FROM generate_series(0, 3999) k
UNION ALL
SELECT 'vacant', 300000, to_timestamp(-210866803200 + 3600);
SELECT count(*), min(t), max(t) FROM ticks;
\set ticks_q 'SELECT tenant_id, date_trunc(%1$L, t), count(*), min(id), max(id) FROM {t} GROUP BY 1, 2'
BEGIN;
-- 28,001 rows whose groups the planner cannot tell without ANALYZE: room
-- for a group a row, so that the merge may hold them all
SET LOCAL work_mem = '64MB';
SELECT * FROM regress_tz_buckets('UTC', 'ticks', :'ticks_q');
SELECT * FROM regress_tz_buckets('America/New_York', 'ticks', :'ticks_q');
SELECT * FROM regress_tz_buckets('Europe/Amsterdam', 'ticks', :'ticks_q');
SELECT * FROM regress_tz_buckets('Australia/Lord_Howe', 'ticks', :'ticks_q');
SELECT * FROM regress_tz_buckets('America/Sao_Paulo', 'ticks', :'ticks_q');
SELECT * FROM regress_tz_buckets('Asia/Kathmandu', 'ticks', :'ticks_q');
SELECT * FROM regress_tz_buckets('Pacific/Chatham', 'ticks', :'ticks_q');
SELECT * FROM regress_tz_buckets('Africa/Monrovia', 'ticks', :'ticks_q');
SELECT * FROM regress_tz_buckets('Asia/Gaza', 'ticks', :'ticks_q');
SELECT * FROM regress_tz_buckets('+05:17', 'ticks', :'ticks_q');
SELECT * FROM regress_tz_buckets('EST5EDT', 'ticks', :'ticks_q');
-- extract and date_part in the TimeZone likewise: the merge computes the
-- field of each group's time
\set ticks_x 'SELECT tenant_id, extract(%1$L FROM t), date_part(%1$L, t), count(*), min(id), max(id) FROM {t} GROUP BY 1, 2, 3'
SELECT * FROM regress_tz_buckets('America/New_York', 'ticks', :'ticks_x');
SELECT * FROM regress_tz_buckets('Asia/Kathmandu', 'ticks', :'ticks_x');
SELECT * FROM regress_tz_buckets('Australia/Lord_Howe', 'ticks', :'ticks_x');
-- and the date in the TimeZone (created_at::date)
EXPLAIN (VERBOSE, COSTS OFF)
SELECT t::date, count(*) FROM ticks GROUP BY 1;
\set ticks_d 'SELECT pushdown, threads, sqlite, "rows" FROM regress_agg($$SELECT tenant_id, t::date, count(*), min(id) FROM {t} GROUP BY 1, 2$$, false, \'ticks\') LIMIT 1'
SET LOCAL TimeZone = 'UTC';
:ticks_d;
SET LOCAL TimeZone = 'America/New_York';
:ticks_d;
SET LOCAL TimeZone = 'Asia/Kathmandu';
:ticks_d;
SET LOCAL TimeZone = 'Pacific/Apia';
:ticks_d;
SET LOCAL TimeZone = 'Europe/Amsterdam';
:ticks_d;
-- in a zone given by a constant: tz AT TIME ZONE 'zone' (a timestamp),
-- and date_trunc's third argument; an abbreviation of a fixed offset first,
-- as PostgreSQL reads the zone
EXPLAIN (VERBOSE, COSTS OFF)
SELECT date_trunc('day', t AT TIME ZONE 'America/New_York'), count(*)
  FROM ticks GROUP BY 1;
SET LOCAL TimeZone = 'UTC';
\set ticks_z1 'SELECT tenant_id, date_trunc(%1$L, t AT TIME ZONE ''America/New_York''), count(*), min(id), max(id) FROM {t} GROUP BY 1, 2'
SELECT * FROM regress_tz_buckets('Asia/Tokyo', 'ticks', :'ticks_z1');
\set ticks_z2 'SELECT tenant_id, extract(%1$L FROM t AT TIME ZONE ''Asia/Kathmandu''), date_part(%1$L, t AT TIME ZONE ''EST''), count(*) FROM {t} GROUP BY 1, 2, 3'
SELECT * FROM regress_tz_buckets('UTC', 'ticks', :'ticks_z2');
\set ticks_z3 'SELECT tenant_id, date_trunc(%1$L, t, ''Australia/Lord_Howe''), date_trunc(%1$L, t, ''UTC''), count(*) FROM {t} GROUP BY 1, 2, 3'
SELECT * FROM regress_tz_buckets('Europe/Amsterdam', 'ticks', :'ticks_z3');
SET LOCAL TimeZone = 'Asia/Kolkata';
SELECT pushdown, threads, sqlite, "rows" FROM regress_agg($$SELECT CAST(t AT TIME ZONE 'Pacific/Apia' AS date), (t AT TIME ZONE 'MSK')::date, count(*) FROM {t} GROUP BY 1, 2$$, false, 'ticks') LIMIT 1;
SELECT pushdown, threads, sqlite, "rows", native FROM regress_agg($$SELECT date_trunc('day', t AT TIME ZONE 'Mars/Olympus'), count(*) FROM {t} GROUP BY 1$$, false, 'ticks');
-- a fixed offset east of UTC, an hour after the first timestamp
SELECT pushdown, threads, sqlite, "rows", native FROM regress_agg($$SELECT date_trunc('day', t AT TIME ZONE 'NPT'), count(*) FROM {t} WHERE tenant_id = 'vacant' GROUP BY 1$$, false, 'ticks');
-- an empty zone is not pushed: PostgreSQL raises its error on the rows
SELECT pushdown, threads, sqlite, "rows", native FROM regress_agg($$SELECT date_trunc('hour', t, ''), count(*) FROM {t} GROUP BY 1$$, false, 'ticks');
SELECT pushdown, threads, sqlite, "rows", native FROM regress_agg($$SELECT (t AT TIME ZONE '')::date, count(*) FROM {t} GROUP BY 1$$, false, 'ticks');
SET LOCAL TimeZone = 'Pacific/Apia';
SELECT * FROM regress_agg($$SELECT extract(dow FROM t), extract(isodow FROM t), extract(doy FROM t), extract(isoyear FROM t), count(*) FROM {t} GROUP BY 1, 2, 3, 4$$, false, 'ticks') LIMIT 1;
SELECT * FROM regress_agg($$SELECT tenant_id, date_part('hour', t), count(*) FROM {t} GROUP BY 1, 2 ORDER BY 3 DESC, 2, tenant_id COLLATE "C" LIMIT 5$$, true, 'ticks');
-- a POSIX zone whose offsets are no whole quarter hours for ever: every
-- time to the second
SELECT * FROM regress_tz_buckets('XXX5:07YYY4:37,M3.2.0,M11.1.0', 'ticks', :'ticks_q');
COMMIT;
-- how many groups a shard returns for months of 250 days: one a day in
-- UTC or any fixed offset, one an hour where DST moves midnight
SET TimeZone = 'UTC';
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT date_trunc('month', t), count(*) FROM ticks WHERE tenant_id = 'acme' GROUP BY 1;
SET TimeZone = '+05:30';
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT date_trunc('month', t), count(*) FROM ticks WHERE tenant_id = 'acme' GROUP BY 1;
SET TimeZone = 'America/New_York';
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT date_trunc('month', t), count(*) FROM ticks WHERE tenant_id = 'acme' GROUP BY 1;
RESET TimeZone;
SET TimeZone = 'Asia/Kolkata';
SELECT * FROM regress_agg($$SELECT tenant_id, date_trunc('day', created_unix), count(*) FROM {t} GROUP BY 1, 2$$, false, 'sales_tz');
SELECT * FROM regress_agg($$SELECT date_trunc('month', created_at), count(*) FROM {t} WHERE tenant_id <> 'acme' GROUP BY 1 ORDER BY 1 LIMIT 4$$, true, 'sales_tz');
RESET TimeZone;
-- timestamptz(p) rounds to p digits first, perhaps into the next bucket:
-- not pushed
CREATE FOREIGN TABLE sales_tz0 (tenant_id text, id int,
  created_at timestamptz(0)) SERVER agg_srv OPTIONS (table 'sales');
EXPLAIN (VERBOSE, COSTS OFF)
SELECT date_trunc('day', created_at), count(*) FROM sales_tz0 GROUP BY 1;
-- grouped by the tenant with a LIMIT, each shard must return whole
-- buckets: no shard bound
EXPLAIN (COSTS OFF)
SELECT tenant_id, date_trunc('day', created_at), count(*) FROM sales_tz
  GROUP BY 1, 2 LIMIT 3;
-- units below a day (extract(hour FROM date) is PostgreSQL's error), and
-- date_trunc of a date as timestamptz by a unit whose first day SQLite
-- does not compute: grouped by the date, a bucket form
-- (sql/bucketforms.sql), the merge computing each key (or its error)
SELECT * FROM regress_agg($$SELECT date_trunc('hour', created_at::timestamp), date_part('hour', created_at), count(*) FROM {t} GROUP BY 1, 2$$, false, 'sales_days');
SELECT * FROM regress_agg($$SELECT extract(hour FROM created_at), count(*) FROM {t} GROUP BY 1$$, false, 'sales_days');
SELECT * FROM regress_agg($$SELECT date_trunc('quarter', created_at), count(*) FROM {t} GROUP BY 1$$, false, 'sales_days');
SELECT * FROM regress_agg($$SELECT date_trunc('month', created_at, 'UTC'), count(*) FROM {t} GROUP BY 1$$, false, 'sales_days');

-- ===================================================================
-- Not pushed, and still right: FILTER on a boolean column, ORDER BY
-- inside an aggregate, string_agg, window functions over rows, ROLLUP,
-- aggregates of expressions; pushed, and right: a grouping under a window
-- function, variances of integers (more in sql/aggforms.sql)
-- ===================================================================
SELECT * FROM regress_agg('SELECT status, count(*) FILTER (WHERE flag), sum(amount) FILTER (WHERE qty > 0) FROM {t} GROUP BY status');
SELECT * FROM regress_agg('SELECT status, string_agg(name, '','' ORDER BY name COLLATE "C") FROM {t} GROUP BY status');
SELECT * FROM regress_agg('SELECT tenant_id, array_agg(id ORDER BY id) FROM {t} GROUP BY tenant_id');
SELECT * FROM regress_agg('SELECT string_agg(DISTINCT status, '','' ORDER BY status) FROM {t}');
SELECT * FROM regress_agg('SELECT status, sum(amount), rank() OVER (ORDER BY sum(amount) NULLS FIRST) FROM {t} GROUP BY status');
SELECT * FROM regress_agg('SELECT tenant_id, id, sum(qty) OVER (PARTITION BY tenant_id ORDER BY id) FROM {t}');
SELECT * FROM regress_agg('SELECT status, flag, count(*), sum(amount) FROM {t} GROUP BY ROLLUP (status, flag)');
SELECT * FROM regress_agg('SELECT tenant_id, status, count(*) FROM {t} GROUP BY CUBE (tenant_id, status)');
SELECT * FROM regress_agg('SELECT sum(qty / 2), max(lower(name)), sum(amount / 2) FROM {t}');
-- integer overflow: PostgreSQL's error, whichever way
SELECT * FROM regress_agg('SELECT sum(amount * 2) FROM {t}');
SELECT * FROM regress_agg('SELECT count(DISTINCT name), count(DISTINCT status) FROM {t} GROUP BY flag');
SELECT * FROM regress_agg('SELECT stddev(qty), variance(amount) FROM {t}');
SELECT * FROM regress_agg('SELECT status, every(flag), bit_or(qty) FROM {t} GROUP BY status');
-- a condition PostgreSQL must evaluate
SELECT * FROM regress_agg('SELECT status, count(*), sum(amount) FROM {t} WHERE qty % 2 = 1 GROUP BY status');
-- non-deterministic collation: groups are PostgreSQL's
CREATE COLLATION regress_ci (provider = icu, locale = 'und-u-ks-level2',
                             deterministic = false);
SELECT * FROM regress_agg('SELECT min(lower(name)), count(*) FROM {t} GROUP BY name COLLATE regress_ci');
SELECT * FROM regress_agg('SELECT count(DISTINCT name COLLATE regress_ci) FROM {t}');

-- ===================================================================
-- Routed aggregates
-- ===================================================================
SELECT * FROM regress_agg($$SELECT status, count(*), sum(amount), avg(qty) FROM {t} WHERE tenant_id = 'acme' GROUP BY status$$);
SELECT * FROM regress_agg($$SELECT count(*), sum(amount), count(DISTINCT name), bool_and(flag) FROM {t} WHERE tenant_id = 'acme'$$);
SELECT * FROM regress_agg($$SELECT tenant_id, count(*), sum(amount) FROM {t} WHERE tenant_id IN ('acme', 'globex', 'nobody') GROUP BY tenant_id$$);
SELECT * FROM regress_agg($$SELECT status, sum(amount) FROM {t} WHERE tenant_id = ANY (ARRAY['umbrella', 'hooli']) GROUP BY status$$);
SELECT * FROM regress_agg($$SELECT date_trunc('month', created_at), count(*) FROM {t} WHERE tenant_id = 'initech' GROUP BY 1$$);
EXPLAIN (VERBOSE, COSTS OFF)
SELECT tenant_id, count(*), sum(amount) FROM sales
  WHERE tenant_id IN ('acme', 'globex', 'nobody') GROUP BY tenant_id;
-- the tenant from an outer query: the shards are chosen, and the groups
-- merged, afresh for each outer row
SELECT * FROM regress_agg($$SELECT v.tenant_id, (SELECT count(*) FROM {t} s WHERE s.tenant_id = v.tenant_id), (SELECT sum(amount) FROM {t} s WHERE s.tenant_id = v.tenant_id) FROM (VALUES ('acme'), ('hooli'), ('nobody'), ('stark'), ('ghost')) v(tenant_id)$$);
SELECT * FROM regress_agg($$SELECT v.tenant_id, g.* FROM (VALUES ('acme'), ('umbrella'), ('initech')) v(tenant_id), LATERAL (SELECT status, count(*), avg(qty) FROM {t} s WHERE s.tenant_id = v.tenant_id GROUP BY status) g$$);
-- a parameter, in a generic plan
PREPARE tenant_report(text) AS
  SELECT status, count(*), sum(amount) FROM sales WHERE tenant_id = $1
  GROUP BY status ORDER BY status;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (VERBOSE, COSTS OFF) EXECUTE tenant_report('acme');
EXECUTE tenant_report('acme');
EXECUTE tenant_report('hooli');
EXECUTE tenant_report('nobody');
RESET plan_cache_mode;
DEALLOCATE tenant_report;
SELECT status, count(*), sum(amount) FROM sales_native WHERE tenant_id = 'acme'
  GROUP BY status ORDER BY status;

-- ===================================================================
-- Tenants being moved: hooli's copies on a3 and stark's leftovers on a3
-- are not counted, however the aggregate is computed
-- ===================================================================
SELECT * FROM regress_agg('SELECT status, count(*), sum(amount), max(name COLLATE "C") FROM {t} GROUP BY status');
SELECT * FROM regress_agg('SELECT tenant_id, count(*), sum(amount), count(DISTINCT name) FROM {t} GROUP BY tenant_id');
SELECT * FROM regress_agg('SELECT count(*), sum(amount), count(DISTINCT name) FROM {t}');
SELECT * FROM regress_agg($$SELECT count(*), sum(amount) FROM {t} WHERE tenant_id IN ('hooli', 'stark')$$);
SELECT * FROM regress_agg($$SELECT date_trunc('day', created_at), count(*) FROM {t} WHERE tenant_id IN ('hooli', 'stark') GROUP BY 1$$);

-- ===================================================================
-- A role whose user mapping names its tenants sees only their groups
-- ===================================================================
CREATE ROLE regress_agg_bi;
GRANT SELECT ON sales TO regress_agg_bi;
CREATE USER MAPPING FOR regress_agg_bi SERVER agg_srv
  OPTIONS (tenants 'acme, hooli');
SET ROLE regress_agg_bi;
SELECT status, count(*), sum(amount), count(DISTINCT name) FROM sales
  GROUP BY status ORDER BY status;
SELECT tenant_id, count(*), sum(amount) FROM sales GROUP BY tenant_id ORDER BY 1;
SET sqlite_shard_fdw.thread_aggregation = off;
SELECT status, count(*), sum(amount), count(DISTINCT name) FROM sales
  GROUP BY status ORDER BY status;
RESET sqlite_shard_fdw.thread_aggregation;
RESET ROLE;
SELECT status, count(*), sum(amount), count(DISTINCT name) FROM sales_native
  WHERE tenant_id IN ('acme', 'hooli') GROUP BY status ORDER BY status;
DROP USER MAPPING FOR regress_agg_bi SERVER agg_srv;
REVOKE SELECT ON sales FROM regress_agg_bi;
DROP ROLE regress_agg_bi;

-- ===================================================================
-- Grouped by SQLite instead of the reading threads
-- (sqlite_shard_fdw.thread_aggregation off): the partial-aggregate SQL
-- ===================================================================
SET sqlite_shard_fdw.thread_aggregation = off;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT status, count(*), count(qty), sum(amount), avg(amount), sum(qty),
       avg(qty), sum(f), avg(f), min(qty), max(f), bool_and(flag)
  FROM sales GROUP BY status;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT tenant_id, count(DISTINCT name), min(name COLLATE "C") FROM sales
  GROUP BY tenant_id;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT extract(quarter FROM created_at), date_trunc('week', created_unix),
       count(*)
  FROM sales GROUP BY 1, 2;
RESET sqlite_shard_fdw.thread_aggregation;

-- ===================================================================
-- Timestamps stored in forms SQLite reads otherwise than the wrapper
-- (badts, one per row): a bucket computed in SQLite must be the bucket
-- of the value the wrapper reads, or the wrapper's error
-- ===================================================================
CREATE FOREIGN TABLE badts (tenant_id text, id int, ts timestamp)
  SERVER agg_srv;
SELECT id, ts FROM badts WHERE id IN (8, 11) ORDER BY id;
SELECT b.id, m.*
  FROM generate_series(1, 11) b(id),
       LATERAL regress_modes(format(
         $$SELECT date_trunc('day', ts), count(*) FROM badts WHERE id = %s GROUP BY 1$$,
         b.id)) m
  ORDER BY b.id, m.mode;
SELECT b.id, m.*
  FROM generate_series(1, 11) b(id),
       LATERAL regress_modes(format(
         $$SELECT extract(year FROM ts), count(*) FROM badts WHERE id = %s GROUP BY 1$$,
         b.id)) m
  WHERE b.id IN (1, 2, 3, 10, 11)
  ORDER BY b.id, m.mode;
-- the same stored values in a date column grouped by: the day the
-- wrapper reads, or its error
CREATE FOREIGN TABLE baddays (tenant_id text, id int, ts date)
  SERVER agg_srv OPTIONS (table 'badts');
SELECT b.id, m.*
  FROM generate_series(1, 11) b(id),
       LATERAL regress_modes(format(
         $$SELECT ts, count(*) FROM baddays WHERE id = %s GROUP BY 1$$,
         b.id)) m
  ORDER BY b.id, m.mode;
SELECT b.id, m.*
  FROM generate_series(1, 11) b(id),
       LATERAL regress_modes(format(
         $$SELECT extract(year FROM ts), count(*) FROM baddays WHERE id = %s GROUP BY 1$$,
         b.id)) m
  WHERE b.id IN (1, 2, 3, 8, 10, 11)
  ORDER BY b.id, m.mode;

-- min and max of times: the reading threads read the stored value itself
-- (the SQLite query selects the column, no function per row), each as the
-- wrapper reads it; the same answer or error as SQLite's GROUP BY and as
-- PostgreSQL's over the rows, for every form (12: NULL, no row; 13-17:
-- February 29 in leap years and not, the last second of a year)
EXPLAIN (VERBOSE, COSTS OFF)
SELECT tenant_id, min(ts), max(ts), count(*) FROM badts GROUP BY tenant_id;
SELECT b.id, m.*
  FROM generate_series(1, 17) b(id),
       LATERAL regress_modes(format(
         $$SELECT tenant_id, max(ts), min(ts), count(*) FROM badts WHERE id = %s GROUP BY 1$$,
         b.id)) m
  ORDER BY b.id, m.mode;
SELECT b.id, m.*
  FROM generate_series(1, 17) b(id),
       LATERAL regress_modes(format(
         $$SELECT min(ts), max(ts) FROM baddays WHERE id = %s$$,
         b.id)) m
  ORDER BY b.id, m.mode;
SELECT * FROM regress_modes($$SELECT min(ts), max(ts) FROM badts WHERE id IN (8, 9, 11, 13, 15, 17)$$);

-- ===================================================================
-- Stored values the aggregate cannot read: text in an INTEGER column
-- (dirty.amount, 'n/a' on shard a2), a word that is no boolean
-- (dirty.flag, 'maybe' on a2).  Pushed, an error naming the shard; not
-- pushed, the conversion's own error, naming shard, column and row.
-- Either way an error, never an answer that skips the value.
-- ===================================================================
EXPLAIN (VERBOSE, COSTS OFF) SELECT sum(amount) FROM dirty;
SELECT sum(amount) FROM dirty;
SELECT * FROM regress_modes('SELECT sum(amount) FROM dirty');
SELECT * FROM regress_modes('SELECT min(amount), max(amount) FROM dirty');
SELECT * FROM regress_modes('SELECT avg(amount) FROM dirty');
SELECT * FROM regress_modes('SELECT count(amount) FROM dirty');
SELECT * FROM regress_modes('SELECT count(DISTINCT amount) FROM dirty');
SELECT * FROM regress_modes('SELECT bool_and(flag) FROM dirty');
SELECT * FROM regress_modes('SELECT tenant_id, sum(amount) FROM dirty GROUP BY tenant_id');
-- an integer beyond int4's range in a column read as integer (q, on a3)
SELECT * FROM regress_modes('SELECT sum(q) FROM dirty');
SELECT * FROM regress_modes('SELECT min(q), max(q) FROM dirty');
SELECT * FROM regress_modes('SELECT avg(q) FROM dirty');
SELECT * FROM regress_modes('SELECT q, count(*) FROM dirty WHERE id = 7 GROUP BY q');
SELECT * FROM regress_modes('SELECT count(DISTINCT q) FROM dirty');
-- what does not read the bad values answers
SELECT * FROM regress_modes('SELECT count(*) FROM dirty');
SELECT * FROM regress_modes('SELECT sum(q), max(q) FROM dirty WHERE id < 7');
SELECT * FROM regress_modes($$SELECT tenant_id, sum(amount), bool_and(flag) FROM dirty WHERE tenant_id IN ('acme', 'umbrella', 'initech') GROUP BY tenant_id$$);
SET sqlite_shard_fdw.aggregate_pushdown = off;
SELECT sum(amount) FROM dirty;
RESET sqlite_shard_fdw.aggregate_pushdown;

-- ===================================================================
-- Integer sums that leave 64 bits inside a shard: sales.amount (values
-- near 2^62) read as integer, smallint and double precision.  Summing
-- them as integers overflows in the shard (on the reading threads, and
-- in SQLite's sum()); that is PostgreSQL's 22003, as reading the rows
-- gives (each value is out of the column's range), never SQLite's
-- "integer overflow" as an FDW error.  Read as double precision, the
-- integer -2^63 (hooli's) is an ordinary number.
-- ===================================================================
CREATE FOREIGN TABLE sales_narrow (tenant_id text, id int, status text,
  amount int, amount2 smallint OPTIONS (column 'amount'),
  famount float8 OPTIONS (column 'amount'))
  SERVER agg_srv OPTIONS (table 'sales');
SELECT sum(amount) FROM sales_narrow WHERE tenant_id = 'acme';
SET sqlite_shard_fdw.thread_aggregation = off;
SELECT sum(amount) FROM sales_narrow WHERE tenant_id = 'acme';
RESET sqlite_shard_fdw.thread_aggregation;
SELECT * FROM regress_modes($$SELECT sum(amount) FROM sales_narrow WHERE tenant_id = 'acme'$$);
SELECT * FROM regress_modes($$SELECT status, sum(amount2), count(*) FROM sales_narrow WHERE tenant_id IN ('acme', 'umbrella') GROUP BY status$$);
SELECT * FROM regress_modes($$SELECT tenant_id, avg(amount) FROM sales_narrow WHERE tenant_id = 'globex' GROUP BY tenant_id$$);
SELECT * FROM regress_modes($$SELECT tenant_id, sum(amount) FROM sales_narrow WHERE tenant_id = 'acme' GROUP BY tenant_id ORDER BY 2 LIMIT 1$$);
SELECT * FROM regress_modes($$SELECT sum(famount), avg(famount), count(famount) FROM sales_narrow WHERE tenant_id = 'hooli'$$);
DROP FOREIGN TABLE sales_narrow;

-- ===================================================================
-- Infinities: +Infinity and -Infinity on one shard sum to NaN
-- ===================================================================
SELECT * FROM regress_agg('SELECT sum(f), avg(f), min(f), max(f), count(f) FROM {t}', tbl => 'measures');
SELECT * FROM regress_agg('SELECT tenant_id, sum(f), avg(f) FROM {t} GROUP BY tenant_id', tbl => 'measures');
SELECT * FROM regress_agg('SELECT sum(f) FROM {t} WHERE f > 0', tbl => 'measures');

-- ===================================================================
-- sqlite_shard_fdw.aggregate_pushdown = off: rows, the same answers
-- ===================================================================
SET sqlite_shard_fdw.aggregate_pushdown = off;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT status, count(*), sum(amount) FROM sales GROUP BY status;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT tenant_id, count(*) FROM sales GROUP BY tenant_id;
SELECT status, count(*), sum(amount), avg(qty), count(DISTINCT name)
  FROM sales GROUP BY status ORDER BY status;
RESET sqlite_shard_fdw.aggregate_pushdown;
SELECT status, count(*), sum(amount), avg(qty), count(DISTINCT name)
  FROM sales GROUP BY status ORDER BY status;
SELECT status, count(*), sum(amount), avg(qty), count(DISTINCT name)
  FROM sales_native GROUP BY status ORDER BY status;

-- ===================================================================
-- Text that PostgreSQL refuses (invalid UTF-8, a NUL byte) is an error
-- under pushdown too, never a min() or max() result
-- ===================================================================
\! mkdir -p /tmp/ssfdw_regress/aggregates/utf8 && cd /tmp/ssfdw_regress/aggregates/utf8 && rm -f *.db && sqlite3 s.db "CREATE TABLE t(tenant_id TEXT, n TEXT); INSERT INTO t VALUES ('a', 'abc'), ('a', CAST(x'41FF' AS TEXT)), ('b', 'x' || char(0) || 'y'), ('c', 'fine')" && sqlite3 directory.db "CREATE TABLE shards(shard_id TEXT PRIMARY KEY, path TEXT NOT NULL UNIQUE); CREATE TABLE shard_map(tenant_id TEXT PRIMARY KEY, shard_id TEXT NOT NULL, status TEXT NOT NULL DEFAULT 'ACTIVE', target_shard_id TEXT, updated_at INTEGER NOT NULL); INSERT INTO shards VALUES ('u1', 's.db'); INSERT INTO shard_map VALUES ('a', 'u1', 'ACTIVE', NULL, 0), ('b', 'u1', 'ACTIVE', NULL, 0), ('c', 'u1', 'ACTIVE', NULL, 0)" && chown -R postgres:postgres /tmp/ssfdw_regress/aggregates/utf8
CREATE SERVER agg_utf8 FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/aggregates/utf8/directory.db');
CREATE FOREIGN TABLE utf8t (tenant_id text, n text COLLATE "C")
  SERVER agg_utf8 OPTIONS (table 't');
SELECT min(n) FROM utf8t WHERE tenant_id = 'a';
SELECT max(n) FROM utf8t WHERE tenant_id = 'b';
SELECT min(n), max(n) FROM utf8t WHERE tenant_id = 'c';
SET sqlite_shard_fdw.thread_aggregation = off;
SELECT min(n) FROM utf8t WHERE tenant_id = 'a';
SELECT max(n) FROM utf8t WHERE tenant_id = 'b';
RESET sqlite_shard_fdw.thread_aggregation;
DROP SERVER agg_utf8 CASCADE;

-- ===================================================================
-- Top-N reports grouped by the tenant: the scan also does ORDER BY and
-- LIMIT.  Each shard returns only its first OFFSET + LIMIT groups in the
-- query's order (SQLite's ORDER BY ... LIMIT, or sorted by the reading
-- threads), the backend sorts what arrives and applies the limit.  Orders
-- by counts, integer sums (bigint sums beyond int8: the halves compared as
-- one number), integer min/max, integer keys and text under "C".
-- ===================================================================
EXPLAIN (VERBOSE, COSTS OFF)
SELECT tenant_id, sum(amount) FROM sales
  GROUP BY tenant_id ORDER BY 2 DESC, tenant_id COLLATE "C" LIMIT 2;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT tenant_id, sum(amount) FROM sales
  GROUP BY tenant_id ORDER BY 2 DESC, tenant_id COLLATE "C" LIMIT 2;
SET sqlite_shard_fdw.thread_aggregation = off;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT tenant_id, sum(amount) FROM sales
  GROUP BY tenant_id ORDER BY 2 DESC, tenant_id COLLATE "C" LIMIT 2 OFFSET 1;
RESET sqlite_shard_fdw.thread_aggregation;
SELECT * FROM regress_agg($$SELECT tenant_id, sum(amount), count(*) FROM {t} GROUP BY tenant_id ORDER BY 2 DESC, tenant_id COLLATE "C" LIMIT 2$$, true);
SELECT * FROM regress_agg($$SELECT tenant_id, sum(amount) FROM {t} GROUP BY tenant_id ORDER BY 2 NULLS FIRST, tenant_id COLLATE "C" LIMIT 3 OFFSET 1$$, true);
SELECT * FROM regress_agg($$SELECT tenant_id, status, count(*), max(qty) FROM {t} GROUP BY tenant_id, status ORDER BY 3 DESC, 4 DESC NULLS LAST, tenant_id COLLATE "C", status COLLATE "C" LIMIT 4$$, true);
SELECT * FROM regress_agg($$SELECT tenant_id, min(name COLLATE "C"), sum(qty) FROM {t} GROUP BY tenant_id ORDER BY 2 DESC, tenant_id COLLATE "C" LIMIT 2$$, true);
SELECT * FROM regress_agg($$SELECT tenant_id, id, count(*) FROM {t} GROUP BY tenant_id, id ORDER BY id DESC, tenant_id COLLATE "C" LIMIT 3$$, true);
-- any groups will do without ORDER BY: how many is determined
SELECT * FROM regress_agg($$SELECT count(*) FROM (SELECT tenant_id, count(*) FROM {t} GROUP BY tenant_id LIMIT 2) s$$);
EXPLAIN (COSTS OFF)
SELECT tenant_id, count(*) FROM sales GROUP BY tenant_id LIMIT 2;
-- LIMIT 0 reads nothing; LIMIT NULL and LIMIT ALL limit nothing; an
-- OFFSET past the last group
SELECT * FROM regress_agg($$SELECT tenant_id, count(*) FROM {t} GROUP BY tenant_id ORDER BY 2, tenant_id COLLATE "C" LIMIT 0$$, true);
SELECT * FROM regress_agg($$SELECT tenant_id, count(*) FROM {t} GROUP BY tenant_id ORDER BY 2, tenant_id COLLATE "C" LIMIT NULL OFFSET 3$$, true);
SELECT * FROM regress_agg($$SELECT tenant_id, count(*) FROM {t} GROUP BY tenant_id ORDER BY 2, tenant_id COLLATE "C" LIMIT ALL OFFSET 4$$, true);
SELECT * FROM regress_agg($$SELECT tenant_id, count(*) FROM {t} GROUP BY tenant_id ORDER BY 2, tenant_id COLLATE "C" LIMIT 5 OFFSET 100$$, true);
-- parameters: evaluated when the scan starts, generic plan or custom
PREPARE top_tenants(int, bigint) AS
  SELECT tenant_id, sum(amount) FROM sales
  GROUP BY tenant_id ORDER BY 2 DESC, tenant_id COLLATE "C" LIMIT $1 OFFSET $2;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE top_tenants(1, 1);
EXECUTE top_tenants(1, 1);
EXECUTE top_tenants(NULL, 3);
-- a negative LIMIT or OFFSET is PostgreSQL's own error
EXECUTE top_tenants(-1, 0);
EXECUTE top_tenants(1, -1);
RESET plan_cache_mode;
SELECT tenant_id, count(*) FROM sales GROUP BY tenant_id ORDER BY 2 LIMIT -1;
DEALLOCATE top_tenants;
-- what the shards cannot order exactly, or what filters groups after
-- them, leaves ORDER BY and LIMIT to PostgreSQL (still right): HAVING, an
-- expression over an aggregate, avg, text under a collation not "C", ties
EXPLAIN (COSTS OFF)
SELECT tenant_id, count(*) FROM sales GROUP BY tenant_id HAVING count(*) > 1 ORDER BY 2 LIMIT 1;
EXPLAIN (COSTS OFF)
SELECT tenant_id, count(*) FROM sales GROUP BY tenant_id ORDER BY count(*) * -1 LIMIT 1;
EXPLAIN (COSTS OFF)
SELECT tenant_id, avg(qty) FROM sales GROUP BY tenant_id ORDER BY 2 LIMIT 1;
EXPLAIN (COSTS OFF)
SELECT tenant_id, count(*) FROM sales GROUP BY tenant_id ORDER BY 1 LIMIT 1;
EXPLAIN (COSTS OFF)
SELECT tenant_id, count(*) FROM sales GROUP BY tenant_id ORDER BY 2 FETCH FIRST 1 ROW WITH TIES;
SELECT * FROM regress_agg($$SELECT tenant_id, count(*) FROM {t} GROUP BY tenant_id HAVING count(*) > 1 ORDER BY 2 DESC, tenant_id COLLATE "C" LIMIT 2$$, true);
SELECT * FROM regress_agg($$SELECT tenant_id, count(*) FROM {t} GROUP BY tenant_id ORDER BY 2 FETCH FIRST 1 ROW WITH TIES$$);
-- a group whose values make the query fail is never hidden by a shard's
-- bound: the error names the shard, whatever the order and limit
SELECT * FROM regress_modes($$SELECT tenant_id, sum(amount) FROM dirty GROUP BY tenant_id ORDER BY 2 DESC NULLS LAST LIMIT 1$$);
SELECT * FROM regress_modes($$SELECT tenant_id, sum(amount) FROM dirty GROUP BY tenant_id ORDER BY 2 LIMIT 1$$);
-- unreadable booleans (flag 'maybe' on a2) and integers beyond int4 (q
-- on a3) too
SELECT * FROM regress_modes($$SELECT tenant_id, bool_and(flag) FROM dirty GROUP BY tenant_id ORDER BY count(*) DESC, tenant_id COLLATE "C" LIMIT 1$$);
SELECT * FROM regress_modes($$SELECT tenant_id, max(q) FROM dirty GROUP BY tenant_id ORDER BY count(*) DESC, tenant_id COLLATE "C" LIMIT 1$$);
-- through a view and a subquery
CREATE VIEW sales_view AS SELECT * FROM sales;
EXPLAIN (COSTS OFF)
SELECT tenant_id, sum(amount) FROM sales_view
  GROUP BY tenant_id ORDER BY 2 DESC, tenant_id COLLATE "C" LIMIT 2;
SELECT tenant_id, sum(amount) FROM sales_view
  GROUP BY tenant_id ORDER BY 2 DESC, tenant_id COLLATE "C" LIMIT 2;
SELECT * FROM (SELECT tenant_id, max(qty) AS m FROM (SELECT * FROM sales) s
               GROUP BY tenant_id ORDER BY 2 DESC NULLS LAST, 1 LIMIT 2) t
  ORDER BY 1;
DROP VIEW sales_view;
-- a float key (1 and 1.0 are one group) is left to PostgreSQL
EXPLAIN (COSTS OFF)
SELECT tenant_id, f, count(*) FROM sales GROUP BY tenant_id, f ORDER BY 3 LIMIT 1;

-- ===================================================================
-- What a shard's bound needs of the shards, on a fleet of two: keys
-- declared with their type's affinity (t.k holds '10', '100' and 7, '9'
-- in an untyped column: ordered as integers only by PostgreSQL; u.db
-- declares kb.tenant_id without a type), text ordered only in UTF-8
-- databases (u.db is UTF-16: é sorts before Ā in code points, after it in
-- UTF-16 bytes), no double precision sum overflowing in a group the bound
-- would drop, no varchar(n) key (vc), no invalid text counted (bt).
-- ===================================================================
\! mkdir -p /tmp/ssfdw_regress/aggregates/topn && cd /tmp/ssfdw_regress/aggregates/topn && rm -f *.db && sqlite3 t.db "CREATE TABLE kv(tenant_id TEXT, k); INSERT INTO kv VALUES ('a', '10'), ('a', '100'), ('a', '100'); CREATE TABLE u(tenant_id TEXT, name TEXT); CREATE TABLE fs(tenant_id TEXT, f REAL); INSERT INTO fs VALUES ('a', 1e308), ('a', 1e308), ('c', 1), ('c', 1), ('c', 1); CREATE TABLE kb(tenant_id TEXT, n INTEGER); INSERT INTO kb VALUES ('a', 5), ('c', 7); CREATE TABLE vc(tenant_id TEXT, name TEXT); INSERT INTO vc VALUES ('a', 'n0'), ('a', 'n0 '), ('a', 'n0  '), ('c', 'n0'), ('c', 'n0'); CREATE TABLE bt(tenant_id TEXT, name TEXT); INSERT INTO bt VALUES ('a', 'ok'), ('c', CAST(x'ff' AS TEXT)); CREATE TABLE k2(tenant_id TEXT, k INTEGER); INSERT INTO k2 VALUES ('a', 1), ('a', 2), ('c', 5); CREATE TABLE vl(tenant_id TEXT, name TEXT); INSERT INTO vl VALUES ('a', 'ok'), ('c', 'toolong'); CREATE TABLE k3a(tenant_id TEXT, k INTEGER); CREATE TABLE k3b(tenant_id TEXT, k); INSERT INTO k3a VALUES ('a', 5), ('a', 5), ('c', 7), ('c', 7), ('c', 7); INSERT INTO k3b VALUES ('a', '5'), ('a', '5'); CREATE VIEW k3 AS SELECT * FROM k3a UNION ALL SELECT * FROM k3b; CREATE TABLE big(tenant_id TEXT, name TEXT); CREATE TABLE tb(tenant_id TEXT, ts); INSERT INTO tb VALUES ('a', '2024-01-07 23:59:59.9996'), ('a', 59.9996), ('a', '2023-12-31 23:59:59.99949+00:00'), ('c', '0000-06-01')" && sqlite3 u.db "PRAGMA encoding = 'UTF-16le'; CREATE TABLE kv(tenant_id TEXT, k); INSERT INTO kv VALUES ('b', 7), ('b', '9'); CREATE TABLE u(tenant_id TEXT, name TEXT); INSERT INTO u VALUES ('b', 'é1'), ('b', 'é2'), ('b', 'Ā1'), ('b', 'Ā2'); CREATE TABLE fs(tenant_id TEXT, f REAL); INSERT INTO fs VALUES ('b', 1); CREATE TABLE kb(tenant_id, n INTEGER); INSERT INTO kb VALUES ('b', 6), ('d', 1); CREATE TABLE vc(tenant_id TEXT, name TEXT); CREATE TABLE bt(tenant_id TEXT, name TEXT); CREATE TABLE k2(tenant_id TEXT, k); INSERT INTO k2 VALUES ('b', '3'), ('b', 3.0), ('d', 4); CREATE TABLE vl(tenant_id TEXT, name TEXT); CREATE TABLE k3(tenant_id TEXT, k INTEGER); CREATE TABLE big(tenant_id TEXT, name TEXT); INSERT INTO big SELECT 'b', 'n' || value FROM generate_series(1, 50001); CREATE TABLE tb(tenant_id TEXT, ts); INSERT INTO tb VALUES ('d', 100000000000000000)" && sqlite3 directory.db "CREATE TABLE shards(shard_id TEXT PRIMARY KEY, path TEXT NOT NULL UNIQUE); CREATE TABLE shard_map(tenant_id TEXT PRIMARY KEY, shard_id TEXT NOT NULL, status TEXT NOT NULL DEFAULT 'ACTIVE', target_shard_id TEXT, updated_at INTEGER NOT NULL); INSERT INTO shards VALUES ('t1', 't.db'), ('u16', 'u.db'); INSERT INTO shard_map VALUES ('a', 't1', 'ACTIVE', NULL, 0), ('b', 'u16', 'ACTIVE', NULL, 0), ('c', 't1', 'ACTIVE', NULL, 0), ('d', 'u16', 'ACTIVE', NULL, 0)" && chown -R postgres:postgres /tmp/ssfdw_regress/aggregates/topn
CREATE SERVER agg_topn FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/aggregates/topn/directory.db');
CREATE FOREIGN TABLE topn_kv (tenant_id text, k int) SERVER agg_topn
  OPTIONS (table 'kv');
CREATE FOREIGN TABLE topn_u (tenant_id text, name text) SERVER agg_topn
  OPTIONS (table 'u');
CREATE FOREIGN TABLE topn_fs (tenant_id text, f float8) SERVER agg_topn
  OPTIONS (table 'fs');
EXPLAIN (COSTS OFF)
SELECT tenant_id, k, count(*) FROM topn_kv GROUP BY tenant_id, k ORDER BY k LIMIT 2;
SELECT * FROM regress_modes($$SELECT tenant_id, k, count(*) FROM topn_kv GROUP BY tenant_id, k ORDER BY k LIMIT 2$$);
SELECT * FROM regress_modes($$SELECT tenant_id, k, count(*) FROM topn_kv GROUP BY tenant_id, k ORDER BY 3 DESC, 2 LIMIT 1$$);
-- text order in the UTF-16 shard: PostgreSQL's
SELECT * FROM regress_modes($$SELECT name COLLATE "C" FROM topn_u WHERE name > 'é1' COLLATE "C"$$);
SELECT * FROM regress_modes($$SELECT max(name COLLATE "C"), min(name COLLATE "C") FROM topn_u$$);
-- the reading threads compute text extrema right on a UTF-16 shard;
-- SQLite's GROUP BY would not
SELECT max(name COLLATE "C") FROM topn_u;
SET sqlite_shard_fdw.thread_aggregation = off;
SELECT max(name COLLATE "C") FROM topn_u;
RESET sqlite_shard_fdw.thread_aggregation;
-- ... unless there are more groups than the threads keep
CREATE FOREIGN TABLE topn_big (tenant_id text, name text) SERVER agg_topn
  OPTIONS (table 'big');
SELECT name, max(name COLLATE "C") FROM topn_big GROUP BY name LIMIT 2;
SELECT count(*) FROM (SELECT name, count(*) FROM topn_big GROUP BY name) s;
SELECT * FROM regress_modes($$SELECT tenant_id, max(name COLLATE "C") FROM topn_u GROUP BY tenant_id ORDER BY 2 DESC LIMIT 1$$);
-- equality needs no UTF-8: these stay pushed on the UTF-16 shard
SELECT * FROM regress_modes($$SELECT count(*) FROM topn_u WHERE name = 'é1'$$);
SELECT * FROM regress_modes($$SELECT count(*), count(name) FROM topn_u WHERE tenant_id = 'b'$$);
SELECT * FROM regress_modes($$SELECT name, count(*) FROM topn_u WHERE tenant_id = 'b' GROUP BY name$$);
-- a shard that cannot be bounded (text order on u16, an untyped key there)
-- returns all its groups; the others are bounded
SELECT * FROM regress_modes($$SELECT tenant_id, count(*) FROM topn_u GROUP BY tenant_id ORDER BY 2 DESC, tenant_id COLLATE "C" LIMIT 1$$);
CREATE FOREIGN TABLE topn_kb (tenant_id text, n int) SERVER agg_topn
  OPTIONS (table 'kb');
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT tenant_id, sum(n) FROM topn_kb GROUP BY tenant_id ORDER BY 2 DESC LIMIT 1;
SELECT * FROM regress_modes($$SELECT tenant_id, sum(n) FROM topn_kb GROUP BY tenant_id ORDER BY 2 DESC LIMIT 1$$);
SELECT * FROM regress_modes($$SELECT tenant_id, sum(n) FROM topn_kb GROUP BY tenant_id ORDER BY 2 LIMIT 1$$);
-- the untyped k2.k of u16 holds '3' and 3.0, one PostgreSQL value: u16 is
-- read without its bound, and the merge makes one group of them
CREATE FOREIGN TABLE topn_k2 (tenant_id text, k int) SERVER agg_topn
  OPTIONS (table 'k2');
SELECT * FROM regress_modes($$SELECT tenant_id, k, count(*) FROM topn_k2 GROUP BY 1, 2 ORDER BY 3 DESC, 2 LIMIT 2$$);
-- t.db's k3 is a view that declares k INTEGER but holds '5' beside 5:
-- under a bound that key may stand for a split group, so it is an error
SET client_min_messages = warning;
CREATE FOREIGN TABLE topn_k3 (tenant_id text, k int) SERVER agg_topn
  OPTIONS (table 'k3');
RESET client_min_messages;
SELECT * FROM regress_modes($$SELECT tenant_id, k, count(*) FROM topn_k3 GROUP BY 1, 2 ORDER BY 3 DESC LIMIT 1$$);
SELECT * FROM regress_modes($$SELECT tenant_id, k, count(*) FROM topn_k3 GROUP BY 1, 2 ORDER BY 3 DESC$$);
-- a key through a cast to another type (bpchar drops trailing spaces) is
-- grouped by PostgreSQL
EXPLAIN (COSTS OFF)
SELECT tenant_id, name::bpchar, count(*) FROM topn_u GROUP BY 1, 2 ORDER BY 3 DESC LIMIT 1;
-- an output computed from the groups (here failing on b, with one row) is
-- computed by PostgreSQL for every group
EXPLAIN (COSTS OFF)
SELECT tenant_id, 100 / (count(*) - 1) FROM topn_fs GROUP BY tenant_id ORDER BY count(*) DESC LIMIT 1;
SELECT * FROM regress_modes($$SELECT tenant_id, 100 / (count(*) - 1) FROM topn_fs GROUP BY tenant_id ORDER BY count(*) DESC LIMIT 1$$);
-- varchar(n) drops trailing spaces beyond n: 'n0', 'n0 ', 'n0  ' are one
-- value, so shards group ssfdw_varchar(name, 2), the value PostgreSQL
-- reads, and no min/max or count(DISTINCT) of it is pushed
CREATE FOREIGN TABLE topn_vc (tenant_id text, name varchar(2)) SERVER agg_topn
  OPTIONS (table 'vc');
SELECT * FROM regress_modes($$SELECT tenant_id, name, count(*) FROM topn_vc GROUP BY tenant_id, name ORDER BY 3 DESC LIMIT 1$$);
SELECT * FROM regress_modes($$SELECT count(DISTINCT name), max(name COLLATE "C") FROM topn_vc$$);
SELECT * FROM regress_modes($$SELECT tenant_id, name::text, count(*) FROM topn_vc GROUP BY 1, 2$$);
SELECT * FROM regress_modes($$SELECT count(*) FROM topn_vc WHERE name = 'n0'$$);
CREATE FOREIGN TABLE topn_vl (tenant_id text, name varchar(2)) SERVER agg_topn
  OPTIONS (table 'vl');
SELECT * FROM regress_modes($$SELECT count(name) FROM topn_vl$$);
SELECT * FROM regress_modes($$SELECT name, count(*) FROM topn_vc GROUP BY name$$);
SELECT * FROM regress_modes($$SELECT tenant_id, name, count(*) FROM topn_vc GROUP BY 1, 2 ORDER BY 2, 1 LIMIT 1$$);
SELECT * FROM regress_modes($$SELECT tenant_id, name, count(*) FROM topn_vc GROUP BY 1, 2 ORDER BY 2 DESC, 1 DESC LIMIT 1$$);
-- text varchar's input rejects is its error, pushed or not
SELECT * FROM regress_modes($$SELECT name, count(*) FROM topn_vl GROUP BY name$$);
SELECT * FROM regress_modes($$SELECT tenant_id, name FROM topn_vl GROUP BY 1, 2 ORDER BY 1 LIMIT 1$$);
EXPLAIN (COSTS OFF)
SELECT name, count(*) FROM topn_vc GROUP BY name;
EXPLAIN (COSTS OFF)
SELECT tenant_id, name, count(*) FROM topn_vc GROUP BY tenant_id, name;
-- count() of text reads it: invalid UTF-8 is an error, as in the rows
CREATE FOREIGN TABLE topn_bt (tenant_id text, name text) SERVER agg_topn
  OPTIONS (table 'bt');
SELECT * FROM regress_modes($$SELECT count(name) FROM topn_bt$$);
SELECT * FROM regress_modes($$SELECT count(*) FROM topn_bt$$);
-- time buckets read times as the wrapper does, to the microsecond (SQLite
-- alone would round 59.9996 s into the next minute), and only in years 1
-- to 9999 (SQLite's year 0 is PostgreSQL's 1 BC; 1e17 s is no time)
CREATE FOREIGN TABLE topn_tb (tenant_id text, ts timestamp) SERVER agg_topn
  OPTIONS (table 'tb');
SELECT * FROM regress_modes($$SELECT date_trunc('week', ts), date_trunc('minute', ts), extract(year FROM ts), count(*) FROM topn_tb WHERE tenant_id = 'a' GROUP BY 1, 2, 3$$);
SELECT * FROM regress_modes($$SELECT extract(year FROM ts), count(*) FROM topn_tb WHERE tenant_id = 'c' GROUP BY 1$$);
SELECT * FROM regress_modes($$SELECT extract(year FROM ts), count(*) FROM topn_tb WHERE tenant_id = 'd' GROUP BY 1$$);
-- min and max of times are pushed, as the microseconds (days) the wrapper
-- reads (ssfdw_usecs, ssfdw_days), rounded as timestamp(p) rounds; a time
-- it cannot read (tenant d's 1e17 seconds) is its error
EXPLAIN (VERBOSE, COSTS OFF)
SELECT tenant_id, min(ts), max(ts) FROM topn_tb GROUP BY tenant_id;
SELECT * FROM regress_modes($$SELECT tenant_id, min(ts), max(ts), count(*) FROM topn_tb WHERE tenant_id IN ('a', 'c') GROUP BY tenant_id$$);
SELECT * FROM regress_modes($$SELECT min(ts), max(ts) FROM topn_tb WHERE tenant_id <> 'd'$$);
SELECT * FROM regress_modes($$SELECT max(ts) FROM topn_tb$$);
SELECT * FROM regress_modes($$SELECT tenant_id, max(ts) FROM topn_tb WHERE tenant_id <> 'd' GROUP BY 1 ORDER BY 2 DESC LIMIT 1$$);
SELECT * FROM regress_modes($$SELECT tenant_id, min(ts) FROM topn_tb WHERE tenant_id <> 'd' GROUP BY 1 ORDER BY 2 LIMIT 1$$);
CREATE FOREIGN TABLE topn_tb0 (tenant_id text, ts timestamp(0), tz timestamptz(2),
                               d date) SERVER agg_topn OPTIONS (table 'tb');
ALTER FOREIGN TABLE topn_tb0 ALTER COLUMN tz OPTIONS (column 'ts'),
  ALTER COLUMN d OPTIONS (column 'ts');
SELECT * FROM regress_modes($$SELECT tenant_id, min(ts), max(ts), min(tz), max(tz), min(d), max(d) FROM topn_tb0 WHERE tenant_id <> 'd' GROUP BY tenant_id$$);
SELECT * FROM regress_modes($$SELECT max(d) FROM topn_tb0$$);
-- count() of times reads them as min and max do
SELECT * FROM regress_modes($$SELECT tenant_id, count(ts), count(d) FROM topn_tb0 WHERE tenant_id <> 'd' GROUP BY tenant_id$$);
SELECT * FROM regress_modes($$SELECT count(ts) FROM topn_tb$$);
-- timestamp(0) rounds 23:59:59.9996 into the next day before any bucket:
-- no pushed buckets of timestamp(p)
SELECT * FROM regress_modes($$SELECT date_trunc('day', ts), extract(day FROM ts), count(*) FROM topn_tb0 WHERE tenant_id = 'a' GROUP BY 1, 2$$);
SELECT * FROM regress_modes($$SELECT CAST(ts AS date), count(*) FROM topn_tb0 WHERE tenant_id = 'a' GROUP BY 1$$);
-- a grouping by a function of no column is PostgreSQL's
SELECT count(*) FROM topn_tb WHERE tenant_id = 'a' GROUP BY now();
SELECT count(*) FROM topn_tb WHERE tenant_id = 'a' GROUP BY pg_backend_pid() > 0;
-- the date of a timestamp (CAST(ts AS date)) is a bucket too
EXPLAIN (VERBOSE, COSTS OFF)
SELECT CAST(ts AS date), count(*) FROM topn_tb WHERE tenant_id <> 'd' GROUP BY 1;
SELECT * FROM regress_modes($$SELECT CAST(ts AS date), count(*) FROM topn_tb WHERE tenant_id <> 'd' GROUP BY 1$$);
SELECT * FROM regress_modes($$SELECT tenant_id, ts::date, max(ts) FROM topn_tb WHERE tenant_id <> 'd' AND ts::date >= '2000-01-01' GROUP BY 1, 2$$);
-- the overflowing group (a) comes back, whatever the order
SELECT * FROM regress_modes($$SELECT tenant_id, sum(f), count(*) FROM topn_fs GROUP BY tenant_id ORDER BY count(*) LIMIT 1$$);
SELECT * FROM regress_modes($$SELECT tenant_id, sum(f), count(*) FROM topn_fs GROUP BY tenant_id ORDER BY count(*) DESC LIMIT 1$$);
DROP SERVER agg_topn CASCADE;

-- ===================================================================
-- double precision sums: finite values adding up to infinity overflow, as
-- in PostgreSQL; an infinite input gives infinity
-- ===================================================================
\! mkdir -p /tmp/ssfdw_regress/aggregates/fsum && cd /tmp/ssfdw_regress/aggregates/fsum && rm -f *.db && sqlite3 a.db "CREATE TABLE t(tenant_id TEXT, f REAL); INSERT INTO t VALUES ('a', 1e308), ('c', 1e308), ('c', 1e308), ('d', 9e999), ('d', 5)" && sqlite3 b.db "CREATE TABLE t(tenant_id TEXT, f REAL); INSERT INTO t VALUES ('b', 1e308)" && sqlite3 directory.db "CREATE TABLE shards(shard_id TEXT PRIMARY KEY, path TEXT NOT NULL UNIQUE); CREATE TABLE shard_map(tenant_id TEXT PRIMARY KEY, shard_id TEXT NOT NULL, status TEXT NOT NULL DEFAULT 'ACTIVE', target_shard_id TEXT, updated_at INTEGER NOT NULL); INSERT INTO shards VALUES ('fa', 'a.db'), ('fb', 'b.db'); INSERT INTO shard_map VALUES ('a', 'fa', 'ACTIVE', NULL, 0), ('b', 'fb', 'ACTIVE', NULL, 0), ('c', 'fa', 'ACTIVE', NULL, 0), ('d', 'fa', 'ACTIVE', NULL, 0)" && chown -R postgres:postgres /tmp/ssfdw_regress/aggregates/fsum
CREATE SERVER agg_fsum FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/aggregates/fsum/directory.db');
CREATE FOREIGN TABLE fsum (tenant_id text, f float8)
  SERVER agg_fsum OPTIONS (table 't');
-- across shards
SELECT sum(f) FROM fsum WHERE tenant_id IN ('a', 'b');
-- within one shard
SELECT avg(f) FROM fsum WHERE tenant_id = 'c';
SET sqlite_shard_fdw.thread_aggregation = off;
SELECT sum(f) FROM fsum WHERE tenant_id = 'c';
RESET sqlite_shard_fdw.thread_aggregation;
-- an infinite input
SELECT sum(f), avg(f) FROM fsum WHERE tenant_id = 'd';
SET sqlite_shard_fdw.aggregate_pushdown = off;
SELECT sum(f) FROM fsum WHERE tenant_id IN ('a', 'b');
RESET sqlite_shard_fdw.aggregate_pushdown;
DROP SERVER agg_fsum CASCADE;

-- ===================================================================
-- SQLite's own result codes keep their meaning: only the wrapper's
-- functions' private codes carry a PostgreSQL SQLSTATE.  A shard's view
-- returns a blob beyond SQLite's length limit: SQLITE_TOOBIG is a program
-- limit (54000), not ssfdw_varchar's "value too long" (22001).
-- ===================================================================
\! mkdir -p /tmp/ssfdw_regress/aggregates/big && cd /tmp/ssfdw_regress/aggregates/big && rm -f *.db && sqlite3 a.db "CREATE VIEW t AS SELECT 'a' AS tenant_id, zeroblob(2000000000) AS b" && sqlite3 directory.db "CREATE TABLE shards(shard_id TEXT PRIMARY KEY, path TEXT NOT NULL UNIQUE); CREATE TABLE shard_map(tenant_id TEXT PRIMARY KEY, shard_id TEXT NOT NULL, status TEXT NOT NULL DEFAULT 'ACTIVE', target_shard_id TEXT, updated_at INTEGER NOT NULL); INSERT INTO shards VALUES ('ba', 'a.db'); INSERT INTO shard_map VALUES ('a', 'ba', 'ACTIVE', NULL, 0)" && chown -R postgres:postgres /tmp/ssfdw_regress/aggregates/big
CREATE SERVER agg_big FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/aggregates/big/directory.db');
CREATE FOREIGN TABLE big (tenant_id text, b bytea)
  SERVER agg_big OPTIONS (table 't');
SELECT count(b) FROM big;
SELECT * FROM regress_modes($$SELECT count(b) FROM big$$);
DROP SERVER agg_big CASCADE;

-- ===================================================================
-- The merge keeps its groups in memory and cannot spill to disk: when
-- the estimated groups would exceed hash_mem (work_mem times
-- hash_mem_multiplier), PostgreSQL aggregates the rows instead, within
-- its limit.  ticks_hm reads the ticks table (28,001 rows, each time and
-- id distinct, times over 6,700 years); ANALYZE gives the planner the
-- number of distinct values and their range.
-- ===================================================================
CREATE FOREIGN TABLE ticks_hm (tenant_id text, id int, t bigint,
  ts timestamp OPTIONS (column 't'))
  SERVER agg_srv OPTIONS (table 'ticks');
ANALYZE ticks_hm;
SET work_mem = '1MB';
SET hash_mem_multiplier = 1;
-- 28,001 groups: PostgreSQL's
EXPLAIN (COSTS OFF) SELECT t, count(*), max(id) FROM ticks_hm GROUP BY t;
-- four groups: the shards'
EXPLAIN (COSTS OFF) SELECT tenant_id, count(*), max(t) FROM ticks_hm GROUP BY tenant_id;
-- one group, but 28,001 distinct values to count once each: PostgreSQL's
EXPLAIN (COSTS OFF) SELECT count(DISTINCT id) FROM ticks_hm;
-- a time bucket has fewer values than its column: seven days of the week
-- (the shards'), but a day for each of the 28,001 times (PostgreSQL's)
EXPLAIN (COSTS OFF) SELECT extract(dow FROM ts), count(*) FROM ticks_hm GROUP BY 1;
EXPLAIN (COSTS OFF) SELECT date_trunc('day', ts), count(*) FROM ticks_hm GROUP BY 1;
SELECT count(*), sum(n), min(n), max(n), sum(m)
  FROM (SELECT t, count(*) AS n, max(id) AS m FROM ticks_hm GROUP BY t) s;
SELECT count(DISTINCT id) FROM ticks_hm;
-- sixteen times the memory: the shards'
SET hash_mem_multiplier = 16;
EXPLAIN (COSTS OFF) SELECT t, count(*), max(id) FROM ticks_hm GROUP BY t;
EXPLAIN (COSTS OFF) SELECT count(DISTINCT id) FROM ticks_hm;
EXPLAIN (COSTS OFF) SELECT date_trunc('day', ts), count(*) FROM ticks_hm GROUP BY 1;
SELECT count(*), sum(n), min(n), max(n), sum(m)
  FROM (SELECT t, count(*) AS n, max(id) AS m FROM ticks_hm GROUP BY t) s;
SELECT count(DISTINCT id) FROM ticks_hm;
RESET hash_mem_multiplier;
RESET work_mem;
DROP FOREIGN TABLE ticks_hm;

-- ===================================================================
-- Thread aggregation's input function ssfdw_rows runs only in the
-- wrapper's own SQL: SQLite refuses a shard's view that calls it, so the
-- view cannot be read (its columns cannot even be listed)
-- ===================================================================
\! sqlite3 /tmp/ssfdw_regress/aggregates/shards/a1.db "CREATE VIEW sneaky AS SELECT tenant_id, id, ssfdw_rows(amount) AS amount FROM sales"
CREATE FOREIGN TABLE sneaky (tenant_id text, id int, amount bigint)
  SERVER agg_srv;
SELECT tenant_id, count(*), sum(amount) FROM sneaky GROUP BY 1 ORDER BY 1;
\! sqlite3 /tmp/ssfdw_regress/aggregates/shards/a1.db "DROP VIEW sneaky"
DROP FOREIGN TABLE sneaky;
-- the wrapper's own input query through the function, every row grouped
EXPLAIN (VERBOSE, COSTS OFF)
SELECT status, count(*), sum(amount), min(created_at) FROM sales GROUP BY 1;

-- ===================================================================
-- SELECT DISTINCT: a grouping by every output column, without aggregates,
-- computed in the shards as GROUP BY (each shard returns each value once)
-- ===================================================================
EXPLAIN (VERBOSE, COSTS OFF) SELECT DISTINCT status FROM sales;
SELECT * FROM regress_agg('SELECT DISTINCT status FROM {t}');
SELECT * FROM regress_agg('SELECT DISTINCT tenant_id, status FROM {t}');
SELECT * FROM regress_agg('SELECT DISTINCT status FROM {t} WHERE amount > 100');
SELECT * FROM regress_agg('SELECT DISTINCT date_trunc(''month'', created_at) FROM {t}');
SELECT * FROM regress_agg('SELECT DISTINCT name FROM {t} ORDER BY name LIMIT 3', true);
SELECT * FROM regress_agg('SELECT DISTINCT qty FROM {t} WHERE tenant_id = ''acme'' ORDER BY 1', true);
SELECT * FROM regress_agg('SELECT DISTINCT f FROM {t}');
-- not pushed: a key the shards do not group exactly (a boolean), DISTINCT
-- ON; DISTINCT over groups pushes the grouping, not the DISTINCT
SELECT * FROM regress_agg('SELECT DISTINCT status, flag FROM {t}');
SELECT * FROM regress_agg('SELECT DISTINCT ON (status) status, id FROM {t} ORDER BY status, id', true);
SELECT * FROM regress_agg('SELECT DISTINCT count(*) FROM {t} GROUP BY status');

-- ===================================================================
-- Clean up
-- ===================================================================
DROP FUNCTION regress_agg(text, boolean, text);
DROP FUNCTION regress_modes(text);
DROP FUNCTION regress_result(text, boolean);
DROP TABLE sales_raw, sales_native, sales_days_native, sales_tz_native,
  ticks_native, measures_native;
DROP FUNCTION regress_tz_buckets(text, text, text);
DROP COLLATION regress_ci;
DROP SERVER agg_srv CASCADE;
RESET DateStyle;
