--
-- Placement: tenant_add without a shard, and auto_register, choose by
-- headroom and expected volume, so that tenants registered before their
-- rows exist spread over the shards (test/fixtures/placement.sh).
--
\! bash test/fixtures/placement.sh
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
RESET client_min_messages;
CREATE SERVER pl_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/placement/directory.db',
           max_shard_bytes '1000000');
CREATE FOREIGN TABLE docs (tenant_id text, id bigint, body bytea)
  SERVER pl_srv;

-- regress_state(statement): the SQLSTATE and message of its error, or ok
\i test/regress_state.sql

-- p1 has the smallest file, p0 the only rows
SELECT shard_id, tenants, bytes < 5 * 4096 AS small FROM shard_list('pl_srv')
  ORDER BY 1;

-- ===================================================================
-- Six tenants in one transaction: each sees the ones placed before it
-- ===================================================================
BEGIN;
SELECT tenant_add('pl_srv', 'tx' || g) AS shard_id
  FROM generate_series(1, 6) AS g;
SELECT shard_id, tenants FROM shard_list('pl_srv') ORDER BY 1;
COMMIT;

-- ===================================================================
-- Three in autocommit
-- ===================================================================
SELECT tenant_add('pl_srv', 'ac1');
SELECT tenant_add('pl_srv', 'ac2');
SELECT tenant_add('pl_srv', 'ac3');

-- ===================================================================
-- Two registered by COPY (auto_register)
-- ===================================================================
ALTER FOREIGN TABLE docs OPTIONS (ADD auto_register 'true');
COPY docs (tenant_id, id) FROM STDIN;
cp1	1
cp2	1
\.
ALTER FOREIGN TABLE docs OPTIONS (DROP auto_register);

SELECT tenant_id, shard_id FROM tenant_list('pl_srv') ORDER BY 1;
SELECT shard_id, tenants FROM shard_list('pl_srv') ORDER BY 1;
SELECT tenant_id, count(*) FROM docs WHERE tenant_id LIKE 'cp%'
  GROUP BY 1 ORDER BY 1;

-- ===================================================================
-- expected_bytes: only a shard with that much room under
-- max_shard_bytes takes the tenant
-- ===================================================================
-- p0 (about 176 kB) has no room for 900 kB
SELECT tenant_add('pl_srv', 'big', expected_bytes => 900000) IN ('p1', 'p2')
  AS not_p0;
SELECT regress_state($$SELECT tenant_add('pl_srv', 'huge', expected_bytes => 2000000)$$);
SELECT regress_state($$SELECT tenant_add('pl_srv', 'neg', expected_bytes => -1)$$);
-- with a shard named, it is not used
SELECT tenant_add('pl_srv', 'named', 'p0', 2000000);
SELECT tenant_id, shard_id FROM tenant_list('pl_srv')
  WHERE tenant_id IN ('huge', 'neg', 'named') ORDER BY 1;

SET client_min_messages = warning;
DROP SERVER pl_srv CASCADE;
RESET client_min_messages;
DROP FUNCTION regress_state(text);
