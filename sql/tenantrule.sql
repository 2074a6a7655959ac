--
-- One tenant rule for every path: a stored value is tenant T's when it
-- reads as T's id, whatever the shard declares for the tenant column
-- (collation, affinity, none).  Text-like tenants byte for byte (so under
-- COLLATE NOCASE "ACME" is another tenant than "acme", under RTRIM "acme "
-- another than "acme"), integer tenants as PostgreSQL's integer input
-- reads the value ('01', ' 1', '+1', 1.0 are tenant 1; 2^64 + 1 is no
-- tenant's), uuid tenants in every form uuid_in reads and as 16-byte
-- blobs.  On fleets where SQLite's own comparison disagrees with the rule,
-- each with decoy tenants that differ from the moved one only by case,
-- padding or form: tenant_move (copy, verification, fence), routed and
-- fan-out reads and writes, joins with a reference table, tenant_stats,
-- shard_orphans, tenant_cleanup and tenant_remove.  See
-- test/fixtures/tenantrule.sh for the fleets.
--
\! bash test/fixtures/tenantrule.sh
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
RESET client_min_messages;

-- ===================================================================
-- nocase: tenant_id TEXT COLLATE NOCASE.  acme moves from n1 to n2; its
-- decoys ACME and Acme are other tenants and stay on n1.
-- ===================================================================
CREATE SERVER tr_nocase FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/tenantrule/nocase/directory.db');
CREATE FOREIGN TABLE tr_n_orders (tenant_id text, id int, amount int,
  plan_id int) SERVER tr_nocase OPTIONS (table 'orders');
CREATE FOREIGN TABLE tr_n_plans (plan_id int, name text) SERVER tr_nocase
  OPTIONS (table 'plans', distribution 'reference');
SELECT * FROM shard_orphans('tr_nocase');
SET client_min_messages = warning;
SELECT tenant_move('tr_nocase', 'acme', 'n2');
RESET client_min_messages;
SELECT shard_id, status FROM tenant_locate('tr_nocase', 'acme');
-- routed reads: acme from n2, its decoys from n1
SELECT tenant_id, id, amount FROM tr_n_orders WHERE tenant_id = 'acme'
  ORDER BY id;
SELECT tenant_id, id, amount FROM tr_n_orders
  WHERE tenant_id IN ('ACME', 'Acme') ORDER BY id;
-- fan-out: every row once
SELECT tenant_id, count(*), sum(amount) FROM tr_n_orders
  GROUP BY 1 ORDER BY tenant_id COLLATE "C";
-- joins with the reference table, routed and over every shard
SELECT o.tenant_id, o.id, p.name FROM tr_n_orders o JOIN tr_n_plans p
  USING (plan_id) WHERE o.tenant_id = 'acme' ORDER BY o.id;
SELECT p.name, count(*), sum(o.amount) FROM tr_n_orders o
  JOIN tr_n_plans p USING (plan_id) GROUP BY 1 ORDER BY 1;
SELECT tenant_id, shard_id, rows, table_rows FROM tenant_stats('tr_nocase')
  ORDER BY tenant_id COLLATE "C";
SELECT * FROM shard_orphans('tr_nocase') ORDER BY 1, 2, tenant_id COLLATE "C";
\! bash test/fixtures/tenantrule_peek.sh nocase shards/n2.db "SELECT tenant_id, id FROM orders ORDER BY id"
-- the fence on n1 refuses acme's writes, not its decoys'
\! bash test/fixtures/tenantrule_peek.sh nocase shards/n1.db "INSERT INTO orders VALUES ('acme', 9, 1, 1)"
\! bash test/fixtures/tenantrule_peek.sh nocase shards/n1.db "UPDATE orders SET tenant_id = 'acme' WHERE id = 5"
\! bash test/fixtures/tenantrule_peek.sh nocase shards/n1.db "INSERT INTO orders VALUES ('ACME', 10, 1, 1); SELECT changes()"
\! bash test/fixtures/tenantrule_peek.sh nocase shards/n1.db "UPDATE orders SET amount = amount + 1 WHERE id = 4; SELECT changes()"
-- an UPDATE over every shard changes each row once, where it is read
WITH u AS (UPDATE tr_n_orders SET amount = amount + 1 WHERE plan_id = 2
           RETURNING tenant_id, id, amount)
SELECT * FROM u ORDER BY id;
UPDATE tr_n_orders SET amount = amount - 1 WHERE tenant_id = 'acme' AND id = 2;
SELECT tenant_id, count(*), sum(amount) FROM tr_n_orders
  GROUP BY 1 ORDER BY tenant_id COLLATE "C";
-- the cleanup deletes acme's rows on n1 and nothing else
SELECT * FROM tenant_cleanup('tr_nocase', 'acme');
\! bash test/fixtures/tenantrule_peek.sh nocase shards/n1.db "SELECT tenant_id, id, amount FROM orders ORDER BY id"
SELECT * FROM shard_orphans('tr_nocase');
SELECT tenant_id, count(*), sum(amount) FROM tr_n_orders
  GROUP BY 1 ORDER BY tenant_id COLLATE "C";
SELECT tenant_id, id FROM tr_n_orders WHERE tenant_id IN ('ACME', 'Acme')
  ORDER BY id;
SELECT tenant_id, shard_id, rows FROM tenant_stats('tr_nocase')
  ORDER BY tenant_id COLLATE "C";
-- moves leave the reference table alone
SELECT shard_id, rows, same FROM reference_check('tr_n_plans') ORDER BY 1;
-- removing zeta counts and deletes its rows only, not ZETA's
SELECT tenant_remove('tr_nocase', 'zeta');
SELECT tenant_remove('tr_nocase', 'zeta', delete_rows => true);
\! bash test/fixtures/tenantrule_peek.sh nocase shards/n3.db "SELECT tenant_id, id FROM orders ORDER BY id"
SELECT tenant_id, id FROM tr_n_orders ORDER BY id, tenant_id COLLATE "C";
DROP SERVER tr_nocase CASCADE;

-- ===================================================================
-- rtrim: tenant_id TEXT COLLATE RTRIM, rollback journal.  acme moves
-- from r1 to r2; "acme " and "acme  " are other tenants and stay.
-- ===================================================================
CREATE SERVER tr_rtrim FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/tenantrule/rtrim/directory.db');
CREATE FOREIGN TABLE tr_r_orders (tenant_id text, id int, amount int)
  SERVER tr_rtrim OPTIONS (table 'orders');
SET client_min_messages = warning;
SELECT tenant_move('tr_rtrim', 'acme', 'r2');
RESET client_min_messages;
SELECT '[' || tenant_id || ']' AS tenant, id, amount FROM tr_r_orders
  WHERE tenant_id = 'acme' ORDER BY id;
SELECT '[' || tenant_id || ']' AS tenant, id, amount FROM tr_r_orders
  WHERE tenant_id IN ('acme ', 'acme  ') ORDER BY id;
SELECT '[' || tenant_id || ']' AS tenant, count(*), sum(amount)
  FROM tr_r_orders GROUP BY tenant_id ORDER BY tenant_id COLLATE "C";
SELECT '[' || tenant_id || ']' AS tenant, shard_id, rows
  FROM tenant_stats('tr_rtrim') ORDER BY tenant_id COLLATE "C";
SELECT shard_id, table_name, '[' || tenant_id || ']' AS tenant, rows, owner,
       reason
  FROM shard_orphans('tr_rtrim') ORDER BY 1, 2, tenant_id COLLATE "C";
\! bash test/fixtures/tenantrule_peek.sh rtrim shards/r2.db "SELECT '[' || tenant_id || ']', id FROM orders ORDER BY id"
\! bash test/fixtures/tenantrule_peek.sh rtrim shards/r1.db "INSERT INTO orders VALUES ('acme', 9, 0)"
\! bash test/fixtures/tenantrule_peek.sh rtrim shards/r1.db "INSERT INTO orders VALUES ('acme ', 10, 0); SELECT changes()"
\! bash test/fixtures/tenantrule_peek.sh rtrim shards/r1.db "UPDATE orders SET amount = 41 WHERE id = 4; SELECT changes()"
SELECT * FROM tenant_cleanup('tr_rtrim', 'acme');
\! bash test/fixtures/tenantrule_peek.sh rtrim shards/r1.db "SELECT '[' || tenant_id || ']', id, amount FROM orders ORDER BY id"
SELECT * FROM shard_orphans('tr_rtrim');
SELECT '[' || tenant_id || ']' AS tenant, count(*), sum(amount)
  FROM tr_r_orders GROUP BY tenant_id ORDER BY tenant_id COLLATE "C";
-- removing bcme deletes its row only, not "bcme "'s
SELECT tenant_remove('tr_rtrim', 'bcme', delete_rows => true);
\! bash test/fixtures/tenantrule_peek.sh rtrim shards/r1.db "SELECT '[' || tenant_id || ']', id FROM orders ORDER BY id"
DROP SERVER tr_rtrim CASCADE;

-- ===================================================================
-- uuid: a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11 stored in every form
-- uuid_in reads and as a blob moves from u1 to u2; ...0a12, the decoy,
-- and junk's values of no tenant stay.
-- ===================================================================
CREATE SERVER tr_uuid FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/tenantrule/uuid/directory.db');
CREATE FOREIGN TABLE tr_docs (tenant_id uuid, id int, n int)
  SERVER tr_uuid OPTIONS (table 'docs');
CREATE FOREIGN TABLE tr_docs_t (tenant_id uuid, id int, n int)
  SERVER tr_uuid OPTIONS (table 'docs_t');
SELECT shard_id, table_name, tenant_id, sum(rows) AS rows, owner, reason
  FROM shard_orphans('tr_uuid') GROUP BY 1, 2, 3, 5, 6 ORDER BY 1, 2, 3;
SELECT tenant_id, count(*), sum(n) FROM tr_docs GROUP BY 1 ORDER BY 1;
SET client_min_messages = warning;
SELECT tenant_move('tr_uuid', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 'u2');
RESET client_min_messages;
SELECT id, n FROM tr_docs
  WHERE tenant_id = 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11' ORDER BY id;
SELECT id, n FROM tr_docs_t
  WHERE tenant_id = 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11' ORDER BY id;
SELECT tenant_id, count(*), sum(n) FROM tr_docs GROUP BY 1 ORDER BY 1;
SELECT tenant_id, count(*), sum(n) FROM tr_docs_t GROUP BY 1 ORDER BY 1;
SELECT tenant_id, shard_id, rows, table_rows FROM tenant_stats('tr_uuid')
  ORDER BY 1;
SELECT shard_id, table_name, tenant_id, sum(rows) AS rows, owner, reason
  FROM shard_orphans('tr_uuid') GROUP BY 1, 2, 3, 5, 6 ORDER BY 1, 2, 3;
-- the copy keeps every stored form
\! bash test/fixtures/tenantrule_peek.sh uuid shards/u2.db "SELECT quote(tenant_id), id FROM docs ORDER BY id; SELECT quote(tenant_id), id FROM docs_t ORDER BY id; SELECT quote(tenant_id), id FROM junk ORDER BY id"
-- the fence refuses the moved tenant in any form, not the decoy
\! bash test/fixtures/tenantrule_peek.sh uuid shards/u1.db "INSERT INTO docs VALUES (X'a0eebc999c0b4ef8bb6d6bb9bd380a11', 20, 0)"
\! bash test/fixtures/tenantrule_peek.sh uuid shards/u1.db "INSERT INTO docs_t VALUES ('{A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11}', 20, 0)"
\! bash test/fixtures/tenantrule_peek.sh uuid shards/u1.db "INSERT INTO junk VALUES ('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 20, 0)"
\! bash test/fixtures/tenantrule_peek.sh uuid shards/u1.db "UPDATE docs SET n = 0 WHERE id = 3"
\! bash test/fixtures/tenantrule_peek.sh uuid shards/u1.db "INSERT INTO docs VALUES ('A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A12', 21, 21); SELECT changes()"
\! bash test/fixtures/tenantrule_peek.sh uuid shards/u1.db "INSERT INTO junk VALUES ('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11x', 22, 0); SELECT changes()"
SELECT tenant_id, count(*), sum(n) FROM tr_docs GROUP BY 1 ORDER BY 1;
SELECT * FROM tenant_cleanup('tr_uuid', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11');
\! bash test/fixtures/tenantrule_peek.sh uuid shards/u1.db "SELECT quote(tenant_id), id FROM docs ORDER BY id; SELECT quote(tenant_id), id FROM docs_t ORDER BY id; SELECT quote(tenant_id), id FROM junk ORDER BY id"
SELECT shard_id, table_name, tenant_id, sum(rows) AS rows, owner, reason
  FROM shard_orphans('tr_uuid') GROUP BY 1, 2, 3, 5, 6 ORDER BY 1, 2, 3;
SELECT count(*), sum(n) FROM tr_docs
  WHERE tenant_id = 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11';
SELECT tenant_remove('tr_uuid', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12',
                     delete_rows => true);
\! bash test/fixtures/tenantrule_peek.sh uuid shards/u1.db "SELECT count(*) FROM docs; SELECT count(*) FROM docs_t; SELECT count(*) FROM junk"
DROP SERVER tr_uuid CASCADE;

-- ===================================================================
-- ints: bigint tenant 1 stored as '01', ' 1', '+1', 1.0, '1 ' and 1 in
-- a column without a type, a TEXT column and an INTEGER one moves from i1
-- to i2; tenants 10 and 11 and the values of no tenant ('1.5', 1.5,
-- 2^64 + 1, and the text '1.0' a TEXT column makes of 1.0) stay.
-- ===================================================================
CREATE SERVER tr_ints FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/tenantrule/ints/directory.db');
CREATE FOREIGN TABLE tr_nums (tenant_id bigint, id int, v int)
  SERVER tr_ints OPTIONS (table 'nums');
CREATE FOREIGN TABLE tr_nums_t (tenant_id bigint, id int, v int)
  SERVER tr_ints OPTIONS (table 'nums_t');
CREATE FOREIGN TABLE tr_nums_i (tenant_id bigint, id int, v int)
  SERVER tr_ints OPTIONS (table 'nums_i');
CREATE ROLE regress_tr_one;
GRANT SELECT, UPDATE ON tr_nums TO regress_tr_one;
CREATE USER MAPPING FOR regress_tr_one SERVER tr_ints OPTIONS (tenants '1');
-- 18446744073709551617 (2^64 + 1) is no tenant's: tenant 1 neither reads,
-- counts nor changes it
SELECT tenant_id, id, v FROM tr_nums WHERE tenant_id = 1 ORDER BY id;
SELECT count(*), sum(v) FROM tr_nums WHERE tenant_id = 1;
WITH u AS (UPDATE tr_nums SET v = v + 100 WHERE tenant_id = 1 RETURNING id)
SELECT count(*) FROM u;
\! bash test/fixtures/tenantrule_peek.sh ints shards/i1.db "SELECT id, v FROM nums WHERE v > 100 ORDER BY id"
UPDATE tr_nums SET v = v - 100 WHERE tenant_id = 1;
SET ROLE regress_tr_one;
SELECT tenant_id, id, v FROM tr_nums ORDER BY id;
SELECT count(*), sum(v) FROM tr_nums;
WITH u AS (UPDATE tr_nums SET v = v + 100 RETURNING id) SELECT count(*) FROM u;
RESET ROLE;
\! bash test/fixtures/tenantrule_peek.sh ints shards/i1.db "SELECT id, v FROM nums WHERE v > 100 ORDER BY id"
UPDATE tr_nums SET v = v - 100 WHERE tenant_id = 1;
SELECT tenant_id, id FROM tr_nums WHERE tenant_id IN (10, 11) ORDER BY id;
SELECT shard_id, table_name, tenant_id, sum(rows) AS rows, owner, reason
  FROM shard_orphans('tr_ints') GROUP BY 1, 2, 3, 5, 6 ORDER BY 1, 2, 3;
SET client_min_messages = warning;
SELECT tenant_move('tr_ints', '1', 'i2');
RESET client_min_messages;
SELECT id, v FROM tr_nums WHERE tenant_id = 1 ORDER BY id;
SELECT id, v FROM tr_nums_t WHERE tenant_id = 1 ORDER BY id;
SELECT id, v FROM tr_nums_i WHERE tenant_id = 1 ORDER BY id;
SELECT tenant_id, id FROM tr_nums WHERE tenant_id IN (10, 11) ORDER BY id;
-- every row once (the tenant column is not read)
SELECT count(*), sum(v) FROM tr_nums;
SELECT count(*), sum(v) FROM tr_nums_t;
SELECT tenant_id, count(*), sum(v) FROM tr_nums_i GROUP BY 1 ORDER BY 1;
SET ROLE regress_tr_one;
SELECT count(*), sum(v) FROM tr_nums;
RESET ROLE;
SELECT tenant_id, shard_id, rows, table_rows FROM tenant_stats('tr_ints')
  ORDER BY tenant_id::int;
SELECT shard_id, table_name, tenant_id, sum(rows) AS rows, owner, reason
  FROM shard_orphans('tr_ints') GROUP BY 1, 2, 3, 5, 6 ORDER BY 1, 2, 3;
\! bash test/fixtures/tenantrule_peek.sh ints shards/i2.db "SELECT quote(tenant_id), id FROM nums ORDER BY id; SELECT quote(tenant_id), id FROM nums_t ORDER BY id; SELECT quote(tenant_id), id FROM nums_i ORDER BY id"
-- the fence refuses tenant 1 in any form, not tenant 10 nor values of
-- no tenant
\! bash test/fixtures/tenantrule_peek.sh ints shards/i1.db "INSERT INTO nums VALUES ('01', 20, 0)"
\! bash test/fixtures/tenantrule_peek.sh ints shards/i1.db "INSERT INTO nums VALUES (1.0, 20, 0)"
\! bash test/fixtures/tenantrule_peek.sh ints shards/i1.db "UPDATE nums_t SET v = 0 WHERE id = 2"
\! bash test/fixtures/tenantrule_peek.sh ints shards/i1.db "INSERT INTO nums_i VALUES (' 1', 20, 0)"
\! bash test/fixtures/tenantrule_peek.sh ints shards/i1.db "INSERT INTO nums VALUES ('18446744073709551617', 21, 0); SELECT changes()"
\! bash test/fixtures/tenantrule_peek.sh ints shards/i1.db "INSERT INTO nums VALUES ('010', 22, 22); SELECT changes()"
\! bash test/fixtures/tenantrule_peek.sh ints shards/i1.db "INSERT INTO nums_t VALUES (1.0, 20, 0); SELECT changes()"
SELECT * FROM tenant_cleanup('tr_ints', '1');
\! bash test/fixtures/tenantrule_peek.sh ints shards/i1.db "SELECT quote(tenant_id), id FROM nums ORDER BY id; SELECT quote(tenant_id), id FROM nums_t ORDER BY id; SELECT quote(tenant_id), id FROM nums_i ORDER BY id"
SELECT shard_id, table_name, tenant_id, sum(rows) AS rows, owner, reason
  FROM shard_orphans('tr_ints') GROUP BY 1, 2, 3, 5, 6 ORDER BY 1, 2, 3;
SELECT tenant_id, id FROM tr_nums WHERE tenant_id IN (1, 10, 11) ORDER BY id;
SELECT tenant_remove('tr_ints', '10', delete_rows => true);
\! bash test/fixtures/tenantrule_peek.sh ints shards/i1.db "SELECT group_concat(id) FROM (SELECT id FROM nums ORDER BY id); SELECT group_concat(id) FROM (SELECT id FROM nums_t ORDER BY id); SELECT group_concat(id) FROM (SELECT id FROM nums_i ORDER BY id)"
DROP USER MAPPING FOR regress_tr_one SERVER tr_ints;
REVOKE ALL ON tr_nums FROM regress_tr_one;
DROP ROLE regress_tr_one;
DROP SERVER tr_ints CASCADE;

-- ===================================================================
-- chars: tenant_id char(3), declared CHAR(3) in the shard.  a moves from
-- c1 to c2; A is another tenant, and 'a  ' and ' a' are tenants the
-- directory does not know.
-- ===================================================================
CREATE SERVER tr_chars FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/tenantrule/chars/directory.db');
CREATE FOREIGN TABLE tr_codes (tenant_id char(3), id int, v text)
  SERVER tr_chars OPTIONS (table 'codes');
SELECT shard_id, table_name, '[' || tenant_id || ']' AS tenant, rows, owner,
       reason
  FROM shard_orphans('tr_chars') ORDER BY 1, 2, tenant_id COLLATE "C";
SET client_min_messages = warning;
SELECT tenant_move('tr_chars', 'a', 'c2');
RESET client_min_messages;
SELECT id, v FROM tr_codes WHERE tenant_id = 'a' ORDER BY id;
SELECT id, v FROM tr_codes WHERE tenant_id = 'A' ORDER BY id;
SELECT id, v FROM tr_codes ORDER BY id;
SELECT tenant_id, shard_id, rows FROM tenant_stats('tr_chars')
  ORDER BY tenant_id COLLATE "C";
SELECT shard_id, table_name, '[' || tenant_id || ']' AS tenant, rows, owner,
       reason
  FROM shard_orphans('tr_chars') ORDER BY 1, 2, tenant_id COLLATE "C";
\! bash test/fixtures/tenantrule_peek.sh chars shards/c2.db "SELECT quote(tenant_id), id FROM codes ORDER BY id"
\! bash test/fixtures/tenantrule_peek.sh chars shards/c1.db "INSERT INTO codes VALUES ('a', 9, 'x')"
\! bash test/fixtures/tenantrule_peek.sh chars shards/c1.db "UPDATE codes SET v = 'x' WHERE id = 1"
\! bash test/fixtures/tenantrule_peek.sh chars shards/c1.db "INSERT INTO codes VALUES ('a  ', 10, 'x'); SELECT changes()"
\! bash test/fixtures/tenantrule_peek.sh chars shards/c1.db "INSERT INTO codes VALUES ('A', 11, 'x'); SELECT changes()"
SELECT * FROM tenant_cleanup('tr_chars', 'a');
\! bash test/fixtures/tenantrule_peek.sh chars shards/c1.db "SELECT quote(tenant_id), id FROM codes ORDER BY id"
SELECT shard_id, table_name, '[' || tenant_id || ']' AS tenant, rows, owner,
       reason
  FROM shard_orphans('tr_chars') ORDER BY 1, 2, tenant_id COLLATE "C";
SELECT count(*) FROM tr_codes;
SELECT tenant_remove('tr_chars', 'A', delete_rows => true);
\! bash test/fixtures/tenantrule_peek.sh chars shards/c1.db "SELECT group_concat(id) FROM (SELECT id FROM codes ORDER BY id)"
DROP SERVER tr_chars CASCADE;

-- ===================================================================
-- batch: big, 25,010 rows of a table keyed by an integer, moves from bt1
-- to bt2 in two batches of the copy; the second copies big's last rows,
-- not the rows of tenant 25000 (named as the key the first batch ends
-- at), which stay on bt1.
-- ===================================================================
CREATE SERVER tr_batch FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '/tmp/ssfdw_regress/tenantrule/batch/directory.db');
CREATE FOREIGN TABLE tr_ev (id int, tenant_id text, v int)
  SERVER tr_batch OPTIONS (table 'ev');
SET client_min_messages = warning;
SELECT tenant_move('tr_batch', 'big', 'bt2');
RESET client_min_messages;
SELECT tenant_id, count(*), min(id), max(id) FROM tr_ev GROUP BY 1 ORDER BY 1;
\! bash test/fixtures/tenantrule_peek.sh batch shards/bt2.db "SELECT tenant_id, count(*), min(id), max(id) FROM ev GROUP BY 1 ORDER BY 1"
SELECT * FROM tenant_cleanup('tr_batch', 'big');
\! bash test/fixtures/tenantrule_peek.sh batch shards/bt1.db "SELECT tenant_id, count(*), min(id), max(id) FROM ev GROUP BY 1 ORDER BY 1"
DROP SERVER tr_batch CASCADE;
