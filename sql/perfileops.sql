--
-- ANALYZE, IMPORT FOREIGN SCHEMA, moves and statistics on fleets of one
-- SQLite file per tenant (server option layout 'file_per_tenant'), whose
-- files store no tenant column.  See test/fixtures/perfileops.sh.
--
\! bash test/fixtures/perfileops.sh
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
RESET client_min_messages;

CREATE SERVER po_flat FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/perfileops/flat/directory.db',
           layout 'file_per_tenant', tenant_path 'tenants/%s.db');
CREATE SERVER po_dir FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/perfileops/dir/directory.db',
           layout 'file_per_tenant');
CREATE FOREIGN TABLE po_items (tenant_id text, order_id bigint, status text,
  amount_cents bigint, created_at timestamp)
  SERVER po_flat OPTIONS (table 'orders');
CREATE FOREIGN TABLE po_dir_items (tenant_id text, order_id bigint,
  status text) SERVER po_dir OPTIONS (table 'orders');

-- ===================================================================
-- ANALYZE: the tenant column is each file's tenant
-- ===================================================================
ANALYZE po_items;
SELECT reltuples FROM pg_class WHERE relname = 'po_items';
SELECT attname, n_distinct FROM pg_stats
 WHERE tablename = 'po_items' AND attname IN ('tenant_id', 'status')
 ORDER BY 1;
ANALYZE po_dir_items;
SELECT reltuples FROM pg_class WHERE relname = 'po_dir_items';
-- a file that lacks a column (t0005) or the table: named, or read as
-- the table's drift options say
CREATE FOREIGN TABLE po_cust (tenant_id text, order_id bigint,
  customer_id int) SERVER po_flat OPTIONS (table 'orders');
ANALYZE po_cust;                                             -- HV005
ALTER FOREIGN TABLE po_cust OPTIONS (ADD missing_column 'null');
ANALYZE po_cust;
SELECT reltuples FROM pg_class WHERE relname = 'po_cust';
SELECT null_frac > 0 AS some_null FROM pg_stats
 WHERE tablename = 'po_cust' AND attname = 'customer_id';
CREATE FOREIGN TABLE po_settings (tenant_id text, name text, value text)
  SERVER po_flat OPTIONS (table 'settings');
ANALYZE po_settings;                                         -- HV00R
ALTER FOREIGN TABLE po_settings OPTIONS (ADD missing_table 'empty');
ANALYZE po_settings;
SELECT reltuples FROM pg_class WHERE relname = 'po_settings';
-- an owner whose user mapping has tenants samples their files alone, and
-- hears nothing of other files (an undecodable name among them)
\! cp /tmp/ssfdw_regress/perfileops/flat/tenants/t0004.db "$(printf '/tmp/ssfdw_regress/perfileops/flat/tenants/t\3774.db')"
SELECT count(*) FROM po_items;
CREATE ROLE regress_po_owner;
GRANT USAGE ON FOREIGN SERVER po_flat TO regress_po_owner;
CREATE USER MAPPING FOR regress_po_owner SERVER po_flat
  OPTIONS (tenants 't0002');
ALTER FOREIGN TABLE po_items OWNER TO regress_po_owner;
ANALYZE po_items;
SELECT reltuples FROM pg_class WHERE relname = 'po_items';
ALTER FOREIGN TABLE po_items OWNER TO CURRENT_USER;

-- ===================================================================
-- IMPORT FOREIGN SCHEMA: the tenant column declared, not stored
-- ===================================================================
CREATE SCHEMA po_imp;
IMPORT FOREIGN SCHEMA main FROM SERVER po_flat INTO po_imp;
\d po_imp.orders
SELECT count(*), count(DISTINCT tenant_id), count(customer_id)
  FROM po_imp.orders WHERE tenant_id IN ('t0001', 't0002', 't0003', 't0004');
SELECT tenant_id, count(*) FROM po_imp.orders
 WHERE tenant_id IN ('t0001', 't0002') GROUP BY 1 ORDER BY 1;
-- from a tenant's file: t0005's lacks customer_id
CREATE SCHEMA po_imp5;
IMPORT FOREIGN SCHEMA main FROM SERVER po_flat INTO po_imp5
  OPTIONS (tenant 't0005');
\d po_imp5.orders
-- from a template, and from the server's tenant_template
CREATE SCHEMA po_impt;
IMPORT FOREIGN SCHEMA main FROM SERVER po_flat INTO po_impt
  OPTIONS (template 'templates/v2.db');
\det+ po_impt.*
\d po_impt.settings
ALTER SERVER po_flat OPTIONS (ADD tenant_template 'templates/v2.db');
CREATE SCHEMA po_impt2;
IMPORT FOREIGN SCHEMA main LIMIT TO (settings) FROM SERVER po_flat
  INTO po_impt2;
\det po_impt2.*
ALTER SERVER po_flat OPTIONS (DROP tenant_template);
-- a stored column named as the tenant column is left out
CREATE SCHEMA po_impc;
IMPORT FOREIGN SCHEMA main FROM SERVER po_flat INTO po_impc
  OPTIONS (tenant 't0001', tenant_column 'status');
\d po_impc.orders
-- where the directory names the files
CREATE SCHEMA po_impd;
IMPORT FOREIGN SCHEMA main FROM SERVER po_dir INTO po_impd
  OPTIONS (tenant 't0002', infer_times 'false');
\d po_impd.orders
SELECT tenant_id, count(*) FROM po_impd.orders GROUP BY 1 ORDER BY 1;
-- what is refused
IMPORT FOREIGN SCHEMA main FROM SERVER po_flat INTO po_imp
  OPTIONS (tenant 't0999');                                  -- HV024
IMPORT FOREIGN SCHEMA main FROM SERVER po_flat INTO po_imp
  OPTIONS (tenant '../x');                                   -- HV024
IMPORT FOREIGN SCHEMA main FROM SERVER po_flat INTO po_imp
  OPTIONS (template 'templates/none.db');                    -- 58P01
IMPORT FOREIGN SCHEMA main FROM SERVER po_flat INTO po_imp
  OPTIONS (template '../../outside.db');                     -- 42501
IMPORT FOREIGN SCHEMA main FROM SERVER po_flat INTO po_imp
  OPTIONS (template 'tenants');                              -- 58P01
IMPORT FOREIGN SCHEMA main FROM SERVER po_flat INTO po_imp
  OPTIONS (tenant 't0001', template 'templates/v2.db');      -- 22023
-- a scoped login imports from its own tenant's file, and no other
CREATE ROLE regress_po_scoped;
GRANT USAGE ON FOREIGN SERVER po_flat TO regress_po_scoped;
CREATE SCHEMA po_scoped AUTHORIZATION regress_po_scoped;
CREATE USER MAPPING FOR regress_po_scoped SERVER po_flat
  OPTIONS (tenants 't0003');
SET ROLE regress_po_scoped;
IMPORT FOREIGN SCHEMA main FROM SERVER po_flat INTO po_scoped
  OPTIONS (infer_times 'false');
SELECT tenant_id, count(*) FROM po_scoped.orders GROUP BY 1;
IMPORT FOREIGN SCHEMA main FROM SERVER po_flat INTO po_scoped
  OPTIONS (tenant 't0001');                                  -- 42501
IMPORT FOREIGN SCHEMA main FROM SERVER po_flat INTO po_scoped
  OPTIONS (template 'templates/v2.db');                      -- 42501
RESET ROLE;
\! rm -f "$(printf '/tmp/ssfdw_regress/perfileops/flat/tenants/t\3774.db')"

-- ===================================================================
-- Moves do not apply: a tenant's file is the tenant (0A000)
-- ===================================================================
SELECT tenant_move('po_dir', 't0001', 'f_t0002');
SELECT tenant_move('po_flat', 't0001', 't0002');
SELECT tenant_move_abort('po_flat', 't0001');
SELECT * FROM tenant_cleanup('po_dir', 't0001');
SELECT * FROM tenant_cleanup('po_flat');
SELECT * FROM shard_rebalance_plan('po_flat');
CALL shard_rebalance('po_dir');
SELECT * FROM tenant_locate('po_dir', 't0001');
SELECT * FROM tenant_moves('po_dir');

-- ===================================================================
-- Statistics: each file one tenant's
-- ===================================================================
SELECT shard_id, tenants, bytes > 0 AS bytes, used_bytes > 0 AS used,
       above_70
  FROM shard_stats('po_flat');
SELECT tenant_id, shard_id, rows, table_rows, bytes > 0 AS bytes,
       share > 0 AS share, estimate
  FROM tenant_stats('po_flat');
SELECT tenant_id, shard_id, rows, table_rows, estimate
  FROM tenant_stats('po_dir', 'f_t0003');
SELECT shard_id, tenants FROM shard_stats('po_dir') ORDER BY 1 LIMIT 2;

DROP SCHEMA po_imp, po_imp5, po_impt, po_impt2, po_impc, po_impd CASCADE;
DROP SCHEMA po_scoped CASCADE;
DROP SERVER po_flat, po_dir CASCADE;
DROP ROLE regress_po_owner, regress_po_scoped;
