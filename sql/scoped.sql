--
-- Tenant isolation: what a statement may see of other tenants' rows.
-- A tenant-scoped login (user mapping option "tenants") and a routed
-- statement (WHERE tenant_id = ...) read only their tenants' rows: another
-- tenant's row is never converted, counted in EXPLAIN ANALYZE or named in
-- an error, however the shard declares the tenant column.  The roles here
-- act as hostile tenants would.  See test/fixtures/scoped.sh for the rows.
--
\! bash test/fixtures/scoped.sh
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
RESET client_min_messages;
CREATE SERVER scoped_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/scoped/directory.db');
CREATE FOREIGN TABLE orders4 (tenant_id text, id bigint, secret text,
  amount bigint, created date) SERVER scoped_srv OPTIONS (table 'orders');
CREATE FOREIGN TABLE orders_t4 (tenant_id text, id bigint, secret text,
  amount bigint, created date) SERVER scoped_srv OPTIONS (table 'orders_t');
CREATE FOREIGN TABLE orders_i4 (tenant_id text, id bigint, secret text,
  amount bigint, created date) SERVER scoped_srv OPTIONS (table 'orders_i');
CREATE DOMAIN regress_tenant_text AS text CHECK (VALUE <> '');
CREATE FOREIGN TABLE orders_d4 (tenant_id regress_tenant_text, id bigint,
  secret text, amount bigint, created date)
  SERVER scoped_srv OPTIONS (table 'orders');
CREATE FOREIGN TABLE codes_c (tenant_id char(4), id int, v text)
  SERVER scoped_srv OPTIONS (table 'codes');
CREATE FOREIGN TABLE codes_v (tenant_id varchar(4), id int, v text)
  SERVER scoped_srv OPTIONS (table 'codes');
CREATE FOREIGN TABLE codes_tc (tenant_id char(4), id int, v text)
  SERVER scoped_srv OPTIONS (table 'codes_t');
CREATE FOREIGN TABLE codes_tv (tenant_id varchar(4), id int, v text)
  SERVER scoped_srv OPTIONS (table 'codes_t');
CREATE FOREIGN TABLE nums2 (tenant_id smallint, id int, v int)
  SERVER scoped_srv OPTIONS (table 'nums');
CREATE FOREIGN TABLE nums8 (tenant_id bigint, id int, v int)
  SERVER scoped_srv OPTIONS (table 'nums');
CREATE FOREIGN TABLE docs_u (tenant_id uuid, id int, n int)
  SERVER scoped_srv OPTIONS (table 'docs');
CREATE FOREIGN TABLE ledger4 (tenant_id text, id int, amount bigint)
  SERVER scoped_srv OPTIONS (table 'ledger');

CREATE ROLE regress_scoped_acme;
CREATE ROLE regress_scoped_bcme;
CREATE ROLE regress_scoped_one;
CREATE ROLE regress_scoped_uuid;
GRANT SELECT ON orders4, orders_t4, orders_i4, orders_d4, codes_c, codes_v,
  codes_tc, codes_tv, nums2, nums8, docs_u, ledger4
  TO regress_scoped_acme, regress_scoped_bcme, regress_scoped_one,
     regress_scoped_uuid;
CREATE USER MAPPING FOR regress_scoped_acme SERVER scoped_srv
  OPTIONS (tenants 'acme');
CREATE USER MAPPING FOR regress_scoped_bcme SERVER scoped_srv
  OPTIONS (tenants 'bcme');
CREATE USER MAPPING FOR regress_scoped_one SERVER scoped_srv
  OPTIONS (tenants '1');
CREATE USER MAPPING FOR regress_scoped_uuid SERVER scoped_srv
  OPTIONS (tenants 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11');

-- Shard Rows and times vary only in their times: keep the rows.
CREATE FUNCTION regress_shard_rows(q text) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE l text;
BEGIN
  FOR l IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q
  LOOP
    IF l ~ 'Shard Rows|actual rows' THEN
      RETURN NEXT regexp_replace(l, '\(actual rows=(\d+) loops=(\d+)\)',
                                 'rows=\1');
    END IF;
  END LOOP;
END $$;

-- ===================================================================
-- Another tenant's unreadable values: a tenant column without a type
-- ===================================================================
-- Unrestricted, every shard: victim's bad row is an error, as it must be.
SELECT * FROM orders4 ORDER BY tenant_id, id;
-- Routed to acme: victim's rows stay in SQLite, whatever they hold.
SELECT * FROM orders4 WHERE tenant_id = 'acme';
SELECT * FROM regress_shard_rows($$SELECT id FROM orders4 WHERE tenant_id = 'acme'$$);
SELECT * FROM orders4 WHERE tenant_id IN ('acme', 'bcme') ORDER BY tenant_id;
SELECT * FROM orders4 WHERE tenant_id = ANY (ARRAY['acme', 'nobody']);
PREPARE routed(text) AS SELECT id, secret, amount FROM orders4 WHERE tenant_id = $1;
EXECUTE routed('acme');
SET plan_cache_mode = force_generic_plan;
EXECUTE routed('acme');
EXECUTE routed('bcme');
RESET plan_cache_mode;
DEALLOCATE routed;
-- The same through the TEXT- and INTEGER-declared tables and a domain.
SELECT * FROM orders_t4 WHERE tenant_id = 'acme';
SELECT * FROM orders_i4 WHERE tenant_id = 'acme';
SELECT * FROM orders_d4 WHERE tenant_id = 'acme';

SET ROLE regress_scoped_acme;
SELECT * FROM orders4;
SELECT * FROM orders4 WHERE tenant_id = 'acme';
SELECT id FROM orders4 WHERE created >= '2020-01-01';
SELECT * FROM regress_shard_rows($$SELECT id FROM orders4 WHERE tenant_id = 'acme'$$);
SELECT * FROM regress_shard_rows($$SELECT id FROM orders4$$);
SELECT * FROM regress_shard_rows($$SELECT count(*), sum(amount) FROM orders4$$);
SELECT * FROM orders_t4;
SELECT * FROM orders_i4;
SELECT * FROM orders_d4;
SELECT * FROM regress_shard_rows($$SELECT id FROM orders_i4$$);
-- What a hostile tenant tries: other tenants by name, OR, NOT, functions
-- of the tenant column, subqueries, CTEs.
SELECT * FROM orders4 WHERE tenant_id = 'victim';
SELECT * FROM orders4 WHERE tenant_id = 'victim' OR true;
SELECT * FROM orders4 WHERE NOT tenant_id = 'acme';
SELECT * FROM orders4 WHERE upper(tenant_id) = 'VICTIM';
SELECT * FROM orders4 WHERE tenant_id IN (SELECT 'victim');
SELECT * FROM orders4 WHERE tenant_id = ANY (ARRAY(SELECT 'victim'));
WITH t AS (SELECT * FROM orders4) SELECT count(*) FROM t;
SELECT count(*), sum(amount), min(created), max(secret) FROM orders4;
SELECT tenant_id, count(*) FROM orders4 GROUP BY tenant_id;
SELECT count(DISTINCT amount), bool_or(amount > 0) FROM orders4;
SELECT tenant_id, sum(amount) FROM orders4 GROUP BY 1 ORDER BY 2 DESC LIMIT 1;
-- Joins of two foreign tables, cursors and PL/pgSQL.
SELECT o.id, t.id FROM orders4 o JOIN orders_t4 t USING (tenant_id);
BEGIN;
DECLARE c CURSOR FOR SELECT tenant_id, secret FROM orders4;
FETCH ALL FROM c;
COMMIT;
DO $$
DECLARE r record;
BEGIN
  FOR r IN SELECT tenant_id, secret FROM orders4 LOOP
    RAISE NOTICE 'row of %: %', r.tenant_id, r.secret;
  END LOOP;
END $$;
-- Lifting the restriction needs USAGE on the server.
ALTER USER MAPPING FOR regress_scoped_acme SERVER scoped_srv
  OPTIONS (DROP tenants);
DROP USER MAPPING FOR regress_scoped_acme SERVER scoped_srv;
CREATE USER MAPPING FOR regress_scoped_acme SERVER scoped_srv;
RESET ROLE;

-- ===================================================================
-- A stale copy of a moving tenant is never read
-- ===================================================================
-- mover's copy on s2 holds unreadable amounts; s1 owns mover.
SELECT tenant_id, sum(amount) FROM ledger4 GROUP BY 1 ORDER BY 1;
SELECT tenant_id, id, amount FROM ledger4 WHERE tenant_id <> 'nobody'
  ORDER BY 1, 2;
SELECT * FROM ledger4 WHERE tenant_id = 'mover' ORDER BY id;
SELECT * FROM regress_shard_rows($$SELECT * FROM ledger4 WHERE tenant_id <> 'nobody'$$);
SET ROLE regress_scoped_bcme;
SELECT * FROM ledger4;
SELECT * FROM ledger4 WHERE tenant_id <> 'nobody';
SELECT * FROM regress_shard_rows($$SELECT * FROM ledger4$$);
RESET ROLE;

-- ===================================================================
-- Tenants that differ only by trailing spaces
-- ===================================================================
-- "acme", "acme " and "acme   " are three tenants; char(4) and varchar(4)
-- read all three as 'acme', but a row belongs to the tenant its stored
-- text names.
SELECT * FROM codes_c WHERE tenant_id = 'acme';
SELECT * FROM codes_v WHERE tenant_id = 'acme';
SELECT * FROM codes_tc WHERE tenant_id = 'acme';
SELECT * FROM codes_tv WHERE tenant_id = 'acme';
SET ROLE regress_scoped_acme;
SELECT * FROM codes_c;
SELECT * FROM codes_v;
SELECT * FROM codes_tc;
SELECT * FROM codes_tv;
SELECT count(*) FROM codes_tv;
RESET ROLE;
SET ROLE regress_scoped_bcme;
SELECT * FROM codes_c;
SELECT * FROM codes_v;
SELECT * FROM codes_tv WHERE tenant_id = 'bcme';
RESET ROLE;

-- ===================================================================
-- Integer tenants: one rule for routing and for scoped logins
-- ===================================================================
-- '01', ' 1', '+1', '1 ', 1 and 1.0 are all tenant 1, as PostgreSQL reads
-- them; tenant 2's unreadable v, and values of no tenant, stay in SQLite.
SELECT * FROM nums8 WHERE tenant_id = 1 ORDER BY id;
SELECT * FROM nums2 WHERE tenant_id = 1 ORDER BY id;
SELECT * FROM regress_shard_rows($$SELECT * FROM nums2 WHERE tenant_id = 1$$);
SET ROLE regress_scoped_one;
SELECT * FROM nums8 ORDER BY id;
SELECT * FROM nums2 ORDER BY id;
SELECT count(*), sum(v) FROM nums2;
SELECT * FROM nums8 WHERE tenant_id = 2;
RESET ROLE;

-- ===================================================================
-- uuid tenants: every stored form of the uuid, nothing else
-- ===================================================================
SELECT id, n FROM docs_u WHERE tenant_id = 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'
  ORDER BY id;
SET ROLE regress_scoped_uuid;
SELECT * FROM docs_u ORDER BY id;
SELECT count(*), sum(n) FROM docs_u;
SELECT * FROM regress_shard_rows($$SELECT * FROM docs_u$$);
RESET ROLE;

-- ===================================================================
-- A UTF-16 shard: the filters compare text in the shard's encoding
-- ===================================================================
SELECT id, secret, amount FROM orders4 WHERE tenant_id = 'ücme';
SELECT id, secret, amount FROM orders_t4 WHERE tenant_id = 'ücme';
CREATE ROLE regress_scoped_u;
GRANT SELECT ON orders4, orders_t4 TO regress_scoped_u;
CREATE USER MAPPING FOR regress_scoped_u SERVER scoped_srv
  OPTIONS (tenants 'ücme');
SET ROLE regress_scoped_u;
SELECT * FROM orders4;
SELECT * FROM orders_t4;
SELECT count(*), sum(amount) FROM orders_t4;
SELECT * FROM regress_shard_rows($$SELECT * FROM orders4$$);
RESET ROLE;
DROP USER MAPPING FOR regress_scoped_u SERVER scoped_srv;
REVOKE SELECT ON orders4, orders_t4 FROM regress_scoped_u;
DROP ROLE regress_scoped_u;

-- ===================================================================
-- Clean up
-- ===================================================================
DROP FUNCTION regress_shard_rows(text);
DROP USER MAPPING FOR regress_scoped_acme SERVER scoped_srv;
DROP USER MAPPING FOR regress_scoped_bcme SERVER scoped_srv;
DROP USER MAPPING FOR regress_scoped_one SERVER scoped_srv;
DROP USER MAPPING FOR regress_scoped_uuid SERVER scoped_srv;
DROP SERVER scoped_srv CASCADE;
DROP DOMAIN regress_tenant_text;
DROP ROLE regress_scoped_acme, regress_scoped_bcme, regress_scoped_one,
  regress_scoped_uuid;
