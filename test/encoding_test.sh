#!/usr/bin/env bash
#
# test/encoding_test.sh
#	A database whose encoding is not UTF-8: text conditions stay in
#	PostgreSQL, and a role restricted by its user mapping's "tenants" sees
#	only its tenants' rows, in row scans and in aggregates alike (an
#	aggregate over a text tenant column must then not be computed in the
#	shards, which could not apply the restriction).
#
# Run by test/run_suites.sh inside a throw-away cluster; makes its own
# SQL_ASCII database ssfdw_ascii.  Prints one line per check, then
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
SQL
fx_add_shard "$d" s1 shards/s1.db
fx_add_tenant "$d" acme s1
fx_add_tenant "$d" globex s1
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

	got=$(run "$sql" 2>&1 | tr '\n' ' ' | sed 's/ *$//')
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

psql -X -q -d postgres -c 'DROP DATABASE ssfdw_ascii' \
	-c 'DROP ROLE regress_ascii_user' >/dev/null
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
