#!/usr/bin/env bash
#
# test/lockwait_test.sh
#	Waits for a lock held by another process end promptly on a statement
#	timeout, on pg_cancel_backend and on pg_terminate_backend, whether the
#	backend waits (a routed query, the directory) or the fan-out's worker
#	threads do; and a wait that reaches the server's busy_timeout_ms ends
#	with SQLSTATE 55P03 naming the shard or the directory.  Meanwhile
#	another session sees the wait in pg_stat_activity (wait_event_type
#	"Extension"), and the progress of an ANALYZE that waits for a shard in
#	pg_stat_progress_analyze.
#
#	The lock is taken by a separate process (python3's sqlite3 module,
#	BEGIN EXCLUSIVE on a rollback-journal file, which keeps readers out)
#	while the server's busy_timeout_ms is 60000: every wait here would last
#	a minute if nothing ended it.  Elapsed times are checked loosely (a few
#	seconds where the wait would last a minute).
#
#	Also two cases on a bigger fleet, where a shard statement runs for
#	seconds without any lock: a cursor's fan-out stays cancellable after
#	another fan-out of the same transaction used the same shard handles,
#	and a scan on the backend stays cancellable after a fan-out over its
#	shard failed inside a subtransaction.
#
# Run by test/run_suites.sh inside a throw-away cluster, with PGDATABASE
# set to a fresh database.  Run by hand (PGDATABASE unset or "postgres"),
# it uses its own database ssfdw_lockwait, made afresh.  LOCKWAIT_BUSY_MS
# overrides the 60000.  Takes about a minute.  Prints one line per check,
# then "N passed, M failed"; exits non-zero if anything failed.

set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export LC_ALL=C.UTF-8
source test/fixtures/common.sh

if [ -z "${PGDATABASE:-}" ] || [ "$PGDATABASE" = "postgres" ]; then
	psql -X -q -d postgres -c 'DROP DATABASE IF EXISTS ssfdw_lockwait' \
		-c 'CREATE DATABASE ssfdw_lockwait'
	export PGDATABASE=ssfdw_lockwait
fi

BUSY_MS=${LOCKWAIT_BUSY_MS:-60000}

tmp=$(mktemp -d -t ssfdw_lockwait.XXXXXX)

# The lock holder: takes an exclusive lock on each file named, says so by
# creating the ready file, and keeps the locks until it is killed.
cat >"$tmp/hold.py" <<'PY'
import sqlite3, sys, time
ready, paths = sys.argv[1], sys.argv[2:]
conns = []
for p in paths:
    c = sqlite3.connect(p, timeout=30, isolation_level=None)
    c.execute("BEGIN EXCLUSIVE")
    conns.append(c)
open(ready, "w").close()
time.sleep(600)
PY

# hold.sh start FILE... | hold.sh stop: start a holder in the background
# and wait until it holds its locks; stop every holder.  A shell script of
# its own, so that psql can run it (\!) between two statements.
cat >"$tmp/hold.sh" <<SH
#!/usr/bin/env bash
set -euo pipefail
case \$1 in
	start)
		shift
		rm -f "$tmp/ready"
		setsid python3 "$tmp/hold.py" "$tmp/ready" "\$@" \
			</dev/null >"$tmp/hold.log" 2>&1 &
		echo \$! >>"$tmp/holders"
		for _ in \$(seq 1 300); do
			[ -e "$tmp/ready" ] && exit 0
			sleep 0.1
		done
		echo "the lock holder did not start" >&2
		cat "$tmp/hold.log" >&2
		exit 1 ;;
	stop)
		if [ -s "$tmp/holders" ]; then
			while read -r pid; do
				kill "\$pid" 2>/dev/null || true
				while kill -0 "\$pid" 2>/dev/null; do sleep 0.05; done
			done <"$tmp/holders"
		fi
		: >"$tmp/holders" ;;
esac
SH
HOLD="bash $tmp/hold.sh"

bgpids=()
cleanup()
{
	local p
	$HOLD stop || true
	for p in "${bgpids[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	rm -rf "$tmp"
}
trap cleanup EXIT

#
# The fleets.  lockwait: three small rollback-journal shards, and a
# rollback-journal directory (fx_directory makes it WAL).  lockwait_big:
# two shards of two million rows, for statements that run for seconds.
#
d=$(fx_dir lockwait)
fx_directory "$d"
fx_sqlite "$d/directory.db" "PRAGMA journal_mode = DELETE;"
for i in 1 2 3; do
	fx_sqlite "$d/shards/s$i.db" "CREATE TABLE items(tenant_id TEXT, id INTEGER, v INTEGER);
INSERT INTO items VALUES ('t$i', 1, 10), ('t$i', 2, 20);"
	fx_add_shard "$d" "s$i" "shards/s$i.db"
	fx_add_tenant "$d" "t$i" "s$i"
done
fx_done "$d"

b=$(fx_dir lockwait_big)
fx_directory "$b"
for i in 1 2; do
	fx_sqlite "$b/shards/b$i.db" "CREATE TABLE big(tenant_id TEXT, id INTEGER, v INTEGER, flag INTEGER);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 2000000)
INSERT INTO big SELECT 'b$i', x, x, x <= 4000 FROM c;"
	fx_add_shard "$b" "b$i" "shards/b$i.db"
	fx_add_tenant "$b" "b$i" "b$i"
done
fx_done "$b"

psql -X -q -v ON_ERROR_STOP=1 <<SQL >/dev/null
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS sqlite_shard_fdw CASCADE;
CREATE EXTENSION sqlite_shard_fdw;
CREATE SERVER lw FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '$d/directory.db', busy_timeout_ms '$BUSY_MS');
CREATE FOREIGN TABLE items (tenant_id text, id int, v int)
  SERVER lw OPTIONS (table 'items');
CREATE SERVER lw_short FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '$d/directory.db', busy_timeout_ms '300');
CREATE FOREIGN TABLE items_short (tenant_id text, id int, v int)
  SERVER lw_short OPTIONS (table 'items');
CREATE SERVER lw_2s FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '$d/directory.db', busy_timeout_ms '2000');
CREATE FOREIGN TABLE items_2s_a (tenant_id text, id int, v int)
  SERVER lw_2s OPTIONS (table 'items');
CREATE FOREIGN TABLE items_2s_b (tenant_id text, id int, v int)
  SERVER lw_2s OPTIONS (table 'items');
CREATE SERVER lw_big FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '$b/directory.db', busy_timeout_ms '$BUSY_MS');
CREATE FOREIGN TABLE big (tenant_id text, id int, v int, flag int)
  SERVER lw_big OPTIONS (table 'big');
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
	fi
}

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
below() { awk -v x="$1" -v lim="$2" 'BEGIN { exit !(x < lim) }'; }

# run SQL: run a psql script, errors shown with their SQLSTATE; sets out
# and elapsed (seconds).
run()
{
	local t0
	t0=$(now)
	out=$(printf '\\set VERBOSITY verbose\n%s\n' "$1" |
		  timeout 20 psql -X -q -A -t 2>&1 || true)
	elapsed=$(secs "$t0" "$(now)")
}

# expect WHAT PATTERN MAXSECS [MINSECS]: the last run's output matches
# PATTERN (grep -E) and it took less than MAXSECS (and at least MINSECS).
expect()
{
	local what=$1 pattern=$2 max=$3 min=${4:-0}

	if echo "$out" | grep -q -E -- "$pattern" && below "$elapsed" "$max" &&
		! below "$elapsed" "$min"; then
		result ok "$what (${elapsed} s)"
	else
		result failed "$what: took ${elapsed} s (want $min to $max), output:"
		echo "$out" | sed 's/^/        /' | head -n 20
	fi
}

# signal_while_waiting WHAT FUNCTION SQL PATTERN: run SQL in a session of
# its own; once its statement marked /* wait */ has run for a second, send
# it pg_cancel_backend or pg_terminate_backend (FUNCTION), and expect its
# output to match PATTERN within 5 seconds of the signal.
signal_while_waiting()
{
	local what=$1 func=$2 sql=$3 pattern=$4
	local app="lockwait_$RANDOM" pid="" bg t0 _

	printf '\\set VERBOSITY verbose\nSET application_name = %s;\n%s\n' \
		"$app" "$sql" | timeout 20 psql -X -q -A -t >"$tmp/bg.out" 2>&1 &
	bg=$!
	bgpids+=("$bg")
	for _ in $(seq 1 300); do
		pid=$(psql -X -q -A -t -c "SELECT pid FROM pg_stat_activity
			WHERE application_name = '$app' AND state = 'active'
			AND query LIKE '%/* wait */%'
			AND now() - query_start > interval '1 second'")
		[ -n "$pid" ] && break
		sleep 0.1
	done
	if [ -z "$pid" ]; then
		wait "$bg" || true
		out=$(cat "$tmp/bg.out")
		elapsed=0
		result failed "$what: the statement never waited, output:"
		echo "$out" | sed 's/^/        /' | head -n 20
		return
	fi
	t0=$(now)
	psql -X -q -A -t -c "SELECT $func($pid)" >/dev/null
	wait "$bg" || true
	elapsed=$(secs "$t0" "$(now)")
	out=$(cat "$tmp/bg.out")
	expect "$what" "$pattern" 5
}

SLOW="flag = 1"
for i in $(seq 1 250); do
	SLOW+=" OR v = -$i OR id = -$i"
done

#
# A routed query: the backend waits, opening the shard.
#
$HOLD start "$d/shards/s1.db"
run "SET statement_timeout = '1s';
SELECT count(*) FROM items WHERE tenant_id = 't1';"
expect "routed, statement_timeout" "57014: canceling statement due to statement timeout" 10 0.9
signal_while_waiting "routed, pg_cancel_backend" pg_cancel_backend \
	"SELECT /* wait */ count(*) FROM items WHERE tenant_id = 't1';" \
	"57014: canceling statement due to user request"
signal_while_waiting "routed, pg_terminate_backend" pg_terminate_backend \
	"SELECT /* wait */ count(*) FROM items WHERE tenant_id = 't1';" \
	"57P01: terminating connection due to administrator command"

# the same shard opened already: the backend waits in its read
$HOLD stop
run "SELECT count(*) FROM items WHERE tenant_id = 't1';
\\! $HOLD start $d/shards/s1.db
SET statement_timeout = '1s';
SELECT count(*) FROM items WHERE tenant_id = 't1';"
expect "routed over an open handle, statement_timeout" \
	"57014: canceling statement due to statement timeout" 10 0.9

# a wait that reaches busy_timeout_ms
run "SELECT count(*) FROM items_short WHERE tenant_id = 't1';"
expect "routed, busy timeout reached: 55P03 naming the shard" \
	'55P03: shard "s1" is locked' 10
$HOLD stop

# once only: planning a table ANALYZE never saw reads the shard for its
# estimate (items_2s_b's first plan), and the statement fails there
run "SELECT count(*) FROM items_2s_a WHERE tenant_id = 't1';
\\! $HOLD start $d/shards/s1.db
SELECT count(*) FROM items_2s_b WHERE tenant_id = 't1';"
expect "routed, estimate on a locked shard: 55P03 after one busy timeout" \
	'55P03: shard "s1" is locked' 3.5 1.9
$HOLD stop

#
# A fan-out: the shards' handles are open before the lock is taken, so the
# worker threads wait, not the backend.
#
WARM="SET sqlite_shard_fdw.fanout_parallelism = 3;
SELECT count(*) FROM items;
\\! $HOLD start $d/shards/s1.db $d/shards/s2.db"
run "$WARM
SET statement_timeout = '1s';
SELECT count(*) FROM items;
RESET statement_timeout;
\\! $HOLD stop
SELECT 'after: ' || count(*) FROM items;"
expect "fan-out, statement_timeout" \
	"57014: canceling statement due to statement timeout" 10 0.9
expect "fan-out, the session reads again once the lock is gone" \
	"^after: 6$" 10
signal_while_waiting "fan-out, pg_cancel_backend" pg_cancel_backend \
	"$WARM
SELECT /* wait */ count(*) FROM items;" \
	"57014: canceling statement due to user request"
$HOLD stop
signal_while_waiting "fan-out, pg_terminate_backend" pg_terminate_backend \
	"$WARM
SELECT /* wait */ count(*) FROM items;" \
	"57P01: terminating connection due to administrator command"
$HOLD stop
run "SET sqlite_shard_fdw.fanout_parallelism = 3;
SELECT count(*) FROM items_short;
\\! $HOLD start $d/shards/s2.db
SELECT * FROM items_short;"
expect "fan-out, busy timeout reached: 55P03 naming the shard" \
	'55P03: shard "s2" is locked' 10
$HOLD stop

#
# The directory: locked before the session opens it, and after.
#
$HOLD start "$d/directory.db"
run "SET statement_timeout = '1s';
SELECT count(*) FROM items WHERE tenant_id = 't1';"
expect "directory, statement_timeout" \
	"57014: canceling statement due to statement timeout" 10 0.9
signal_while_waiting "directory, pg_terminate_backend" pg_terminate_backend \
	"SELECT /* wait */ count(*) FROM items WHERE tenant_id = 't1';" \
	"57P01: terminating connection due to administrator command"
run "SELECT count(*) FROM items_short WHERE tenant_id = 't1';"
expect "directory, busy timeout reached: 55P03 naming the directory" \
	"55P03: directory \"$d/directory.db\" is locked" 10
$HOLD stop
signal_while_waiting "directory opened already, pg_cancel_backend" \
	pg_cancel_backend \
	"SELECT count(*) FROM items WHERE tenant_id = 't2';
\\! $HOLD start $d/directory.db
SELECT /* wait */ count(*) FROM items WHERE tenant_id = 't1';" \
	"57014: canceling statement due to user request"
$HOLD stop
run "SELECT count(*) FROM items_short WHERE tenant_id = 't2';
\\! $HOLD start $d/directory.db
SELECT count(*) FROM items_short WHERE tenant_id = 't1';"
expect "directory opened already, busy timeout reached: 55P03" \
	"55P03: directory \"$d/directory.db\" is locked" 10
$HOLD stop

#
# Writes: an INSERT waits for another process's lock on its shard, and a
# directory write for a lock on the directory; the same interrupts end
# those waits, and nothing is written by a statement that gave up.
#
$HOLD start "$d/shards/s2.db"
run "SET statement_timeout = '1s';
INSERT INTO items VALUES ('t2', 9, 90);"
expect "insert, statement_timeout" \
	"57014: canceling statement due to statement timeout" 10 0.9
signal_while_waiting "insert, pg_cancel_backend" pg_cancel_backend \
	"INSERT /* wait */ INTO items VALUES ('t2', 9, 90);" \
	"57014: canceling statement due to user request"
run "INSERT INTO items_short VALUES ('t2', 9, 90);"
expect "insert, busy timeout reached: 55P03 naming the shard" \
	'55P03: shard "s2" is locked' 10
$HOLD stop
run "SELECT 'rows: ' || count(*) FROM items WHERE tenant_id = 't2';"
expect "insert, nothing written by the inserts that gave up" "^rows: 2$" 10
run "INSERT INTO items VALUES ('t2', 9, 90);
SELECT 'rows: ' || count(*) FROM items WHERE tenant_id = 't2';"
expect "insert once the lock is gone" "^rows: 3$" 10
$HOLD start "$d/directory.db"
run "SET statement_timeout = '1s';
SELECT tenant_add('lw', 't9', 's1');"
expect "tenant_add, statement_timeout" \
	"57014: canceling statement due to statement timeout" 10 0.9
run "SELECT tenant_add('lw_short', 't9', 's1');"
expect "tenant_add, busy timeout reached: 55P03 naming the directory" \
	"55P03: directory \"$d/directory.db\" is locked" 10
$HOLD stop

#
# No lock, but shard statements that run for seconds (2 million rows, 500
# comparisons each, on each shard).
#
# A cursor's fan-out stops promptly on a statement timeout, even after
# another fan-out of the same transaction read the same shard handles (and
# so, once, took their interrupt handler away).
run "SET sqlite_shard_fdw.fanout_parallelism = 2;
BEGIN;
DECLARE c CURSOR FOR SELECT id FROM big WHERE $SLOW;
FETCH 1 FROM c;
SELECT 'other: ' || count(*) FROM big WHERE flag = 1;
SET LOCAL statement_timeout = '1s';
FETCH ALL FROM c;
ROLLBACK;"
expect "cursor's fan-out after another fan-out on its shards, statement_timeout" \
	"57014: canceling statement due to statement timeout" 3.5 0.9

# A statement the backend runs itself stops promptly after a fan-out over
# its shard failed inside a subtransaction (which once left the handle
# marked as lent to fan-out workers, without its interrupt handler).
run "SET sqlite_shard_fdw.fanout_parallelism = 2;
BEGIN;
SAVEPOINT s;
SELECT id / 0 FROM big;
ROLLBACK TO SAVEPOINT s;
SET LOCAL sqlite_shard_fdw.fanout_parallelism = 1;
SET LOCAL statement_timeout = '1s';
SELECT count(*) FROM big WHERE $SLOW;
ROLLBACK;"
expect "backend scan after a failed fan-out in a subtransaction, statement_timeout" \
	"57014: canceling statement due to statement timeout" 3.5 0.9

#
# What another session sees while a backend waits: pg_stat_activity's wait
# event ("Extension" before PostgreSQL 17, then SqliteShardLock or
# SqliteShardFanout), and pg_stat_progress_analyze while ANALYZE waits for
# a locked shard after reading the others.
#
LOCK_EVENT="wait_event_type = 'Extension' AND wait_event IN ('Extension', 'SqliteShardLock')"
FANOUT_EVENT="wait_event_type = 'Extension' AND wait_event IN ('Extension', 'SqliteShardFanout')"

# seen_while_waiting WHAT SQL CONDITION: run SQL in a session of its own;
# expect pg_stat_activity (as a), joined with pg_stat_progress_analyze (as
# p) when the session runs ANALYZE, to show a row meeting CONDITION for
# its statement marked /* wait */ within 10 seconds; then cancel it.
seen_while_waiting()
{
	local what=$1 sql=$2 cond=$3
	local app="lockwait_$RANDOM" bg seen=""

	printf 'SET application_name = %s;\n%s\n' "$app" "$sql" |
		timeout 30 psql -X -q -A -t >"$tmp/bg.out" 2>&1 &
	bg=$!
	bgpids+=("$bg")
	for _ in $(seq 1 100); do
		seen=$(psql -X -q -A -t -c "SELECT a.wait_event_type || '/' ||
				a.wait_event || coalesce(', ' || p.phase || ' ' ||
				p.sample_blks_scanned || ' of ' || p.sample_blks_total, '')
			FROM pg_stat_activity a LEFT JOIN pg_stat_progress_analyze p
			USING (pid) WHERE a.application_name = '$app'
			AND a.query LIKE '%/* wait */%' AND $cond")
		[ -n "$seen" ] && break
		sleep 0.1
	done
	if [ -n "$seen" ]; then
		result ok "$what ($seen)"
	else
		result failed "$what: never seen; pg_stat_activity said:"
		psql -X -q -A -t -c "SELECT state, wait_event_type, wait_event, query
			FROM pg_stat_activity WHERE application_name = '$app'" |
			sed 's/^/        /'
	fi
	psql -X -q -A -t -c "SELECT pg_cancel_backend(pid) FROM pg_stat_activity
		WHERE application_name = '$app'" >/dev/null
	wait "$bg" || true
}

seen_while_waiting "routed, waiting for a lock: wait event" \
	"\\! $HOLD start $d/shards/s1.db
SELECT /* wait */ count(*) FROM items WHERE tenant_id = 't1';" \
	"a.$LOCK_EVENT"
$HOLD stop
seen_while_waiting "fan-out, threads waiting for a lock: wait event" \
	"$WARM
SELECT /* wait */ count(*) FROM items;" \
	"a.$LOCK_EVENT"
$HOLD stop
seen_while_waiting "fan-out, threads reading a slow shard: wait event" \
	"SET sqlite_shard_fdw.fanout_parallelism = 2;
SELECT /* wait */ count(*) FROM big WHERE $SLOW;" \
	"a.$FANOUT_EVENT"
seen_while_waiting "ANALYZE waiting for s3: progress counts s1 and s2 read" \
	"\\! $HOLD start $d/shards/s3.db
ANALYZE /* wait */ items;" \
	"a.$LOCK_EVENT AND p.phase = 'acquiring sample rows'
	 AND p.sample_blks_scanned > 0
	 AND p.sample_blks_scanned < p.sample_blks_total"
$HOLD stop
run "ANALYZE items;
SELECT 'rows: ' || reltuples FROM pg_class WHERE relname = 'items';"
expect "ANALYZE once the lock is gone" "^rows: 7$" 10

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
