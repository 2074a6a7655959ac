#!/usr/bin/env bash
#
# test/move_grace_test.sh
#	The grace rule of tenant_cleanup, and a tenant moved again before its
#	last move was cleaned up, with real concurrent sessions:
#
#	- a session that began a transaction and read the tenant before its
#	  move cut over is still open: tenant_cleanup waits for it (its wait
#	  event is "virtualxid", the NOTICE names the session's process), and
#	  the old shard keeps the tenant's rows until that transaction ends;
#	  then the cleanup deletes them.  A transaction that began after the
#	  flip, still open, does not hold the cleanup up;
#	- with lock_timeout, the wait ends in an error (55P03) whose context
#	  names the process waited for;
#	- moving the tenant again before its cleanup, while such a transaction
#	  is open, is refused (55006) with a hint naming what to run; with
#	  none open, the move deletes the old copy itself and moves the
#	  tenant, and every row is where the directory says, counted once.
#
# Run by test/run_suites.sh inside a throw-away cluster, with PGDATABASE
# set to a fresh database (by hand: PGDATABASE of a scratch database).
# The fleet lives in a new /tmp/ssfdw_mgrace.XXXXXX folder, removed at the
# end.  Takes a few seconds; stops by itself after 120 s.  Prints one line
# per check, then "N passed, M failed"; exits non-zero if anything failed.

set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export LC_ALL=C.UTF-8
source test/fixtures/common.sh

if [ -z "${MGRACE_INNER:-}" ]; then
	rc=0
	MGRACE_INNER=1 timeout --kill-after=5 120 bash "${BASH_SOURCE[0]}" || rc=$?
	if [ "$rc" -eq 124 ]; then
		echo "the test did not finish within 120 s"
		echo "0 passed, 1 failed"
	fi
	exit "$rc"
fi

tmp=$(mktemp -d -t ssfdw_mgrace.XXXXXX)
chmod 0777 "$tmp"
session_pids=""
bg_pid=""
cleanup()
{
	exec 7>&- 8>&- 2>/dev/null || true
	for p in $session_pids $bg_pid; do
		kill "$p" 2>/dev/null || true
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

# q_state SQL: the SQLSTATE a statement fails with, or "ok".
q_state()
{
	local out
	out=$(psql -X -q -At -v VERBOSITY=sqlstate -c "$1" 2>&1 >/dev/null |
		sed -n 's/^ERROR: *\([0-9A-Z]\{5\}\).*/\1/p')
	echo "${out:-ok}"
}

# sq FILE SQL: the sqlite3 CLI, the application's view.
sq()
{
	sqlite3 -bail -list -noheader -cmd ".timeout 3000" "$d/$1" "$2" 2>&1
}

# open_session NAME FD: a psql session in the background reading what is
# written to file descriptor FD; its output goes to $tmp/NAME.out.
open_session()
{
	mkfifo "$tmp/$1.in"
	psql -X -q -At <"$tmp/$1.in" >"$tmp/$1.out" 2>&1 &
	session_pids="$session_pids $!"
	eval "exec $2>\"\$tmp/\$1.in\""
}

# say FD NAME MARK SQL: send SQL to a session and wait until it has run.
say()
{
	local _
	printf '%s\n\\echo %s\n' "$4" "$3" >&"$1"
	for _ in $(seq 1 200); do
		if grep -q "^$3\$" "$tmp/$2.out" 2>/dev/null; then
			return 0
		fi
		sleep 0.05
	done
	echo "session $2 did not answer:" >&2
	cat "$tmp/$2.out" >&2
	return 1
}

# rows SHARD: tenant g's orders on SHARD, as the application reads them.
rows()
{
	sq "shards/$1.db" "SELECT count(*) FROM orders WHERE tenant_id = 'g'"
}

# where: the directory's row of tenant g.
where()
{
	sq directory.db "SELECT shard_id || ' ' || status || ' ' ||
	  coalesce(target_shard_id, '-') FROM shard_map WHERE tenant_id = 'g'"
}

d="$tmp/fleet"
mkdir -p "$d/shards"
fx_directory "$d"
for s in a b c; do
	fx_sqlite "$d/shards/$s.db" "PRAGMA journal_mode = WAL;" \
		"CREATE TABLE orders(tenant_id TEXT NOT NULL, order_id INTEGER NOT NULL,
		   amount_cents INTEGER, PRIMARY KEY (tenant_id, order_id));"
	fx_add_shard "$d" "$s" "shards/$s.db"
done
fx_sqlite "$d/shards/a.db" \
	"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)
	 INSERT INTO orders SELECT 'g', i, i FROM n;
	 INSERT INTO orders VALUES ('h', 1, 5);"
fx_add_tenant "$d" g a
fx_add_tenant "$d" h a
fx_done "$d"

psql -X -q -v ON_ERROR_STOP=1 <<SQL >/dev/null
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS sqlite_shard_fdw CASCADE;
CREATE EXTENSION sqlite_shard_fdw;
CREATE SERVER grace FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '$d/directory.db', busy_timeout_ms '3000');
CREATE FOREIGN TABLE g_orders (tenant_id text, order_id bigint,
  amount_cents bigint) SERVER grace OPTIONS (table 'orders');
SQL

# ===================================================================
# tenant_cleanup waits for a transaction that began before the flip
# ===================================================================
open_session old 7
say 7 old m1 "SELECT pg_backend_pid();"
old_pid=$(head -n 1 "$tmp/old.out")
say 7 old m2 "BEGIN; SELECT count(*) FROM g_orders WHERE tenant_id = 'g';"
check "an open transaction read the tenant on shard a" 2000 \
	"$(sed -n 3p "$tmp/old.out")"

check "the move cuts over while that transaction is open" ok \
	"$(q_state "SELECT tenant_move('grace', 'g', 'b')")"
check "the directory names b" "a DONE b" "$(where)"

# a transaction that begins after the flip, left open: no reason to wait
sleep 0.2
open_session new 8
say 8 new n1 "BEGIN; SELECT count(*) FROM g_orders WHERE tenant_id = 'g';"
check "a transaction begun after the flip reads shard b" 2000 \
	"$(sed -n 1p "$tmp/new.out")"

# moving the tenant again now is refused, and says what to run
out=$(psql -X -q -At -v VERBOSITY=verbose \
	-c "SELECT tenant_move('grace', 'g', 'c')" 2>&1 >/dev/null || true)
check "a second move while the older transaction is open: 55006" 55006 \
	"$(echo "$out" | sed -n 's/^ERROR: *\([0-9A-Z]\{5\}\).*/\1/p')"
check "... its detail counts one transaction, the older one" \
	"DETAIL:  1 transaction that began before that move cut over is still running (process $old_pid), and may read those rows." \
	"$(echo "$out" | grep '^DETAIL')"
check "... its hint says what to run" \
	"HINT:  Run tenant_cleanup('grace', 'g'), which waits for them, then tenant_move() again." \
	"$(echo "$out" | grep '^HINT')"
check "... and nothing changed" "a DONE b" "$(where)"

# the cleanup, in the background, waits
psql -X -q -At -c "SELECT * FROM tenant_cleanup('grace', 'g')" \
	>"$tmp/clean.out" 2>"$tmp/clean.err" </dev/null &
bg_pid=$!
wait_event=""
for _ in $(seq 1 100); do
	wait_event=$(q "SELECT wait_event FROM pg_stat_activity
	  WHERE query LIKE 'SELECT * FROM tenant_cleanup%' AND pid <> pg_backend_pid()")
	if [ "$wait_event" = virtualxid ]; then
		break
	fi
	sleep 0.05
done
check "tenant_cleanup waits for the older transaction (wait event)" virtualxid \
	"$wait_event"
sleep 0.5
check "... still waiting half a second later" yes \
	"$(kill -0 "$bg_pid" 2>/dev/null && echo yes || echo no)"
check "... its NOTICE names the process it waits for" \
	"NOTICE:  tenant \"g\": waiting for the transaction of process $old_pid, which began before the tenant left shard \"a\"" \
	"$(grep -m 1 'waiting for' "$tmp/clean.err")"
check "... and shard a still has the tenant's rows" 2000 "$(rows a)"

say 7 old m3 "COMMIT;"
wait "$bg_pid"
bg_pid=""
check "once that transaction ends, the cleanup deletes them" "g|a|2000" \
	"$(cat "$tmp/clean.out")"
check "shard a has none left" 0 "$(rows a)"
check "the directory names b alone" "b ACTIVE -" "$(where)"
say 8 new n2 "COMMIT;"

# ===================================================================
# lock_timeout ends the wait, naming whom it waited for
# ===================================================================
say 7 old m4 "BEGIN; SELECT count(*) FROM g_orders WHERE tenant_id = 'g';"
check "moved back while a transaction is open" ok \
	"$(q_state "SELECT tenant_move('grace', 'g', 'a')")"
out=$(psql -X -q -At -v VERBOSITY=verbose -c "SET lock_timeout = '300ms'" \
	-c "SELECT * FROM tenant_cleanup('grace', 'g')" 2>&1 >/dev/null || true)
check "tenant_cleanup with lock_timeout: 55P03" 55P03 \
	"$(echo "$out" | sed -n 's/^ERROR: *\([0-9A-Z]\{5\}\).*/\1/p')"
check "... the context names the process" \
	"CONTEXT:  waiting for the transaction of process $old_pid, which began before tenant \"g\" left shard \"b\"" \
	"$(echo "$out" | grep -m 1 '^CONTEXT')"
check "... and shard b still has the rows" 2000 "$(rows b)"
say 7 old m5 "COMMIT;"

# ===================================================================
# Moved again before the cleanup, with no older transaction open: the
# move deletes the old copy itself
# ===================================================================
out=$(psql -X -q -At -c "SELECT tenant_move('grace', 'g', 'c') > 0" 2>&1)
check "a second move before the cleanup" t "$(echo "$out" | tail -n 1)"
check "... says it deleted the old copy first" \
	"NOTICE:  tenant \"g\": deleting its rows on shard \"b\" left by its move to shard \"a\" first" \
	"$(echo "$out" | grep -m 1 'deleting its rows')"
check "... the directory names c" "a DONE c" "$(where)"
check "shard b has no row of the tenant" 0 "$(rows b)"
check "no trigger or log of the moves is left on shard b" 0 \
	"$(sq shards/b.db "SELECT count(*) FROM sqlite_schema WHERE name LIKE '\\_ssfdw%' ESCAPE '\\'")"
check "shard c has every row" 2000 "$(rows c)"
check "the tenant's routed count" 2000 \
	"$(q "SELECT count(*) FROM g_orders WHERE tenant_id = 'g'")"
check "a fan-out counts each row once" "2001:2001005" \
	"$(q "SELECT count(*) || ':' || sum(amount_cents) FROM g_orders")"
check "tenant_cleanup of the second move" ok \
	"$(q_state "SELECT * FROM tenant_cleanup('grace', 'g')")"
check "shard a has none left" 0 "$(rows a)"
check "every move is recorded, cleaned" "3 3" \
	"$(q "SELECT count(*) || ' ' || count(*) FILTER (WHERE phase = 'cleaned') FROM tenant_moves('grace')")"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
