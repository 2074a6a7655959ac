#!/usr/bin/env bash
#
# test/commit_test.sh
#	What a COMMIT promises (docs/reference/writes.md, "What a COMMIT promises"), with real
#	second processes:
#
#	1. A lock not had (55P03) on one shard, caught by a PL/pgSQL exception
#	   block: the transaction's COMMIT succeeds and its writes to the other
#	   shard are there.
#	2. A COMMIT that waits for a reader's lock on a rollback-journal shard
#	   is cancelled (pg_cancel_backend): 57014, and none of the
#	   transaction's shards committed, not even the one whose lock was had;
#	   with the reader gone, the same transaction commits.  (PostgreSQL
#	   does not time COMMIT by statement_timeout.)
#	3. SERIALIZABLE: a transaction that wrote a shard and that PostgreSQL
#	   chose to fail at COMMIT (a pivot of a dangerous structure, doomed
#	   by another transaction's commit) fails with 40001 and leaves no row
#	   in the shard.
#	4. A commit of two shards whose backend is killed (SIGKILL) after the
#	   first shard committed and before the second: after the server's
#	   restart, shard_commits() lists the commit as interrupted, with the
#	   first shard committed and the second not, as the shards hold; while
#	   it was in progress it said so; shard_commit_forget() removes it.  A
#	   commit that finishes leaves nothing in the log.
#	5. A write that races a move's cutover (the source fenced, the
#	   directory not yet flipped) fails with 40001 and a hint to retry, not
#	   with 23000; once the move finished, the retry writes the new shard.
#
# Run by test/run_suites.sh inside a throw-away cluster, with PGDATABASE
# set to a fresh database.  Run by hand (PGDATABASE unset or "postgres"),
# it uses its own database ssfdw_commit, made afresh.  The fleet lives in a
# new /tmp/ssfdw_commit.XXXXXX folder, removed at the end.  Stops by itself
# after 180 s; its helper processes are killed on exit.  Prints one line
# per check, then "N passed, M failed"; exits non-zero if anything failed.

set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export LC_ALL=C.UTF-8
source test/fixtures/common.sh

source test/script_common.sh
script_limit ssfdw_commit 180
script_tmp ssfdw_commit

# check NAME EXPECTED ACTUAL
check()
{
	if [ "$2" = "$3" ]; then
		result ok "$1"
	else
		result failed "$1" "expected: $2"$'\n'"actual:   $3"
	fi
}

# q_state SQL...: run the statements in one session; print the SQLSTATEs
# of its errors (or "ok"), one line.
q_state()
{
	local out
	out=$(psql -X -q -A -t -v VERBOSITY=verbose "$@" 2>&1 >/dev/null |
		sed -n 's/^ERROR:  \([0-9A-Z]\{5\}\):.*/\1/p' | tr '\n' ' ')
	echo "${out:-ok}" | sed 's/ *$//'
}

# sq FILE SQL: read a fleet file with the sqlite3 CLI.
sq()
{
	sqlite3 -bail -list -noheader -cmd ".timeout 5000" "$d/$1" "$2" 2>&1
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

# The application: hold a lock on a shard file until STOPFILE exists (at
# most 60 s): "write" BEGIN IMMEDIATE, "read" a read transaction (a shared
# lock, which holds off a rollback-journal commit).
{ echo "import sqlite3, sys, time"; echo "$as_server_user"; cat; } \
	>"$tmp/app.py" <<'PY'

mode, db, stopfile, readyfile = sys.argv[1:5]
con = sqlite3.connect(db, timeout=30, isolation_level=None)
if mode == "write":
    con.execute("BEGIN IMMEDIATE")
else:
    con.execute("BEGIN")
    con.execute("SELECT count(*) FROM t").fetchone()
open(readyfile, "w").close()
deadline = time.monotonic() + 60
while not os.path.exists(stopfile) and time.monotonic() < deadline:
    time.sleep(0.02)
con.execute("ROLLBACK")
PY

app_pid=
# hold MODE SHARD: hold a lock on SHARD's file (app.py) until release.
hold()
{
	local _
	rm -f "$tmp/app.stop" "$tmp/app.ready"
	python3 "$tmp/app.py" "$1" "$d/shards/$2.db" "$tmp/app.stop" \
		"$tmp/app.ready" </dev/null >"$tmp/app.log" 2>&1 &
	app_pid=$!
	helpers+=("$app_pid")
	for _ in $(seq 1 200); do
		[ -e "$tmp/app.ready" ] && return 0
		sleep 0.05
	done
	echo "the application process did not start:" >&2
	cat "$tmp/app.log" >&2
	return 1
}

release()
{
	touch "$tmp/app.stop"
	wait "$app_pid" 2>/dev/null || true
}

#
# The fleet: shards w1, w2 (WAL) hold tenants a, b; j1, j2 (rollback
# journal) tenants c, e; tenant m (on w1) is the one that moves.
#
d="$tmp/fleet"
mkdir -p "$d/shards"
fx_directory "$d"
for s in w1 w2 j1 j2; do
	fx_sqlite "$d/shards/$s.db" \
		"CREATE TABLE t(tenant_id TEXT NOT NULL, id INTEGER NOT NULL, v TEXT,
		 PRIMARY KEY (tenant_id, id));"
	fx_add_shard "$d" "$s" "shards/$s.db"
done
fx_sqlite "$d/shards/w1.db" "PRAGMA journal_mode = WAL;"
fx_sqlite "$d/shards/w2.db" "PRAGMA journal_mode = WAL;"
fx_sqlite "$d/shards/w1.db" "INSERT INTO t VALUES ('m', 1, 'one');"
fx_add_tenant "$d" a w1
fx_add_tenant "$d" b w2
fx_add_tenant "$d" c j1
fx_add_tenant "$d" e j2
fx_add_tenant "$d" m w1
fx_done "$d"

psql -X -q -v ON_ERROR_STOP=1 <<SQL >/dev/null
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS sqlite_shard_fdw CASCADE;
CREATE EXTENSION sqlite_shard_fdw;
CREATE SERVER cm FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '$d/directory.db', busy_timeout_ms '20000');
CREATE FOREIGN TABLE t (tenant_id text, id bigint, v text)
  SERVER cm OPTIONS (table 't');
CREATE SERVER cm_short FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '$d/directory.db', busy_timeout_ms '300');
CREATE FOREIGN TABLE t_short (tenant_id text, id bigint, v text)
  SERVER cm_short OPTIONS (table 't');
CREATE TABLE x (k int, v int);
CREATE TABLE y (k int, v int);
CREATE TABLE z (k int, v int);
INSERT INTO x VALUES (1, 0);
INSERT INTO y VALUES (1, 0);
INSERT INTO z VALUES (1, 0);
SQL

#
# 1. A lock timeout caught in an exception block.
#
hold write w2
out=$(psql -X -q -A -t -v ON_ERROR_STOP=1 2>&1 <<'SQL' || true
BEGIN;
INSERT INTO t_short VALUES ('a', 101, 'kept');
DO $$
BEGIN
  INSERT INTO t_short VALUES ('b', 102, 'locked');
EXCEPTION WHEN lock_not_available THEN
  RAISE NOTICE 'caught %', SQLSTATE;
END $$;
INSERT INTO t_short VALUES ('a', 103, 'kept');
COMMIT;
SQL
)
release
check "a lock timeout caught by an exception block: the notice" \
	"NOTICE:  caught 55P03" "$(grep NOTICE <<<"$out")"
check "... COMMIT succeeds (no 25P02)" "" "$(grep ERROR <<<"$out" || true)"
check "... the other shard's writes committed" "101,103" \
	"$(sq shards/w1.db "SELECT group_concat(id) FROM (SELECT id FROM t WHERE tenant_id = 'a' ORDER BY id)")"
check "... nothing of the locked shard's" "0" \
	"$(sq shards/w2.db "SELECT count(*) FROM t WHERE tenant_id = 'b'")"

#
# 2. A cancel while COMMIT waits for a rollback-journal shard's lock.
#
hold read j2
psql -X -q -A -t -v VERBOSITY=verbose -c "SELECT pg_backend_pid()" -c "BEGIN" \
	-c "INSERT INTO t VALUES ('c', 211, 'j1'), ('e', 212, 'j2')" \
	-c "COMMIT" >"$tmp/cancel.out" 2>&1 &
cpid=$!
helpers+=("$cpid")
backend=
for _ in $(seq 1 100); do
	backend=$(head -n 1 "$tmp/cancel.out" 2>/dev/null || true)
	if [ -n "$backend" ] &&
	   [ "$(q "SELECT count(*) FROM pg_stat_activity WHERE pid = $backend AND query = 'COMMIT' AND state = 'active'")" = 1 ]; then
		break
	fi
	sleep 0.05
done
sleep 0.3
q "SELECT pg_cancel_backend($backend)" >/dev/null
wait "$cpid" || true
check "pg_cancel_backend while COMMIT waits for a reader's lock: 57014" \
	"ERROR:  57014: canceling statement due to user request" \
	"$(grep ERROR "$tmp/cancel.out" || true)"
check "... neither shard committed" "0 0" \
	"$(sq shards/j1.db "SELECT count(*) FROM t WHERE id = 211") $(sq shards/j2.db "SELECT count(*) FROM t WHERE id = 212")"
release
check "with the reader gone, the same transaction commits both" "ok" \
	"$(q_state -c "BEGIN" -c "INSERT INTO t VALUES ('c', 221, 'j1'), ('e', 222, 'j2')" -c "COMMIT")"
check "... both shards hold it" "1 1" \
	"$(sq shards/j1.db "SELECT count(*) FROM t WHERE id = 221") $(sq shards/j2.db "SELECT count(*) FROM t WHERE id = 222")"

#
# 3. SERIALIZABLE: a pivot doomed by another transaction's commit.
#	T0 reads y and writes z; T2 reads x, writes y (T0 -> T2) and the
#	shard; T1 writes x (T2 -> T1) and commits first, which dooms T2.
#
# session NAME: a psql reading statements from a FIFO; say NAME SQL sends
# one, and waits until it ran (its \echo marker is printed).
declare -A sess_fd
session()
{
	mkfifo "$tmp/$1.in"
	psql -X -q -A -t -v VERBOSITY=verbose <"$tmp/$1.in" >"$tmp/$1.out" 2>&1 &
	helpers+=($!)
	exec {fd}>"$tmp/$1.in"
	sess_fd[$1]=$fd
}
say_n=0
say()
{
	local _
	say_n=$((say_n + 1))
	printf '%s\n\\echo done %d\n' "$2" "$say_n" >&"${sess_fd[$1]}"
	for _ in $(seq 1 200); do
		grep -q "^done $say_n\$" "$tmp/$1.out" 2>/dev/null && return 0
		sleep 0.05
	done
	echo "session $1 did not run: $2" >&2
	return 1
}
session t0
session t1
session t2
say t0 "BEGIN ISOLATION LEVEL SERIALIZABLE; SELECT sum(v) FROM y; UPDATE z SET v = v + 1;"
say t1 "BEGIN ISOLATION LEVEL SERIALIZABLE; SELECT 1;"
say t2 "BEGIN ISOLATION LEVEL SERIALIZABLE; SELECT sum(v) FROM x; UPDATE y SET v = v + 1; INSERT INTO t VALUES ('a', 301, 'pivot');"
say t1 "UPDATE x SET v = v + 1; COMMIT;"
say t2 "COMMIT;"
say t0 "ROLLBACK;"
check "SERIALIZABLE: the doomed transaction's COMMIT fails with 40001" \
	"1" "$(grep -c 'ERROR:  40001' "$tmp/t2.out" || true)"
check "... and leaves no row in the shard" "0" \
	"$(sq shards/w1.db "SELECT count(*) FROM t WHERE id = 301")"
check "... the transaction it lost to committed" "1" "$(q "SELECT v FROM x")"
check "SERIALIZABLE: a transaction that wrote shards commits" "ok" \
	"$(q_state -c "BEGIN ISOLATION LEVEL SERIALIZABLE" \
		-c "INSERT INTO t VALUES ('a', 302, 's'), ('b', 303, 's')" -c "COMMIT")"

#
# 4. SIGKILL between two shard commits.
#
check "a commit of two shards leaves nothing in the log" "0" \
	"$(q "SELECT count(*) FROM shard_commits('cm')")"
psql -X -q -A -t -c "SET sqlite_shard_fdw.commit_pause_ms = 30000" \
	-c "SELECT pg_backend_pid()" -c "BEGIN" \
	-c "INSERT INTO t VALUES ('a', 401, 'w1'), ('b', 402, 'w2')" \
	-c "COMMIT" >"$tmp/kill.out" 2>&1 &
kpid=$!
helpers+=("$kpid")
logged=
for _ in $(seq 1 200); do
	logged=$(sqlite3 -bail -list -noheader -cmd ".timeout 2000" \
		"$d/directory.db.commits" \
		"SELECT group_concat(committed, '') FROM (SELECT committed FROM commit_shards ORDER BY position)" 2>/dev/null || true)
	[ "$logged" = "10" ] && break
	sleep 0.05
done
check "the commit log marks the first shard committed, the second not" "10" "$logged"
check "shard_commits() while it sleeps between the shards: in progress" \
	"in progress|1|w1|t
in progress|2|w2|f" \
	"$(q "SELECT state, commit_order, shard_id, committed FROM shard_commits('cm')")"
backend=$(head -n 1 "$tmp/kill.out")
# announced, so that the test driver does not take it for a crash
psql -X -q -c "DO \$\$ BEGIN RAISE LOG 'sqlite_shard_fdw test kills backend $backend'; END \$\$" >/dev/null
kill -9 "$backend"
wait "$kpid" 2>/dev/null || true
wait_server
check "after the restart, shard_commits() reports the commit interrupted" \
	"interrupted|1|w1|t
interrupted|2|w2|f" \
	"$(q "SELECT state, commit_order, shard_id, committed FROM shard_commits('cm')")"
check "... as the shards hold: w1 has the row, w2 not" "1 0" \
	"$(q "SELECT count(*) FROM t WHERE tenant_id = 'a' AND id = 401") $(q "SELECT count(*) FROM t WHERE tenant_id = 'b' AND id = 402")"
id=$(q "SELECT DISTINCT commit_id FROM shard_commits('cm')")
check "shard_commit_forget() removes it" "t 0" \
	"$(q "SELECT shard_commit_forget('cm', $id)") $(q "SELECT count(*) FROM shard_commits('cm')")"

#
# 5. A write that races a move's cutover.
#
psql -X -q -A -t -c "SET sqlite_shard_fdw.move_pause_at = 'fenced'" \
	-c "SELECT pg_backend_pid()" -c "SELECT tenant_move('cm', 'm', 'w2')" \
	>"$tmp/move.out" 2>"$tmp/move.err" &
mpid=$!
helpers+=("$mpid")
for _ in $(seq 1 200); do
	grep -q 'paused at "fenced"' "$tmp/move.err" 2>/dev/null && break
	sleep 0.05
done
err=$(psql -X -q -A -t -v VERBOSITY=verbose \
	-c "INSERT INTO t VALUES ('m', 2, 'raced')" 2>&1 >/dev/null || true)
check "a write while the source is fenced and the directory not flipped: 40001" \
	"40001" "$(sed -n 's/^ERROR:  \([0-9A-Z]\{5\}\):.*/\1/p' <<<"$err")"
check "... with a hint to retry" "1" "$(grep -c '^HINT:.*retried' <<<"$err" || true)"
q "SELECT pg_cancel_backend($(head -n 1 "$tmp/move.out"))" >/dev/null
wait "$mpid" 2>/dev/null || true
q "SELECT tenant_move('cm', 'm', 'w2')" >/dev/null 2>&1
check "once the move finished, the retry writes the new shard" "ok 1" \
	"$(q_state -c "INSERT INTO t VALUES ('m', 2, 'retried')") $(sq shards/w2.db "SELECT count(*) FROM t WHERE tenant_id = 'm' AND id = 2")"

script_end
