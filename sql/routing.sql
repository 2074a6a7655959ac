--
-- Routing: which shards a scan reads, decided when the executor starts.
-- See test/fixtures/routing.sh for where every tenant and row lives.
--
\! bash test/fixtures/routing.sh
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
RESET client_min_messages;
CREATE SERVER routing_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/routing/directory.db');
CREATE FOREIGN TABLE orders (
  tenant_id text, order_id bigint, status text, amount_cents bigint
) SERVER routing_srv;
CREATE FOREIGN TABLE events (
  tenant_id text, event_id bigint, kind text
) SERVER routing_srv;
CREATE FOREIGN TABLE metrics_big (
  tenant_id bigint, metric_id bigint, v bigint
) SERVER routing_srv OPTIONS (table 'metrics');
CREATE FOREIGN TABLE metrics_int (
  tenant_id int, metric_id int, v int
) SERVER routing_srv OPTIONS (table 'metrics');
CREATE FOREIGN TABLE docs (
  tenant_id uuid, doc_id int, title text
) SERVER routing_srv;

-- ===================================================================
-- tenant = constant: one shard
-- ===================================================================
EXPLAIN (VERBOSE, COSTS OFF)
SELECT * FROM orders WHERE tenant_id = 'acme';
SELECT * FROM orders WHERE tenant_id = 'acme' ORDER BY order_id;
-- The constant may come first.
EXPLAIN (VERBOSE, COSTS OFF)
SELECT * FROM orders WHERE 'globex' = tenant_id;
SELECT * FROM orders WHERE 'globex' = tenant_id ORDER BY order_id;
-- Other conditions ride along; the tenant still picks the shard.
EXPLAIN (VERBOSE, COSTS OFF)
SELECT order_id FROM orders WHERE tenant_id = 'acme' AND order_id > 3;
SELECT order_id FROM orders WHERE tenant_id = 'acme' AND order_id > 3
  ORDER BY order_id;
-- Two tenant conditions that contradict each other: nothing.
SELECT * FROM orders WHERE tenant_id = 'acme' AND tenant_id = 'globex';

-- ===================================================================
-- No tenant condition: every shard, each tenant counted once
-- ===================================================================
EXPLAIN (VERBOSE, COSTS OFF)
SELECT * FROM orders;
SELECT tenant_id, count(*), sum(amount_cents) FROM orders
  GROUP BY tenant_id ORDER BY tenant_id;
SELECT count(*) FROM orders;
-- A condition on the tenant column that does not name tenants fans out.
EXPLAIN (VERBOSE, COSTS OFF)
SELECT order_id FROM orders WHERE tenant_id > 'm';
SELECT count(*) FROM orders WHERE tenant_id > 'm';
-- An OR of tenant equalities names tenants: their owners only.
EXPLAIN (VERBOSE, COSTS OFF)
SELECT order_id FROM orders WHERE tenant_id = 'acme' OR tenant_id = 'wayne';
SELECT count(*) FROM orders WHERE tenant_id = 'acme' OR tenant_id = 'wayne';

-- ===================================================================
-- Unknown and NULL tenants: an empty result, no shard opened
-- ===================================================================
EXPLAIN (VERBOSE, COSTS OFF)
SELECT * FROM orders WHERE tenant_id = 'nobody';
SELECT * FROM orders WHERE tenant_id = 'nobody';
EXPLAIN (VERBOSE, COSTS OFF)
SELECT * FROM orders WHERE tenant_id = NULL;
SELECT * FROM orders WHERE tenant_id = NULL;
SELECT count(*) FROM orders WHERE tenant_id IS NULL;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT * FROM orders WHERE tenant_id = ANY (ARRAY[NULL, 'nobody']);
SELECT * FROM orders WHERE tenant_id = ANY (ARRAY[NULL, 'nobody']);

-- ===================================================================
-- IN lists and = ANY (array): the owners of the tenants named
-- ===================================================================
EXPLAIN (VERBOSE, COSTS OFF)
SELECT * FROM orders WHERE tenant_id IN ('acme', 'umbrella');
SELECT tenant_id, count(*) FROM orders WHERE tenant_id IN ('acme', 'umbrella')
  GROUP BY tenant_id ORDER BY tenant_id;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT * FROM orders WHERE tenant_id IN ('acme', 'initech', 'nobody', 'wayne');
SELECT tenant_id, count(*) FROM orders
  WHERE tenant_id IN ('acme', 'initech', 'nobody', 'wayne')
  GROUP BY tenant_id ORDER BY tenant_id;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT * FROM orders WHERE tenant_id = ANY (ARRAY['globex', 'wayne', NULL]);
SELECT tenant_id, count(*) FROM orders
  WHERE tenant_id = ANY (ARRAY['globex', 'wayne', NULL])
  GROUP BY tenant_id ORDER BY tenant_id;
-- NOT IN names no tenant to route to: every shard.
EXPLAIN (VERBOSE, COSTS OFF)
SELECT order_id FROM orders WHERE tenant_id NOT IN ('acme', 'globex');
SELECT count(*) FROM orders WHERE tenant_id NOT IN ('acme', 'globex');

-- ===================================================================
-- Parameters: a generic plan routes by the value of each execution
-- ===================================================================
SET plan_cache_mode = force_generic_plan;
PREPARE by_tenant(text) AS
  SELECT tenant_id, order_id, amount_cents FROM orders
  WHERE tenant_id = $1 ORDER BY order_id;
EXPLAIN (VERBOSE, COSTS OFF) EXECUTE by_tenant('acme');
EXECUTE by_tenant('acme');
EXPLAIN (VERBOSE, COSTS OFF) EXECUTE by_tenant('wayne');
EXECUTE by_tenant('wayne');
EXECUTE by_tenant('initech');
EXPLAIN (VERBOSE, COSTS OFF) EXECUTE by_tenant('nobody');
EXECUTE by_tenant('nobody');
EXPLAIN (VERBOSE, COSTS OFF) EXECUTE by_tenant(NULL);
EXECUTE by_tenant(NULL);
-- = ANY ($1) with a text[] parameter
PREPARE by_tenants(text[]) AS
  SELECT tenant_id, order_id FROM orders WHERE tenant_id = ANY ($1)
  ORDER BY tenant_id, order_id;
EXPLAIN (VERBOSE, COSTS OFF) EXECUTE by_tenants('{acme,globex}');
EXECUTE by_tenants('{acme,globex}');
EXPLAIN (VERBOSE, COSTS OFF) EXECUTE by_tenants('{wayne,NULL,nobody}');
EXECUTE by_tenants('{wayne,NULL,nobody}');
EXECUTE by_tenants('{}');
EXECUTE by_tenants(NULL);
-- A quote in a tenant value is data, not SQL.
EXECUTE by_tenants(ARRAY['acme'' OR 1=1 --', 'acme"]']);

-- ===================================================================
-- A cached generic plan stays right when a tenant moves:
-- "another process" moves tenant mover from s1 to s4 in the directory.
-- ===================================================================
PREPARE mover_events(text) AS
  SELECT event_id, kind FROM events WHERE tenant_id = $1 ORDER BY event_id;
EXPLAIN (VERBOSE, COSTS OFF) EXECUTE mover_events('mover');
EXECUTE mover_events('mover');
\! sqlite3 /tmp/ssfdw_regress/routing/directory.db "UPDATE shard_map SET shard_id = 's4' WHERE tenant_id = 'mover'"
EXPLAIN (VERBOSE, COSTS OFF) EXECUTE mover_events('mover');
EXECUTE mover_events('mover');
-- ... and back again.
\! sqlite3 /tmp/ssfdw_regress/routing/directory.db "UPDATE shard_map SET shard_id = 's1' WHERE tenant_id = 'mover'"
EXECUTE mover_events('mover');
-- The same with a plain statement repeated in the session.
SELECT count(*) FROM events WHERE tenant_id = 'mover';
\! sqlite3 /tmp/ssfdw_regress/routing/directory.db "UPDATE shard_map SET shard_id = 's4' WHERE tenant_id = 'mover'"
SELECT count(*) FROM events WHERE tenant_id = 'mover';
\! sqlite3 /tmp/ssfdw_regress/routing/directory.db "UPDATE shard_map SET shard_id = 's1' WHERE tenant_id = 'mover'"
DEALLOCATE mover_events;

-- ===================================================================
-- Integer tenant columns: SQLite stores INTEGER, the directory '42'
-- ===================================================================
EXPLAIN (VERBOSE, COSTS OFF)
SELECT * FROM metrics_big WHERE tenant_id = 42;
SELECT * FROM metrics_big WHERE tenant_id = 42 ORDER BY metric_id;
-- int4 constant against a bigint column, text that reads as 0042, and
-- a negative tenant
SELECT count(*) FROM metrics_big WHERE tenant_id = 7::int4;
SELECT count(*) FROM metrics_big WHERE tenant_id = '0042';
EXPLAIN (VERBOSE, COSTS OFF)
SELECT * FROM metrics_big WHERE tenant_id = -5;
SELECT * FROM metrics_big WHERE tenant_id = -5 ORDER BY metric_id;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT * FROM metrics_int WHERE tenant_id IN (7, 1000, 99);
SELECT * FROM metrics_int WHERE tenant_id IN (7, 1000, 99)
  ORDER BY tenant_id, metric_id;
-- bigint constant out of int4 range against an int column: no tenant
SELECT * FROM metrics_int WHERE tenant_id = 4294967338;
PREPARE metric_by_tenant(bigint) AS
  SELECT tenant_id, metric_id, v FROM metrics_big WHERE tenant_id = $1
  ORDER BY metric_id;
EXPLAIN (VERBOSE, COSTS OFF) EXECUTE metric_by_tenant(1000);
EXECUTE metric_by_tenant(1000);
EXECUTE metric_by_tenant(42);
PREPARE metric_by_tenants(int[]) AS
  SELECT tenant_id, metric_id, v FROM metrics_int WHERE tenant_id = ANY ($1)
  ORDER BY tenant_id, metric_id;
EXPLAIN (VERBOSE, COSTS OFF) EXECUTE metric_by_tenants('{42,-5}');
EXECUTE metric_by_tenants('{42,-5}');
-- every shard; rows of text tenants are not in this table.  7 is
-- MIGRATING s2 -> s3 and -5 DONE s1 -> s4: their copies (v 700, 701 and
-- -500) are not counted.
SELECT tenant_id, count(*), sum(v) FROM metrics_big
  GROUP BY tenant_id ORDER BY tenant_id;
SELECT count(*), sum(v) FROM metrics_int;
SELECT * FROM metrics_int WHERE v >= 700 OR v = -500;
SELECT * FROM metrics_int WHERE tenant_id = 7 ORDER BY metric_id;
SELECT * FROM metrics_int WHERE tenant_id IN (42, -5) ORDER BY tenant_id, metric_id;

-- ===================================================================
-- uuid tenant column: routed by the canonical (lower case) text form
-- ===================================================================
EXPLAIN (VERBOSE, COSTS OFF)
SELECT * FROM docs WHERE tenant_id = 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11';
SELECT * FROM docs WHERE tenant_id = 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11'
  ORDER BY doc_id;
SELECT * FROM docs WHERE tenant_id = '{6ba7b8109dad11d180b400c04fd430c8}';
SELECT * FROM docs WHERE tenant_id = '00000000-0000-0000-0000-000000000000';
-- Moving uuid tenants: c0ffee00-... (MIGRATING s1 -> s3) is read from s1,
-- d0000000-... (DONE s3 -> s4) from s4; the copies ('copy', 'stale') on
-- s3 stay invisible, also to aggregates.
EXPLAIN (VERBOSE, COSTS OFF)
SELECT * FROM docs WHERE tenant_id = 'c0ffee00-0000-4000-8000-000000000001';
SELECT * FROM docs WHERE tenant_id = 'c0ffee00-0000-4000-8000-000000000001'
  ORDER BY doc_id;
SELECT * FROM docs WHERE tenant_id = 'd0000000-0000-4000-8000-000000000002';
SELECT * FROM docs ORDER BY tenant_id, doc_id;
SELECT tenant_id, count(*), min(title), max(title) FROM docs
  GROUP BY tenant_id ORDER BY tenant_id;
SELECT count(*) FROM docs;
SELECT count(*) FROM docs WHERE title IN ('copy', 'stale');
SELECT title, count(*) FROM docs GROUP BY title ORDER BY title;

-- ===================================================================
-- Values computed when the statement starts: stable expressions
-- ===================================================================
-- lower() is immutable: folded into a constant at plan time.
EXPLAIN (VERBOSE, COSTS OFF)
SELECT order_id FROM orders WHERE tenant_id = lower('ACME');
SELECT count(*) FROM orders WHERE tenant_id = lower('ACME');
-- current_setting() is stable: evaluated at executor start, by each
-- execution of a cached plan.
SET regress.tenant = 'globex';
EXPLAIN (VERBOSE, COSTS OFF)
SELECT order_id FROM orders WHERE tenant_id = current_setting('regress.tenant');
SELECT count(*) FROM orders WHERE tenant_id = current_setting('regress.tenant');
PREPARE by_setting AS
  SELECT tenant_id, order_id FROM orders
  WHERE tenant_id = current_setting('regress.tenant') ORDER BY order_id;
EXECUTE by_setting;
SET regress.tenant = 'wayne';
EXPLAIN (VERBOSE, COSTS OFF) EXECUTE by_setting;
EXECUTE by_setting;
RESET regress.tenant;
-- A volatile expression cannot pick shards: every shard, filtered here.
EXPLAIN (VERBOSE, COSTS OFF)
SELECT order_id FROM orders
  WHERE tenant_id = CASE WHEN random() >= 0 THEN 'acme' END;
SELECT count(*) FROM orders
  WHERE tenant_id = CASE WHEN random() >= 0 THEN 'acme' END;
-- Under a nondeterministic collation 'ACME' equals 'acme': no routing by
-- the text form, every shard, compared here.
CREATE COLLATION regress_nocase (provider = icu, locale = 'und-u-ks-level2',
                                 deterministic = false);
EXPLAIN (VERBOSE, COSTS OFF)
SELECT order_id FROM orders WHERE tenant_id = 'ACME' COLLATE regress_nocase;
SELECT count(*) FROM orders WHERE tenant_id = 'ACME' COLLATE regress_nocase;

-- ===================================================================
-- Values known only at run time: an initplan
-- ===================================================================
CREATE TABLE regress_accounts (tenant text, name text);
INSERT INTO regress_accounts VALUES
  ('acme', 'Acme Corp'), ('globex', 'Globex'), ('hooli', 'Hooli'),
  ('stark', 'Stark Industries'), ('nobody', 'Not in the directory');
ANALYZE regress_accounts;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT order_id, amount_cents FROM orders
  WHERE tenant_id = (SELECT tenant FROM regress_accounts WHERE name = 'Globex');
SELECT order_id, amount_cents FROM orders
  WHERE tenant_id = (SELECT tenant FROM regress_accounts WHERE name = 'Globex')
  ORDER BY order_id;
-- Once run, EXPLAIN ANALYZE knows the shard.
EXPLAIN (ANALYZE, VERBOSE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT order_id FROM orders
  WHERE tenant_id = (SELECT tenant FROM regress_accounts WHERE name = 'Stark Industries');
SELECT order_id, status, amount_cents FROM orders
  WHERE tenant_id = (SELECT tenant FROM regress_accounts WHERE name = 'Stark Industries')
  ORDER BY order_id;
SELECT count(*) FROM orders
  WHERE tenant_id = (SELECT tenant FROM regress_accounts WHERE name = 'Not in the directory');
SELECT count(*) FROM orders
  WHERE tenant_id = (SELECT tenant FROM regress_accounts WHERE name = 'no such name');
EXPLAIN (VERBOSE, COSTS OFF)
SELECT order_id FROM orders
  WHERE tenant_id = ANY ((SELECT array_agg(tenant) FROM regress_accounts
                          WHERE tenant < 'i')::text[]);
SELECT tenant_id, count(*) FROM orders
  WHERE tenant_id = ANY ((SELECT array_agg(tenant) FROM regress_accounts
                          WHERE tenant < 'i')::text[])
  GROUP BY tenant_id ORDER BY tenant_id;

-- ===================================================================
-- Joins with a local table: parameterized rescans route every time
-- ===================================================================
-- A lateral subquery: one routed scan per outer row.
EXPLAIN (VERBOSE, COSTS OFF)
SELECT a.tenant, o.order_id
  FROM regress_accounts a,
       LATERAL (SELECT order_id FROM orders WHERE tenant_id = a.tenant
                OFFSET 0) o;
SELECT a.tenant, o.order_id
  FROM regress_accounts a,
       LATERAL (SELECT order_id FROM orders WHERE tenant_id = a.tenant
                OFFSET 0) o
  ORDER BY a.tenant, o.order_id;
SELECT a.tenant, o.n, o.total
  FROM regress_accounts a,
       LATERAL (SELECT count(*) AS n, sum(amount_cents) AS total
                FROM orders WHERE tenant_id = a.tenant) o
  ORDER BY a.tenant;
-- A correlated subquery in the select list.
SELECT tenant, (SELECT max(order_id) FROM orders o WHERE o.tenant_id = a.tenant)
  FROM regress_accounts a ORDER BY tenant;
-- A plain join, nested loop forced: the foreign scan runs again for every
-- outer row, on the shard of that row's tenant only.
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_material = off;
EXPLAIN (COSTS OFF)
SELECT a.tenant, count(o.order_id)
  FROM regress_accounts a LEFT JOIN orders o ON o.tenant_id = a.tenant
  GROUP BY a.tenant;
SELECT a.tenant, count(o.order_id)
  FROM regress_accounts a LEFT JOIN orders o ON o.tenant_id = a.tenant
  GROUP BY a.tenant ORDER BY a.tenant;
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET enable_material;
SELECT a.tenant, count(o.order_id)
  FROM regress_accounts a LEFT JOIN orders o ON o.tenant_id = a.tenant
  GROUP BY a.tenant ORDER BY a.tenant;

-- ===================================================================
-- PL/pgSQL: a routed query in a loop (its plan is cached and reused)
-- ===================================================================
CREATE FUNCTION regress_tenant_totals(tenants text[])
RETURNS TABLE (tenant text, n bigint, total numeric) LANGUAGE plpgsql AS $$
DECLARE
  t text;
BEGIN
  FOREACH t IN ARRAY tenants LOOP
    SELECT count(*), sum(amount_cents) INTO n, total
      FROM orders WHERE tenant_id = t;
    tenant := t;
    RETURN NEXT;
  END LOOP;
END
$$;
SELECT * FROM regress_tenant_totals(
  ARRAY['acme', 'globex', 'hooli', 'initech', 'stark', 'umbrella', 'wayne',
        'nobody', 'acme', 'wayne', 'hooli']);
-- The cached plan keeps routing right after a move.
CREATE FUNCTION regress_event_kinds(tenant text, times int)
RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
  k text;
BEGIN
  FOR i IN 1 .. times LOOP
    SELECT string_agg(kind, ',' ORDER BY event_id) INTO k
      FROM events WHERE tenant_id = tenant;
    RETURN NEXT k;
  END LOOP;
END
$$;
SELECT * FROM regress_event_kinds('mover', 6);
\! sqlite3 /tmp/ssfdw_regress/routing/directory.db "UPDATE shard_map SET shard_id = 's4' WHERE tenant_id = 'mover'"
SELECT * FROM regress_event_kinds('mover', 2);
\! sqlite3 /tmp/ssfdw_regress/routing/directory.db "UPDATE shard_map SET shard_id = 's1' WHERE tenant_id = 'mover'"

-- ===================================================================
-- Tenants being moved: hooli is MIGRATING s2 -> s3 and
-- read from s2; stark is DONE s3 -> s4 and read from s4.  Copies on the
-- other shard (status 'copy' and 'stale') are never seen.
-- ===================================================================
EXPLAIN (VERBOSE, COSTS OFF)
SELECT * FROM orders WHERE tenant_id = 'hooli';
SELECT * FROM orders WHERE tenant_id = 'hooli' ORDER BY order_id;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT * FROM orders WHERE tenant_id = 'stark';
SELECT * FROM orders WHERE tenant_id = 'stark' ORDER BY order_id;
-- s3 holds initech's rows and both kinds of copies: only initech's show.
SELECT * FROM orders WHERE tenant_id = 'initech' ORDER BY order_id;
SELECT tenant_id, count(*) FROM orders
  WHERE tenant_id IN ('initech', 'hooli', 'stark')
  GROUP BY tenant_id ORDER BY tenant_id;
-- A fan-out counts each moving tenant once, from its owner.
SELECT tenant_id, count(*), min(amount_cents % 10) AS shard_digit
  FROM orders
  GROUP BY tenant_id ORDER BY tenant_id;
SELECT count(*) FROM orders WHERE status IN ('copy', 'stale');
SELECT status, count(*) FROM orders GROUP BY status ORDER BY status;
-- Cutover while a generic plan is cached: hooli becomes DONE, so s3 now
-- owns it (its 2 copied rows) and the 3 rows on s2 become leftovers.
PREPARE hooli_orders AS
  SELECT order_id, status, amount_cents FROM orders
  WHERE tenant_id = 'hooli' ORDER BY order_id;
EXECUTE hooli_orders;
\! sqlite3 /tmp/ssfdw_regress/routing/directory.db "UPDATE shard_map SET status = 'DONE' WHERE tenant_id = 'hooli'"
EXPLAIN (VERBOSE, COSTS OFF) EXECUTE hooli_orders;
EXECUTE hooli_orders;
SELECT tenant_id, count(*) FROM orders GROUP BY tenant_id ORDER BY tenant_id;
\! sqlite3 /tmp/ssfdw_regress/routing/directory.db "UPDATE shard_map SET status = 'MIGRATING' WHERE tenant_id = 'hooli'"
EXECUTE hooli_orders;
DEALLOCATE hooli_orders;

-- ===================================================================
-- A directory without a shards table: paths from shard_path, relative
-- to the directory file's folder
-- ===================================================================
CREATE SERVER routing_bypath FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/routing/bypath/directory.db',
           shard_path 'shards/%s.db');
CREATE FOREIGN TABLE bypath_orders (
  tenant_id text, order_id bigint, status text, amount_cents bigint
) SERVER routing_bypath OPTIONS (table 'orders');
EXPLAIN (VERBOSE, COSTS OFF)
SELECT * FROM bypath_orders WHERE tenant_id = 'globex';
SELECT * FROM bypath_orders WHERE tenant_id = 'globex' ORDER BY order_id;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT * FROM bypath_orders;
SELECT tenant_id, count(*) FROM bypath_orders GROUP BY tenant_id
  ORDER BY tenant_id;
SELECT count(*) FROM bypath_orders WHERE tenant_id = 'acme';
-- Without the pattern such a directory cannot be used.
ALTER SERVER routing_bypath OPTIONS (DROP shard_path);
SELECT count(*) FROM bypath_orders;
ALTER SERVER routing_bypath OPTIONS (ADD shard_path 'shards/%s.db');
SELECT count(*) FROM bypath_orders;

-- ===================================================================
-- User mapping option "tenants": a role sees only those tenants' rows
-- ===================================================================
CREATE ROLE regress_bi;
CREATE ROLE regress_other;
GRANT SELECT ON orders, metrics_big, docs TO regress_bi, regress_other;
CREATE USER MAPPING FOR regress_bi SERVER routing_srv
  OPTIONS (tenants 'acme, globex');
SET ROLE regress_bi;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT * FROM orders;
SELECT tenant_id, count(*) FROM orders GROUP BY tenant_id ORDER BY tenant_id;
SELECT count(*) FROM orders WHERE status = 'paid';
-- Routed to another tenant: nothing, and no shard opened.
EXPLAIN (VERBOSE, COSTS OFF)
SELECT * FROM orders WHERE tenant_id = 'initech';
SELECT * FROM orders WHERE tenant_id = 'initech';
EXPLAIN (VERBOSE, COSTS OFF)
SELECT * FROM orders WHERE tenant_id IN ('acme', 'initech', 'wayne');
SELECT tenant_id, count(*) FROM orders
  WHERE tenant_id IN ('acme', 'initech', 'wayne')
  GROUP BY tenant_id ORDER BY tenant_id;
SELECT tenant_id, count(*) FROM orders WHERE tenant_id <> 'acme'
  GROUP BY tenant_id ORDER BY tenant_id;
-- A cached plan made before the switch applies the mapping of the role
-- that runs it.
RESET ROLE;
PREPARE all_tenants AS
  SELECT tenant_id, count(*) FROM orders GROUP BY tenant_id ORDER BY tenant_id;
EXECUTE all_tenants;
SET ROLE regress_bi;
EXECUTE all_tenants;
-- The integer-tenant table has no rows for these tenants.
SELECT count(*) FROM metrics_big;
RESET ROLE;
-- A PUBLIC mapping applies to roles without their own.  It names tenants
-- that are being moved and initech, whose shard s3 holds their copies:
-- each is still counted once.
CREATE USER MAPPING FOR PUBLIC SERVER routing_srv
  OPTIONS (tenants 'hooli, stark, initech, 42, d0000000-0000-4000-8000-000000000002');
SET ROLE regress_other;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT * FROM orders;
SELECT tenant_id, count(*), min(status), max(status) FROM orders
  GROUP BY tenant_id ORDER BY tenant_id;
SELECT * FROM metrics_big ORDER BY tenant_id, metric_id;
-- a uuid tenant column
EXPLAIN (VERBOSE, COSTS OFF)
SELECT * FROM docs;
SELECT count(*) FROM docs;
SELECT * FROM docs ORDER BY doc_id;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT * FROM metrics_big WHERE tenant_id = 7;
SELECT * FROM metrics_big WHERE tenant_id = 7;
RESET ROLE;
-- regress_bi keeps its own mapping.
SET ROLE regress_bi;
SELECT tenant_id, count(*) FROM orders GROUP BY tenant_id ORDER BY tenant_id;
RESET ROLE;
-- A role with its own mapping without "tenants" sees everything.
CREATE USER MAPPING FOR regress_other SERVER routing_srv;
SET ROLE regress_other;
SELECT count(*) FROM orders;
RESET ROLE;
DROP USER MAPPING FOR regress_other SERVER routing_srv;
DROP USER MAPPING FOR PUBLIC SERVER routing_srv;
DROP USER MAPPING FOR regress_bi SERVER routing_srv;
SET ROLE regress_bi;
SELECT count(*) FROM orders;
RESET ROLE;
EXECUTE all_tenants;

-- ===================================================================
-- The directory in WAL mode: the change check reads the WAL-index header
-- instead of taking a read transaction, and must still see every commit
-- of another process, however many came in between.
-- ===================================================================
\! sqlite3 /tmp/ssfdw_regress/routing/directory.db "PRAGMA journal_mode = WAL" >/dev/null
PREPARE mover_kinds(text) AS
  SELECT kind, count(*) FROM events WHERE tenant_id = $1 GROUP BY kind;
EXECUTE mover_kinds('mover');
EXECUTE mover_kinds('mover');
\! sqlite3 /tmp/ssfdw_regress/routing/directory.db "UPDATE shard_map SET shard_id = 's4' WHERE tenant_id = 'mover'"
EXECUTE mover_kinds('mover');
EXECUTE mover_kinds('mover');
\! sqlite3 /tmp/ssfdw_regress/routing/directory.db "UPDATE shard_map SET shard_id = 's1' WHERE tenant_id = 'mover'"
\! sqlite3 /tmp/ssfdw_regress/routing/directory.db "UPDATE shard_map SET shard_id = 's4' WHERE tenant_id = 'mover'"
\! sqlite3 /tmp/ssfdw_regress/routing/directory.db "UPDATE shard_map SET shard_id = 's1' WHERE tenant_id = 'mover'"
EXECUTE mover_kinds('mover');
-- a checkpoint that empties the WAL is not a change, the commit after it is
\! sqlite3 /tmp/ssfdw_regress/routing/directory.db "PRAGMA wal_checkpoint(TRUNCATE)" >/dev/null
EXECUTE mover_kinds('mover');
\! sqlite3 /tmp/ssfdw_regress/routing/directory.db "UPDATE shard_map SET shard_id = 's4' WHERE tenant_id = 'mover'"
EXECUTE mover_kinds('mover');
\! sqlite3 /tmp/ssfdw_regress/routing/directory.db "UPDATE shard_map SET shard_id = 's1' WHERE tenant_id = 'mover'"
EXECUTE mover_kinds('mover');
DEALLOCATE mover_kinds;

-- ===================================================================
-- Clean up
-- ===================================================================
RESET plan_cache_mode;
DEALLOCATE ALL;
DROP FUNCTION regress_tenant_totals(text[]);
DROP FUNCTION regress_event_kinds(text, int);
DROP TABLE regress_accounts;
DROP COLLATION regress_nocase;
REVOKE ALL ON orders, metrics_big, docs FROM regress_bi, regress_other;
DROP ROLE regress_bi;
DROP ROLE regress_other;
DROP SERVER routing_bypath CASCADE;
DROP SERVER routing_srv CASCADE;
