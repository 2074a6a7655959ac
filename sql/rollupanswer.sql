--
-- Answering aggregate queries from rollups (sqlite_shard_fdw.rollup_answer):
-- every query is run three ways, the setting off, on, and over a native
-- table holding the same rows, and must give the same rows.  See
-- test/fixtures/rollupanswer.sh for the fleet.
--
\! bash test/fixtures/rollupanswer.sh
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
RESET client_min_messages;
CREATE SERVER ra_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/rollupanswer/directory.db');
CREATE FOREIGN TABLE ra_orders (tenant_id text, order_id bigint, status text,
  amount_cents bigint, created_at timestamp)
  SERVER ra_srv OPTIONS (table 'orders');
CREATE TABLE ra_native AS SELECT * FROM ra_orders;

-- ra_same(q): q (with %s for the table) gives the same rows with the
-- setting off, live and stale (bound 0), and over the native table; or
-- what differs.  ra_rows(q, mode, table): q's rows, with the setting mode
-- (stale0: stale, bound 0).
CREATE FUNCTION ra_rows(q text, mode text, tbl text) RETURNS text[]
LANGUAGE plpgsql AS $$
DECLARE r text[] := '{}'; x record;
BEGIN
  IF mode = 'stale0' THEN
    PERFORM set_config('sqlite_shard_fdw.rollup_max_staleness', '0', true);
    mode := 'stale';
  END IF;
  PERFORM set_config('sqlite_shard_fdw.rollup_answer', mode, true);
  FOR x IN EXECUTE format(q, tbl) LOOP
    r := r || x::text;
  END LOOP;
  PERFORM set_config('sqlite_shard_fdw.rollup_answer', 'off', true);
  RETURN ARRAY(SELECT v FROM unnest(r) v ORDER BY v);
END $$;
CREATE FUNCTION ra_same(q text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE native text[] := ra_rows(q, 'off', 'ra_native');
        m text; got text[];
BEGIN
  FOREACH m IN ARRAY ARRAY['off', 'live', 'stale0'] LOOP
    got := ra_rows(q, m, 'ra_orders');
    IF got IS DISTINCT FROM native THEN
      RETURN m || ': ' || got::text || ' <> native ' || native::text;
    END IF;
  END LOOP;
  RETURN 'same';
END $$;
-- ra_plan(q [, verbose, mode]): the plan of q with the setting live (or
-- mode), times and costs left out.
CREATE FUNCTION ra_plan(q text, verb boolean DEFAULT false,
                        mode text DEFAULT 'live')
RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE l text;
BEGIN
  PERFORM set_config('sqlite_shard_fdw.rollup_answer', mode, true);
  FOR l IN EXECUTE format('EXPLAIN (COSTS OFF, VERBOSE %s) ' || q, CASE WHEN verb THEN 'on' ELSE 'off' END, 'ra_orders') LOOP
    RETURN NEXT regexp_replace(regexp_replace(l,
      'Rollup Refreshed: .*', 'Rollup Refreshed: (time)'),
      'Rollup Staleness: .*', 'Rollup Staleness: (interval)');
  END LOOP;
  PERFORM set_config('sqlite_shard_fdw.rollup_answer', 'off', true);
END $$;
-- ra_from_rollup(q): is q answered from a rollup, with the setting live?
CREATE FUNCTION ra_from_rollup(q text) RETURNS boolean
LANGUAGE sql AS $$
  SELECT count(*) > 0 FROM ra_plan(q) p WHERE p LIKE '%Rollup Live Tenants%'
$$;
-- ra_live(q): the "Tenants Read Live" line of q's plan
CREATE FUNCTION ra_live(q text) RETURNS text
LANGUAGE sql AS $$
  SELECT string_agg(trim(p), '; ') FROM ra_plan(q) p
   WHERE p LIKE '%Tenants Read Live%'
$$;

-- ===================================================================
-- The settings
-- ===================================================================
SHOW sqlite_shard_fdw.rollup_answer;
SHOW sqlite_shard_fdw.rollup_max_staleness;
SET sqlite_shard_fdw.rollup_answer = 'sometimes';
SET sqlite_shard_fdw.rollup_max_staleness = '-1';
SET sqlite_shard_fdw.rollup_max_staleness = '2min';
SHOW sqlite_shard_fdw.rollup_max_staleness;
RESET sqlite_shard_fdw.rollup_max_staleness;

SELECT rollup_create('ra_daily', $$
  SELECT tenant_id, date_trunc('day', created_at) AS day, status,
         count(*), sum(amount_cents) AS amount, avg(amount_cents) AS avg_amount,
         min(amount_cents), max(created_at) AS last_at
    FROM ra_orders GROUP BY 1, 2, 3$$);

-- ===================================================================
-- Derivable queries: answered from the rollup, the same rows
-- ===================================================================
SELECT ra_same($$SELECT date_trunc('day', created_at), count(*), sum(amount_cents),
                 avg(amount_cents), min(amount_cents), max(created_at)
                 FROM %s GROUP BY 1$$);
SELECT ra_same($$SELECT status, count(*) FROM %s GROUP BY status$$);
SELECT ra_same($$SELECT tenant_id, status, avg(amount_cents) FROM %s GROUP BY 1, 2$$);
SELECT ra_same($$SELECT count(*), sum(amount_cents), avg(amount_cents) FROM %s$$);
SELECT ra_same($$SELECT count(*), sum(amount_cents) FROM %s WHERE tenant_id = 'nobody'$$);
SELECT ra_same($$SELECT count(*), avg(amount_cents) FROM %s WHERE status IS NULL$$);
SELECT ra_same($$SELECT date_trunc('day', created_at) AS d, count(*) FROM %s
                 WHERE tenant_id IN ('acme', 'cme') AND status = 'paid'
                 GROUP BY 1 HAVING count(*) > 1 ORDER BY 1$$);
SELECT ra_same($$SELECT tenant_id, sum(amount_cents) FROM %s
                 WHERE date_trunc('day', created_at) >= '2024-03-02'
                 GROUP BY 1 ORDER BY 2 DESC LIMIT 2$$);
SELECT ra_same($$SELECT upper(status), count(*) * 2 FROM %s GROUP BY status$$);
-- avg of integers: numeric, with PostgreSQL's scale
SELECT ra_rows($$SELECT status, avg(amount_cents) FROM %s GROUP BY 1$$, 'live', 'ra_orders');
SELECT ra_from_rollup($$SELECT status, count(*) FROM %s GROUP BY status$$);
SELECT ra_from_rollup($$SELECT count(*), sum(amount_cents), avg(amount_cents) FROM %s$$);

-- ===================================================================
-- Not derivable: planned the ordinary way, still right
-- ===================================================================
SELECT ra_same($$SELECT count(DISTINCT tenant_id) FROM %s$$);
SELECT ra_from_rollup($$SELECT count(DISTINCT tenant_id) FROM %s$$);
SELECT ra_same($$SELECT order_id, count(*) FROM %s GROUP BY 1$$);
SELECT ra_from_rollup($$SELECT order_id, count(*) FROM %s GROUP BY 1$$);
SELECT ra_same($$SELECT status, count(*) FROM %s WHERE amount_cents > 500 GROUP BY 1$$);
SELECT ra_from_rollup($$SELECT status, count(*) FROM %s WHERE amount_cents > 500 GROUP BY 1$$);
SELECT ra_same($$SELECT status, sum(order_id) FROM %s GROUP BY 1$$);
SELECT ra_from_rollup($$SELECT status, sum(order_id) FROM %s GROUP BY 1$$);
SELECT ra_same($$SELECT status, max(amount_cents) FROM %s GROUP BY 1$$);
SELECT ra_from_rollup($$SELECT status, max(amount_cents) FROM %s GROUP BY 1$$);
SELECT ra_same($$SELECT date_trunc('month', created_at), count(*) FROM %s GROUP BY 1$$);
SELECT ra_from_rollup($$SELECT date_trunc('month', created_at), count(*) FROM %s GROUP BY 1$$);
SELECT ra_same($$SELECT count(*) FILTER (WHERE status = 'paid') FROM %s$$);
SELECT ra_from_rollup($$SELECT count(*) FILTER (WHERE status = 'paid') FROM %s$$);
SELECT ra_from_rollup($$SELECT status, count(*) FROM %s WHERE random() < 2 GROUP BY 1$$);
SELECT ra_from_rollup($$SELECT status, string_agg(tenant_id, ',') FROM %s GROUP BY 1$$);

-- ===================================================================
-- EXPLAIN: the rollup, the tenants read live, how fresh the rest are
-- ===================================================================
SELECT * FROM ra_plan($$SELECT status, count(*), avg(amount_cents) FROM %s GROUP BY status$$);
SELECT * FROM ra_plan($$SELECT tenant_id, sum(amount_cents) FROM %s WHERE tenant_id = 'acme' GROUP BY 1$$, true);

-- ===================================================================
-- Writes between refreshes: through the wrapper (committed, rolled
-- back), and by the application writing a shard directly
-- ===================================================================
INSERT INTO ra_orders VALUES ('acme', 6, 'paid', 5000, '2024-03-03 09:00:00');
INSERT INTO ra_native VALUES ('acme', 6, 'paid', 5000, '2024-03-03 09:00:00');
BEGIN;
INSERT INTO ra_orders VALUES ('bcme', 9, 'paid', 123456, '2024-03-03 09:00:00');
ROLLBACK;
\! bash test/fixtures/rollupanswer_app.sh s1 "UPDATE orders SET amount_cents = amount_cents + 1 WHERE order_id = 1; DELETE FROM orders WHERE order_id = 4"
UPDATE ra_native SET amount_cents = amount_cents + 1 WHERE tenant_id = 'cme' AND order_id = 1;
DELETE FROM ra_native WHERE tenant_id = 'cme' AND order_id = 4;
SELECT tenant_id FROM rollup_pending('ra_daily') ORDER BY 1;
SELECT ra_live($$SELECT status, count(*) FROM %s GROUP BY 1$$);
SELECT ra_same($$SELECT date_trunc('day', created_at), status, count(*), sum(amount_cents),
                 avg(amount_cents), min(amount_cents), max(created_at)
                 FROM %s GROUP BY 1, 2$$);
SELECT ra_same($$SELECT count(*), sum(amount_cents), avg(amount_cents) FROM %s$$);
SELECT * FROM ra_plan($$SELECT status, count(*) FROM %s GROUP BY status$$);
-- stale mode within its bound: the rollup alone, the changes missing
SET sqlite_shard_fdw.rollup_max_staleness = '1h';
SELECT ra_rows($$SELECT count(*), sum(amount_cents) FROM %s$$, 'stale', 'ra_orders');
SELECT * FROM ra_plan($$SELECT count(*) FROM %s$$, false, 'stale');
-- ... and beyond it: live
SET sqlite_shard_fdw.rollup_max_staleness = 0;
SELECT ra_rows($$SELECT count(*), sum(amount_cents) FROM %s$$, 'stale', 'ra_orders');
SELECT ra_rows($$SELECT count(*), sum(amount_cents) FROM %s$$, 'off', 'ra_native');
SELECT * FROM ra_plan($$SELECT count(*) FROM %s$$, false, 'stale');
RESET sqlite_shard_fdw.rollup_max_staleness;
SELECT * FROM rollup_refresh('ra_daily') \gset
SELECT ra_live($$SELECT status, count(*) FROM %s GROUP BY 1$$);
SELECT ra_same($$SELECT date_trunc('day', created_at), status, count(*), sum(amount_cents),
                 avg(amount_cents), min(amount_cents), max(created_at)
                 FROM %s GROUP BY 1, 2$$);

-- the transaction's own writes, not committed yet: every tenant read live
BEGIN;
INSERT INTO ra_orders VALUES ('dme', 3, 'paid', 10, '2024-03-03 09:00:00');
INSERT INTO ra_native VALUES ('dme', 3, 'paid', 10, '2024-03-03 09:00:00');
SELECT ra_same($$SELECT status, count(*), sum(amount_cents) FROM %s GROUP BY 1$$);
SELECT ra_live($$SELECT status, count(*) FROM %s GROUP BY 1$$);
ROLLBACK;
-- repeatable read: planned the ordinary way
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT ra_from_rollup($$SELECT status, count(*) FROM %s GROUP BY status$$);
COMMIT;

-- a prepared statement's generic plan decides at each execution
SET sqlite_shard_fdw.rollup_answer = live;
SET plan_cache_mode = force_generic_plan;
PREPARE ra_q(text) AS SELECT count(*), sum(amount_cents) FROM ra_orders WHERE tenant_id = $1;
EXECUTE ra_q('bcme');
\! bash test/fixtures/rollupanswer_app.sh s0 "INSERT INTO orders VALUES ('bcme', 4, 'open', 1, '2024-03-03 00:00:00')"
INSERT INTO ra_native VALUES ('bcme', 4, 'open', 1, '2024-03-03 00:00:00');
EXECUTE ra_q('bcme');
SELECT count(*), sum(amount_cents) FROM ra_native WHERE tenant_id = 'bcme';
DEALLOCATE ra_q;
RESET plan_cache_mode;
RESET sqlite_shard_fdw.rollup_answer;

-- ===================================================================
-- Privileges and scoped logins
-- ===================================================================
CREATE ROLE regress_ra_acme;
CREATE ROLE regress_ra_norollup;
GRANT SELECT ON ra_orders, ra_native TO regress_ra_acme, regress_ra_norollup;
GRANT SELECT ON ra_daily TO regress_ra_acme;
GRANT EXECUTE ON FUNCTION ra_rows(text, text, text), ra_same(text),
  ra_plan(text, boolean, text), ra_from_rollup(text), ra_live(text)
  TO regress_ra_acme, regress_ra_norollup;
CREATE USER MAPPING FOR regress_ra_acme SERVER ra_srv OPTIONS (tenants 'acme');
CREATE USER MAPPING FOR regress_ra_norollup SERVER ra_srv;
SET ROLE regress_ra_acme;
SELECT ra_from_rollup($$SELECT status, count(*) FROM %s GROUP BY status$$);
SELECT ra_rows($$SELECT status, count(*), sum(amount_cents) FROM %s GROUP BY status$$, 'live', 'ra_orders');
SELECT ra_rows($$SELECT status, count(*), sum(amount_cents) FROM %s WHERE tenant_id = 'acme' GROUP BY status$$, 'off', 'ra_native');
SELECT ra_live($$SELECT status, count(*) FROM %s GROUP BY 1$$);
RESET ROLE;
-- a change of another tenant is not counted for the scoped role
\! bash test/fixtures/rollupanswer_app.sh s0 "UPDATE orders SET amount_cents = 1 WHERE tenant_id = 'bcme' AND order_id = 1"
UPDATE ra_native SET amount_cents = 1 WHERE tenant_id = 'bcme' AND order_id = 1;
SET ROLE regress_ra_acme;
SELECT ra_live($$SELECT status, count(*) FROM %s GROUP BY 1$$);
SELECT rollup_answer_live('ra_daily');
RESET ROLE;
SELECT rollup_answer_live('ra_daily');
-- ... and its own tenant's change is read live, for it alone
\! bash test/fixtures/rollupanswer_app.sh s0 "INSERT INTO orders VALUES ('acme', 7, 'open', 2, '2024-03-04 00:00:00')"
INSERT INTO ra_native VALUES ('acme', 7, 'open', 2, '2024-03-04 00:00:00');
SET ROLE regress_ra_acme;
SELECT ra_live($$SELECT status, count(*) FROM %s GROUP BY 1$$);
SELECT ra_rows($$SELECT status, count(*), sum(amount_cents) FROM %s GROUP BY status$$, 'live', 'ra_orders');
SELECT ra_rows($$SELECT status, count(*), sum(amount_cents) FROM %s WHERE tenant_id = 'acme' GROUP BY status$$, 'off', 'ra_native');
RESET ROLE;
SELECT ra_live($$SELECT status, count(*) FROM %s GROUP BY 1$$);
-- a role that may not read the rollup: the ordinary plan, no error
SET ROLE regress_ra_norollup;
SELECT ra_from_rollup($$SELECT status, count(*) FROM %s GROUP BY status$$);
SELECT ra_same($$SELECT status, count(*), sum(amount_cents) FROM %s GROUP BY status$$);
SELECT rollup_answer_live('ra_daily');
RESET ROLE;
SELECT ra_same($$SELECT status, count(*), sum(amount_cents) FROM %s GROUP BY status$$);

-- ===================================================================
-- A rollup with a WHERE clause answers only queries with the same one
-- ===================================================================
SELECT rollup_create('ra_paid', $$
  SELECT tenant_id, status, count(*), sum(amount_cents) AS amount
    FROM ra_orders WHERE amount_cents > 100 GROUP BY 1, 2$$);
SELECT ra_same($$SELECT status, count(*), sum(amount_cents) FROM %s WHERE amount_cents > 100 GROUP BY 1$$);
SELECT ra_plan FROM ra_plan($$SELECT status, count(*) FROM %s WHERE amount_cents > 100 GROUP BY 1$$)
  WHERE ra_plan LIKE '%Rollup:%';
SELECT ra_same($$SELECT status, count(*) FROM %s WHERE amount_cents > 200 GROUP BY 1$$);
SELECT ra_from_rollup($$SELECT status, count(*) FROM %s WHERE amount_cents > 200 GROUP BY 1$$);

DROP USER MAPPING FOR regress_ra_acme SERVER ra_srv;
DROP USER MAPPING FOR regress_ra_norollup SERVER ra_srv;
DROP OWNED BY regress_ra_acme, regress_ra_norollup;
DROP ROLE regress_ra_acme, regress_ra_norollup;
SELECT rollup_drop('ra_paid');
SELECT rollup_drop('ra_daily');
SELECT ra_from_rollup($$SELECT status, count(*) FROM %s GROUP BY status$$);
DROP SERVER ra_srv CASCADE;
DROP TABLE ra_native;
