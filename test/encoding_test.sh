#!/usr/bin/env bash
#
# test/encoding_test.sh
#	A database whose encoding is not UTF-8: text conditions stay in
#	PostgreSQL, and a role restricted by its user mapping's "tenants" sees
#	only its tenants' rows, in row scans and in aggregates alike.  In a
#	LATIN1 database, a tenant id with a non-ASCII letter names the same
#	tenant as in the (UTF-8) directory and shards, and a routed or
#	restricted read never converts another tenant's row.
#
# Run by test/run_suites.sh inside a throw-away cluster; makes its own
# SQL_ASCII database ssfdw_ascii and LATIN1 database ssfdw_latin1.  Prints one line per check, then
# "N passed, M failed"; exits non-zero if anything failed.

set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
source test/fixtures/common.sh

d=$(fx_dir encoding)
fx_directory "$d"
fx_sqlite "$d/shards/s1.db" <<'SQL'
CREATE TABLE orders(order_id INTEGER PRIMARY KEY, tenant_id TEXT NOT NULL,
                    status TEXT NOT NULL, amount INTEGER NOT NULL);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 300)
INSERT INTO orders SELECT x, CASE WHEN x <= 100 THEN 'acme' ELSE 'globex' END,
  CASE x % 2 WHEN 0 THEN 'paid' ELSE 'new' END, x FROM c;
CREATE TABLE bills(order_id INTEGER PRIMARY KEY, tenant_id, status TEXT,
                   amount INTEGER);
SQL
fx_sqlite "$d/shards/s2.db" <<'SQL'
CREATE TABLE bills(order_id INTEGER PRIMARY KEY, tenant_id, status TEXT,
                   amount INTEGER);
INSERT INTO bills VALUES (1, 'café', 'new', 10), (2, 'café', 'paid', 20),
  (3, 'victim', 'new', 'victim-secret'), (4, 'cafe', 'new', 40);
CREATE TABLE orders(order_id INTEGER PRIMARY KEY, tenant_id TEXT NOT NULL,
                    status TEXT NOT NULL, amount INTEGER NOT NULL);
SQL
fx_add_shard "$d" s1 shards/s1.db
fx_add_shard "$d" s2 shards/s2.db
fx_add_tenant "$d" acme s1
fx_add_tenant "$d" globex s1
fx_add_tenant "$d" café s2
fx_add_tenant "$d" cafe s2
fx_add_tenant "$d" victim s2
fx_done "$d"

psql -X -q -d postgres -c 'DROP DATABASE IF EXISTS ssfdw_ascii' \
	-c "CREATE DATABASE ssfdw_ascii ENCODING 'SQL_ASCII' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0"
psql -X -q -d postgres -c 'DROP ROLE IF EXISTS regress_ascii_user' \
	-c 'CREATE ROLE regress_ascii_user'

run()
{
	psql -X -q -A -t -v ON_ERROR_STOP=1 -d ssfdw_ascii -c "$1"
}

run "CREATE EXTENSION sqlite_shard_fdw;
CREATE SERVER enc FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '$d/directory.db');
CREATE FOREIGN TABLE orders (order_id bigint, tenant_id text, status text,
  amount bigint) SERVER enc;
CREATE USER MAPPING FOR regress_ascii_user SERVER enc
  OPTIONS (tenants 'acme');
GRANT SELECT ON orders TO regress_ascii_user;" >/dev/null

passed=0
failed=0
check()
{
	local what=$1 sql=$2 want=$3 got

	got=$(run "$sql" 2>&1 | tr '\n' ' ' | sed 's/ *$//' || true)
	if [ "$got" = "$want" ]; then
		echo "ok      $what"
		passed=$((passed + 1))
	else
		echo "FAILED  $what: got \"$got\", want \"$want\""
		failed=$((failed + 1))
	fi
}

check "all rows, superuser" "SELECT count(*) FROM orders" "300"
check "text condition in a non-UTF-8 database" \
	"SELECT count(*) FROM orders WHERE status = 'paid'" "150"
check "restricted role, row scan" \
	"SET ROLE regress_ascii_user; SELECT count(*) FROM (SELECT * FROM orders OFFSET 0) s" "100"
check "restricted role, aggregate" \
	"SET ROLE regress_ascii_user; SELECT count(*), sum(amount) FROM orders" "100|5050"
check "restricted role, grouped aggregate" \
	"SET ROLE regress_ascii_user; SELECT string_agg(status || '=' || n, ',' ORDER BY status) FROM (SELECT status, count(*) n FROM orders GROUP BY status) s" "new=50,paid=50"
check "restricted role, other tenant" \
	"SET ROLE regress_ascii_user; SELECT count(*) FROM orders WHERE tenant_id = 'globex'" "0"

# LATIN1: tenant ids converted to and from the shards' UTF-8.
export PGCLIENTENCODING=UTF8
psql -X -q -d postgres -c 'SET client_min_messages = warning' \
	-c 'DROP DATABASE IF EXISTS ssfdw_latin1' \
	-c "CREATE DATABASE ssfdw_latin1 ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0"
psql -X -q -d postgres -c 'SET client_min_messages = warning' \
	-c 'DROP ROLE IF EXISTS regress_latin1_user' \
	-c 'CREATE ROLE regress_latin1_user'
run()
{
	psql -X -q -A -t -v ON_ERROR_STOP=1 -d ssfdw_latin1 -c "$1"
}
run "CREATE EXTENSION sqlite_shard_fdw;
CREATE SERVER enc FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '$d/directory.db');
CREATE FOREIGN TABLE bills (order_id bigint, tenant_id text, status text,
  amount bigint) SERVER enc;
CREATE USER MAPPING FOR regress_latin1_user SERVER enc
  OPTIONS (tenants 'café');
GRANT SELECT ON bills TO regress_latin1_user;" >/dev/null

check "latin1: every shard reads victim's bad row" \
	"SELECT sum(amount) FROM (SELECT amount FROM bills OFFSET 0) s" \
	'ERROR:  invalid input syntax for type bigint: "victim-secret" CONTEXT:  column "amount" of table "bills" on shard "s2", rowid 3'
check "latin1: routed to a non-ASCII tenant" \
	"SELECT string_agg(order_id::text, ',' ORDER BY order_id) FROM bills WHERE tenant_id = 'café'" "1,2"
check "latin1: restricted role, row scan" \
	"SET ROLE regress_latin1_user; SELECT string_agg(tenant_id || order_id, ',' ORDER BY order_id) FROM bills" "café1,café2"
check "latin1: restricted role, aggregate" \
	"SET ROLE regress_latin1_user; SELECT count(*), sum(amount) FROM bills" "2|30"
check "latin1: restricted role, other tenant" \
	"SET ROLE regress_latin1_user; SELECT count(*) FROM bills WHERE tenant_id = 'cafe'" "0"
check "latin1: restricted role, rows counted" \
	"SET ROLE regress_latin1_user; EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT * FROM bills" \
	"Foreign Scan on bills (actual rows=2 loops=1)   Shards: 1 of 2 (s2)   Pushdown: rows   Shard Rows: s2=2"

psql -X -q -d postgres -c 'DROP DATABASE ssfdw_ascii' \
	-c 'DROP DATABASE ssfdw_latin1' -c 'DROP ROLE regress_ascii_user' \
	-c 'DROP ROLE regress_latin1_user' >/dev/null
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
