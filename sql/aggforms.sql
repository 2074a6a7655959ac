--
-- Aggregate forms BI tools write, pushed into the shards: variances and
-- standard deviations of integers, FILTER and CASE inside aggregates, a
-- grouping under a window function, case-blind LIKE on lower(col), and
-- distinct counts by week.  Every query runs against the foreign table
-- (pushed and grouped on the reading threads, pushed and grouped by
-- SQLite, not pushed) and against a native table of the same rows.  See
-- test/fixtures/aggforms.sh.
--
\! bash test/fixtures/aggforms.sh
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
RESET client_min_messages;
SET DateStyle = ISO;
CREATE SERVER forms_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/aggforms/directory.db');
CREATE FOREIGN TABLE events (tenant_id text, id int, status text,
  amount bigint, qty int, small smallint, name text, created_at timestamp)
  SERVER forms_srv;
CREATE TABLE events_native (tenant_id text, id int, status text,
  amount bigint, qty int, small smallint, name text, created_at timestamp);
\set ECHO none
\i /tmp/ssfdw_regress/aggforms/rows.sql
\set ECHO all

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

-- regress_agg(query [, ordered]): run query, where {t} stands for the
-- table, against the native table and against the foreign table three
-- ways: aggregates pushed and grouped on the reading threads (the
-- default), pushed and grouped by SQLite (thread_aggregation off), and not
-- pushed (aggregate_pushdown off).  Shows the pushdown EXPLAIN reports by
-- default, whether each foreign answer equals the native one (rows
-- compared as text, so numeric scale counts), and the native answer, one
-- row per line.  A foreign answer that differs is shown in a NOTICE.
CREATE FUNCTION regress_agg(query text, ordered boolean DEFAULT false)
RETURNS TABLE (pushdown text, threads boolean, sqlite boolean,
               "rows" boolean, native text)
LANGUAGE plpgsql AS $$
DECLARE
  fq text := replace(query, '{t}', 'events');
  want text[] := regress_result(replace(query, '{t}', 'events_native'),
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

SELECT tenant_id, count(*), count(amount), count(qty) FROM events
  GROUP BY tenant_id ORDER BY 1;

-- ===================================================================
-- Variances and standard deviations of integers: each shard returns the
-- count, the sum and the exact sum of squares (ssfdw_sumsq), the backend
-- applies PostgreSQL's numeric formula, with its scale
-- ===================================================================
EXPLAIN (VERBOSE, COSTS OFF)
SELECT status, stddev(amount), var_pop(qty), stddev_samp(small)
  FROM events GROUP BY status;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT tenant_id, variance(qty) FROM events GROUP BY tenant_id;
-- bigint values near the extremes: sums of squares far beyond 128 bits
SELECT * FROM regress_agg('SELECT stddev_pop(amount), stddev_samp(amount), var_pop(amount), var_samp(amount) FROM {t}');
SELECT * FROM regress_agg('SELECT stddev(amount), variance(amount) FROM {t} WHERE tenant_id = ''t1''');
SELECT * FROM regress_agg('SELECT stddev(amount), variance(amount) FROM {t} WHERE tenant_id <> ''t1''');
SELECT * FROM regress_agg('SELECT stddev_pop(qty), stddev_samp(qty), var_pop(qty), var_samp(qty) FROM {t}');
SELECT * FROM regress_agg('SELECT stddev_pop(small), stddev_samp(small), var_pop(small), var_samp(small) FROM {t}');
-- grouped: one-row groups (sample forms NULL), groups without values
SELECT * FROM regress_agg('SELECT tenant_id, status, count(amount), stddev_samp(amount), stddev_pop(amount), var_samp(amount) FROM {t} GROUP BY 1, 2');
SELECT * FROM regress_agg('SELECT status, stddev(qty), variance(qty), stddev(small), avg(small) FROM {t} GROUP BY 1');
SELECT * FROM regress_agg('SELECT tenant_id, stddev_pop(qty), var_pop(small) FROM {t} GROUP BY 1');
-- one value: the sample forms are NULL, the population ones 0, without
-- scale
SELECT * FROM regress_agg('SELECT stddev(amount), var_samp(amount), stddev_pop(amount), var_pop(amount) FROM {t} WHERE id IN (151, 152)');
SELECT * FROM regress_agg('SELECT stddev(amount), var_pop(amount) FROM {t} WHERE id IN (1, 3)');
-- no rows at all
SELECT * FROM regress_agg('SELECT stddev(amount), var_pop(qty) FROM {t} WHERE id < 0');
-- small variances: the scale of the division, then of the square root
SELECT * FROM regress_agg('SELECT status, stddev(qty), stddev_pop(qty), variance(small) FROM {t} WHERE tenant_id IN (''t4'', ''t5'') GROUP BY 1');

-- ===================================================================
-- FILTER and CASE inside aggregates: the condition runs in the shards
-- when it would as a WHERE condition (no value computed at scan start)
-- ===================================================================
EXPLAIN (VERBOSE, COSTS OFF)
SELECT tenant_id, count(*) FILTER (WHERE status = 'paid'),
       sum(CASE WHEN status = 'paid' THEN 1 ELSE 0 END)::numeric / count(*)
  FROM events GROUP BY tenant_id;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT status, sum(amount) FILTER (WHERE qty > 100),
       sum(CASE WHEN name = 'plain' THEN qty ELSE 0 END),
       avg(CASE WHEN qty > 0 THEN 1 WHEN qty < 0 THEN -1 END)
  FROM events GROUP BY status;
-- shares, Metabase's way
SELECT * FROM regress_agg('SELECT tenant_id, sum(CASE WHEN status = ''paid'' THEN 1 ELSE 0 END)::numeric / count(*) AS share FROM {t} GROUP BY 1');
SELECT * FROM regress_agg('SELECT status, sum(CASE WHEN qty > 500 THEN 1 ELSE 0 END) * 1.0 / count(*), count(CASE WHEN amount IS NULL THEN 1 END) FROM {t} GROUP BY 1');
SELECT * FROM regress_agg('SELECT count(*) FILTER (WHERE status = ''paid''), count(*) FILTER (WHERE status IS NULL), count(*) FILTER (WHERE name IN (''plain'', ''PLAIN'')), count(*) FROM {t}');
SELECT * FROM regress_agg('SELECT tenant_id, count(*) FILTER (WHERE qty BETWEEN 0 AND 500), count(qty) FILTER (WHERE status <> ''void'') FROM {t} GROUP BY 1');
-- every kind of aggregate under a FILTER; groups the FILTER leaves empty
SELECT * FROM regress_agg('SELECT status, sum(amount) FILTER (WHERE qty > 100), avg(amount) FILTER (WHERE qty > 100), sum(qty) FILTER (WHERE small < 0), avg(small) FILTER (WHERE id > 300), min(created_at) FILTER (WHERE qty > 900), max(qty) FILTER (WHERE tenant_id = ''t2''), stddev(qty) FILTER (WHERE qty < 1000) FROM {t} GROUP BY 1');
-- a CASE returning columns; bigint sums near the extremes
SELECT * FROM regress_agg('SELECT tenant_id, sum(CASE WHEN status = ''paid'' THEN amount ELSE 0 END), sum(CASE WHEN status = ''open'' THEN amount END), max(CASE WHEN qty > 0 THEN qty END), min(CASE WHEN small > 0 THEN small ELSE -1::smallint END) FROM {t} GROUP BY 1');
SELECT * FROM regress_agg('SELECT avg(CASE WHEN qty > 0 THEN 1 WHEN qty < 0 THEN -1 END), sum(CASE WHEN status = ''lone'' THEN 1 END), variance(CASE WHEN status = ''paid'' THEN qty ELSE 0 END) FROM {t}');
-- Metabase's share: a numeric CASE of integral constants, summed as
-- integers with the largest scale of the rows' results ('1' and '0.0' make
-- '1.0'; a group of '1's alone, '1'; no value, NULL)
EXPLAIN (VERBOSE, COSTS OFF)
SELECT date_trunc('month', created_at),
       sum(CASE WHEN status = 'paid' THEN 1 ELSE 0.0 END) / count(*)
  FROM events GROUP BY 1;
SELECT * FROM regress_agg('SELECT date_trunc(''month'', created_at), sum(CASE WHEN status = ''paid'' THEN 1 ELSE 0.0 END) / count(*) FROM {t} GROUP BY 1');
SELECT * FROM regress_agg('SELECT status, sum(CASE WHEN qty > 500 THEN 1 ELSE 0.00 END), sum(CASE WHEN qty > 500 THEN 2.0 END), sum(CASE WHEN name = ''plain'' THEN -3 WHEN name = ''PLAIN'' THEN 1.000 END) FROM {t} GROUP BY 1');
SELECT * FROM regress_agg('SELECT tenant_id, sum(CASE WHEN status IS NULL THEN 1 ELSE 0.0 END) FILTER (WHERE qty > 900), sum(CASE WHEN qty > 0 THEN 1.0 ELSE 0 END) FROM {t} GROUP BY 1');
-- not pushed: a fraction, a value beyond 2^31
SELECT * FROM regress_agg('SELECT sum(CASE WHEN qty > 500 THEN 0.5 ELSE 0 END), sum(CASE WHEN qty > 500 THEN 3000000000 ELSE 0.0 END) FROM {t}');
-- routed to one tenant
SELECT * FROM regress_agg('SELECT status, count(*) FILTER (WHERE qty > 500), sum(CASE WHEN name = ''plain'' THEN 1 ELSE 0 END) FROM {t} WHERE tenant_id = ''t3'' GROUP BY 1');
-- not pushed: a condition SQLite cannot evaluate exactly (ILIKE), a value
-- computed at scan start, a CASE with arithmetic or a cast (smallint
-- column, integer ELSE)
EXPLAIN (VERBOSE, COSTS OFF)
SELECT count(*) FILTER (WHERE name ILIKE 'p%') FROM events;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT count(*) FILTER (WHERE created_at > now() - interval '1 year') FROM events;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT sum(CASE WHEN status = 'paid' THEN qty + 1 ELSE 0 END) FROM events;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT min(CASE WHEN small > 0 THEN small ELSE -1 END) FROM events;
SELECT * FROM regress_agg('SELECT count(*) FILTER (WHERE name ILIKE ''p%''), sum(CASE WHEN status = ''paid'' THEN qty + 1 ELSE 0 END), min(CASE WHEN small > 0 THEN small ELSE -1 END) FROM {t}');

-- ===================================================================
-- A grouping under a window function: the grouping is pushed, the
-- window runs over its groups
-- ===================================================================
EXPLAIN (VERBOSE, COSTS OFF)
SELECT status, count(*), sum(count(*)) OVER () FROM events GROUP BY status;
SELECT * FROM regress_agg('SELECT status, count(*), sum(count(*)) OVER () FROM {t} GROUP BY status');
SELECT * FROM regress_agg('SELECT status, count(*), round(100.0 * count(*) / sum(count(*)) OVER (), 2) FROM {t} GROUP BY status');
SELECT * FROM regress_agg('SELECT tenant_id, status, sum(qty), rank() OVER (PARTITION BY tenant_id ORDER BY sum(qty) DESC NULLS LAST, status) FROM {t} GROUP BY 1, 2');
SELECT * FROM regress_agg('SELECT status, count(*), row_number() OVER (ORDER BY count(*) DESC, status) FROM {t} GROUP BY status ORDER BY 3 LIMIT 3', true);

-- ===================================================================
-- Case-blind LIKE: lower(col) LIKE 'pat' (Metabase's "contains") and
-- col ILIKE 'pat', with an ASCII pattern, narrow the rows in the shards
-- (each letter in both cases, and every value that is not pure ASCII
-- text) and PostgreSQL rechecks them: SQLite folds only ASCII letters,
-- PostgreSQL every letter ('É', 'Ä', the Kelvin sign)
-- ===================================================================
EXPLAIN (VERBOSE, COSTS OFF)
SELECT id, name FROM events WHERE lower(name) LIKE '%elvin%';
EXPLAIN (VERBOSE, COSTS OFF)
SELECT count(*) FROM events WHERE name ILIKE 'k%' AND tenant_id = 't3';
SELECT * FROM regress_agg('SELECT name, count(*) FROM {t} WHERE lower(name) LIKE ''%elvin%'' GROUP BY 1');
SELECT * FROM regress_agg('SELECT name, count(*) FROM {t} WHERE lower(name) LIKE ''k%'' GROUP BY 1');
SELECT * FROM regress_agg('SELECT name, count(*) FROM {t} WHERE name ILIKE ''%RGER'' GROUP BY 1');
SELECT * FROM regress_agg('SELECT name, count(*) FROM {t} WHERE lower(name) LIKE ''%lan'' GROUP BY 1');
SELECT * FROM regress_agg('SELECT name, count(*) FROM {t} WHERE lower(name) LIKE ''p_a%n'' GROUP BY 1');
-- an upper-case pattern never matches lower(): the shards' superset is
-- emptied by the recheck
SELECT * FROM regress_agg('SELECT count(*) FROM {t} WHERE lower(name) LIKE ''%Plain%''');
-- escapes: a literal % and _
SELECT * FROM regress_agg('SELECT count(*) FROM {t} WHERE lower(name) LIKE ''%\%%''');
SELECT * FROM regress_agg('SELECT count(*) FROM {t} WHERE name ILIKE ''pl\_in''');
-- not narrowed: a pattern with letters outside ASCII, NOT LIKE, a pattern
-- ending in a lone escape
EXPLAIN (VERBOSE, COSTS OFF)
SELECT id FROM events WHERE lower(name) LIKE '%élan%';
EXPLAIN (VERBOSE, COSTS OFF)
SELECT id FROM events WHERE lower(name) NOT LIKE '%elvin%';
SELECT * FROM regress_agg('SELECT name, count(*) FROM {t} WHERE lower(name) LIKE ''%élan%'' GROUP BY 1');
SELECT * FROM regress_agg('SELECT count(*) FROM {t} WHERE lower(name) LIKE ''%ar\''');

DROP FUNCTION regress_agg(text, boolean);
DROP FUNCTION regress_result(text, boolean);
DROP TABLE events_native;
DROP SERVER forms_srv CASCADE;
RESET DateStyle;
