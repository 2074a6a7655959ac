#!/usr/bin/env bash
#
# test/move_kill_test.sh
#	Crash safety of tenant moves (nothing lost or doubled, the move
#	resumable): the backend running tenant_move is killed with SIGKILL at each
#	point of the move in turn (sqlite_shard_fdw.move_pause_at makes it
#	wait there), and after each kill:
#
#	- the directory names one owner, and that shard holds every row of
#	  the tenant (orders and items, counted and summed with the sqlite3
#	  CLI against the counts taken before the first move);
#	- a fan-out count and sum through PostgreSQL, and the tenant's routed
#	  count, are exact (the partial copy or the leftovers are not counted);
#	- killed under the source's write lock, the lock is gone; killed
#	  after the fence, the tenant's writes to the source fail naming the
#	  new shard;
#	- the move is then finished by running it again, or aborted with
#	  tenant_move_abort (alternately), after which the shard that no
#	  longer owns the tenant has none of its rows and no trigger or log of
#	  the move is left (after tenant_cleanup for a finished move).
#
#	Killed between the fence and the flip, nobody has to act: the first
#	statement routed to the tenant lifts the fence (the tenant's writes
#	through PostgreSQL and the application's work again, the move stays
#	resumable, and the writes are on the new shard once it is run again);
#	tenant_moves() lifts it too; a move function that writes
#	(tenant_cleanup here) finishes the move instead, or, when the copy
#	no longer verifies, warns and lifts the fence.
#
#	While a move waits, another session's tenant_move and
#	tenant_move_abort of the same tenant are refused with 55006.  An abort
#	and a cleanup killed half-way are run again to the end.
#
#	With MOVE_FLEET naming a fleet of test/fixtures/move_forms.sh
#	(test/move_kill_forms_test.sh), the same on that fleet, whose tenant
#	column SQLite compares otherwise than the tenant rule, with checks of
#	its decoy tenants and stored forms at the end (test/move_kill_fleets.sh).
#
# Run by test/run_suites.sh inside a throw-away cluster, with PGDATABASE
# set to a fresh database (by hand: PGDATABASE of a scratch database).
# The fleet lives in a new /tmp/ssfdw_mkill.XXXXXX folder, removed at the
# end.  Takes about a minute (each kill restarts the server's backends);
# stops by itself after 300 s.  Prints one line per check, then
# "N passed, M failed"; exits non-zero if anything failed.

set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export LC_ALL=C.UTF-8
source test/fixtures/common.sh

if [ -z "${MKILL_INNER:-}" ]; then
	rc=0
	MKILL_INNER=1 timeout --kill-after=5 300 bash "${BASH_SOURCE[0]}" || rc=$?
	if [ "$rc" -eq 124 ]; then
		echo "the test did not finish within 300 s"
		echo "0 passed, 1 failed"
	fi
	exit "$rc"
fi

tmp=$(mktemp -d -t ssfdw_mkill.XXXXXX)
chmod 0777 "$tmp"
bg_pid=""
cleanup()
{
	if [ -n "$bg_pid" ]; then
		kill "$bg_pid" 2>/dev/null || true
		wait "$bg_pid" 2>/dev/null || true
	fi
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

# q_state SQL: the SQLSTATE a statement fails with, or "ok".
q_state()
{
	local out
	out=$(psql -X -q -At -v VERBOSITY=sqlstate -c "$1" 2>&1 >/dev/null |
		sed -n 's/^ERROR: *\([0-9A-Z]\{5\}\).*/\1/p')
	echo "${out:-ok}"
}

# sq FILE SQL: the sqlite3 CLI, the application's view, with a wait.
sq()
{
	sqlite3 -bail -list -noheader -cmd ".timeout 3000" "$d/$1" "$2" 2>&1
}

# wait_server: until the server accepts connections again after a kill.
wait_server()
{
	local _
	for _ in $(seq 1 300); do
		if psql -X -q -At -c 'SELECT 1' >/dev/null 2>&1; then
			return 0
		fi
		sleep 0.1
	done
	echo "the server did not come back" >&2
	return 1
}

d="$tmp/fleet"
mkdir -p "$d/shards"
fx_directory "$d"
for s in a b; do
	fx_sqlite "$d/shards/$s.db" "PRAGMA journal_mode = WAL;" \
		"CREATE TABLE orders(tenant_id TEXT NOT NULL, order_id INTEGER NOT NULL,
		   amount_cents INTEGER, status TEXT, PRIMARY KEY (tenant_id, order_id));
		 CREATE TABLE items(item_id INTEGER PRIMARY KEY, tenant_id TEXT NOT NULL,
		   order_id INTEGER, sku TEXT);
		 CREATE INDEX items_tenant ON items(tenant_id);"
	fx_add_shard "$d" "$s" "shards/$s.db"
done
# b in rollback-journal mode: the kills cover both journal modes
fx_sqlite "$d/shards/b.db" "PRAGMA journal_mode = DELETE;"
fx_sqlite "$d/shards/a.db" \
	"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 25000)
	 INSERT INTO orders SELECT 'mk', i, i % 997, 'open' FROM n;
	 WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000)
	 INSERT INTO items SELECT i, 'mk', i, 'sku-' || i FROM n;
	 INSERT INTO orders VALUES ('other_a', 1, 5, 'open');"
fx_sqlite "$d/shards/b.db" "INSERT INTO orders VALUES ('other_b', 1, 7, 'open');"
fx_add_tenant "$d" mk a
fx_add_tenant "$d" other_a a
fx_add_tenant "$d" other_b b
fx_done "$d"

psql -X -q -v ON_ERROR_STOP=1 <<SQL >/dev/null
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS sqlite_shard_fdw CASCADE;
CREATE EXTENSION sqlite_shard_fdw;
CREATE SERVER mkill FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '$d/directory.db', busy_timeout_ms '3000');
CREATE FOREIGN TABLE mk_orders (tenant_id text, order_id bigint,
  amount_cents bigint, status text) SERVER mkill OPTIONS (table 'orders');
SQL

# the moved tenant (another on the fleets of MOVE_FLEET, below)
T=mk

# tenant_rows SHARD: what SHARD holds of the tenant, as the CLI reads it.
tenant_rows()
{
	sq "shards/$1.db" "SELECT (SELECT count(*) || ':' || total(amount_cents)
	  FROM orders WHERE tenant_id = '$T') || ' ' || (SELECT count(*) || ':' ||
	  total(order_id) FROM items WHERE tenant_id = '$T')"
}

# owner: the shard the directory says answers for the tenant, and its status.
owner()
{
	sq directory.db "SELECT CASE WHEN status = 'DONE' THEN target_shard_id
	  ELSE shard_id END || ' ' || status FROM shard_map WHERE tenant_id = '$T'"
}

# fenced_write SHARD: what the application's write of the tenant to SHARD says.
fenced_write()
{
	sqlite3 "$d/shards/$1.db" ".timeout 2000" \
		"UPDATE orders SET status = 'x' WHERE tenant_id = '$T' AND order_id = 1" 2>&1 |
		sed -E 's/^(Runtime error|Error)[^:]*: //; s/^stepping, //; s/ \([0-9]+\)$//'
}

# fence_objects SHARD: how many objects of a move's fence SHARD has.
fence_objects()
{
	sq "shards/$1.db" "SELECT count(*) FROM sqlite_schema
	  WHERE name LIKE '\\_ssfdw\\_move\\_%\\_fence\\_%' ESCAPE '\\'"
}

# move_objects SHARD: how many triggers and tables of a move SHARD has.
move_objects()
{
	sq "shards/$1.db" "SELECT count(*) FROM sqlite_schema
	  WHERE name LIKE '\\_ssfdw\\_move%' ESCAPE '\\'"
}

# Another fleet, for test/move_kill_forms_test.sh: MOVE_FLEET names a
# fleet of test/fixtures/move_forms.sh, which test/move_kill_fleets.sh
# builds over this one; it sets T, redefines tenant_rows and defines
# fleet_checks, run before the summary.
if [ -n "${MOVE_FLEET:-}" ]; then
	source test/move_kill_fleets.sh
fi

ref=$(tenant_rows a)
fleet_ref=$(q "SELECT count(*) || ':' || sum(amount_cents) FROM mk_orders")
tenant_ref=$(q "SELECT count(*) FROM mk_orders WHERE tenant_id = '$T'")

# start_paused CALL POINT: run CALL with the move paused at POINT in the
# background, and wait until it waits there; bg_backend is its backend.
start_paused()
{
	local _
	rm -f "$tmp/bg.out" "$tmp/bg.err"
	psql -X -q -At -v ON_ERROR_STOP=1 \
		-c "SET sqlite_shard_fdw.move_pause_at = '$2'" \
		-c "SELECT pg_backend_pid()" -c "$1" \
		>"$tmp/bg.out" 2>"$tmp/bg.err" </dev/null &
	bg_pid=$!
	for _ in $(seq 1 600); do
		if grep -q "paused at \"$2\"" "$tmp/bg.err" 2>/dev/null; then
			bg_backend=$(head -n 1 "$tmp/bg.out")
			return 0
		fi
		if ! kill -0 "$bg_pid" 2>/dev/null; then
			break
		fi
		sleep 0.05
	done
	echo "the call did not reach \"$2\":" >&2
	cat "$tmp/bg.err" >&2
	return 1
}

# kill_paused: SIGKILL the paused backend, wait for the server.
kill_paused()
{
	# announced, so that the test driver does not take it for a crash
	psql -X -q -c "DO \$\$ BEGIN RAISE LOG 'sqlite_shard_fdw test kills backend $bg_backend'; END \$\$" >/dev/null
	kill -9 "$bg_backend"
	wait "$bg_pid" 2>/dev/null || true
	bg_pid=""
	wait_server
}

# after_kill POINT EXPECTED_OWNER: the checks every kill must pass.
after_kill()
{
	local own
	own=$(owner)
	check "killed at $1: the directory names shard $2" "$2" "${own%% *}"
	check "killed at $1: shard $2 holds every row of the tenant" "$ref" \
		"$(tenant_rows "$2")"
	check "killed at $1: a fan-out counts each row once" "$fleet_ref" \
		"$(q "SELECT count(*) || ':' || sum(amount_cents) FROM mk_orders")"
	check "killed at $1: the tenant's routed count" "$tenant_ref" \
		"$(q "SELECT count(*) FROM mk_orders WHERE tenant_id = '$T'")"
}

# finished FROM TO: after a move finished and was cleaned up.
finished()
{
	check "$3: the directory names $2, ACTIVE" "$2 ACTIVE" "$(owner)"
	check "$3: shard $2 holds every row" "$ref" "$(tenant_rows "$2")"
	check "$3: shard $1 holds none" "0:0.0 0:0.0" "$(tenant_rows "$1")"
	check "$3: no trigger or log left on shard $1" "0" "$(move_objects "$1")"
}

# aborted FROM TO: after a move was aborted.
aborted()
{
	check "$3: the directory names $1, ACTIVE" "$1 ACTIVE" "$(owner)"
	check "$3: shard $1 holds every row" "$ref" "$(tenant_rows "$1")"
	check "$3: the copy on shard $2 is gone" "0:0.0 0:0.0" "$(tenant_rows "$2")"
	check "$3: no trigger or log left on shard $1" "0" "$(move_objects "$1")"
}

from=a
to=b
i=0
for point in start capture copy replay cutover fenced flipped; do
	start_paused "SELECT tenant_move('mkill', '$T', '$to')" "$point"
	if [ "$point" = copy ]; then
		check "a second move of the tenant while one runs: 55006" 55006 \
			"$(q_state "SELECT tenant_move('mkill', '$T', '$to')")"
		check "an abort while the move runs: 55006" 55006 \
			"$(q_state "SELECT tenant_move_abort('mkill', '$T')")"
	fi
	if [ "$point" = cutover ]; then
		check "under the cutover lock, a writer of shard $from waits" \
			"database is locked" \
			"$(sqlite3 "$d/shards/$from.db" ".timeout 200" \
				"UPDATE orders SET status = status WHERE tenant_id = 'other_a'" 2>&1 |
				grep -o 'database is locked' | head -n 1)"
	fi
	kill_paused
	if [ "$point" = fenced ]; then
		# before anything routes the tenant: the fence is there
		check "killed after the fence: the tenant's writes to shard $from fail" \
			"tenant \"$T\" has moved to shard \"$to\": write it there" \
			"$(fenced_write "$from")"
	fi
	case $point in
		flipped) after_kill "$point" "$to" ;;
		*) after_kill "$point" "$from" ;;
	esac
	case $point in
		cutover)
			check "killed at cutover: the lock of shard $from is gone" "" \
				"$(sqlite3 "$d/shards/$from.db" ".timeout 2000" \
					"UPDATE orders SET status = status WHERE tenant_id = 'other_a'" 2>&1)"
			;;
		fenced)
			# after_kill routed the tenant: that lifted the fence
			check "killed after the fence, then routed: the fence is lifted" 0 \
				"$(fence_objects "$from")"
			check "killed after the fence, then routed: a write through PostgreSQL works" ok \
				"$(q_state "UPDATE mk_orders SET status = 'routed' WHERE tenant_id = '$T' AND order_id = 1")"
			check "killed after the fence, then routed: the application's writes work" "" \
				"$(sqlite3 "$d/shards/$from.db" ".timeout 2000" \
					"UPDATE orders SET status = 'app' WHERE tenant_id = '$T' AND order_id = 2" 2>&1)"
			check "killed after the fence, then routed: the directory still says MIGRATING" \
				"$from MIGRATING" "$(owner)"
			check "killed after the fence, then routed: tenant_moves says so" "replay true" \
				"$(q "SELECT phase || ' ' || (error LIKE '%fence was lifted%') FROM tenant_moves('mkill') ORDER BY move_id DESC LIMIT 1")"
			;;
	esac

	# alternately finish the move and abort it (one past the flip cannot)
	if [ $((i % 2)) -eq 0 ] || [ "$point" = flipped ] || [ "$point" = fenced ]; then
		check "killed at $point: tenant_move again finishes the move" ok \
			"$(q_state "SELECT tenant_move('mkill', '$T', '$to')")"
		check "killed at $point: the tenant's rows through PostgreSQL" "$tenant_ref" \
			"$(q "SELECT count(*) FROM mk_orders WHERE tenant_id = '$T'")"
		check "killed at $point: tenant_cleanup" ok \
			"$(q_state "SELECT * FROM tenant_cleanup('mkill', '$T')")"
		finished "$from" "$to" "killed at $point, finished"
		if [ "$point" = fenced ]; then
			check "killed after the fence: the writes made once the fence was lifted are on shard $to" \
				"routed app" \
				"$(sq "shards/$to.db" "SELECT group_concat(status, ' ') FROM (SELECT status
				  FROM orders WHERE tenant_id = '$T' AND order_id IN (1, 2) ORDER BY order_id)")"
		fi
		t=$from
		from=$to
		to=$t
	else
		check "killed at $point: tenant_move_abort" ok \
			"$(q_state "SELECT tenant_move_abort('mkill', '$T')")"
		aborted "$from" "$to" "killed at $point, aborted"
	fi
	check "killed at $point: a fan-out still counts each row once" "$fleet_ref" \
		"$(q "SELECT count(*) || ':' || sum(amount_cents) FROM mk_orders")"
	i=$((i + 1))
done

# killed after the fence, then a move function runs before any statement
# routes the tenant: tenant_cleanup() finishes the move, then cleans up
start_paused "SELECT tenant_move('mkill', '$T', '$to')" fenced
kill_paused
check "killed after the fence (2): the tenant's writes to shard $from fail" \
	"tenant \"$T\" has moved to shard \"$to\": write it there" \
	"$(fenced_write "$from")"
check "killed after the fence, then tenant_cleanup(): it finishes the move" ok \
	"$(q_state "SELECT * FROM tenant_cleanup('mkill')")"
check "killed after the fence, then tenant_cleanup(): the move is cleaned up" \
	cleaned "$(q "SELECT phase FROM tenant_moves('mkill') ORDER BY move_id DESC LIMIT 1")"
finished "$from" "$to" "killed after the fence, then tenant_cleanup()"
check "killed after the fence, then tenant_cleanup(): the tenant's routed count" \
	"$tenant_ref" "$(q "SELECT count(*) FROM mk_orders WHERE tenant_id = '$T'")"
t=$from
from=$to
to=$t

# killed after the fence, then tenant_moves() lists the moves: it lifts
# the fence, as a routed statement does; then tenant_move of another
# tenant leaves this one alone (nothing fenced to finish)
start_paused "SELECT tenant_move('mkill', '$T', '$to')" fenced
kill_paused
check "killed after the fence, then tenant_moves(): it lifts the fence" \
	"replay 0" \
	"$(q "SELECT phase FROM tenant_moves('mkill') ORDER BY move_id DESC LIMIT 1") $(fence_objects "$from")"
check "killed after the fence, then tenant_moves(): the application's writes work" "" \
	"$(sqlite3 "$d/shards/$from.db" ".timeout 2000" \
		"UPDATE orders SET status = 'listed' WHERE tenant_id = '$T' AND order_id = 3" 2>&1)"
after_kill "fenced, then tenant_moves()" "$from"
check "killed after the fence, then tenant_moves(): tenant_move_abort" ok \
	"$(q_state "SELECT tenant_move_abort('mkill', '$T')")"
aborted "$from" "$to" "killed after the fence, then tenant_moves(), aborted"

# killed after the fence, and the copy damaged by hand meanwhile: the move
# function that finds it cannot finish it, warns, lifts the fence instead
# and goes on
start_paused "SELECT tenant_move('mkill', '$T', '$to')" fenced
kill_paused
sq "shards/$to.db" "DELETE FROM items WHERE tenant_id = '$T' AND item_id = 1" >/dev/null
out=$(psql -X -q -At -c "SELECT count(*) FROM tenant_cleanup('mkill')" 2>&1)
check "a move that cannot be finished: the move function still runs" 0 \
	"$(echo "$out" | tail -n 1)"
check "... and warns" \
	"WARNING:  could not finish the move of tenant \"$T\", stopped between its fence and its flip" \
	"$(echo "$out" | grep -m 1 '^WARNING')"
check "... the fence is lifted" 0 "$(fence_objects "$from")"
check "... the move's error keeps why" "true true" \
	"$(q "SELECT (error LIKE '%does not match%; its session ended%') || ' ' || (error LIKE '%fence was lifted%')
	  FROM tenant_moves('mkill') ORDER BY move_id DESC LIMIT 1")"
after_kill "fenced, copy damaged" "$from"
check "... tenant_move_abort" ok "$(q_state "SELECT tenant_move_abort('mkill', '$T')")"
aborted "$from" "$to" "a move that could not be finished, aborted"

# an abort killed half-way, then run again
start_paused "SELECT tenant_move('mkill', '$T', '$to')" replay
kill_paused
start_paused "SELECT tenant_move_abort('mkill', '$T')" abort
kill_paused
after_kill "abort" "$from"
check "an abort killed half-way, run again" ok \
	"$(q_state "SELECT tenant_move_abort('mkill', '$T')")"
aborted "$from" "$to" "abort run again"

# a cleanup killed half-way, then run again
check "a move to clean up after" ok \
	"$(q_state "SELECT tenant_move('mkill', '$T', '$to')")"
start_paused "SELECT * FROM tenant_cleanup('mkill', '$T')" cleanup
kill_paused
check "a cleanup killed half-way: the directory still names $to" "$to DONE" "$(owner)"
check "a cleanup killed half-way: shard $to holds every row" "$ref" "$(tenant_rows "$to")"
check "a cleanup killed half-way, run again" ok \
	"$(q_state "SELECT * FROM tenant_cleanup('mkill', '$T')")"
finished "$from" "$to" "cleanup run again"
check "every move is recorded" "$(q "SELECT count(*) FROM tenant_moves('mkill')")" \
	"$(q "SELECT count(*) FROM tenant_moves('mkill') WHERE phase IN ('cleaned', 'aborted')")"

if [ -n "${MOVE_FLEET:-}" ]; then
	fleet_checks
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
