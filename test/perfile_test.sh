#!/usr/bin/env bash
#
# test/perfile_test.sh
#	A fleet of one SQLite file per tenant at a thousand files: the fan-out
#	report (GROUP BY status with five aggregates) and a GROUP BY of the
#	tenant give the answers of a native table of the same rows, in the flat
#	and the hashed layouts and through the directory, and the time per file
#	is measured against the floor the sqlite3 library sets looping over the
#	same files in one Python process.
#
# test/fixtures/tenantfiles.py builds PERFILE_TENANTS files (default 1000)
# of 200 rows each; every 10th file lacks column customer_id, which the
# foreign tables do not read.  The figures are printed, not checked: the
# machine and its load decide them.  Prints one line per check, then
# "N passed, M failed"; exits non-zero if anything failed.  Takes about 30
# seconds.

set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export LC_ALL=C.UTF-8
source test/fixtures/common.sh
source test/script_common.sh

script_limit ssfdw_perfile 600

TENANTS=${PERFILE_TENANTS:-1000}
d=$(fx_dir perfile_scale)
script_tmp ssfdw_perfile
gen=test/fixtures/tenantfiles.py

python3 "$gen" build "$d/flat" --tenants "$TENANTS" --drift 10 \
	--csv "$tmp/rows.csv"
python3 "$gen" build "$d/hashed" --tenants "$TENANTS" --layout hashed
python3 "$gen" build "$d/dir" --tenants "$TENANTS" --map directory
fx_done "$d"
chmod 0644 "$tmp/rows.csv"

psql -X -q -v ON_ERROR_STOP=1 <<SQL
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
DROP SERVER IF EXISTS pf_flat, pf_hashed, pf_dir CASCADE;
CREATE SERVER pf_flat FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '$d/flat/directory.db', layout 'file_per_tenant',
           tenant_path 'tenants/%s.db');
CREATE SERVER pf_hashed FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '$d/hashed/directory.db', layout 'file_per_tenant',
           tenant_path 'tenants/%2/%s.db');
CREATE SERVER pf_dir FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '$d/dir/directory.db', layout 'file_per_tenant');
CREATE FOREIGN TABLE orders_flat (tenant_id text, order_id bigint,
  status text, amount_cents bigint, created_at timestamp)
  SERVER pf_flat OPTIONS (table 'orders');
CREATE FOREIGN TABLE orders_hashed (tenant_id text, order_id bigint,
  status text, amount_cents bigint, created_at timestamp)
  SERVER pf_hashed OPTIONS (table 'orders');
CREATE FOREIGN TABLE orders_dir (tenant_id text, order_id bigint,
  status text, amount_cents bigint, created_at timestamp)
  SERVER pf_dir OPTIONS (table 'orders');
DROP TABLE IF EXISTS orders_native;
CREATE TABLE orders_native (tenant_id text, order_id bigint, status text,
  amount_cents bigint, created_at timestamp, customer_id int);
\copy orders_native FROM '$tmp/rows.csv' (FORMAT csv)
ANALYZE orders_native;
SQL

REPORT="SELECT status, count(*), sum(amount_cents), round(avg(amount_cents), 6), min(amount_cents), max(amount_cents) FROM %s GROUP BY status ORDER BY status"
TENANT="SELECT tenant_id, count(*), sum(amount_cents), max(created_at) FROM %s GROUP BY tenant_id ORDER BY tenant_id"

# answer SQL: the rows, unaligned.
answer()
{
	psql -X -A -t -c "$1"
}

# same NAME TABLE FORMAT: the query in FORMAT over TABLE and over the
# native table give the same rows.
same()
{
	local want got
	# shellcheck disable=SC2059
	want=$(answer "$(printf "$3" orders_native)")
	# shellcheck disable=SC2059
	got=$(answer "$(printf "$3" "$2")")
	if [ -n "$want" ] && [ "$want" = "$got" ]; then
		result ok "$1"
	else
		result failed "$1" "$(diff <(echo "$want") <(echo "$got") | head -5)"
	fi
}

for t in orders_flat orders_hashed orders_dir; do
	same "fan-out report over $TENANTS files ($t)" "$t" "$REPORT"
	same "group by tenant over $TENANTS files ($t)" "$t" "$TENANT"
done
same "routed read of one file" orders_hashed \
	"SELECT tenant_id, order_id, status, amount_cents, created_at FROM %s WHERE tenant_id = 't0042' ORDER BY order_id"

# ms SQL: the best of three runs' execution time, in milliseconds.
ms()
{
	local i best="" t
	for i in 1 2 3; do
		t=$(psql -X -A -t -c "EXPLAIN (ANALYZE, FORMAT json) $1" |
			python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["Execution Time"])')
		if [ -z "$best" ] || python3 -c "import sys; sys.exit(not ($t < $best))"; then
			best=$t
		fi
	done
	echo "$best"
}

# shellcheck disable=SC2059
for t in orders_flat orders_hashed orders_dir; do
	m=$(ms "$(printf "$REPORT" "$t")")
	echo "figure: fan-out report, $t: $m ms, $(python3 -c "print('%.1f' % ($m * 1000 / $TENANTS))") us per file"
done
# shellcheck disable=SC2059
m=$(ms "$(printf "$REPORT" orders_native)")
echo "figure: the same report over a native table: $m ms"
m=$(ms "SELECT * FROM orders_hashed WHERE tenant_id = 't0042'")
echo "figure: routed read of one file (hashed): $m ms"
python3 "$gen" floor "$d/flat" | head -1 | sed 's/^/figure: /'

psql -X -q -c "DROP SERVER pf_flat, pf_hashed, pf_dir CASCADE" \
	-c "DROP TABLE orders_native" 2>/dev/null
rm -rf "$d"
script_end
