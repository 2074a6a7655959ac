#!/usr/bin/env bash
#
# test/move_writers_test.sh
#	A tenant moved while the application writes it (no acknowledged write
#	lost, each row counted once): two writer processes that know nothing
#	of the extension (test/move_writer.py, plain SQLite) insert, update
#	and delete the tenant's orders and items through the whole move, one
#	as a fresh router (it reads the directory before each write), one as
#	a stale router (it keeps the location it read first, and reads the
#	directory again only when a write fails).  After the move:
#
#	- the tenant's rows on its new shard are exactly the rows before the
#	  move changed by every write the writers saw committed (none lost,
#	  duplicated, changed, or extra), and PostgreSQL counts the same;
#	- the stale router's writes to the old shard after the flip failed
#	  with the fence's message, and went to the new shard on retry;
#	- the old shard's copy is intact until tenant_cleanup, gone after.
#
#	Then, with the writers stopped, the tenant is moved back while
#	another session samples a fan-out count(*) and sum(amount_cents)
#	continuously: every sample equals the true total.  The move waits at
#	each pause point for a while (sqlite_shard_fdw.move_pause_at) before
#	it is cancelled, and is finally run to the end, so that every phase
#	is sampled.
#
#	With MOVE_FLEET naming a fleet of test/fixtures/move_forms.sh
#	(test/move_writers_forms_test.sh), the same on that fleet, whose
#	tenant column SQLite compares otherwise than the tenant rule: the
#	writers write the tenant in each of its stored forms in turn, a third
#	writer writes a decoy tenant on the source shard meanwhile, and the
#	checks also say that the rows kept their stored forms, that the
#	decoy's writes stayed where they were made (none fenced, lost or
#	copied), and that the decoys' rows are untouched, counted once and
#	routed after each move and cleanup.
#
# Run by test/run_suites.sh inside a throw-away cluster, with PGDATABASE
# set to a fresh database.  The fleet lives in a new /tmp/ssfdw_mwrite.XXXXXX
# folder, removed at the end.  Takes about 20 seconds; stops by itself
# after 240.  Prints one line per check, then "N passed, M failed".

set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export LC_ALL=C.UTF-8
source test/fixtures/common.sh

if [ -z "${MWRITE_INNER:-}" ]; then
	rc=0
	MWRITE_INNER=1 timeout --kill-after=5 240 bash "${BASH_SOURCE[0]}" || rc=$?
	if [ "$rc" -eq 124 ]; then
		echo "the test did not finish within 240 s"
		echo "0 passed, 1 failed"
	fi
	exit "$rc"
fi

tmp=$(mktemp -d -t ssfdw_mwrite.XXXXXX)
chmod 0777 "$tmp"
helpers=()
cleanup()
{
	local p
	touch "$tmp/stop" "$tmp/stop_sampler" 2>/dev/null || true
	for p in "${helpers[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	for p in "${helpers[@]}"; do
		wait "$p" 2>/dev/null || true
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 143' TERM INT

passed=0
failed=0

# check NAME EXPECTED ACTUAL: one check line.
check()
{
	if [ "$2" = "$3" ]; then
		echo "ok - $1"
		passed=$((passed + 1))
	else
		echo "FAILED - $1: expected \"$2\", got \"$3\""
		failed=$((failed + 1))
	fi
}

# q SQL: one value from PostgreSQL.
q()
{
	psql -X -q -At -v ON_ERROR_STOP=1 -c "$1"
}

d="$tmp/fleet"
mkdir -p "$d/shards"
fx_directory "$d"
for s in a b; do
	fx_sqlite "$d/shards/$s.db" "PRAGMA journal_mode = WAL;" \
		"CREATE TABLE orders(tenant_id TEXT NOT NULL, order_id INTEGER NOT NULL,
		   amount_cents INTEGER, status TEXT, PRIMARY KEY (tenant_id, order_id));
		 CREATE TABLE items(tenant_id TEXT NOT NULL, order_id INTEGER NOT NULL,
		   sku TEXT, PRIMARY KEY (tenant_id, order_id));"
	fx_add_shard "$d" "$s" "shards/$s.db"
done
fx_sqlite "$d/shards/a.db" \
	"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 40000)
	 INSERT INTO orders SELECT 'w', i, i % 1000, 'open' FROM n;
	 WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5000)
	 INSERT INTO items SELECT 'w', i, 'init-' || i FROM n;
	 INSERT INTO orders VALUES ('other_a', 1, 5, 'open');"
fx_sqlite "$d/shards/b.db" "INSERT INTO orders VALUES ('other_b', 1, 7, 'open');"
fx_add_tenant "$d" w a
fx_add_tenant "$d" other_a a
fx_add_tenant "$d" other_b b
fx_done "$d"

# the moved tenant, its rows (by its stored forms), and the forms its
# writers write it in (by default its id, as text)
T=w
ttype=text
t_orders="tenant_id = 'w'"
t_items=$t_orders
w_forms=""
if [ -n "${MOVE_FLEET:-}" ]; then
	source test/fixtures/move_forms.sh
	mf_fleet "$MOVE_FLEET"
	mf_build "$d" 40000 5000 WAL
	fx_query "$d/shards/a.db" "SELECT order_id || ' ' || amount_cents FROM orders
	  WHERE $(mf_decoy_cond "$dw_id")" >"$tmp/decoy_initial"
fi
fx_query "$d/shards/a.db" "SELECT order_id || ' ' || amount_cents FROM orders
  WHERE $t_orders" >"$tmp/initial"

psql -X -q -v ON_ERROR_STOP=1 <<SQL >/dev/null
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS sqlite_shard_fdw CASCADE;
CREATE EXTENSION sqlite_shard_fdw;
CREATE SERVER mw FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '$d/directory.db', busy_timeout_ms '10000');
CREATE FOREIGN TABLE mw_orders (tenant_id $ttype, order_id bigint,
  amount_cents bigint, status text) SERVER mw OPTIONS (table 'orders');
SQL

# fan_out_rows: the rows a fan-out must count, by the shards: the new
# shard's, and the old shard's that are not the tenant's.
fan_out_rows()
{
	echo $(($(fx_query "$d/shards/b.db" "SELECT count(*) FROM orders") +
		$(fx_query "$d/shards/a.db" "SELECT count(*) FROM orders WHERE NOT ($t_orders)")))
}

# forms_kept FILE: the writers' rows in FILE not stored in the form they
# were written in (order_id BASE + n took form n of w_forms, in turn).
forms_kept()
{
	local f k=0 expr="CASE (order_id % 1000000) % $(echo "$w_forms" | tr ',' '\n' | wc -l)"
	while IFS= read -r f; do
		expr="$expr WHEN $k THEN quote($f)"
		k=$((k + 1))
	done < <(echo "$w_forms" | tr ',' '\n')
	fx_query "$1" "SELECT count(*) FROM orders WHERE order_id BETWEEN 1000000 AND 2999999
	  AND quote(tenant_id) IS NOT $expr END"
}

if [ -n "${MOVE_FLEET:-}" ]; then
	decoy_ref=$(mf_decoys "$d" mw_orders)
	forms_ref=$(mf_forms "$d/shards/a.db")
	# a decoy's writer on the tenant's shard, through the whole move
	python3 test/move_writer.py write "$d/directory.db" "$dw_id" fresh 3000000 \
		"$tmp/stop" "$tmp/decoy.log" "$dw_form" 2>"$tmp/decoy.err" &
	helpers+=($!)
fi

# The writers, one of each router, on disjoint order ids.
python3 test/move_writer.py write "$d/directory.db" "$T" fresh 1000000 \
	"$tmp/stop" "$tmp/fresh.log" ${w_forms:+"$w_forms"} 2>"$tmp/fresh.err" &
helpers+=($!)
python3 test/move_writer.py write "$d/directory.db" "$T" stale 2000000 \
	"$tmp/stop" "$tmp/stale.log" ${w_forms:+"$w_forms"} 2>"$tmp/stale.err" &
helpers+=($!)
sleep 1

move_out=$(psql -X -q -At -v ON_ERROR_STOP=1 \
	-c "SELECT tenant_move('mw', '$T', 'b')" 2>&1) || true
check "the move succeeds while both routers write" "1" \
	"$(echo "$move_out" | grep -v NOTICE | tail -n 1)"
sleep 1
touch "$tmp/stop"
for p in "${helpers[@]}"; do
	wait "$p" || true
done
helpers=()

check "the fresh router wrote without an error" "" "$(cat "$tmp/fresh.err")"
check "the stale router wrote without an error" "" "$(cat "$tmp/stale.err")"
check "the stale router's writes to the old shard hit the fence" yes \
	"$(awk '$1 == "DONE" { print ($3 > 0) ? "yes" : "no" }' "$tmp/stale.log")"
check "the tenant's rows on its new shard: nothing lost, duplicated or changed" \
	"lost 0 duplicated 0 changed 0 extra 0" \
	"$(python3 test/move_writer.py check --where "$t_orders" "$t_items" \
		"$d/directory.db" "$T" "$tmp/initial" "$tmp/fresh.log" "$tmp/stale.log")"
expected_count=$(fx_query "$d/shards/b.db" "SELECT count(*) FROM orders WHERE $t_orders")
check "PostgreSQL counts the tenant's rows on the new shard" "$expected_count" \
	"$(q "SELECT count(*) FROM mw_orders WHERE tenant_id = '$T'")"
check "a fan-out counts them once" "$(fan_out_rows)" \
	"$(q "SELECT count(*) FROM mw_orders")"
check "the old shard keeps its copy until the cleanup" \
	"$(wc -l <"$tmp/initial" | tr -d ' ')" \
	"$(fx_query "$d/shards/a.db" "SELECT count(*) FROM orders WHERE ($t_orders) AND order_id < 1000000")"
check "tenant_moves records the move as done" "done" \
	"$(q "SELECT phase FROM tenant_moves('mw')")"
q "SELECT * FROM tenant_cleanup('mw', '$T')" >/dev/null || true
check "after the cleanup the old shard has none of the tenant's rows" 0 \
	"$(fx_query "$d/shards/a.db" "SELECT count(*) FROM orders WHERE $t_orders")"
if [ -n "${MOVE_FLEET:-}" ]; then
	check "$MOVE_FLEET: the tenant's rows kept their stored forms" "$forms_ref" \
		"$(mf_forms "$d/shards/b.db")"
	check "$MOVE_FLEET: the writers' rows kept the forms they were written in" 0 \
		"$(forms_kept "$d/shards/b.db")"
	check "$MOVE_FLEET: the decoy's writer wrote without an error" "" \
		"$(cat "$tmp/decoy.err")"
	check "$MOVE_FLEET: the decoy's writer was never fenced" 0 \
		"$(awk '$1 == "DONE" { print $3 }' "$tmp/decoy.log")"
	check "$MOVE_FLEET: the decoy's rows on its shard: nothing lost, duplicated or changed" \
		"lost 0 duplicated 0 changed 0 extra 0" \
		"$(python3 test/move_writer.py check --where "$(mf_decoy_cond "$dw_id")" \
			"$(mf_decoy_cond "$dw_id")" "$d/directory.db" "$dw_id" \
			"$tmp/decoy_initial" "$tmp/decoy.log")"
	check "$MOVE_FLEET: none of the decoy's rows went to the new shard" 0 \
		"$(fx_query "$d/shards/b.db" "SELECT count(*) FROM orders WHERE $(mf_decoy_cond "$dw_id")")"
	check "$MOVE_FLEET: the decoys' rows are untouched, on their shards, and routed" \
		"$decoy_ref" "$(mf_decoys "$d" mw_orders)"
	check "$MOVE_FLEET: a fan-out counts every row once after the cleanup" \
		"$(fan_out_rows)" "$(q "SELECT count(*) FROM mw_orders")"
fi

#
# Fan-out counts sampled while the tenant moves back, writers stopped.
#
truth=$(q "SELECT count(*) || ':' || sum(amount_cents) FROM mw_orders")
cat >"$tmp/sampler.sh" <<'SH'
while [ ! -e "$1" ]; do
	psql -X -q -At -c "SELECT count(*) || ':' || sum(amount_cents) FROM mw_orders" 2>&1
done
SH
bash "$tmp/sampler.sh" "$tmp/stop_sampler" >"$tmp/samples" &
sampler=$!
helpers+=($sampler)

# pause_then_cancel POINT: run the move back until it waits at POINT, let
# the sampler read for a while, then cancel it.
pause_then_cancel()
{
	local _ pid
	psql -X -q -At -c "SET sqlite_shard_fdw.move_pause_at = '$1'" \
		-c "SELECT pg_backend_pid()" \
		-c "SELECT tenant_move('mw', '$T', 'a')" >"$tmp/bg.out" 2>"$tmp/bg.err" &
	pid=$!
	for _ in $(seq 1 400); do
		grep -q "paused at" "$tmp/bg.err" 2>/dev/null && break
		# a move that failed at once waits nowhere
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	sleep 0.5
	q "SELECT pg_cancel_backend($(head -n 1 "$tmp/bg.out"))" >/dev/null
	wait "$pid" 2>/dev/null || true
}

for point in start capture copy replay cutover fenced; do
	pause_then_cancel "$point"
done
check "the move back, cancelled at each point, finishes" "ok" \
	"$(q "SELECT tenant_move('mw', '$T', 'a')" >/dev/null 2>&1 && echo ok || echo failed)"
sleep 0.3
touch "$tmp/stop_sampler"
wait "$sampler" || true
helpers=()
check "the sampler read more than 50 fan-outs during the move" yes \
	"$([ "$(wc -l <"$tmp/samples")" -gt 50 ] && echo yes || echo no)"
check "every fan-out count and sum during the move was exact" "" \
	"$(grep -v -x -F "$truth" "$tmp/samples" | sort | uniq -c | head -n 5)"
check "after the move back, the fan-out is still exact" "$truth" \
	"$(q "SELECT count(*) || ':' || sum(amount_cents) FROM mw_orders")"
if [ -n "${MOVE_FLEET:-}" ]; then
	check "$MOVE_FLEET: moved back, the tenant's rows kept their stored forms" \
		"$forms_ref" "$(mf_forms "$d/shards/a.db")"
	check "$MOVE_FLEET: moved back, the writers' rows kept their forms" 0 \
		"$(forms_kept "$d/shards/a.db")"
	check "$MOVE_FLEET: the cleanup after the move back" "" \
		"$(q "SELECT * FROM tenant_cleanup('mw', '$T')" 2>&1 >/dev/null)"
	check "$MOVE_FLEET: after it, shard b has none of the tenant's rows" "0 0" \
		"$(fx_query "$d/shards/b.db" "SELECT (SELECT count(*) FROM orders WHERE $t_orders)
		  || ' ' || (SELECT count(*) FROM items WHERE $t_items)")"
	check "$MOVE_FLEET: after it, the decoys' rows are still untouched" \
		"$decoy_ref" "$(mf_decoys "$d" mw_orders)"
	check "$MOVE_FLEET: after it, the fan-out is still exact" "$truth" \
		"$(q "SELECT count(*) || ':' || sum(amount_cents) FROM mw_orders")"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
