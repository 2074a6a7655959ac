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
#	missing.  Last, a full refresh must agree too.
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

q "SELECT tenants FROM rollup_refresh('orders_daily', full => true)" >/dev/null
check_same "after $refreshes refreshes, a full refresh: the rollup equals the aggregate from scratch"
check=$(q "SELECT count(*) FROM ssfdw_rollup.shards WHERE rollup = 'orders_daily'::regclass")
if [ "$check" = 5 ]; then
	result ok "the rollup keeps a mark of each of the 5 shards"
else
	result failed "the rollup keeps marks of $check shards, not 5"
fi

script_end
