#!/usr/bin/env bash
#
# test/perfile_bench.sh
#	The fan-out over fleets of one SQLite file per tenant at 10,000 and
#	100,000 files, the routed lookup among a million registered tenants,
#	measured against the floor (the sqlite3 library looping over the same
#	files in one Python process) and a native table of the same rows.
#
# Usage: bash test/perfile_bench.sh [10k] [100k] [lookup]   (default: all)
#
# Not part of the regular suite: the fleets take minutes and gigabytes to
# build.  They are built once under $PERFILE_BENCH_DIR (default
# /tmp/ssfdw_pfbench) and kept for the next run (remove the folder to build
# them again).  The extension must be installed (make install).  The
# benchmark runs a cluster of its own, with sqlite_shard_fdw in
# shared_preload_libraries and a descriptor budget large enough to keep ten
# thousand handles open (ulimit -n 70000, max_files_per_process 40000: a
# backend may keep a third of its descriptors open outside PostgreSQL's
# file layer), then drops the cluster.  Prints "figure:" lines; checks only
# that the answers equal the native table's.

set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export LC_ALL=C.UTF-8
source test/fixtures/common.sh
source test/script_common.sh

PG_MAJOR=${PG_MAJOR:-15}
BIN=/usr/lib/postgresql/$PG_MAJOR/bin
B=${PERFILE_BENCH_DIR:-/tmp/ssfdw_pfbench}
gen=test/fixtures/tenantfiles.py
what=("$@")
[ ${#what[@]} -eq 0 ] && what=(10k 100k lookup)

want()
{
	local w
	for w in "${what[@]}"; do
		[ "$w" = "$1" ] && return 0
	done
	return 1
}

mkdir -p "$B"
chmod 0777 "$B"

# fleet NAME ARGS...: build fleet $B/NAME once (tenantfiles.py build ARGS).
fleet()
{
	local name=$1
	shift
	if [ ! -e "$B/$name/.done" ]; then
		echo "# building $B/$name ($*)"
		rm -rf "${B:?}/$name"
		python3 "$gen" build "$B/$name" "$@"
		chown -R postgres "$B/$name"
		touch "$B/$name/.done"
	fi
}

want 10k && fleet f10k --tenants 10000 --csv "$B/f10k.csv"
want 10k && fleet f5k --tenants 5000
want 100k && fleet h100k --tenants 100000 --layout hashed
if want lookup; then
	fleet l1k --tenants 1000 --layout hashed --map directory --rows 20
	# a million tenants in the directory; files only for the first thousand
	if [ ! -e "$B/l1m/.done" ]; then
		rm -rf "$B/l1m"
		mkdir -p "$B/l1m"
		cp -r "$B/l1k/tenants" "$B/l1m/"
		python3 - "$B/l1m/directory.db" test/directory.sql <<'PY'
import sqlite3, sys, hashlib
c = sqlite3.connect(sys.argv[1])
c.executescript(open(sys.argv[2]).read())
def rel(t):
    return "tenants/%s/%s.db" % (hashlib.md5(t.encode()).hexdigest()[:2], t)
c.executemany("INSERT INTO shards(shard_id, path) VALUES (?, ?)",
              (("f_t%04d" % i, rel("t%04d" % i)) for i in range(1, 1000001)))
c.executemany("INSERT INTO shard_map(tenant_id, shard_id, updated_at) VALUES (?, ?, 1735689600)",
              (("t%04d" % i, "f_t%04d" % i) for i in range(1, 1000001)))
c.commit()
PY
		chown -R postgres "$B/l1m"
		touch "$B/l1m/.done"
	fi
fi

# The cluster.
tmp=$(mktemp -d -t ssfdw_pfbench_pg.XXXXXX)
chmod 0777 "$tmp"
port=$((20000 + RANDOM % 20000))
data="$tmp/pgdata"
# as_pg CMD...: run as the server's OS user, keeping the descriptor limit
# (setpriv, unlike runuser, goes through no PAM session that resets it).
as_pg()
{
	if [ "$(id -u)" -eq 0 ]; then
		setpriv --reuid=postgres --regid=postgres --init-groups -- "$@"
	else
		"$@"
	fi
}
as_pg "$BIN/initdb" -D "$data" -U postgres -A trust >"$tmp/initdb.log" 2>&1
cat >>"$data/postgresql.conf" <<CONF
port = $port
listen_addresses = ''
unix_socket_directories = '$tmp'
shared_preload_libraries = 'sqlite_shard_fdw'
max_files_per_process = 40000
shared_buffers = 256MB
work_mem = 16MB
CONF
ulimit -n 70000 2>/dev/null || ulimit -n "$(ulimit -Hn)"
echo "# descriptors: ulimit -n $(ulimit -n), max_files_per_process 40000"
as_pg "$BIN/pg_ctl" -D "$data" -l "$tmp/server.log" -w start >/dev/null
stop_server()
{
	as_pg "$BIN/pg_ctl" -D "$data" -m immediate -w stop >/dev/null 2>&1 || true
	rm -rf "$tmp"
}
trap stop_server EXIT
export PGHOST=$tmp PGPORT=$port PGUSER=postgres PGDATABASE=postgres

psql -X -q -c "CREATE EXTENSION sqlite_shard_fdw"

# ms SQL [SETUP]: the best of three runs' execution time of SQL in one
# session (after SETUP), in milliseconds, then the three times.
ms()
{
	psql -X -A -t -q <<SQL | python3 -c '
import sys
times = [float(l.split()[2]) for l in sys.stdin if l.startswith("Execution Time")]
print("%.1f" % min(times), "/".join("%.1f" % t for t in times))'
${2:-}
EXPLAIN (ANALYZE, COSTS OFF) $1;
EXPLAIN (ANALYZE, COSTS OFF) $1;
EXPLAIN (ANALYZE, COSTS OFF) $1;
SQL
}

REPORT="SELECT status, count(*), sum(amount_cents), round(avg(amount_cents), 6), min(amount_cents), max(amount_cents) FROM %s GROUP BY status ORDER BY status"

# peak_rss SQL [SETUP]: the peak and current resident memory of a backend
# that ran SQL (after SETUP), from its /proc/self/status.
peak_rss()
{
	psql -X -A -t -q <<SQL | tr -s ' \t' ' ' | tr '\n' ' '
${2:-}
SELECT count(*) FROM ($1) q \g /dev/null
SELECT string_agg(l, ', ') FROM regexp_split_to_table(pg_read_file('/proc/self/status'), E'\n') l WHERE l ~ '^Vm(HWM|RSS)';
SQL
}

if [ -n "${PERFILE_BENCH_KEEP:-}" ]; then
	echo "# PGHOST=$tmp PGPORT=$port PGUSER=postgres; stop: kill the script"
	sleep infinity
fi

if want 10k; then
	psql -X -q -v ON_ERROR_STOP=1 <<SQL
CREATE SERVER f10k FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '$B/f10k/directory.db', layout 'file_per_tenant',
           tenant_path 'tenants/%s.db');
CREATE FOREIGN TABLE orders_10k (tenant_id text, order_id bigint,
  status text, amount_cents bigint, created_at timestamp)
  SERVER f10k OPTIONS (table 'orders');
CREATE TABLE orders_native (tenant_id text, order_id bigint, status text,
  amount_cents bigint, created_at timestamp, customer_id int);
\copy orders_native FROM '$B/f10k.csv' (FORMAT csv)
VACUUM ANALYZE orders_native;
SQL
	# shellcheck disable=SC2059
	q=$(printf "$REPORT" orders_10k)
	# shellcheck disable=SC2059
	n=$(printf "$REPORT" orders_native)
	if [ "$(psql -X -A -t -c "$q")" = "$(psql -X -A -t -c "$n")" ]; then
		echo "ok: the 10,000-file report equals the native table's"
	else
		echo "FAILED: the 10,000-file report differs from the native table's"
	fi
	read -r fresh all <<<"$(ms "$q" "SET sqlite_shard_fdw.max_open_shards = 1;")"
	echo "figure: 10,000 files, opened fresh: $fresh ms ($all), $(python3 -c "print('%.1f' % ($fresh * 1000 / 10000))") us per file"
	read -r dflt all <<<"$(ms "$q")"
	echo "figure: 10,000 files, default settings (more than the cache holds: 64 handles kept): $dflt ms ($all), $(python3 -c "print('%.1f' % ($dflt * 1000 / 10000))") us per file"
	read -r native all <<<"$(ms "$n")"
	echo "figure: native table of the same 2,000,000 rows: $native ms ($all)"
	fl=$(python3 "$gen" floor "$B/f10k" | head -1)
	echo "figure: $fl"
	echo "figure: memory of a backend after the report, default settings: $(peak_rss "$q")"

	# Handles kept: the descriptor limit of this machine (ulimit -n 20000
	# at most) lets a backend keep about 6,600; 5,000 files fit.
	psql -X -q -v ON_ERROR_STOP=1 <<SQL
CREATE SERVER f5k FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '$B/f5k/directory.db', layout 'file_per_tenant',
           tenant_path 'tenants/%s.db');
CREATE FOREIGN TABLE orders_5k (tenant_id text, order_id bigint,
  status text, amount_cents bigint, created_at timestamp)
  SERVER f5k OPTIONS (table 'orders');
SQL
	# shellcheck disable=SC2059
	q5=$(printf "$REPORT" orders_5k)
	keep="SET sqlite_shard_fdw.max_open_shards = 6000; SET sqlite_shard_fdw.open_shards_memory = '1GB';"
	read -r kept all <<<"$(ms "$q5" "$keep")"
	echo "figure: 5,000 files, handles kept (max_open_shards 6000, open_shards_memory 1GB; the first run opens them): $kept ms ($all), $(python3 -c "print('%.1f' % ($kept * 1000 / 5000))") us per file"
	read -r fresh5 all <<<"$(ms "$q5" "SET sqlite_shard_fdw.max_open_shards = 1;")"
	echo "figure: 5,000 files, opened fresh: $fresh5 ms ($all), $(python3 -c "print('%.1f' % ($fresh5 * 1000 / 5000))") us per file"
	fl=$(python3 "$gen" floor "$B/f5k" | head -1)
	echo "figure: $fl"
	echo "figure: memory of a backend keeping 5,000 handles: $(peak_rss "$q5" "$keep")"
	echo "figure: EXPLAIN:"
	psql -X -A -t -c "EXPLAIN (ANALYZE, VERBOSE, COSTS OFF, TIMING OFF) $q" | sed 's/^/    /'
fi

if want 100k; then
	psql -X -q -v ON_ERROR_STOP=1 <<SQL
CREATE SERVER h100k FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '$B/h100k/directory.db', layout 'file_per_tenant',
           tenant_path 'tenants/%2/%s.db');
CREATE FOREIGN TABLE orders_100k (tenant_id text, order_id bigint,
  status text, amount_cents bigint, created_at timestamp)
  SERVER h100k OPTIONS (table 'orders');
SQL
	# shellcheck disable=SC2059
	q=$(printf "$REPORT" orders_100k)
	read -r t all <<<"$(ms "$q")"
	echo "figure: 100,000 files (hashed folders), default settings: $t ms ($all), $(python3 -c "print('%.1f' % ($t * 1000 / 100000))") us per file"
	echo "figure: memory of a backend after the report: $(peak_rss "$q")"
	echo "figure: EXPLAIN:"
	psql -X -A -t -c "EXPLAIN (ANALYZE, VERBOSE, COSTS OFF, TIMING OFF) $q" | sed 's/^/    /'
	fl=$(python3 "$gen" floor "$B/h100k" --repeat 1 | head -1)
	echo "figure: $fl"
fi

if want lookup; then
	psql -X -q -v ON_ERROR_STOP=1 <<SQL
CREATE SERVER l1k FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '$B/l1k/directory.db', layout 'file_per_tenant');
CREATE SERVER l1m FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '$B/l1m/directory.db', layout 'file_per_tenant');
CREATE SERVER lpat FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '$B/l1k/directory.db', layout 'file_per_tenant',
           tenant_path 'tenants/%2/%s.db');
CREATE FOREIGN TABLE o_l1k (tenant_id text, order_id bigint, status text,
  amount_cents bigint, created_at timestamp) SERVER l1k OPTIONS (table 'orders');
CREATE FOREIGN TABLE o_l1m (tenant_id text, order_id bigint, status text,
  amount_cents bigint, created_at timestamp) SERVER l1m OPTIONS (table 'orders');
CREATE FOREIGN TABLE o_lpat (tenant_id text, order_id bigint, status text,
  amount_cents bigint, created_at timestamp) SERVER lpat OPTIONS (table 'orders');
CREATE TABLE o_native (tenant_id text, order_id bigint, status text,
  amount_cents bigint, created_at timestamp);
INSERT INTO o_native SELECT 't' || lpad(t::text, 4, '0'), (t - 1) * 20 + o, 'new', o, now()
  FROM generate_series(1, 1000000) t, generate_series(1, 2) o;
CREATE INDEX ON o_native (tenant_id, order_id);
VACUUM ANALYZE o_native;
SQL
	# N routed lookups of one row each, over the first 1,000 tenants (those
	# with files), in a PL/pgSQL loop: the tenant is a parameter, routed at
	# executor start, with no client round trip in the figure.
	for t in o_l1k o_l1m o_lpat o_native; do
		for i in 1 2 3; do
			psql -X -q -A -t 2>&1 <<SQL
DO \$\$
DECLARE
	x bigint;
	t0 timestamptz;
	tid text;
	n int;
BEGIN
	FOR pass IN 1..2 LOOP
		t0 := clock_timestamp();
		FOR i IN 1..20000 LOOP
			n := 1 + (i * 7919) % 1000;
			tid := 't' || lpad(n::text, 4, '0');
			SELECT amount_cents INTO x FROM $t
			  WHERE tenant_id = tid AND order_id = (n - 1) * 20 + 1;
		END LOOP;
	END LOOP;
	RAISE NOTICE 'figure: routed point lookup, $t: % us',
		round(extract(epoch FROM clock_timestamp() - t0) * 1e6 / 20000, 1);
END
\$\$;
SQL
		done
	done
fi
