--
-- directory_adopt: from SQLite files an application wrote to a directory
-- that knows their shards and tenants.  The folder's SQLite files become
-- shards; every tenant found in them is registered on the shard holding
-- it; a tenant on two shards is reported and not registered; a second run
-- changes nothing; a failure adds nothing.  See test/fixtures/adopt.sh.
--
\! bash test/fixtures/adopt.sh
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
RESET client_min_messages;
CREATE SERVER adopt_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/adopt/directory.db');
CREATE FOREIGN TABLE adopt_orders (tenant_id text, order_id bigint,
  amount_cents bigint) SERVER adopt_srv OPTIONS (table 'orders');
\set VERBOSITY default

-- before: the directory knows nothing; a routed read finds nothing, and
-- warns of the rows a shard holds (no shard is listed yet: no warning)
SELECT count(*) FROM adopt_orders WHERE tenant_id = 'acme';

-- a folder that does not exist, an empty one: errors naming them
SELECT * FROM directory_adopt('adopt_srv', 'nowhere');
SELECT * FROM directory_adopt('adopt_srv', '');
SELECT * FROM directory_adopt(NULL);

-- adopt: shards from the folder, then tenants
SELECT * FROM directory_adopt('adopt_srv', 'shards')
  ORDER BY status DESC, shard_id, tenant_id;
SELECT shard_id, path, tenants FROM shard_list('adopt_srv') ORDER BY 1;
SELECT tenant_id, shard_id, status FROM tenant_list('adopt_srv');

-- routed reads now find the tenants; dup is still unknown
SELECT tenant_id, count(*), sum(amount_cents) FROM adopt_orders
  WHERE tenant_id IN ('acme', 'bolt', 'core', 'dup') GROUP BY 1 ORDER BY 1;
SELECT shard_id, table_name, tenant_id, rows, reason
  FROM shard_orphans('adopt_srv') ORDER BY 1, 2, 3;

-- dup is on two shards: a routed read warns of both, or fails with
-- sqlite_shard_fdw.unknown_tenants = error, or says nothing with off
SELECT count(*) FROM adopt_orders WHERE tenant_id = 'dup';
SET sqlite_shard_fdw.unknown_tenants = error;
SELECT count(*) FROM adopt_orders WHERE tenant_id = 'dup';
SET sqlite_shard_fdw.unknown_tenants = off;
SELECT count(*) FROM adopt_orders WHERE tenant_id = 'dup';
RESET sqlite_shard_fdw.unknown_tenants;
-- a tenant no shard holds: nothing to say
SELECT count(*) FROM adopt_orders WHERE tenant_id = 'nobody';
-- a role scoped to acme asks for dup: it reads nothing, and learns nothing
CREATE ROLE regress_adopt_acme;
CREATE USER MAPPING FOR regress_adopt_acme SERVER adopt_srv
  OPTIONS (tenants 'acme');
GRANT SELECT ON adopt_orders TO regress_adopt_acme;
SET ROLE regress_adopt_acme;
SELECT count(*) FROM adopt_orders WHERE tenant_id = 'dup';
RESET ROLE;
DROP USER MAPPING FOR regress_adopt_acme SERVER adopt_srv;
REVOKE SELECT ON adopt_orders FROM regress_adopt_acme;
DROP ROLE regress_adopt_acme;

-- a second run finds nothing more to do
SELECT * FROM directory_adopt('adopt_srv', 'shards');

-- the operator says where dup lives; its other copy is then an orphan
SELECT tenant_add('adopt_srv', 'dup', 'c');
SELECT * FROM directory_adopt('adopt_srv');
SELECT shard_id, table_name, tenant_id, rows, reason
  FROM shard_orphans('adopt_srv') WHERE tenant_id = 'dup';

-- new rows of a new tenant, and a new file: registered by the next run
\! sqlite3 /tmp/ssfdw_regress/adopt/shards/empty.db "INSERT INTO orders VALUES ('echo', 20, 1)"
\! sqlite3 /tmp/ssfdw_regress/adopt/shards/f.db "CREATE TABLE orders(tenant_id TEXT, order_id INTEGER PRIMARY KEY, amount_cents INTEGER); INSERT INTO orders VALUES ('fox', 21, 2)" && chown postgres /tmp/ssfdw_regress/adopt/shards/f.db
SELECT * FROM directory_adopt('adopt_srv', 'shards')
  ORDER BY status DESC, shard_id, tenant_id;

-- inside a transaction that rolls back, nothing is added
\! sqlite3 /tmp/ssfdw_regress/adopt/shards/f.db "INSERT INTO orders VALUES ('golf', 22, 3)"
BEGIN;
SELECT * FROM directory_adopt('adopt_srv');
ROLLBACK;
SELECT tenant_locate('adopt_srv', 'golf') IS NULL AS golf_unknown;

-- files outside the directory's folder are refused as shard_add refuses them
SELECT * FROM directory_adopt('adopt_srv', '../adopt_outside');

-- who may: a role without the file roles
CREATE ROLE regress_adopt_nobody;
GRANT USAGE ON FOREIGN SERVER adopt_srv TO regress_adopt_nobody;
SET ROLE regress_adopt_nobody;
SELECT * FROM directory_adopt('adopt_srv');
RESET ROLE;
REVOKE USAGE ON FOREIGN SERVER adopt_srv FROM regress_adopt_nobody;
DROP ROLE regress_adopt_nobody;
