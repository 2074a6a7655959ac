#!/usr/bin/env bash
#
# test/bench.sh
#	The benchmark: what `make bench` runs.  Installs what is missing, builds
#	and installs the extension, builds (or reuses) the benchmark fleet, and
#	in one throw-away PostgreSQL cluster measures, side by side,
#	  (a) the sqlite3 CLI on the same shard files (the floor),
#	  (b) the same rows in a native PostgreSQL table with the same indexes,
#	  (c) the extension's foreign tables,
#	for the workload of issue 3: routed point lookup and routed tenant report
#	(pgbench -M prepared), three fan-out reports and the full export (with
#	the backend's peak memory).  Prints medians and ratios, and a last line
#	that says which targets were met.
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
#							compare the routed point lookup through it
#	BENCH_RUNS				timed runs per query, after one warm-up (default 5)
#	BENCH_PGBENCH_SECONDS	length of each timed pgbench run (default 3)
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

#
# Inside the cluster: test/bench.sh --inner BENCH_DIR BIG
#
if [ "${1:-}" = "--inner" ]; then
	bench_dir=$2
	big=$3
	fleet=$bench_dir/fleet

	t0=$(now)
	psql_q -v directory="$fleet/directory.db" <<'SQL'
CREATE EXTENSION sqlite_shard_fdw;
CREATE SERVER fleet FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory :'directory');
CREATE SCHEMA ext;
CREATE FOREIGN TABLE ext.orders (tenant_id text, order_id bigint, status text,
                                 amount_cents bigint, created_at timestamp)
  SERVER fleet OPTIONS (table 'orders', tenant_column 'tenant_id');
CREATE FOREIGN TABLE ext.customers (tenant_id text, customer_id bigint,
                                    name text, country text,
                                    created_at timestamp)
  SERVER fleet OPTIONS (table 'customers', tenant_column 'tenant_id');
CREATE SCHEMA native;
CREATE TABLE native.orders (tenant_id text NOT NULL, order_id bigint NOT NULL,
                            status text NOT NULL, amount_cents bigint NOT NULL,
                            created_at timestamp NOT NULL);
SQL

	# The native table: the same rows, straight from the shard files, two
	# shards at a time.
	load_shard()
	{
		sqlite3 -bail -csv "$1" \
			"SELECT tenant_id, order_id, status, amount_cents, created_at FROM orders" |
			psql_q -c "\\copy native.orders (tenant_id, order_id, status, amount_cents, created_at) FROM STDIN WITH (FORMAT csv)"
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
	psql_q <<'SQL'
SET maintenance_work_mem = '512MB';
ALTER TABLE native.orders ADD PRIMARY KEY (order_id);
CREATE INDEX orders_tenant ON native.orders (tenant_id, order_id);
CREATE INDEX orders_tenant_created ON native.orders (tenant_id, created_at);
VACUUM ANALYZE native.orders;
SQL
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

	big_args=()
	if [ "$big" = 1 ]; then
		psql_q -v directory="$fleet/directory_big.db" <<'SQL'
CREATE SERVER fleet_big FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory :'directory');
CREATE SCHEMA big;
CREATE FOREIGN TABLE big.orders (tenant_id text, order_id bigint, status text,
                                 amount_cents bigint, created_at timestamp)
  SERVER fleet_big OPTIONS (table 'orders', tenant_column 'tenant_id');
SQL
		big_args=(--big)
	fi

	exec python3 test/bench_run.py --bench-dir "$bench_dir" "${big_args[@]}"
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

mkdir -p "$BENCH_DIR"
BENCH_DIR=$(cd "$BENCH_DIR" && pwd)
chmod 0775 "$BENCH_DIR"
if [ "$(id -u)" -eq 0 ] && id postgres >/dev/null 2>&1; then
	chown postgres:postgres "$BENCH_DIR"
fi
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

set +e
BENCH_STARTED=$started ssfdw_virtualenv bash test/bench.sh --inner "$BENCH_DIR" "$big"
rc=$?
set -e
if [ "$rc" -ne 0 ]; then
	echo "bench: failed (exit status $rc) after $(since "$started") s" >&2
fi
exit "$rc"
