#!/usr/bin/env bash
#
# test/bench.sh
#	The benchmark: what `make bench` runs.  Installs what is missing, builds
#	and installs the extension, builds (or reuses) the benchmark fleet, and
#	in one throw-away PostgreSQL cluster measures, side by side,
#	  (a) the sqlite3 CLI on the same shard files (the floor),
#	  (b) the same rows in a native PostgreSQL table with the same indexes,
#	  (c) the extension's foreign tables,
#	for the read workload: routed point lookup and routed tenant report
#	(pgbench -M prepared), three fan-out reports and the full export (with
#	the backend's peak memory); and for the writes: COPY FROM a
#	CSV spread over every tenant (against the sqlite3 CLI importing the same
#	rows shard by shard), routed single-row INSERT and UPDATE (pgbench) and
#	an UPDATE of one large tenant, on fresh copies of the fleet and of the
#	native table, with the same durability on both sides; and the time
#	ranges and buckets BI tools send (created_at as timestamp and as
#	timestamptz, an index on created_at on both sides); and the joins
#	(orders with customers, and with a local table of accounts); and the
#	SQL that Metabase, Superset and Grafana render (test/bench_bi.py).
#	Prints medians and ratios, and a last line that says which targets were
#	met.
#
# Usage: bash test/bench.sh [--no-build]
#
# Environment:
#	BENCH_DIR				where the fleet lives (default /tmp/ssfdw_bench); a
#							fleet built earlier with the same parameters is
#							reused (BENCH_DIR/fleet.stamp)
#	BENCH_BIG_DIRECTORY=1	(or BIG=1, as in `make bench BIG=1`) also build a
#							directory of 1,000,000 tenants (the 2,000 real ones
#							plus 998,000 more pointing at the same shards) and
#							compare the routed point lookup through it; and
#							COPY 1,000,000 rows
#	BENCH_RUNS				timed runs per query, after one warm-up (default 5)
#	BENCH_PGBENCH_SECONDS	length of each timed pgbench run (default 3)
#	BENCH_COPY_ROWS			rows of the COPY FROM benchmark (default 200,000;
#							1,000,000 with BIG=1)
#	BENCH_COPY_RUNS			timed COPY runs per engine, each on fresh copies
#							(default 3)
#	BENCH_PARTS				what to measure: a list of "read", "time" (the time
#							ranges and buckets), "limit" (the
#							ORDER BY ... LIMIT queries), "join"
#							(the joins), "bi" (the SQL of BI tools:
#							test/bench_bi.py), "write" and "move" (a
#							tenant moved under an external writer:
#							test/bench_move.sh, on a fleet of its own in
#							BENCH_DIR/move) (default
#							"read,time,limit,join,bi,write,move")
#
# Missed targets are numbers, not failures: the exit status is non-zero only
# when something fails (a query error, a build error).

set -euo pipefail

# shellcheck source=test/harness.sh
source "$(dirname "${BASH_SOURCE[0]}")/harness.sh"
cd "$SSFDW_ROOT"

NSHARDS=16
NTENANTS=2000
NROWS=4000000
BIG_TENANTS=1000000
COPY_FIRST_ID=100000001		# order ids of the COPY rows: above the fleet's
INSERT_FIRST_ID=200000001	# and of the single-row INSERTs: above those

# psql_q ARGS...: psql, quiet, stop at the first error.
psql_q()
{
	psql -X -q -v ON_ERROR_STOP=1 "$@"
}

# now: seconds since the epoch, with fractions.
now()
{
	date +%s.%N
}

# since START: seconds elapsed since START, one decimal.
since()
{
	awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'
}

# The native table and, once it is loaded, its keys and indexes: the same
# in the read benchmark's table and in the write benchmark's template.
NATIVE_ORDERS="CREATE TABLE native.orders (tenant_id text NOT NULL, order_id bigint NOT NULL,
                            status text NOT NULL, amount_cents bigint NOT NULL,
                            created_at timestamp NOT NULL, customer_id bigint);"
NATIVE_ORDERS_INDEXES="SET maintenance_work_mem = '512MB';
ALTER TABLE native.orders ADD PRIMARY KEY (order_id);
CREATE INDEX orders_tenant ON native.orders (tenant_id, order_id);
CREATE INDEX orders_tenant_created ON native.orders (tenant_id, created_at);
CREATE INDEX orders_created ON native.orders (created_at);"
NATIVE_CUSTOMERS="CREATE TABLE native.customers (tenant_id text NOT NULL, customer_id bigint NOT NULL,
                               name text NOT NULL, country text,
                               created_at timestamp NOT NULL, plan text NOT NULL);"
NATIVE_CUSTOMERS_INDEXES="ALTER TABLE native.customers ADD PRIMARY KEY (customer_id);
CREATE INDEX customers_tenant ON native.customers (tenant_id, customer_id);"

#
# Inside the cluster: test/bench.sh --inner BENCH_DIR BIG PARTS
#
if [ "${1:-}" = "--inner" ]; then
	bench_dir=$2
	big=$3
	parts=$4
	fleet=$bench_dir/fleet

	# foreign_orders SERVER SCHEMA DIRECTORY: a server over the directory
	# file DIRECTORY, and SCHEMA.orders through it.
	foreign_orders()
	{
		psql_q -v server="$1" -v schema="$2" -v directory="$3" <<'SQL'
CREATE SERVER :"server" FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory :'directory');
CREATE SCHEMA :"schema";
CREATE FOREIGN TABLE :"schema".orders (tenant_id text, order_id bigint,
                                       status text, amount_cents bigint,
                                       created_at timestamp, customer_id bigint)
  SERVER :"server" OPTIONS (table 'orders', tenant_column 'tenant_id');
SQL
	}

	t0=$(now)
	psql_q -c "CREATE EXTENSION sqlite_shard_fdw"
	foreign_orders fleet ext "$fleet/directory.db"
	psql_q <<'SQL'
CREATE FOREIGN TABLE ext.customers (tenant_id text, customer_id bigint,
                                    name text, country text,
                                    created_at timestamp, plan text)
  SERVER fleet OPTIONS (table 'customers', tenant_column 'tenant_id');
CREATE SCHEMA native;
SQL
	psql_q -c "$NATIVE_ORDERS" -c "$NATIVE_CUSTOMERS"

	# The native tables: the same rows, straight from the shard files, two
	# shards at a time.
	load_shard()
	{
		sqlite3 -bail -csv "$1" \
			"SELECT tenant_id, order_id, status, amount_cents, created_at, customer_id FROM orders" |
			psql_q -c "\\copy native.orders (tenant_id, order_id, status, amount_cents, created_at, customer_id) FROM STDIN WITH (FORMAT csv)"
		sqlite3 -bail -csv "$1" \
			"SELECT tenant_id, customer_id, name, country, created_at, plan FROM customers" |
			psql_q -c "\\copy native.customers (tenant_id, customer_id, name, country, created_at, plan) FROM STDIN WITH (FORMAT csv)"
	}
	running=0
	for db in "$fleet"/shards/shard_*.db; do
		load_shard "$db" &
		running=$((running + 1))
		if [ "$running" -ge 2 ]; then
			wait -n
			running=$((running - 1))
		fi
	done
	while [ "$running" -gt 0 ]; do
		wait -n
		running=$((running - 1))
	done
	echo "native table loaded from the shards in $(since "$t0") s"

	t0=$(now)
	psql_q -c "$NATIVE_ORDERS_INDEXES" -c "$NATIVE_CUSTOMERS_INDEXES" \
		-c "VACUUM ANALYZE native.orders" -c "VACUUM ANALYZE native.customers"
	echo "native indexes, VACUUM ANALYZE in $(since "$t0") s"

	t0=$(now)
	psql_q -c "ANALYZE ext.orders" -c "ANALYZE ext.customers"
	echo "ANALYZE of the foreign tables in $(since "$t0") s"

	# The keys pgbench draws from, the same for every engine: five random
	# existing orders of every tenant (order ids are contiguous per tenant),
	# and the typical tenants (sizes between the 45th and 55th percentile).
	psql_q <<'SQL'
SELECT setseed(0.42) \g /dev/null
CREATE TABLE public.bench_keys (i int PRIMARY KEY, tenant_id text NOT NULL,
                                order_id bigint NOT NULL);
INSERT INTO public.bench_keys
SELECT row_number() OVER (ORDER BY random()), tenant_id, order_id
FROM (SELECT r.tenant_id,
             r.lo + floor(random() * (r.hi - r.lo + 1))::bigint AS order_id
      FROM (SELECT tenant_id, min(order_id) AS lo, max(order_id) AS hi
            FROM native.orders GROUP BY tenant_id) r,
           generate_series(1, 5)) s;
DO $$
BEGIN
  IF EXISTS (SELECT FROM public.bench_keys k
             WHERE NOT EXISTS (SELECT FROM native.orders o
                               WHERE o.order_id = k.order_id
                                 AND o.tenant_id = k.tenant_id)) THEN
    RAISE EXCEPTION 'bench_keys holds a pair that is not an order';
  END IF;
END $$;
CREATE TABLE public.bench_tenants (i int PRIMARY KEY, tenant_id text NOT NULL,
                                   orders bigint NOT NULL);
INSERT INTO public.bench_tenants
SELECT row_number() OVER (ORDER BY tenant_id), tenant_id, n
FROM (SELECT tenant_id, n, percent_rank() OVER (ORDER BY n, tenant_id) AS pr
      FROM (SELECT tenant_id, count(*) AS n FROM native.orders
            GROUP BY tenant_id) c) p
WHERE pr BETWEEN 0.45 AND 0.55;
ANALYZE public.bench_keys, public.bench_tenants;
SQL

	# ---- joins --------------------------------------------------------------
	# A local table of the application's accounts, one per tenant, about one
	# in ten an enterprise account: what a report joins the fleet with.
	if [[ ",$parts," == *,join,* ]]; then
		psql_q <<'SQL'
CREATE FOREIGN TABLE ext.plans (plan text, list_cents bigint)
  SERVER fleet OPTIONS (table 'plans', distribution 'reference');
CREATE TABLE native.plans (plan text PRIMARY KEY, list_cents bigint NOT NULL);
SQL
		# the native copy straight from a shard file, not through the
		# extension it is compared with
		psql_q -c "\\copy native.plans FROM PROGRAM 'sqlite3 -csv $fleet/shards/shard_00.db \"SELECT plan, list_cents FROM plans\"' WITH (FORMAT csv)"
		psql_q <<'SQL'
ANALYZE ext.plans, native.plans;
CREATE TABLE public.accounts (tenant_id text PRIMARY KEY, name text NOT NULL,
                              enterprise boolean NOT NULL);
INSERT INTO public.accounts
SELECT tenant_id, 'Account ' || tenant_id,
       (substr(tenant_id, 8)::int * 7919) % 10 = 3
FROM (SELECT DISTINCT tenant_id FROM native.orders) t;
ANALYZE public.accounts;
SQL
	fi
	# ---- end of joins ------------------------------------------------------

	# ---- time queries ---------------------------------------------------
	# created_at read as timestamptz too: a foreign table over the same
	# shards, and a native table of the same instants (the stored times are
	# UTC), with the same index on created_at.
	if [[ ",$parts," == *,time,* ]]; then
		t0=$(now)
		psql_q <<'SQL'
CREATE SCHEMA exttz;
CREATE FOREIGN TABLE exttz.orders (tenant_id text, order_id bigint,
                                   status text, amount_cents bigint,
                                   created_at timestamptz)
  SERVER fleet OPTIONS (table 'orders', tenant_column 'tenant_id');
CREATE SCHEMA nativetz;
CREATE TABLE nativetz.orders AS
  SELECT tenant_id, order_id, status, amount_cents,
         created_at AT TIME ZONE 'UTC' AS created_at
  FROM native.orders;
SET maintenance_work_mem = '512MB';
CREATE INDEX orders_tz_created ON nativetz.orders (created_at);
VACUUM ANALYZE nativetz.orders;
ANALYZE exttz.orders;
SQL
		echo "timestamptz tables (exttz, nativetz) in $(since "$t0") s"
	fi
	# ---- end of time queries ----------------------------------------------

	big_args=()
	if [ "$big" = 1 ]; then
		foreign_orders fleet_big big "$fleet/directory_big.db"
		big_args=(--big)
	fi

	# The writes: a template database holding the native table as it is
	# now, with the same keys and indexes (each timed COPY gets a fresh copy
	# of it, as the extension and the sqlite3 CLI get fresh copies of the
	# shard files), and a server over the fleet's copy that bench_run.py
	# makes in $bench_dir/wfleet before the first write.
	if [[ ",$parts," == *,write,* ]]; then
		t0=$(now)
		psql_q -c "CREATE DATABASE ssfdw_wtemplate"
		PGDATABASE=ssfdw_wtemplate psql_q -c "CREATE SCHEMA native" \
			-c "$NATIVE_ORDERS" \
			-c "CREATE TABLE public.bench_keys (i int PRIMARY KEY, tenant_id text NOT NULL, order_id bigint NOT NULL)" \
			-c "CREATE SEQUENCE public.bench_insert_ids START $INSERT_FIRST_ID"
		for t in native.orders public.bench_keys; do
			psql_q -c "COPY $t TO STDOUT" |
				PGDATABASE=ssfdw_wtemplate psql_q -c "COPY $t FROM STDIN"
		done
		PGDATABASE=ssfdw_wtemplate psql_q -c "$NATIVE_ORDERS_INDEXES" \
			-c "VACUUM ANALYZE"
		psql_q -c "CREATE SEQUENCE public.bench_insert_ids START $INSERT_FIRST_ID"
		foreign_orders wfleet wext "$bench_dir/wfleet/directory.db"
		echo "write template (database ssfdw_wtemplate) in $(since "$t0") s"
	fi

	exec python3 test/bench_run.py --bench-dir "$bench_dir" --parts "$parts" \
		--copy-first-id "$COPY_FIRST_ID" "${big_args[@]}"
fi

#
# Outside: deps, build, fleet, then the cluster.
#
started=$(now)

if [ "${1:-}" != "--no-build" ]; then
	bash test/deps.sh
	# shellcheck disable=SC2119
	ssfdw_build
fi
for cmd in pgbench psql sqlite3 python3 stdbuf pg_virtualenv; do
	if ! command -v "$cmd" >/dev/null 2>&1; then
		echo "bench.sh: $cmd not found (make deps installs it)" >&2
		exit 1
	fi
done

BENCH_DIR=${BENCH_DIR:-/tmp/ssfdw_bench}
big=${BENCH_BIG_DIRECTORY:-${BIG:-0}}
case $big in
	1 | yes | on | true) big=1 ;;
	*) big=0 ;;
esac

COPY_ROWS=${BENCH_COPY_ROWS:-$([ "$big" = 1 ] && echo 1000000 || echo 200000)}
parts=${BENCH_PARTS:-read,time,limit,join,bi,write,move}
if ! [[ "$COPY_ROWS" =~ ^[1-9][0-9]*$ ]] || ! [[ ",$parts," =~ ^(,(read|time|limit|join|bi|write|move))+,$ ]]; then
	echo "bench.sh: BENCH_COPY_ROWS must be a positive integer, BENCH_PARTS a list of read, time, limit, join, bi, write and move" >&2
	exit 2
fi

mkdir -p "$BENCH_DIR"
BENCH_DIR=$(cd "$BENCH_DIR" && pwd)
chmod 0775 "$BENCH_DIR"
if [ "$(id -u)" -eq 0 ] && id postgres >/dev/null 2>&1; then
	chown postgres:postgres "$BENCH_DIR"
fi

# ---- tenant move ----------------------------------------------------------
# A fleet and a cluster of its own: it needs none of the big fleet.
if [[ ",$parts," == *,move,* ]]; then
	ssfdw_virtualenv bash test/bench_move.sh "$BENCH_DIR/move"
	parts=$(echo ",$parts," | sed 's/,move,/,/; s/^,//; s/,$//')
	if [ -z "$parts" ]; then
		echo "bench: done in $(since "$started") s"
		exit 0
	fi
fi
# ---- end of tenant move ---------------------------------------------------

fleet=$BENCH_DIR/fleet

# The fleet is reused when the stamp says it was built with the same
# parameters by the same fleet.sh, and its files are all there.
stamp="fleet.sh $(md5sum test/fleet.sh | cut -d' ' -f1) shards $NSHARDS tenants $NTENANTS rows $NROWS seed ${FLEET_SEED:-1}"
fleet_ok()
{
	[ -f "$BENCH_DIR/fleet.stamp" ] || return 1
	[ "$(cat "$BENCH_DIR/fleet.stamp")" = "$stamp" ] || return 1
	[ -f "$fleet/directory.db" ] || return 1
	local k
	for ((k = 0; k < NSHARDS; k++)); do
		[ -f "$fleet/shards/$(printf 'shard_%02d' "$k").db" ] || return 1
	done
}
if fleet_ok; then
	echo "reusing the fleet in $fleet ($NSHARDS shards, $NTENANTS tenants, $NROWS orders)"
else
	rm -f "$BENCH_DIR/fleet.stamp" "$BENCH_DIR/big.stamp"
	t0=$(now)
	echo "building a fleet of $NSHARDS shards, $NTENANTS tenants, $NROWS orders in $fleet"
	bash test/fleet.sh "$fleet" "$NSHARDS" "$NTENANTS" "$NROWS"
	echo "$stamp" >"$BENCH_DIR/fleet.stamp"
	echo "fleet built in $(since "$t0") s"
fi

# ---- time queries ---------------------------------------------------------
# Every shard has an index on created_at, as the native table has: the time
# ranges use it (and the write benchmarks maintain it on both sides).
t0=$(now)
for db in "$fleet"/shards/shard_*.db; do
	sqlite3 -bail "$db" "CREATE INDEX IF NOT EXISTS orders_created ON orders(created_at)" &
done
wait
if [ "$(id -u)" -eq 0 ] && id postgres >/dev/null 2>&1; then
	chown postgres:postgres "$fleet"/shards/*
fi
echo "index orders(created_at) in every shard checked in $(since "$t0") s"
# ---- end of time queries --------------------------------------------------

# ---- joins ----------------------------------------------------------------
# A reference table, the plans' price list, the same copy in every shard.
if [[ ",$parts," == *,join,* ]]; then
	for db in "$fleet"/shards/shard_*.db; do
		sqlite3 -bail "$db" "CREATE TABLE IF NOT EXISTS plans(plan TEXT PRIMARY KEY, list_cents INTEGER NOT NULL);
INSERT OR IGNORE INTO plans VALUES ('free', 0), ('team', 2900), ('business', 9900), ('enterprise', 49900);"
	done
	if [ "$(id -u)" -eq 0 ] && id postgres >/dev/null 2>&1; then
		chown postgres:postgres "$fleet"/shards/*
	fi
fi
# ---- end of joins ---------------------------------------------------------

# The large directory: the fleet's own directory plus 998,000 tenants with
# no rows, spread over the same shards, their ids interleaved with the real
# ones in key order.
if [ "$big" = 1 ]; then
	big_stamp="$stamp big $BIG_TENANTS"
	if [ -f "$BENCH_DIR/big.stamp" ] && [ "$(cat "$BENCH_DIR/big.stamp")" = "$big_stamp" ] &&
		[ -f "$fleet/directory_big.db" ]; then
		echo "reusing the directory of $BIG_TENANTS tenants in $fleet/directory_big.db"
	else
		t0=$(now)
		rm -f "$BENCH_DIR/big.stamp" "$fleet"/directory_big.db*
		sqlite3 -bail "$fleet/directory.db" "VACUUM INTO '$fleet/directory_big.db'"
		sqlite3 -bail "$fleet/directory_big.db" >/dev/null <<SQL
PRAGMA journal_mode = WAL;
BEGIN;
INSERT INTO shard_map(tenant_id, shard_id, status, target_shard_id, updated_at)
SELECT printf('tenant_%07d', value), printf('shard_%02d', value % $NSHARDS),
       'ACTIVE', NULL, 1735689600
FROM generate_series($NTENANTS + 1, $BIG_TENANTS);
COMMIT;
SQL
		n=$(sqlite3 -bail "$fleet/directory_big.db" "SELECT count(*) FROM shard_map")
		if [ "$n" != "$BIG_TENANTS" ]; then
			echo "bench.sh: directory_big.db has $n tenants, not $BIG_TENANTS" >&2
			exit 1
		fi
		if [ "$(id -u)" -eq 0 ] && id postgres >/dev/null 2>&1; then
			chown postgres:postgres "$fleet"/directory_big.db*
		fi
		chmod 0664 "$fleet"/directory_big.db*
		echo "$big_stamp" >"$BENCH_DIR/big.stamp"
		echo "directory of $BIG_TENANTS tenants built in $(since "$t0") s"
	fi
fi

# The rows of the COPY benchmark: COPY_ROWS new orders (ids from
# COPY_FIRST_ID) spread over the tenants: each run of NTENANTS rows holds
# every tenant once, in an order that sends consecutive rows to different
# shards, as an ETL extract would (their customer ids are plain numbers:
# nothing checks them against customers).  copy.csv holds them in the foreign
# table's column order for COPY; SHARD.csv the same rows of each shard, in
# the shard's column order, for the sqlite3 CLI's .import.
if [[ ",$parts," == *,write,* ]]; then
	copy_dir=$BENCH_DIR/copy
	copy_stamp="$stamp copy $COPY_ROWS first $COPY_FIRST_ID bench.sh $(md5sum test/bench.sh | cut -d' ' -f1)"
	if [ -f "$copy_dir/copy.stamp" ] && [ "$(cat "$copy_dir/copy.stamp")" = "$copy_stamp" ]; then
		echo "reusing the $COPY_ROWS rows to COPY in $copy_dir"
	else
		t0=$(now)
		rm -rf "$copy_dir"
		mkdir -p "$copy_dir"
		{
			cat <<SQL
ATTACH '$fleet/directory.db' AS d;
CREATE TABLE r AS
SELECT o AS order_id, m.tenant_id, m.shard_id,
	   CASE WHEN h % 100 < 12 THEN 'new'
			WHEN h % 100 < 62 THEN 'paid'
			WHEN h % 100 < 92 THEN 'shipped'
			ELSE 'cancelled' END AS status,
	   99 + (h / 100) % 49901 AS amount_cents,
	   datetime(1735689600 + (j * 7919) % 31536000, 'unixepoch') AS created_at,
	   1 + j % 1000 AS customer_id
FROM (SELECT value AS j, $COPY_FIRST_ID + value AS o,
			 printf('tenant_%04d',
					1 + (value * 1237 + value / $NTENANTS * 7) % $NTENANTS) AS tenant_id,
			 (value * 2246822519 + 3266489917) % 4294967296 / 256 AS h
	  FROM generate_series(0, $COPY_ROWS - 1)) g
	 JOIN d.shard_map m USING (tenant_id);
DETACH d;
.mode csv
.once $copy_dir/copy.csv
SELECT tenant_id, order_id, status, amount_cents, created_at, customer_id FROM r ORDER BY order_id;
SQL
			sqlite3 -bail "$fleet/directory.db" "SELECT shard_id FROM shards ORDER BY shard_id" |
				while read -r sid; do
					echo ".once $copy_dir/$sid.csv"
					echo "SELECT order_id, tenant_id, status, amount_cents, created_at, customer_id FROM r WHERE shard_id = '$sid' ORDER BY order_id;"
				done
			echo ".mode list"
			echo "SELECT count(*), count(DISTINCT tenant_id) FROM r;"
		} | sqlite3 -bail >"$copy_dir/.gen.out"
		want="$COPY_ROWS|$((COPY_ROWS < NTENANTS ? COPY_ROWS : NTENANTS))"
		if [ "$(cat "$copy_dir/.gen.out")" != "$want" ]; then
			echo "bench.sh: the rows to COPY are not $want (rows|tenants): $(cat "$copy_dir/.gen.out")" >&2
			exit 1
		fi
		if [ "$(id -u)" -eq 0 ] && id postgres >/dev/null 2>&1; then
			chown -R postgres:postgres "$copy_dir"
		fi
		chmod 0775 "$copy_dir"
		chmod 0664 "$copy_dir"/*.csv
		echo "$copy_stamp" >"$copy_dir/copy.stamp"
		echo "$COPY_ROWS rows to COPY written to $copy_dir in $(since "$t0") s"
	fi
fi

set +e
BENCH_STARTED=$started BENCH_COPY_ROWS=$COPY_ROWS ssfdw_virtualenv \
	bash test/bench.sh --inner "$BENCH_DIR" "$big" "$parts"
rc=$?
set -e
if [ "$rc" -ne 0 ]; then
	echo "bench: failed (exit status $rc) after $(since "$started") s" >&2
fi
exit "$rc"
