#!/usr/bin/env bash
#
# test/bench_move.sh
#	The "move" part of the benchmark (test/bench.sh, BENCH_PARTS=move): the
#	targets for moving a tenant.
#
#	A fleet of two WAL shards, a and b: tenant "big" on a with
#	BENCH_MOVE_ROWS orders (default 200,000) and half as many items, other
#	tenants on both.  In one run:
#	  1. the floor: the sqlite3 CLI copies the same rows from a to a fresh
#	     copy of b (ATTACH, then INSERT ... SELECT of both tables in one
#	     transaction), median of three;
#	  2. tenant_move(big, b) while an external writer (test/move_writer.py,
#	     plain SQLite, reading the directory before each write) inserts,
#	     updates and deletes big's orders and items as fast as it can,
#	     through the whole move;
#	  3. the tenant's rows on b compared with the rows before the move
#	     changed by every write the writer saw committed.
#	Prints the move's time against the floor (target: at most 3x), the
#	writer's longest single wait (target: under 200 ms), and lost,
#	duplicated, changed and extra rows (target: none).
#
# Usage: bash test/bench_move.sh DIR, inside a PostgreSQL cluster with the
# extension installed (bench.sh runs it in its own throw-away cluster);
# DIR is made afresh.

set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
source test/fixtures/common.sh

dir=$1
rows=${BENCH_MOVE_ROWS:-200000}
items=$((rows / 2))
rm -rf "$dir"
mkdir -p "$dir/shards"

# now: seconds since the epoch, with fractions.
now()
{
	date +%s.%N
}

# secs START END: END - START, three decimals.
secs()
{
	awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'
}

fx_directory "$dir"
schema="CREATE TABLE orders(tenant_id TEXT NOT NULL, order_id INTEGER NOT NULL,
  status TEXT NOT NULL, amount_cents INTEGER NOT NULL,
  created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP,
  PRIMARY KEY (tenant_id, order_id));
CREATE INDEX orders_created ON orders(created_at);
CREATE TABLE items(tenant_id TEXT NOT NULL, order_id INTEGER NOT NULL,
  sku TEXT, PRIMARY KEY (tenant_id, order_id));"
for s in a b; do
	fx_sqlite "$dir/shards/$s.db" "PRAGMA journal_mode = WAL;" "$schema"
	fx_add_shard "$dir" "$s" "shards/$s.db"
done
fx_sqlite "$dir/shards/a.db" \
	"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $rows)
	 INSERT INTO orders SELECT 'big', i, CASE i % 4 WHEN 0 THEN 'new' ELSE 'paid' END,
	   99 + (i * 7919) % 49901, datetime(1735689600 + i * 60, 'unixepoch') FROM n;
	 WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $items)
	 INSERT INTO items SELECT 'big', i, 'sku-' || (i % 5000) FROM n;
	 WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 50000)
	 INSERT INTO orders SELECT 'small_' || (i % 20), i, 'paid', i % 1000,
	   datetime(1735689600 + i, 'unixepoch') FROM n;"
fx_sqlite "$dir/shards/b.db" \
	"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 50000)
	 INSERT INTO orders SELECT 'other_' || (i % 20), i, 'paid', i % 1000,
	   datetime(1735689600 + i, 'unixepoch') FROM n;"
fx_add_tenant "$dir" big a
for i in $(seq 0 19); do
	fx_add_tenant "$dir" "small_$i" a
	fx_add_tenant "$dir" "other_$i" b
done
fx_sqlite "$dir/shards/a.db" "PRAGMA wal_checkpoint(TRUNCATE);"
fx_sqlite "$dir/shards/b.db" "PRAGMA wal_checkpoint(TRUNCATE);"
fx_done "$dir"
fx_query "$dir/shards/a.db" "SELECT order_id || ' ' || amount_cents FROM orders
  WHERE tenant_id = 'big'" >"$dir/initial"

# 1. The floor: the sqlite3 CLI's copy of the same rows into a fresh copy
# of b, three times.
floor_runs=()
for run in 1 2 3; do
	rm -f "$dir/floor.db"*
	cp "$dir/shards/b.db" "$dir/floor.db"
	t0=$(now)
	sqlite3 -bail "$dir/floor.db" >/dev/null <<SQL
PRAGMA journal_mode = WAL;
ATTACH '$dir/shards/a.db' AS s;
BEGIN;
INSERT INTO orders SELECT * FROM s.orders WHERE tenant_id = 'big';
INSERT INTO items SELECT * FROM s.items WHERE tenant_id = 'big';
COMMIT;
SQL
	floor_runs+=("$(secs "$t0" "$(now)")")
done
rm -f "$dir/floor.db"*
floor=$(printf '%s\n' "${floor_runs[@]}" | sort -n | sed -n 2p)

psql -X -q -v ON_ERROR_STOP=1 <<SQL >/dev/null
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
DROP SERVER IF EXISTS bench_move CASCADE;
CREATE SERVER bench_move FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '$dir/directory.db', busy_timeout_ms '30000');
SQL

# 2. The move, with the writer going from a second before it to half a
# second after it.
rm -f "$dir/stop"
python3 test/move_writer.py write "$dir/directory.db" big fresh 10000000 \
	"$dir/stop" "$dir/writer.log" 2>"$dir/writer.err" &
writer=$!
sleep 1
t0=$(now)
psql -X -q -At -v ON_ERROR_STOP=1 -c "SET client_min_messages = debug1" -c "SELECT tenant_move('bench_move', 'big', 'b')" \
	>/dev/null 2>"$dir/move.err"
move=$(secs "$t0" "$(now)")
sleep 0.5
touch "$dir/stop"
wait "$writer"
if [ -s "$dir/writer.err" ]; then
	echo "bench_move.sh: the writer failed:" >&2
	cat "$dir/writer.err" >&2
	exit 1
fi

# 3. The rows.
check=$(python3 test/move_writer.py check "$dir/directory.db" big "$dir/initial" \
	"$dir/writer.log") || true
read -r _ txns fenced longest < <(grep '^DONE' "$dir/writer.log")
lock_ms=$(psql -X -q -At -c "SELECT round(lock_ms::numeric, 1) FROM tenant_moves('bench_move')")

ratio=$(awk -v m="$move" -v f="$floor" 'BEGIN { printf "%.2f", m / f }')
met()
{
	if awk "BEGIN { exit !($1) }"; then echo met; else echo MISSED; fi
}
rows_ok=$([ "$check" = "lost 0 duplicated 0 changed 0 extra 0" ] && echo met || echo MISSED)
echo "move: tenant with $rows orders and $items items, shard a -> b (WAL), one external writer"
echo "move: sqlite3 CLI copy (ATTACH + INSERT ... SELECT, median of 3): ${floor} s"
echo "move: tenant_move: ${move} s = ${ratio}x the CLI copy (target <= 3x: $(met "$ratio <= 3"))"
echo "move: writer: $txns transactions during the run, $fenced refused by the fence and retried, longest single wait ${longest} ms (target < 200 ms: $(met "$longest < 200"))"
echo "move: the source's write lock held ${lock_ms} ms at cutover"
echo "move: rows after the move: $check (target: none: $rows_ok)"
psql -X -q -c "DROP SERVER bench_move CASCADE" >/dev/null
