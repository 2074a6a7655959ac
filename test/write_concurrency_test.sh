#!/usr/bin/env bash
#
# test/write_concurrency_test.sh
#	Writes through PostgreSQL while another process writes the same shard,
#	in WAL mode and in rollback-journal mode:
#
#	1. An application process (python3's sqlite3 module) inserts rows into
#	   the shard in short transactions, in a loop, holding its write lock
#	   a little longer now and then, while two psql sessions insert rows
#	   of the same tenant through the foreign table (autocommit single-
#	   and multi-row INSERTs, COPY, and explicit transactions).  With a
#	   busy_timeout_ms large enough, every statement succeeds (some after
#	   waiting for the application's lock), and each row of the three
#	   writers is in the shard exactly once.
#	2. The application holds BEGIN EXCLUSIVE longer than a server's
#	   busy_timeout_ms (300): an INSERT, a COPY and an INSERT inside a
#	   transaction block fail with 55P03 naming the shard, within a few
#	   times the timeout, and nothing of them is written, neither on the
#	   locked shard nor on the other shard the statement or the
#	   transaction wrote first.  Once the lock is gone, the same session
#	   writes again.
#	3. Two PostgreSQL sessions write the shard inside explicit transactions:
#	   the second one's INSERT waits for the first one's COMMIT, then
#	   succeeds (also after it read the shard in the transaction, under
#	   READ COMMITTED).  Under REPEATABLE READ, a read while the first one
#	   holds the lock fixes the second one's snapshot, which cannot become
#	   a write transaction: its INSERT fails at once with a serialization
#	   failure (40001), the first one commits, and a retry succeeds.
#
# Run by test/run_suites.sh inside a throw-away cluster, with PGDATABASE
# set to a fresh database.  Run by hand (PGDATABASE unset or "postgres"),
# it uses its own database ssfdw_wconc, made afresh.  The fleet lives in a
# new /tmp/ssfdw_wconc.XXXXXX folder, removed at the end.  Takes about 20
# seconds and stops by itself after 60; its helper processes are killed on
# exit.  Prints one line per check, then "N passed, M failed"; exits
# non-zero if anything failed.

set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export LC_ALL=C.UTF-8
source test/fixtures/common.sh

# The whole test runs under a time limit of its own: this script runs
# itself again under timeout, which ends it (and its helpers, through the
# trap below) after 60 s.
if [ -z "${WCONC_INNER:-}" ]; then
	if [ -z "${PGDATABASE:-}" ] || [ "$PGDATABASE" = "postgres" ]; then
		psql -X -q -d postgres -c 'DROP DATABASE IF EXISTS ssfdw_wconc' \
			-c 'CREATE DATABASE ssfdw_wconc'
		export PGDATABASE=ssfdw_wconc
	fi
	rc=0
	WCONC_INNER=1 timeout --kill-after=5 60 bash "${BASH_SOURCE[0]}" || rc=$?
	if [ "$rc" -eq 124 ]; then
		echo "the test did not finish within 60 s"
		echo "0 passed, 1 failed"
	fi
	exit "$rc"
fi

tmp=$(mktemp -d -t ssfdw_wconc.XXXXXX)
chmod 0777 "$tmp"
helpers=()

cleanup()
{
	local p
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

# The application: a separate OS process (as the server's OS user when run
# as root, since a WAL database's -wal and -shm files are shared with the
# server's backends).
#	app.py loop DB TENANT STOPFILE READYFILE RESULT: insert rows (src
#		'app', n = 1, 2, ...) of TENANT in transactions of 1 to 5 rows,
#		every 5th one holding the write lock 0.25 s before its commit,
#		until STOPFILE exists; RESULT gets "ROWS TRANSACTIONS" (or ERROR).
#	app.py hold DB STOPFILE READYFILE RESULT: BEGIN EXCLUSIVE, create
#		READYFILE, keep the lock until STOPFILE exists (at most 20 s).
cat >"$tmp/app.py" <<'PY'
import os, pwd, random, sqlite3, sys, time

if os.geteuid() == 0:
    try:
        pw = pwd.getpwnam("postgres")
        os.setgid(pw.pw_gid)
        os.setuid(pw.pw_uid)
    except KeyError:
        pass

mode, db = sys.argv[1], sys.argv[2]
if mode == "loop":
    tenant, stopfile, readyfile, result = sys.argv[3:7]
else:
    stopfile, readyfile, result = sys.argv[3:6]
out = ""
try:
    con = sqlite3.connect(db, timeout=30, isolation_level=None)
    con.execute("PRAGMA busy_timeout = 30000")
    if mode == "loop":
        rng = random.Random(3)
        rows = txns = 0
        deadline = time.monotonic() + 30
        while not os.path.exists(stopfile) and time.monotonic() < deadline:
            k = rng.randint(1, 5)
            con.execute("BEGIN IMMEDIATE")
            con.executemany(
                "INSERT INTO ev(tenant_id, src, n) VALUES (?, 'app', ?)",
                [(tenant, rows + i + 1) for i in range(k)])
            if txns % 5 == 4:
                time.sleep(0.25)
            con.execute("COMMIT")
            rows += k
            txns += 1
            if txns == 1:
                open(readyfile, "w").close()
            time.sleep(rng.uniform(0, 0.004))
        out = "%d %d" % (rows, txns)
    else:
        con.execute("BEGIN EXCLUSIVE")
        open(readyfile, "w").close()
        deadline = time.monotonic() + 20
        while not os.path.exists(stopfile) and time.monotonic() < deadline:
            time.sleep(0.02)
        con.execute("ROLLBACK")
        out = "held"
    con.close()
except Exception as e:
    out = "ERROR %r" % (e,)
    if not os.path.exists(readyfile):
        open(readyfile, "w").close()
with open(result + ".tmp", "w") as fh:
    fh.write(out + "\n")
os.rename(result + ".tmp", result)
PY

# app_start NAME ARGS...: start app.py in the background, its files named
# after NAME, and wait until it is ready.
app_start()
{
	local name=$1 _
	shift
	rm -f "$tmp/$name.stop" "$tmp/$name.ready" "$tmp/$name.result"
	python3 "$tmp/app.py" "$1" "$2" "${@:3}" "$tmp/$name.stop" \
		"$tmp/$name.ready" "$tmp/$name.result" \
		</dev/null >"$tmp/$name.log" 2>&1 &
	helpers+=($!)
	eval "app_pid_$name=$!"
	for _ in $(seq 1 200); do
		[ -e "$tmp/$name.ready" ] && return 0
		sleep 0.05
	done
	echo "the application process $name did not start:" >&2
	cat "$tmp/$name.log" >&2
	return 1
}

# app_stop NAME: tell app.py NAME to stop, wait for it; app_result is its
# result.
app_stop()
{
	local name=$1 pid
	pid=$(eval "echo \$app_pid_$name")
	touch "$tmp/$name.stop"
	wait "$pid" 2>/dev/null || true
	app_result=$(cat "$tmp/$name.result" 2>/dev/null || echo "ERROR no result")
}

#
# The fleet: shard cw (WAL) holds tenant tw, cj (rollback journal) tj.
#
d="$tmp/fleet"
mkdir -p "$d/shards"
fx_directory "$d"
for s in cw cj; do
	fx_sqlite "$d/shards/$s.db" \
		"CREATE TABLE ev(tenant_id TEXT NOT NULL, src TEXT NOT NULL,
		 n INTEGER NOT NULL, note TEXT);"
	fx_add_shard "$d" "$s" "shards/$s.db"
done
fx_sqlite "$d/shards/cw.db" "PRAGMA journal_mode = WAL;"
fx_add_tenant "$d" tw cw
fx_add_tenant "$d" tj cj
fx_done "$d"

psql -X -q -v ON_ERROR_STOP=1 <<SQL >/dev/null
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS sqlite_shard_fdw CASCADE;
CREATE EXTENSION sqlite_shard_fdw;
CREATE SERVER wc FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '$d/directory.db', busy_timeout_ms '20000');
CREATE FOREIGN TABLE ev (tenant_id text, src text, n bigint, note text)
  SERVER wc OPTIONS (table 'ev');
CREATE SERVER wc_short FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '$d/directory.db', busy_timeout_ms '300');
CREATE FOREIGN TABLE ev_short (tenant_id text, src text, n bigint, note text)
  SERVER wc_short OPTIONS (table 'ev');
SQL

passed=0
failed=0
result()
{
	if [ "$1" = ok ]; then
		echo "ok      $2"
		passed=$((passed + 1))
	else
		echo "FAILED  $2"
		failed=$((failed + 1))
		if [ -n "${3:-}" ]; then
			echo "$3" | sed 's/^/        /' | head -n 30
		fi
	fi
}

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
below() { awk -v x="$1" -v lim="$2" 'BEGIN { exit !(x < lim) }'; }

# q SQL: one value from a statement.
q()
{
	psql -X -q -A -t -v ON_ERROR_STOP=1 -c "$1"
}

# shard_sql SHARD SQL: run SQL on a shard file with the sqlite3 CLI (not
# through the server), as the server's OS user (a WAL file's -wal and -shm
# files must stay the server's).
shard_sql()
{
	if [ "$(id -u)" -eq 0 ] && id postgres >/dev/null 2>&1; then
		runuser -u postgres -- sqlite3 -bail "$d/shards/$1.db" \
			".timeout 10000" "$2"
	else
		sqlite3 -bail "$d/shards/$1.db" ".timeout 10000" "$2"
	fi
}

# shard_count SHARD WHERE: rows of the shard file matching WHERE.
shard_count()
{
	shard_sql "$1" "SELECT count(*) FROM ev WHERE $2;"
}

# session_script SRC TENANT: the statements of one PostgreSQL writer: 600
# rows of TENANT (src SRC, n = 1 .. 600) in autocommit INSERTs of one and
# of five rows, COPYs of five rows and transaction blocks of two INSERTs,
# each statement's time shown (\\timing).
session_script()
{
	local src=$1 tenant=$2 n=0 i k
	echo "\\set ON_ERROR_STOP 1"
	echo "\\timing on"
	for i in $(seq 1 40); do
		n=$((n + 1))
		echo "INSERT INTO ev VALUES ('$tenant', '$src', $n, 'one');"
		echo "INSERT INTO ev SELECT '$tenant', '$src', g, 'five'" \
			"FROM generate_series($((n + 1)), $((n + 5))) g;"
		n=$((n + 5))
		echo "COPY ev FROM STDIN;"
		for k in 1 2 3 4 5; do
			printf '%s\t%s\t%d\tcopy\n' "$tenant" "$src" $((n + k))
		done
		echo "\\."
		n=$((n + 5))
		echo "BEGIN;"
		echo "INSERT INTO ev VALUES ('$tenant', '$src', $((n + 1)), 'txn'),"
		echo "  ('$tenant', '$src', $((n + 2)), 'txn');"
		echo "INSERT INTO ev VALUES ('$tenant', '$src', $((n + 3)), 'txn'),"
		echo "  ('$tenant', '$src', $((n + 4)), 'txn');"
		echo "COMMIT;"
		n=$((n + 4))
	done
	echo "SELECT 'rows written: $n';"
}

# counts TENANT SRC: "rows distinct min max" of one writer's rows, through
# the foreign table.
counts()
{
	q "SELECT count(*) || ' ' || count(DISTINCT n) || ' ' ||
		coalesce(min(n), 0) || ' ' || coalesce(max(n), 0)
	   FROM ev WHERE tenant_id = '$1' AND src = '$2'"
}

#
# 1. Two PostgreSQL sessions and the application write one shard.
#
for mode in wal journal; do
	if [ "$mode" = wal ]; then s=cw t=tw; else s=cj t=tj; fi
	session_script "pg1_$mode" "$t" >"$tmp/pg1.sql"
	session_script "pg2_$mode" "$t" >"$tmp/pg2.sql"
	app_start loop loop "$d/shards/$s.db" "$t"
	t0=$(now)
	psql -X -q -A -t -f "$tmp/pg1.sql" >"$tmp/pg1.out" 2>&1 &
	p1=$!
	helpers+=("$p1")
	psql -X -q -A -t -f "$tmp/pg2.sql" >"$tmp/pg2.out" 2>&1 &
	p2=$!
	helpers+=("$p2")
	rc1=0
	rc2=0
	wait "$p1" || rc1=$?
	wait "$p2" || rc2=$?
	elapsed=$(secs "$t0" "$(now)")
	app_stop loop
	app=$app_result
	if [ "$rc1" -eq 0 ] && [ "$rc2" -eq 0 ] &&
	   grep -q '^rows written: 600$' "$tmp/pg1.out" &&
	   grep -q '^rows written: 600$' "$tmp/pg2.out"; then
		result ok "$mode: two sessions insert while the application writes shard $s (${elapsed} s)"
	else
		result failed "$mode: two sessions insert while the application writes shard $s" \
			"$(printf 'session 1 (exit %s):\n%s\nsession 2 (exit %s):\n%s' \
				"$rc1" "$(tail -n 5 "$tmp/pg1.out")" \
				"$rc2" "$(tail -n 5 "$tmp/pg2.out")")"
	fi
	# the longest statement of the sessions: some waited for the lock the
	# application held a while
	longest=$(cat "$tmp/pg1.out" "$tmp/pg2.out" |
			  sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | sort -n | tail -n 1)
	if [ -n "$longest" ] && ! below "$longest" 50; then
		result ok "$mode: some statements waited for the application's lock (the longest took $longest ms)"
	else
		result failed "$mode: no statement waited for the application's lock (the longest took ${longest:-?} ms)"
	fi
	if [[ "$app" =~ ^([0-9]+)\ ([0-9]+)$ ]] && [ "${BASH_REMATCH[2]}" -gt 1 ]; then
		arows=${BASH_REMATCH[1]}
		result ok "$mode: the application committed ${BASH_REMATCH[2]} transactions meanwhile"
	else
		arows=-1
		result failed "$mode: the application's writes" "$app"
	fi
	got="$(counts "$t" "pg1_$mode") | $(counts "$t" "pg2_$mode") | $(counts "$t" app)"
	want="600 600 1 600 | 600 600 1 600 | $arows $arows 1 $arows"
	if [ "$got" = "$want" ]; then
		result ok "$mode: every row of the three writers is there exactly once"
	else
		result failed "$mode: every row of the three writers is there exactly once" \
			"want (rows, distinct, min, max per writer): $want
got: $got"
	fi
	direct=$(shard_count "$s" "tenant_id = '$t'")
	if [ "$direct" = "$((1200 + arows))" ] &&
	   [ "$(shard_sql "$s" 'PRAGMA integrity_check;')" = ok ]; then
		result ok "$mode: the shard file holds those $direct rows and passes integrity_check"
	else
		result failed "$mode: the shard file holds $direct rows, want $((1200 + arows))"
	fi
done

#
# 2. The application holds the shard longer than busy_timeout_ms (300).
#
# run SQL: a psql script, errors shown as "ERROR:  SQLSTATE: message";
# sets out and elapsed.
run()
{
	local t0
	t0=$(now)
	out=$(printf '\\set VERBOSITY verbose\n%s\n' "$1" |
		  psql -X -q -A -t 2>&1 || true)
	elapsed=$(secs "$t0" "$(now)")
}

# expect WHAT PATTERN COUNT MAXSECS: the last run printed PATTERN (grep -E)
# COUNT times, within MAXSECS.
expect()
{
	local n
	n=$(echo "$out" | grep -c -E -- "$2" || true)
	if [ "$n" -eq "$3" ] && below "$elapsed" "$4"; then
		result ok "$1 (${elapsed} s)"
	else
		result failed "$1: took ${elapsed} s (at most $4), want $3 lines matching $2:" "$out"
	fi
}

for mode in wal journal; do
	if [ "$mode" = wal ]; then
		s=cw t=tw other=cj ot=tj
	else
		s=cj t=tj other=cw ot=tw
	fi
	src="short_$mode"
	app_start hold hold "$d/shards/$s.db"
	# The other shard first, in the statement and in the transaction.  (The
	# count of the other shard's rows runs over a subquery: an aggregate
	# is planned from the first shard's schema, cj's, which cannot be read
	# while the application holds cj in rollback-journal mode.)
	run "INSERT INTO ev_short VALUES ('$ot', '$src', 1, NULL), ('$t', '$src', 2, NULL);
COPY ev_short FROM STDIN;
$t	$src	3	\\N
$t	$src	4	\\N
\\.
BEGIN;
INSERT INTO ev_short VALUES ('$ot', '$src', 5, NULL);
INSERT INTO ev_short VALUES ('$t', '$src', 6, NULL);
COMMIT;
SELECT 'other shard: ' || count(*) FROM (SELECT n FROM ev_short
  WHERE tenant_id = '$ot' AND src = '$src' OFFSET 0) x;
\\! touch $tmp/hold.stop; sleep 0.3
INSERT INTO ev_short VALUES ('$ot', '$src', 7, NULL), ('$t', '$src', 8, NULL);
SELECT 'written: ' || string_agg(n::text, ',' ORDER BY n) FROM ev_short WHERE src = '$src';"
	expect "$mode: INSERT, COPY and INSERT in a transaction fail with 55P03 naming shard $s" \
		"ERROR:  55P03: shard \"$s\" is locked" 3 6
	expect "$mode: the session reads the other shard without those rows" \
		"^other shard: 0$" 1 6
	expect "$mode: once the lock is gone the same session writes both shards" \
		"^written: 7,8$" 1 6
	app_stop hold
	if [ "$(shard_count "$s" "src = '$src'")" = 1 ] &&
	   [ "$(shard_count "$other" "src = '$src'")" = 1 ]; then
		result ok "$mode: nothing of the failed statements is in shard $s or $other"
	else
		result failed "$mode: rows of the failed statements were written" \
			"$(shard_sql "$s" "SELECT * FROM ev WHERE src = '$src'")
$(shard_sql "$other" "SELECT * FROM ev WHERE src = '$src'")"
	fi
done

#
# 3. Two PostgreSQL sessions, one shard, explicit transactions.
#
# serial MODE ISOLATION READ_FIRST TAG: session A inserts a row (src
# a_TAG), sleeps 1.5 s and commits; session B, started while A sleeps,
# begins a transaction at ISOLATION, reads the shard if READ_FIRST is 1,
# inserts a row (src b_TAG) and commits.  Sets a_out and b_out to their
# output, in which a_commit is the server's clock just before A's COMMIT,
# b_start and b_inserted before and after B's INSERT.
serial()
{
	local mode=$1 iso=$2 read_first=$3 tag=$4 t app pid="" _ a
	if [ "$mode" = wal ]; then t=tw; else t=tj; fi
	app="wconc_a_$tag"
	printf '%s\n' "\\set ON_ERROR_STOP 1" "SET application_name = '$app';" \
		"BEGIN;" \
		"INSERT INTO ev VALUES ('$t', 'a_$tag', 1, NULL);" \
		"SELECT pg_sleep(1.5);" \
		"SELECT 'a_commit ' || extract(epoch FROM clock_timestamp());" \
		"COMMIT;" |
		psql -X -q -A -t >"$tmp/a.out" 2>&1 &
	a=$!
	helpers+=("$a")
	for _ in $(seq 1 100); do
		pid=$(q "SELECT pid FROM pg_stat_activity WHERE application_name = '$app'
			AND query LIKE '%pg_sleep%' AND state = 'active'")
		[ -n "$pid" ] && break
		sleep 0.05
	done
	{
		echo "\\set VERBOSITY verbose"
		echo "BEGIN ISOLATION LEVEL $iso;"
		if [ "$read_first" = 1 ]; then
			echo "SELECT 'b_read ' || count(*) FROM ev WHERE tenant_id = '$t';"
		fi
		echo "SELECT 'b_start ' || extract(epoch FROM clock_timestamp());"
		echo "INSERT INTO ev VALUES ('$t', 'b_$tag', 1, NULL);"
		echo "SELECT 'b_inserted ' || extract(epoch FROM clock_timestamp());"
		echo "COMMIT;"
	} | psql -X -q -A -t >"$tmp/b.out" 2>&1 || true
	wait "$a" || true
	a_out=$(cat "$tmp/a.out")
	b_out=$(cat "$tmp/b.out")
}

# field NAME TEXT: the number after "NAME " in TEXT.
field() { echo "$2" | sed -n "s/^$1 //p" | head -n 1; }

# rows_of TAG: the sources of the rows serial TAG left, "a_TAG,b_TAG".
rows_of()
{
	q "SELECT string_agg(src, ',' ORDER BY src) FROM ev WHERE src IN ('a_$1', 'b_$1')"
}

for mode in wal journal; do
	for read_first in 0 1; do
		label="$mode, READ COMMITTED"
		[ "$read_first" = 1 ] && label="$label, after a read"
		tag="rc_${mode}_$read_first"
		serial "$mode" "READ COMMITTED" "$read_first" "$tag"
		ac=$(field a_commit "$a_out")
		bs=$(field b_start "$b_out")
		bi=$(field b_inserted "$b_out")
		if [ -n "$ac" ] && [ -n "$bs" ] && [ -n "$bi" ] &&
		   ! below "$bi" "$ac" && ! below "$(secs "$bs" "$bi")" 0.5 &&
		   ! echo "$b_out" | grep -q ERROR; then
			result ok "$label: the second session's INSERT waits for the first one's COMMIT ($(secs "$bs" "$bi") s), then succeeds"
		else
			result failed "$label: the second session's INSERT waits for the first one's COMMIT, then succeeds" \
				"session A: $a_out
session B: $b_out"
		fi
		got=$(rows_of "$tag")
		if [ "$got" = "a_$tag,b_$tag" ]; then
			result ok "$label: both rows are there"
		else
			result failed "$label: both rows are there" "got: $got"
		fi
	done

	# REPEATABLE READ: B's read snapshot, taken while A holds the write
	# lock, cannot become a write transaction (SQLite does not wait for
	# the lock there: the reader would block A's commit in rollback-journal
	# mode, and would miss A's rows in WAL mode).  B fails with 40001, A
	# commits, and B's retry succeeds.
	tag="rr_$mode"
	serial "$mode" "REPEATABLE READ" 1 "$tag"
	got=$(rows_of "$tag")
	if echo "$b_out" | grep -q -E 'ERROR:  40001: could not serialize a write to shard' &&
	   [ "$got" = "a_$tag" ] && ! echo "$a_out" | grep -q ERROR &&
	   [ -n "$(field a_commit "$a_out")" ]; then
		result ok "$mode, REPEATABLE READ after a read: the second session's INSERT fails with 40001, the first one commits"
	else
		result failed "$mode, REPEATABLE READ after a read: the second session's INSERT fails with 40001, the first one commits" \
			"session A: $a_out
session B: $b_out
rows: $got"
	fi
	t=$([ "$mode" = wal ] && echo tw || echo tj)
	run "BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT n FROM ev WHERE tenant_id = '$t' AND src = 'a_$tag';
INSERT INTO ev VALUES ('$t', 'b_$tag', 1, 'retry');
COMMIT;
SELECT 'rows: ' || string_agg(src, ',' ORDER BY src) FROM ev
  WHERE src IN ('a_$tag', 'b_$tag');"
	expect "$mode, REPEATABLE READ: the second session's retry succeeds" \
		"^rows: a_$tag,b_$tag$" 1 10
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
