#!/usr/bin/env bash
#
# test/rollup_test.sh
#	A rollup against the aggregate computed from scratch, while the shards
#	change under it.  Each round, for a few seconds, an application
#	(test/rollup_writer.py, plain SQLite) writes the shards directly and a
#	psql loop writes through the wrapper, a fifth of its transactions
#	rolled back, while rollup_refresh runs at random moments (now and then
#	two at once, which take turns).  Then the writers stop, the fleet
#	changes between refreshes (a tenant moved and cleaned up, a shard
#	added and a tenant moved onto it, a tenant removed with its rows, a
#	new tenant with rows, the capture triggers of a shard dropped), and one
#	more refresh must leave the rollup equal to the query run from
#	scratch: a change a refresh during the writes missed would still be
#	missing.  Then the marks the refreshes publish in the shards: a tenant
#	written twice between refreshes is stamped once, written again after
#	a refresh anew; writes around a refresh rolled back, and a tenant
#	written without pause during refreshes back to back, are all taken.
#	Last, a full refresh must agree too.  Then shards left unopened
#	because their files did not change: a write right after a refresh,
#	in place and of the same size, must still be taken.
#
# Run by test/run_suites.sh inside a throw-away cluster, with PGDATABASE
# set to a fresh database.  The fleet lives in a new /tmp/ssfdw_rollup.XXXXXX
# folder, removed at the end.  Takes about a minute; stops by itself after
# 300 s.  Prints one line per check, then "N passed, M failed".

set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export LC_ALL=C.UTF-8
source test/fixtures/common.sh
source test/script_common.sh
script_limit ssfdw_rollup 300
script_tmp ssfdw_rollup

ROUNDS=${ROLLUP_ROUNDS:-6}
SEED=${ROLLUP_SEED:-$RANDOM}
echo "# seed $SEED, $ROUNDS rounds"
RANDOM=$SEED

q()
{
	psql -X -q -At -v ON_ERROR_STOP=1 -c "$1"
}

d="$tmp/fleet"
mkdir -p "$d/shards"
fx_directory "$d"
for s in s0 s1 s2 s3; do
	fx_sqlite "$d/shards/$s.db" "PRAGMA journal_mode = WAL;
	  CREATE TABLE orders(tenant_id TEXT NOT NULL, order_id INTEGER NOT NULL,
	    status TEXT, amount_cents INTEGER, created_at TEXT,
	    PRIMARY KEY (tenant_id, order_id));"
	fx_add_shard "$d" "$s" "shards/$s.db"
done
for i in $(seq 1 24); do
	t=$(printf 't%02d' "$i")
	s="s$((i % 4))"
	fx_add_tenant "$d" "$t" "$s"
	fx_sqlite "$d/shards/$s.db" "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL
	    SELECT i + 1 FROM n WHERE i < 40)
	  INSERT INTO orders SELECT '$t', i, CASE i % 3 WHEN 0 THEN 'open'
	    WHEN 1 THEN 'paid' ELSE NULL END, i * 7 % 900,
	    '2024-03-0' || (1 + i % 5) || ' ' || printf('%02d', i % 24) || ':00:00' FROM n;"
done
fx_done "$d"

psql -X -q -v ON_ERROR_STOP=1 <<SQL >/dev/null
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS sqlite_shard_fdw CASCADE;
CREATE EXTENSION sqlite_shard_fdw;
CREATE SERVER rollup_fleet FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '$d/directory.db', busy_timeout_ms '10000');
CREATE FOREIGN TABLE orders (tenant_id text, order_id bigint, status text,
  amount_cents bigint, created_at timestamp)
  SERVER rollup_fleet OPTIONS (table 'orders');
SELECT rollup_create('orders_daily', \$\$
  SELECT tenant_id, date_trunc('day', created_at) AS day, status, count(*),
         sum(amount_cents) AS amount, avg(amount_cents) AS avg_amount,
         min(amount_cents) AS least, max(amount_cents) AS most
    FROM orders GROUP BY 1, 2, 3\$\$);
CREATE VIEW orders_daily_scratch AS
  SELECT tenant_id, date_trunc('day', created_at) AS day, status, count(*),
         sum(amount_cents) AS amount, sum(amount_cents) AS avg_amount_sum,
         count(amount_cents) AS avg_amount_count,
         min(amount_cents) AS least, max(amount_cents) AS most
    FROM orders GROUP BY 1, 2, 3;
SQL

# differences: rows of the rollup and of the scratch query the other lacks.
differences()
{
	q "SELECT count(*) FROM ((TABLE orders_daily EXCEPT ALL TABLE orders_daily_scratch)
	   UNION ALL (TABLE orders_daily_scratch EXCEPT ALL TABLE orders_daily)) x"
}

# show_differences: which, for the failure's detail.
show_differences()
{
	q "(SELECT 'rollup', * FROM orders_daily EXCEPT ALL SELECT 'rollup', * FROM orders_daily_scratch)
	   UNION ALL (SELECT 'scratch', * FROM orders_daily_scratch EXCEPT ALL SELECT 'scratch', * FROM orders_daily)
	   ORDER BY 2, 3, 4, 1 LIMIT 20"
}

check_same()
{
	local n
	n=$(differences)
	if [ "$n" = 0 ]; then
		result ok "$1"
	else
		result failed "$1: $n rows differ" "$(show_differences)"
	fi
}

# wrapper_writer STOPFILE: writes through the wrapper until STOPFILE exists.
wrapper_writer()
{
	local stop=$1 t n sql
	while [ ! -e "$stop" ]; do
		t=$(printf 't%02d' $((RANDOM % 26 + 1)))
		n=$((RANDOM % 40))
		case $((RANDOM % 3)) in
			0) sql="INSERT INTO orders VALUES ('$t', $((100000 + RANDOM)), 'paid', $n, '2024-03-0$((RANDOM % 9 + 1)) 12:00:00')" ;;
			1) sql="UPDATE orders SET amount_cents = amount_cents + 1, status = 'open' WHERE tenant_id = '$t' AND order_id % 11 = $((n % 11))" ;;
			*) sql="DELETE FROM orders WHERE tenant_id = '$t' AND order_id % 13 = $((n % 13))" ;;
		esac
		if [ $((RANDOM % 5)) = 0 ]; then
			psql -X -q -c "BEGIN" -c "$sql" -c "ROLLBACK" >/dev/null 2>&1 || true
		else
			psql -X -q -c "$sql" >/dev/null 2>&1 || true
		fi
	done
}

refreshes=0
for round in $(seq 1 "$ROUNDS"); do
	stop="$tmp/stop.$round"
	python3 test/rollup_writer.py "$d/directory.db" "$((SEED + round))" "$stop" \
		>"$tmp/writer.$round" 2>&1 &
	helpers+=($!)
	wrapper_writer "$stop" &
	helpers+=($!)

	# refreshes at random moments while both write, sometimes two at once
	for _ in 1 2 3; do
		sleep "0.$((RANDOM % 9 + 1))"
		if [ $((RANDOM % 3)) = 0 ]; then
			q "SELECT tenants FROM rollup_refresh('orders_daily')" >"$tmp/r1" 2>&1 &
			q "SELECT tenants FROM rollup_refresh('orders_daily')" >"$tmp/r2" 2>&1 || true
			wait $! || true
			if grep -q ERROR "$tmp/r1" "$tmp/r2"; then
				result failed "round $round: two refreshes at once" "$(cat "$tmp/r1" "$tmp/r2")"
			fi
			refreshes=$((refreshes + 2))
		else
			q "SELECT tenants FROM rollup_refresh('orders_daily')" >/dev/null
			refreshes=$((refreshes + 1))
		fi
	done
	touch "$stop"
	for p in "${helpers[@]}"; do
		wait "$p" 2>/dev/null || true
	done
	helpers=()

	# the fleet changes between refreshes
	case $round in
		1)
			what="tenant t01 moved from s1 to s2 and cleaned up"
			q "SELECT tenant_move('rollup_fleet', 't01', 's2')" >/dev/null 2>&1
			q "SELECT count(*) FROM tenant_cleanup('rollup_fleet', 't01')" >/dev/null 2>&1
			;;
		2)
			what="shard s4 added, tenant t02 moved onto it, written there directly, new tenant t28 there"
			fx_sqlite "$d/shards/s4.db" "PRAGMA journal_mode = WAL;"
			fx_done "$d"
			q "SELECT shard_add('rollup_fleet', 's4', 'shards/s4.db')" >/dev/null
			q "SELECT tenant_move('rollup_fleet', 't02', 's4')" >/dev/null 2>&1
			q "SELECT count(*) FROM tenant_cleanup('rollup_fleet', 't02')" >/dev/null 2>&1
			python3 - "$d/shards/s4.db" <<'PY'
import os, pwd, sqlite3, sys
pw = pwd.getpwnam("postgres")
os.setgid(pw.pw_gid); os.setuid(pw.pw_uid)
con = sqlite3.connect(sys.argv[1], timeout=10)
con.execute("INSERT INTO orders VALUES ('t02', 5000, 'paid', 77, '2024-03-09 09:00:00')")
con.execute("INSERT INTO orders VALUES ('t28', 1, 'paid', 3, '2024-03-09 09:00:00')")
con.commit()
PY
			q "SELECT tenant_add('rollup_fleet', 't28', 's4')" >/dev/null
			;;
		3)
			what="tenant t03 removed with its rows"
			q "SELECT tenant_remove('rollup_fleet', 't03', delete_rows => true)" >/dev/null
			;;
		4)
			what="new tenants t25 (rows written directly, then registered) and t26 (through the wrapper)"
			fx_sqlite "$d/shards/s0.db" "INSERT INTO orders VALUES ('t25', 1, 'paid', 10, '2024-03-01 00:00:00')"
			fx_done "$d"
			q "SELECT tenant_add('rollup_fleet', 't25', 's0')" >/dev/null
			q "SELECT tenant_add('rollup_fleet', 't26', 's3')" >/dev/null
			q "INSERT INTO orders VALUES ('t26', 1, 'open', 20, '2024-03-02 00:00:00')"
			;;
		5)
			what="a capture trigger of shard s3 dropped, then application writes of t07 and of t27, a tenant new there"
			q "SELECT tenant_add('rollup_fleet', 't27', 's3')" >/dev/null
			fx_sqlite "$d/shards/s3.db" "DROP TRIGGER _ssfdw_rollup_i_orders;
			  INSERT INTO orders VALUES ('t07', 9999, 'void', 1, '2024-03-05 00:00:00');
			  INSERT INTO orders VALUES ('t27', 1, 'void', 1, '2024-03-05 00:00:00');"
			fx_done "$d"
			;;
		*)
			what="tenant t05 moved back and forth"
			q "SELECT tenant_move('rollup_fleet', 't05', 's0')" >/dev/null 2>&1
			q "SELECT count(*) FROM tenant_cleanup('rollup_fleet', 't05')" >/dev/null 2>&1
			q "SELECT tenant_move('rollup_fleet', 't05', 's1')" >/dev/null 2>&1
			q "SELECT count(*) FROM tenant_cleanup('rollup_fleet', 't05')" >/dev/null 2>&1
			;;
	esac
	q "SELECT tenants FROM rollup_refresh('orders_daily')" >/dev/null
	refreshes=$((refreshes + 1))
	check_same "round $round ($(cat "$tmp/writer.$round"); $what): the rollup equals the aggregate from scratch"
	pending=$(q "SELECT count(*) FROM rollup_pending('orders_daily')")
	if [ "$pending" = 0 ]; then
		result ok "round $round: nothing pending after the refresh"
	else
		result failed "round $round: $pending tenants still pending"
	fi
done

# The mark a refresh publishes in each shard (new orders, whose writes
# surely fire the triggers): a tenant logged above it is
# not stamped again when written; at or below it, it is.

# shard_of TENANT: the file of the shard that answers for the tenant.
shard_of()
{
	echo "$d/$(runuser -u postgres -- sqlite3 "$d/directory.db" "SELECT s.path FROM shard_map m JOIN shards s
	  ON s.shard_id = CASE WHEN m.status = 'DONE' THEN m.target_shard_id ELSE m.shard_id END
	  WHERE m.tenant_id = '$1'")"
}

# app TENANT SQL: the application writes the tenant's shard directly.
app()
{
	runuser -u postgres -- sqlite3 -bail -cmd ".timeout 10000" "$(shard_of "$1")" "$2" >/dev/null
}

# logged TENANT: the tenant's change number in its shard's log.
logged()
{
	runuser -u postgres -- sqlite3 -cmd ".timeout 10000" "$(shard_of "$1")" "SELECT v FROM _ssfdw_rollup_log WHERE tbl = 'orders' AND tenant = '$1'"
}

q "SELECT tenants FROM rollup_refresh('orders_daily')" >/dev/null
app t08 "INSERT INTO orders VALUES ('t08', 300001, 'paid', 1, '2024-03-05 10:00:00')"
v1=$(logged t08)
app t08 "INSERT INTO orders VALUES ('t08', 300002, 'paid', 2, '2024-03-06 10:00:00')"
v2=$(logged t08)
if [ -n "$v1" ] && [ "$v1" = "$v2" ]; then
	result ok "a tenant written twice between refreshes is stamped once ($v1)"
else
	result failed "a tenant written twice between refreshes: numbers $v1 then $v2"
fi
q "SELECT tenants FROM rollup_refresh('orders_daily')" >/dev/null
app t08 "INSERT INTO orders VALUES ('t08', 300003, 'paid', 3, '2024-03-07 10:00:00')"
v3=$(logged t08)
if [ -n "$v3" ] && [ "$v3" -gt "$v2" ]; then
	result ok "written again after a refresh took it, the tenant gets a new number"
else
	result failed "written again after a refresh took it: number $v3, was $v2"
fi
q "SELECT tenants FROM rollup_refresh('orders_daily')" >/dev/null
check_same "the tenant's writes on both sides of a refresh are in the rollup"

# a refresh rewrites the groups of a changed tenant that differ, and
# leaves the others as they are
q "CREATE TABLE t08_before AS SELECT day, status, ctid::text AS c FROM orders_daily WHERE tenant_id = 't08'" >/dev/null
app t08 "UPDATE orders SET amount_cents = amount_cents + 1 WHERE tenant_id = 't08' AND order_id = 300001"
q "SELECT tenants FROM rollup_refresh('orders_daily')" >/dev/null
moved=$(q "SELECT count(*) FILTER (WHERE n.c IS DISTINCT FROM b.c) || ' of ' || count(*)
  FROM (SELECT day, coalesce(status, '-') AS st, ctid::text AS c FROM orders_daily
        WHERE tenant_id = 't08') n
  FULL JOIN (SELECT day, coalesce(status, '-') AS st, c FROM t08_before) b
  ON n.day = b.day AND n.st = b.st")
total=$(q "SELECT count(*) FROM t08_before")
if [ "$moved" = "1 of $total" ]; then
	result ok "one order of a tenant changed: one of its $total groups rewritten"
else
	result failed "one order of a tenant changed: $moved groups rewritten (want 1 of $total)"
fi
q "DROP TABLE t08_before" >/dev/null
check_same "and the rollup equals the aggregate"

# a refresh rolled back moved the shards' marks, not the rollup's
app t09 "INSERT INTO orders VALUES ('t09', 300004, 'paid', 4, '2024-03-08 10:00:00')"
psql -X -q -c "BEGIN" -c "SELECT tenants FROM rollup_refresh('orders_daily')" \
	-c "ROLLBACK" >/dev/null
app t10 "INSERT INTO orders VALUES ('t10', 300005, 'paid', 5, '2024-03-09 10:00:00')"
app t09 "INSERT INTO orders VALUES ('t09', 300006, 'paid', 6, '2024-03-01 10:00:00')"
q "SELECT tenants FROM rollup_refresh('orders_daily')" >/dev/null
check_same "writes before and after a refresh rolled back are in the next one"

# one tenant written without pause while refreshes run back to back: each
# refresh moves the mark while writes of the tenant come and go around it
python3 - "$(shard_of t11)" "$tmp/stop.hammer" >"$tmp/hammer" 2>&1 <<'PY' &
import os, pwd, sqlite3, sys
pw = pwd.getpwnam("postgres")
os.setgid(pw.pw_gid); os.setuid(pw.pw_uid)
con = sqlite3.connect(sys.argv[1], timeout=10, isolation_level=None)
n = 0
while not os.path.exists(sys.argv[2]):
    n += 1
    con.execute("BEGIN IMMEDIATE")
    con.execute("UPDATE orders SET amount_cents = amount_cents + 1 "
                "WHERE tenant_id = 't11' AND order_id = ?", (n % 30 + 1,))
    if n % 4 == 0:
        con.execute("INSERT INTO orders VALUES ('t11', ?, 'open', 1, "
                    "'2024-03-04 04:00:00')", (200000 + n,))
    con.execute("ROLLBACK" if n % 7 == 0 else "COMMIT")
print(n)
PY
helpers+=($!)
for _ in $(seq 1 15); do
	q "SELECT tenants FROM rollup_refresh('orders_daily')" >/dev/null
done
touch "$tmp/stop.hammer"
wait "${helpers[@]}" 2>/dev/null || true
helpers=()
q "SELECT tenants FROM rollup_refresh('orders_daily')" >/dev/null
check_same "a tenant written $(cat "$tmp/hammer") times during 15 refreshes in a row: the rollup equals the aggregate"

# an update that moves a row from a tenant logged above the mark to one
# that is not: the trigger runs for the new one
q "SELECT tenants FROM rollup_refresh('orders_daily')" >/dev/null
app t15 "INSERT INTO orders VALUES ('t15', 300020, 'paid', 20, '2024-03-07 10:00:00')"
app t15 "UPDATE orders SET tenant_id = 't19' WHERE tenant_id = 't15' AND order_id = 300020"
q "SELECT tenants FROM rollup_refresh('orders_daily')" >/dev/null
check_same "a row moved by the application from one tenant to another is in the rollup as the other's"

# the log emptied under its marks (numbers start again from 1), then the
# capture dropped whole but the marks: later writes are still taken
app t13 "DELETE FROM _ssfdw_rollup_log"
app t13 "INSERT INTO orders VALUES ('t13', 300010, 'void', 10, '2024-03-03 10:00:00')"
q "SELECT tenants FROM rollup_refresh('orders_daily')" >/dev/null
app t13 "INSERT INTO orders VALUES ('t13', 300011, 'void', 11, '2024-03-04 10:00:00')"
q "SELECT tenants FROM rollup_refresh('orders_daily')" >/dev/null
check_same "writes after the shard's log was emptied under its marks are in the rollup"
app t14 "DROP TRIGGER _ssfdw_rollup_i_orders; DROP TRIGGER _ssfdw_rollup_u_orders;
  DROP TRIGGER _ssfdw_rollup_d_orders; DROP TABLE _ssfdw_rollup_log;
  DROP TABLE _ssfdw_rollup_epoch;"
q "SELECT tenants FROM rollup_refresh('orders_daily')" >/dev/null
app t14 "INSERT INTO orders VALUES ('t14', 300012, 'void', 12, '2024-03-05 10:00:00')"
q "SELECT tenants FROM rollup_refresh('orders_daily')" >/dev/null
app t14 "INSERT INTO orders VALUES ('t14', 300013, 'void', 13, '2024-03-06 10:00:00')"
q "SELECT tenants FROM rollup_refresh('orders_daily')" >/dev/null
check_same "writes after the capture was dropped but its marks, and installed again, are in the rollup"

# a tenant computed alone, then written: pending
q "SELECT groups FROM rollup_refresh_tenant('orders_daily', 't12')" >/dev/null
app t12 "INSERT INTO orders VALUES ('t12', 300007, 'paid', 7, '2024-03-02 10:00:00')"
pending=$(q "SELECT pending FROM rollup_staleness('orders_daily') WHERE tenant_id = 't12'")
if [ "$pending" = t ]; then
	result ok "a tenant written after rollup_refresh_tenant computed it is pending"
else
	result failed "a tenant written after rollup_refresh_tenant computed it: pending is '$pending'"
fi
q "SELECT tenants FROM rollup_refresh('orders_daily')" >/dev/null
check_same "and the next refresh takes it"

q "SELECT tenants FROM rollup_refresh('orders_daily', full => true)" >/dev/null
check_same "after $refreshes refreshes, a full refresh: the rollup equals the aggregate from scratch"
check=$(q "SELECT count(*) FROM ssfdw_rollup.shards WHERE rollup = 'orders_daily'::regclass")
if [ "$check" = 5 ]; then
	result ok "the rollup keeps a mark of each of the 5 shards"
else
	result failed "the rollup keeps marks of $check shards, not 5"
fi

# Shards whose files have not changed since a refresh found nothing new
# in their logs are not opened (src/control/rollupcapture.c): the state of
# their files is recorded with the mark, and trusted only when the files'
# change times are older than the read by the slack (2 s).  A write of the
# application right after a refresh, however soon, must still be taken.

# live_plan: the plan of a report answered from the rollup, as it ran.
live_plan()
{
	psql -X -q -At -v ON_ERROR_STOP=1 -c "LOAD 'sqlite_shard_fdw'" \
		-c "SET sqlite_shard_fdw.rollup_answer = live" \
		-c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
		    SELECT status, count(*) FROM orders GROUP BY 1"
}

# expect_line WHAT PATTERN TEXT: a check that TEXT has a line matching PATTERN.
expect_line()
{
	if printf '%s\n' "$3" | grep -q -- "$2"; then
		result ok "$1"
	else
		result failed "$1: no line '$2'" "$3"
	fi
}

nshards=$(q "SELECT count(*) FROM ssfdw_rollup.shards WHERE rollup = 'orders_daily'::regclass")
q "SELECT tenants FROM rollup_refresh('orders_daily')" >/dev/null
sleep 2.5
q "SELECT tenants FROM rollup_refresh('orders_daily')" >/dev/null
n=$(q "SELECT count(*) FROM ssfdw_rollup.shards WHERE rollup = 'orders_daily'::regclass AND file_state IS NOT NULL")
if [ "$n" = "$nshards" ]; then
	result ok "a refresh that found nothing new records the state of every shard's files"
else
	result failed "file states recorded for $n shards of $nshards"
fi
expect_line "nothing changed since: a query answered from the rollup opens no shard" \
	"Change Logs Read: 0 of $nshards" "$(live_plan)"

# two tenants with rows (on two shards), and an order of each
ta=$(q "SELECT tenant_id FROM orders GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1")
tb=$(q "SELECT tenant_id FROM orders WHERE tenant_id <> '$ta' GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1")
oa=$(q "SELECT min(order_id) FROM orders WHERE tenant_id = '$ta'")
ob=$(q "SELECT min(order_id) FROM orders WHERE tenant_id = '$tb'")

# the application writes one shard: that one is opened, its tenant read live
app "$tb" "UPDATE orders SET amount_cents = amount_cents + 1 WHERE tenant_id = '$tb' AND order_id = $ob"
plan=$(live_plan)
expect_line "a shard written since: opened" "Change Logs Read: 1 of $nshards" "$plan"
expect_line "and its tenant read live" "Tenants Read Live: 1 of" "$plan"
q "SELECT tenants FROM rollup_refresh('orders_daily')" >/dev/null
check_same "a write to a shard whose files were recorded unchanged is in the next refresh"

# written just before a refresh read it: its state is not trusted, and a
# write right after the refresh (same size, in place, in a shard without
# WAL) is taken by the next refresh
sd=$(shard_of "$ta")
runuser -u postgres -- sqlite3 -cmd ".timeout 10000" "$sd" "PRAGMA journal_mode = DELETE" >/dev/null
sid=$(runuser -u postgres -- sqlite3 "$d/directory.db" "SELECT shard_id FROM shards WHERE '$sd' LIKE '%/' || path")
q "SELECT tenants FROM rollup_refresh('orders_daily')" >/dev/null
sleep 2.5
q "SELECT tenants FROM rollup_refresh('orders_daily')" >/dev/null
for round in 1 2 3 4 5; do
	size1=$(stat -c %s "$sd")
	app "$ta" "UPDATE orders SET amount_cents = amount_cents + 1 WHERE tenant_id = '$ta' AND order_id = $oa"
	q "SELECT tenants FROM rollup_refresh('orders_daily')" >/dev/null
	state=$(q "SELECT coalesce(file_state, 'none') FROM ssfdw_rollup.shards WHERE rollup = 'orders_daily'::regclass AND shard_id = '$sid'")
	app "$ta" "UPDATE orders SET amount_cents = amount_cents + 1 WHERE tenant_id = '$ta' AND order_id = $oa"
	size2=$(stat -c %s "$sd")
	pending=$(q "SELECT string_agg(tenant_id, ',') FROM rollup_pending('orders_daily')")
	if [ "$state" = none ] && [ "$pending" = "$ta" ] && [ "$size1" = "$size2" ]; then
		result ok "round $round: a shard written just before a refresh gets no state; written in place right after, its tenant is pending"
	else
		result failed "round $round: state '$state' (want none), pending '$pending' (want $ta), size $size1 then $size2"
	fi
	live=$(live_plan)
	expect_line "round $round: and a query answered from the rollup reads it live" "Tenants Read Live: 1 of" "$live"
	q "SELECT tenants FROM rollup_refresh('orders_daily')" >/dev/null
	check_same "round $round: the next refresh takes it"
done

# the file replaced by a copy of itself (another inode, same content and
# size): opened again
q "SELECT tenants FROM rollup_refresh('orders_daily')" >/dev/null
sleep 2.5
q "SELECT tenants FROM rollup_refresh('orders_daily')" >/dev/null
runuser -u postgres -- cp -p "$sd" "$sd.copy"
runuser -u postgres -- mv "$sd.copy" "$sd"
expect_line "a shard file replaced by a copy is opened again" \
	"Change Logs Read: 1 of $nshards" "$(live_plan)"
q "SELECT tenants FROM rollup_refresh('orders_daily', full => true)" >/dev/null
check_same "and a full refresh after it"

# a reader of the shard (rollback journal) keeps the commit of the mark a
# refresh publishes waiting past busy_timeout_ms: the mark is not
# published, and the refresh takes the one there was, so that the
# tenant's next write, not stamped again, is still taken
q "ALTER SERVER rollup_fleet OPTIONS (SET busy_timeout_ms '300')"
app "$ta" "UPDATE orders SET amount_cents = amount_cents + 1 WHERE tenant_id = '$ta' AND order_id = $oa"
mark1=$(runuser -u postgres -- sqlite3 "$sd" "SELECT mark FROM _ssfdw_rollup_mark")
rm -f "$d/reader.ready"
python3 - "$sd" "$d/reader.ready" <<'PY' &
import os, pwd, sqlite3, sys, time
pw = pwd.getpwnam("postgres")
os.setgid(pw.pw_gid); os.setuid(pw.pw_uid)
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("BEGIN")
c.execute("SELECT count(*) FROM orders").fetchall()
open(sys.argv[2], "w").close()
time.sleep(3)
c.execute("COMMIT")
PY
reader=$!
while [ ! -e "$d/reader.ready" ]; do sleep 0.1; done
took=$(q "SELECT tenants FROM rollup_refresh('orders_daily')")
mark2=$(runuser -u postgres -- sqlite3 "$sd" "SELECT mark FROM _ssfdw_rollup_mark")
wait "$reader"
if [ "$took" -ge 1 ] && [ "$mark1" = "$mark2" ]; then
	result ok "a mark whose commit a reader kept waiting is not published ($mark2), and the tenant is computed"
else
	result failed "a reader kept the mark's commit waiting: $took tenants computed, mark $mark1 then $mark2"
fi
check_same "the refresh took the tenant's write"
app "$ta" "UPDATE orders SET amount_cents = amount_cents + 1 WHERE tenant_id = '$ta' AND order_id = $oa"
q "SELECT tenants FROM rollup_refresh('orders_daily')" >/dev/null
check_same "and the next refresh its write after it"
q "ALTER SERVER rollup_fleet OPTIONS (SET busy_timeout_ms '10000')"

# A fleet of one file per tenant, named by a pattern and by the directory:
# the capture logs each file's changes as its tenant's.
python3 test/fixtures/tenantfiles.py build "$tmp/pf_pattern" --tenants 30 \
	--rows 60 --layout hashed >/dev/null
python3 test/fixtures/tenantfiles.py build "$tmp/pf_dir" --tenants 30 \
	--rows 60 --map directory >/dev/null
fx_done "$tmp/pf_pattern"
fx_done "$tmp/pf_dir"
psql -X -q -v ON_ERROR_STOP=1 <<SQL >/dev/null
CREATE SERVER pf_pattern FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '$tmp/pf_pattern/directory.db', layout 'file_per_tenant',
           tenant_path 'tenants/%2/%s.db', busy_timeout_ms '10000');
CREATE SERVER pf_dir FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '$tmp/pf_dir/directory.db', layout 'file_per_tenant',
           busy_timeout_ms '10000');
CREATE FOREIGN TABLE pf_pattern_orders (tenant_id text, order_id bigint,
  status text, amount_cents bigint, created_at timestamp)
  SERVER pf_pattern OPTIONS (table 'orders');
CREATE FOREIGN TABLE pf_dir_orders (tenant_id text, order_id bigint,
  status text, amount_cents bigint, created_at timestamp)
  SERVER pf_dir OPTIONS (table 'orders');
SQL

# pf_file LAYOUT TENANT: the tenant's file.
pf_file()
{
	if [ "$1" = pattern ]; then
		echo "$tmp/pf_pattern/tenants/$(printf '%s' "$2" | md5sum | cut -c1-2)/$2.db"
	else
		echo "$tmp/pf_dir/$(runuser -u postgres -- sqlite3 "$tmp/pf_dir/directory.db" \
			"SELECT path FROM shards WHERE shard_id = 'f_$2'")"
	fi
}

# pf_app LAYOUT TENANT SQL: the application writes the tenant's file.
pf_app()
{
	runuser -u postgres -- sqlite3 -bail -cmd ".timeout 10000" "$(pf_file "$1" "$2")" "$3" >/dev/null
}

for layout in pattern dir; do
	ft="pf_${layout}_orders"
	sel="SELECT tenant_id, status, count(*), sum(amount_cents) AS amount,
	  avg(amount_cents) AS avg_amount FROM $ft GROUP BY 1, 2"
	scratch="SELECT tenant_id, status, count(*), sum(amount_cents) AS amount,
	  sum(amount_cents) AS avg_amount_sum, count(amount_cents) AS avg_amount_count
	  FROM $ft GROUP BY 1, 2"
	pf_same()
	{
		local n
		n=$(q "SELECT count(*) FROM ((TABLE ${ft}_r EXCEPT ALL $scratch)
		       UNION ALL ($scratch EXCEPT ALL TABLE ${ft}_r)) x")
		if [ "$n" = 0 ]; then
			result ok "$layout files: $1"
		else
			result failed "$layout files: $1: $n rows differ"
		fi
	}
	q "SELECT rollup_create('${ft}_r', \$\$$sel\$\$)" >/dev/null
	pf_same "rollup_create equals the aggregate"
	triggers=$(runuser -u postgres -- sqlite3 "$(pf_file "$layout" t0007)" \
		"SELECT count(*) FROM sqlite_schema WHERE type = 'trigger' AND name GLOB '_ssfdw_rollup_*'")
	if [ "$triggers" = 3 ]; then
		result ok "$layout files: every file has the three capture triggers"
	else
		result failed "$layout files: $triggers capture triggers in t0007's file"
	fi
	pf_app "$layout" t0003 "INSERT INTO orders (order_id, status, amount_cents, created_at)
	  VALUES (900001, 'paid', 77, '2024-05-01 10:00:00')"
	pf_app "$layout" t0011 "UPDATE orders SET amount_cents = amount_cents + 1, status = 'void'"
	pf_app "$layout" t0011 "DELETE FROM orders WHERE order_id % 3 = 0"
	pf_app "$layout" t0020 "BEGIN; DELETE FROM orders; ROLLBACK;"
	n=$(q "SELECT tenants FROM rollup_refresh('${ft}_r')")
	if [ "$n" = 2 ]; then
		result ok "$layout files: the refresh computes the 2 tenants whose files were written"
	else
		result failed "$layout files: the refresh computed $n tenants, not 2"
	fi
	pf_same "after the application wrote two files, a refresh"
	pf_app "$layout" t0003 "UPDATE orders SET amount_cents = 1 WHERE order_id = 900001"
	q "SELECT groups FROM rollup_refresh_tenant('${ft}_r', 't0003')" >/dev/null
	pf_app "$layout" t0003 "UPDATE orders SET amount_cents = 2 WHERE order_id = 900001"
	pending=$(q "SELECT string_agg(tenant_id, ',') FROM rollup_pending('${ft}_r')")
	if [ "$pending" = t0003 ]; then
		result ok "$layout files: written after rollup_refresh_tenant, the tenant is pending"
	else
		result failed "$layout files: pending tenants '$pending', not t0003"
	fi
	q "SELECT tenants FROM rollup_refresh('${ft}_r')" >/dev/null
	pf_same "and the next refresh takes it"
	q "SELECT tenants FROM rollup_refresh('${ft}_r')" >/dev/null
	sleep 2.5
	q "SELECT tenants FROM rollup_refresh('${ft}_r')" >/dev/null
	n=$(q "SELECT count(*) FROM ssfdw_rollup.shards WHERE rollup = '${ft}_r'::regclass AND file_state IS NULL")
	if [ "$n" = 0 ]; then
		result ok "$layout files: nothing new, every file's state recorded"
	else
		result failed "$layout files: $n files without a recorded state"
	fi
	pf_app "$layout" t0005 "UPDATE orders SET amount_cents = amount_cents + 1
	  WHERE order_id = (SELECT min(order_id) FROM orders)"
	n=$(q "SELECT tenants FROM rollup_refresh('${ft}_r')")
	if [ "$n" = 1 ]; then
		result ok "$layout files: a file written after its state was recorded is computed again"
	else
		result failed "$layout files: the refresh computed $n tenants, not 1"
	fi
	pf_same "and the rollup has its write"
	q "SELECT tenants FROM rollup_refresh('${ft}_r', full => true)" >/dev/null
	pf_same "a full refresh"
done

script_end
