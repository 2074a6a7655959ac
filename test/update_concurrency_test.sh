#!/usr/bin/env bash
#
# test/update_concurrency_test.sh
#	Single UPDATE and DELETE statements in autocommit against a shard that
#	another process writes all the time (docs/reference/writes.md):
#	none may fail with a serialization failure (40001).
#
#	An application process (python3's sqlite3 module) inserts and updates
#	its own rows of the shard in short write transactions without pause,
#	while psql sessions of five statements each change tenant rows
#	through the foreign table:
#
#	1. 1,000 UPDATE and DELETE statements that run inside the shard
#	   (200 sessions of 5, every session's first statement planned afresh,
#	   so that planning reads the shard for its row estimate);
#	2. 500 row-by-row UPDATEs, whose condition PostgreSQL evaluates
#	   (v::text ~ '...'), so that the statement reads the rows before it
#	   writes them (100 sessions of 5);
#
#	in WAL mode and in rollback-journal mode.  Every statement must
#	succeed (busy_timeout_ms is long enough for any lock wait), and the
#	rows must hold what the statements wrote.
#
# Run by test/run_suites.sh inside a throw-away cluster, with PGDATABASE
# set to a fresh database.  Run by hand (PGDATABASE unset or "postgres"),
# it uses its own database ssfdw_uconc, made afresh.  The fleet lives in a
# new /tmp/ssfdw_uconc.XXXXXX folder, removed at the end.  Stops by itself
# after 400 s; its helper processes are killed on exit.  Prints one line
# per check, then "N passed, M failed"; exits non-zero if anything failed.

set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export LC_ALL=C.UTF-8
source test/fixtures/common.sh

source test/script_common.sh
script_limit ssfdw_uconc 400
script_tmp ssfdw_uconc

# The application: writes rows of tenant "app" (ids from 1,000,000 up, after
# those of its earlier runs) in
# transactions of one INSERT and one UPDATE, back to back, until STOPFILE
# exists; RESULT gets the number of transactions (or ERROR ...).
{ echo "import sqlite3, sys, time"; echo "$as_server_user"; cat; } \
	>"$tmp/app.py" <<'PY'

db, stopfile, readyfile, result = sys.argv[1:5]
out = ""
try:
    con = sqlite3.connect(db, timeout=60, isolation_level=None)
    con.execute("PRAGMA busy_timeout = 60000")
    n = con.execute("SELECT coalesce(max(id) - 999999, 0) FROM t "
                    "WHERE tenant_id = 'app'").fetchone()[0]
    first = n
    deadline = time.monotonic() + 300
    while not os.path.exists(stopfile) and time.monotonic() < deadline:
        con.execute("BEGIN IMMEDIATE")
        con.execute("INSERT INTO t(tenant_id, id, v, w) VALUES ('app', ?, 0, 'app')",
                    (1000000 + n,))
        con.execute("UPDATE t SET v = v + 1 WHERE tenant_id = 'app' AND id = 1000000")
        con.execute("COMMIT")
        n += 1
        if n == first + 1:
            open(readyfile, "w").close()
        time.sleep(0.0005)
    out = "%d" % (n - first)
    con.close()
except Exception as e:
    out = "ERROR %r" % (e,)
    if not os.path.exists(readyfile):
        open(readyfile, "w").close()
with open(result + ".tmp", "w") as fh:
    fh.write(out + "\n")
os.rename(result + ".tmp", result)
PY

app_pid=
app_start()
{
	local _
	rm -f "$tmp/app.stop" "$tmp/app.ready" "$tmp/app.result"
	python3 "$tmp/app.py" "$1" "$tmp/app.stop" "$tmp/app.ready" \
		"$tmp/app.result" </dev/null >"$tmp/app.log" 2>&1 &
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

app_stop()
{
	touch "$tmp/app.stop"
	wait "$app_pid" 2>/dev/null || true
	app_result=$(cat "$tmp/app.result" 2>/dev/null || echo "ERROR no result")
}

#
# The fleet: shard uw (WAL) holds tenant a, uj (rollback journal) tenant
# b; 1,000 rows each (id 1 .. 1000, v = id).
#
d="$tmp/fleet"
mkdir -p "$d/shards"
fx_directory "$d"
for s in uw uj; do
	fx_sqlite "$d/shards/$s.db" \
		"CREATE TABLE t(tenant_id TEXT NOT NULL, id INTEGER NOT NULL,
		 v INTEGER, w TEXT, PRIMARY KEY (tenant_id, id));"
	fx_add_shard "$d" "$s" "shards/$s.db"
done
fx_sqlite "$d/shards/uw.db" "PRAGMA journal_mode = WAL;"
fx_sqlite "$d/shards/uw.db" "WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL
	SELECT i + 1 FROM g WHERE i < 1000)
	INSERT INTO t SELECT 'a', i, i, 'start' FROM g;"
fx_sqlite "$d/shards/uj.db" "WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL
	SELECT i + 1 FROM g WHERE i < 1000)
	INSERT INTO t SELECT 'b', i, i, 'start' FROM g;"
fx_add_tenant "$d" a uw
fx_add_tenant "$d" b uj
fx_add_tenant "$d" app uw
fx_done "$d"

psql -X -q -v ON_ERROR_STOP=1 <<SQL >/dev/null
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS sqlite_shard_fdw CASCADE;
CREATE EXTENSION sqlite_shard_fdw;
CREATE SERVER uc FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '$d/directory.db', busy_timeout_ms '60000');
CREATE FOREIGN TABLE t (tenant_id text, id bigint, v bigint, w text)
  SERVER uc OPTIONS (table 't');
SQL

# The plans the statements get: run inside the shard, and row by row.
plan_direct=$(q "EXPLAIN (VERBOSE, COSTS OFF)
	UPDATE t SET w = 'direct' WHERE tenant_id = 'a' AND id = 1")
plan_rows=$(q "EXPLAIN (VERBOSE, COSTS OFF)
	UPDATE t SET w = 'rows' WHERE tenant_id = 'a' AND id = 1 AND v::text ~ '^[0-9]+\$'")
if grep -q 'Direct Modify' <<<"$plan_direct" &&
   ! grep -q 'Direct Modify' <<<"$plan_rows"; then
	result ok "the UPDATEs run inside the shard and row by row"
else
	result failed "the UPDATEs run inside the shard and row by row" \
		"$plan_direct"$'\n'"$plan_rows"
fi

# run_sessions NAME SESSIONS: run $tmp/NAME.N.sql for N = 1 .. SESSIONS,
# four sessions at a time, each psql's output (SQLSTATEs of errors) in
# $tmp/NAME.N.out.
run_sessions()
{
	local name=$1 n=$2
	seq 1 "$n" | xargs -P 4 -I{} sh -c \
		"psql -X -q -A -t -v VERBOSITY=sqlstate -f '$tmp/$name.{}.sql' >'$tmp/$name.{}.out' 2>&1 || true"
}

for mode in wal journal; do
	if [ "$mode" = wal ]; then s=uw; ten=a; else s=uj; ten=b; fi

	# 1. 200 sessions of 5: UPDATEs of ids 1 .. 800, DELETEs of 801 .. 1000
	k=0
	for i in $(seq 1 200); do
		{
			echo "\\set VERBOSITY sqlstate"
			for _ in 1 2 3 4 5; do
				k=$((k + 1))
				if [ $k -le 800 ]; then
					echo "UPDATE t SET w = 'direct' WHERE tenant_id = '$ten' AND id = $k;"
				else
					echo "DELETE FROM t WHERE tenant_id = '$ten' AND id = $k;"
				fi
			done
		} >"$tmp/direct.$i.sql"
	done
	app_start "$d/shards/$s.db"
	run_sessions direct 200
	app_stop
	errors=$(cat "$tmp"/direct.*.out | grep -c 'ERROR' || true)
	s40001=$(cat "$tmp"/direct.*.out | grep -c '40001' || true)
	rows=$(q "SELECT count(*) FILTER (WHERE w = 'direct') || ' ' || count(*)
		FROM t WHERE tenant_id = '$ten'")
	if [ "$errors" -eq 0 ] && [ "$rows" = "800 800" ] &&
	   [[ "$app_result" =~ ^[0-9]+$ ]] && [ "$app_result" -gt 0 ]; then
		result ok "$mode: 1,000 UPDATE/DELETE statements in 200 sessions beside a writer ($app_result transactions): 0 failures"
	else
		result failed "$mode: 1,000 UPDATE/DELETE statements in 200 sessions beside a writer" \
			"errors $errors (40001: $s40001), rows updated/left '$rows', application: $app_result
$(cat "$tmp"/direct.*.out | grep -m 5 . || true)"
	fi

	# 2. 100 sessions of 5 row-by-row UPDATEs of ids 1 .. 500
	k=0
	for i in $(seq 1 100); do
		{
			echo "\\set VERBOSITY sqlstate"
			for _ in 1 2 3 4 5; do
				k=$((k + 1))
				echo "UPDATE t SET w = 'rows' WHERE tenant_id = '$ten' AND id = $k AND v::text ~ '^[0-9]+\$';"
			done
		} >"$tmp/rows.$i.sql"
	done
	app_start "$d/shards/$s.db"
	run_sessions rows 100
	app_stop
	errors=$(cat "$tmp"/rows.*.out | grep -c 'ERROR' || true)
	s40001=$(cat "$tmp"/rows.*.out | grep -c '40001' || true)
	rows=$(q "SELECT count(*) FROM t WHERE tenant_id = '$ten' AND w = 'rows'")
	if [ "$errors" -eq 0 ] && [ "$rows" = "500" ] &&
	   [[ "$app_result" =~ ^[0-9]+$ ]] && [ "$app_result" -gt 0 ]; then
		result ok "$mode: 500 row-by-row UPDATEs in 100 sessions beside a writer ($app_result transactions): 0 failures"
	else
		result failed "$mode: 500 row-by-row UPDATEs in 100 sessions beside a writer" \
			"errors $errors (40001: $s40001), rows updated '$rows', application: $app_result
$(cat "$tmp"/rows.*.out | grep -m 5 . || true)"
	fi
	rm -f "$tmp"/direct.* "$tmp"/rows.*
done

script_end
