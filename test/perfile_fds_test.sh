#!/usr/bin/env bash
#
# test/perfile_fds_test.sh
#	Fan-outs over more tenant files than a backend may keep open at once:
#	in a cluster of the test's own with max_files_per_process at the least
#	PostgreSQL accepts (64: about 16 descriptors outside PostgreSQL's file
#	layer, of which the handle cache leaves some to others), ordered,
#	limited, grouped and joined queries over 300 files (a third of them in
#	WAL mode, which holds three descriptors) give the answers of a native
#	table of the same rows, and none fails for the files it holds open.
#
# Each query reads every file: an ORDER BY ... LIMIT merged from the files
# in order (which kept every file's statement open until its end), with
# ties at the limit, OFFSET, and without LIMIT; GROUP BY; joins pushed into
# each file; a merge join of two ordered fan-outs at once; a lateral
# reference rescanning a fan-out; a cursor; ANALYZE.
#
# Run by test/run_suites.sh (its own cluster, whatever PGDATABASE says).
# The cluster and the fleet live in a new /tmp/ssfdw_pffds.XXXXXX folder,
# removed at the end.  Takes about a minute; stops by itself after 300 s.

set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export LC_ALL=C.UTF-8
source test/fixtures/common.sh
source test/script_common.sh
script_time_limit 300

PG_MAJOR=${PG_MAJOR:-15}
BIN=/usr/lib/postgresql/$PG_MAJOR/bin
TENANTS=300

script_tmp ssfdw_pffds
script_cluster "max_files_per_process = 64"

d="$tmp/fleet"
python3 test/fixtures/tenantfiles.py build "$d" --tenants "$TENANTS" \
	--rows 20 --csv "$tmp/rows.csv"
# every third file in WAL mode: its handle holds three descriptors
python3 - "$d" "$TENANTS" <<'PY'
import sqlite3, sys
for i in range(3, int(sys.argv[2]) + 1, 3):
    c = sqlite3.connect("%s/tenants/t%04d.db" % (sys.argv[1], i))
    c.execute("PRAGMA journal_mode = WAL")
    c.close()
PY
chown -R postgres "$d"
chmod -R a+rwX "$d"
chmod 0644 "$tmp/rows.csv"

psql -X -q -v ON_ERROR_STOP=1 <<SQL >/dev/null
SET client_min_messages = warning;
CREATE EXTENSION sqlite_shard_fdw;
CREATE SERVER ff FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '$d/directory.db', layout 'file_per_tenant',
           tenant_path 'tenants/%s.db');
CREATE FOREIGN TABLE orders (tenant_id text, order_id bigint, status text,
  amount_cents bigint, created_at timestamp, customer_id int) SERVER ff;
CREATE TABLE orders_native (tenant_id text, order_id bigint, status text,
  amount_cents bigint, created_at timestamp, customer_id int);
\copy orders_native FROM '$tmp/rows.csv' (FORMAT csv)
ANALYZE orders_native;
CREATE TABLE picks (c int);
INSERT INTO picks VALUES (7), (250), (498);
ANALYZE picks;
SQL

# The budget this test means: fewer descriptors than files.
fds=$(psql -X -A -t -c "SHOW max_files_per_process")
[ "$fds" = 64 ] && result ok "max_files_per_process is 64" ||
	result failed "max_files_per_process is 64" "$fds"

# same NAME SQL [SETUP]: SQL over the foreign table (after SETUP) and over
# the native table (orders replaced by orders_native) give the same rows.
same()
{
	local want got nat
	nat=${2//orders/orders_native}
	want=$(psql -X -A -t -v ON_ERROR_STOP=1 -c "${3:-SELECT 1}" -c "$nat" 2>&1 | tail -n +2) || true
	got=$(psql -X -A -t -v ON_ERROR_STOP=1 -c "${3:-SELECT 1}" -c "$2" 2>&1 | tail -n +2) || true
	if [ -n "$want" ] && [ "$want" = "$got" ]; then
		result ok "$1"
	else
		result failed "$1" "$( (diff <(echo "$want") <(echo "$got") || true) | grep '^>' | head -4)"
	fi
}

# queries: the queries, their names ending in $suffix.
queries()
{
	local got want
	same2 "ORDER BY a key with ties LIMIT 8" \
		"SELECT customer_id FROM orders ORDER BY customer_id LIMIT 8"
	same2 "ORDER BY two keys LIMIT 8" \
		"SELECT tenant_id, order_id, customer_id FROM orders ORDER BY customer_id, order_id LIMIT 8"
	same2 "ORDER BY DESC with OFFSET" \
		"SELECT order_id, created_at FROM orders ORDER BY created_at DESC, order_id LIMIT 40 OFFSET 25"
	same2 "ORDER BY a key with ties LIMIT 1500" \
		"SELECT amount_cents / 1000 FROM orders ORDER BY amount_cents / 1000 DESC LIMIT 1500"
	same2 "ORDER BY without LIMIT" \
		"SELECT md5(string_agg(order_id::text, ',' ORDER BY n)) FROM (SELECT order_id, row_number() OVER () n FROM (SELECT order_id FROM orders ORDER BY amount_cents, order_id) s) q"
	same2 "ORDER BY LIMIT, read in parallel" \
		"SELECT order_id, amount_cents FROM orders ORDER BY amount_cents, order_id LIMIT 3000" \
		"SET sqlite_shard_fdw.quick_shard_ms = 0"
	same2 "ORDER BY LIMIT of a tenant list" \
		"SELECT order_id FROM orders WHERE tenant_id IN (SELECT 't' || lpad(g::text, 4, '0') FROM generate_series(1, 300, 2) g) ORDER BY customer_id, order_id LIMIT 12"
	same2 "ORDER BY LIMIT, one handle kept" \
		"SELECT order_id FROM orders ORDER BY created_at, order_id LIMIT 20" \
		"SET sqlite_shard_fdw.max_open_shards = 1"
	same2 "GROUP BY status" \
		"SELECT status, count(*), sum(amount_cents), min(created_at), max(customer_id) FROM orders GROUP BY status ORDER BY status"
	same2 "GROUP BY the tenant, ordered, limited" \
		"SELECT tenant_id, count(*), sum(amount_cents) FROM orders GROUP BY tenant_id ORDER BY sum(amount_cents) DESC, tenant_id LIMIT 10"
	same2 "GROUP BY the tenant ORDER BY the tenant LIMIT" \
		"SELECT tenant_id, max(amount_cents) FROM orders GROUP BY tenant_id ORDER BY tenant_id LIMIT 15"
	same2 "join pushed into each file" \
		"SELECT count(*), sum(a.amount_cents - b.amount_cents) FROM orders a JOIN orders b ON a.tenant_id = b.tenant_id AND a.customer_id / 50 = b.customer_id / 50"
	same2 "join pushed into each file, ordered, limited" \
		"SELECT a.tenant_id, a.order_id, b.order_id FROM orders a JOIN orders b ON a.tenant_id = b.tenant_id AND a.order_id = b.order_id ORDER BY a.amount_cents, a.order_id LIMIT 10"
	same2 "merge join of two ordered fan-outs" \
		"SELECT count(*), sum(a.amount_cents) FROM orders a JOIN orders b ON a.order_id = b.order_id" \
		"SET enable_hashjoin = off; SET enable_nestloop = off"
	same2 "lateral reference rescanning an ordered fan-out" \
		"SELECT p.c, o.order_id FROM picks p, LATERAL (SELECT order_id FROM orders WHERE customer_id = p.c ORDER BY order_id LIMIT 3) o ORDER BY 1, 2"
	same2 "nested loop rescanning a fan-out" \
		"SELECT p.c, count(*) FROM picks p JOIN orders o ON o.customer_id > p.c GROUP BY p.c ORDER BY 1" \
		"SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_material = off"
	got=$(psql -X -q -A -t -v ON_ERROR_STOP=1 2>&1 <<-'SQL'
	BEGIN;
	DECLARE c CURSOR FOR SELECT order_id FROM orders ORDER BY customer_id, order_id LIMIT 500;
	FETCH 3 FROM c;
	DECLARE d CURSOR FOR SELECT order_id FROM orders ORDER BY amount_cents, order_id LIMIT 500;
	FETCH 3 FROM d;
	FETCH 2 FROM c;
	COMMIT;
	SQL
	) || true
	want=$(psql -X -A -t -v ON_ERROR_STOP=1 2>&1 <<-'SQL'
	SELECT order_id FROM (SELECT order_id FROM orders_native ORDER BY customer_id, order_id LIMIT 3) a;
	SELECT order_id FROM (SELECT order_id FROM orders_native ORDER BY amount_cents, order_id LIMIT 3) a;
	SELECT order_id FROM (SELECT order_id FROM orders_native ORDER BY customer_id, order_id LIMIT 2 OFFSET 3) a;
	SQL
	)
	[ "$got" = "$want" ] && result ok "two ordered cursors open at once$suffix" ||
		result failed "two ordered cursors open at once$suffix" "$( (diff <(echo "$want") <(echo "$got") || true) | grep '^>' | head -4)"
}

# same2 NAME SQL [SETUP]: same, NAME followed by $suffix.
same2()
{
	same "$1$suffix" "$2" "${3:-}"
}

suffix=""
queries

got=$(psql -X -q -A -t -v ON_ERROR_STOP=1 -c "ANALYZE orders" \
	-c "SELECT reltuples FROM pg_class WHERE relname = 'orders'" 2>&1) || true
[ "$got" = $((TENANTS * 20)) ] && result ok "ANALYZE of $TENANTS files" ||
	result failed "ANALYZE of $TENANTS files" "$got"

# A budget that holds some of the files: the merge holds what it may and
# reads the rest whole, one after another.
psql -X -q -c "ALTER SYSTEM SET max_files_per_process = 200"
as_pg "$BIN/pg_ctl" -D "$data" -l "$tmp/server.log" -w restart >/dev/null
suffix=" (max_files_per_process 200)"
queries

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
