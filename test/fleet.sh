#!/usr/bin/env bash
#
# test/fleet.sh
#	Build a sample tenant-sharded fleet of SQLite files, for the demo, the
#	larger tests and the benchmark.
#
# Usage: bash test/fleet.sh DIR [NSHARDS [NTENANTS [ROWS]]]
#	(defaults 4 shards, 300 tenants, 200000 orders)
#
# Creates
#	DIR/directory.db			shards(shard_id, path) and shard_map(tenant_id,
#								shard_id, status, target_shard_id, updated_at)
#	DIR/shards/shard_00.db ...	orders and customers, WAL journal mode
#
# Tenants are named tenant_0001 ... and placed round-robin over the shards
# (tenant_0001 on shard_00, tenant_0002 on shard_01, ...).  Sizes are skewed:
# the first 5 % of tenants hold about 60 % of the orders.  Each tenant has
# about one customer per 20 orders; an order names one of its tenant's
# customers (customer_id; NULL for about 2 % of orders, guest checkouts),
# and a customer has a plan (free, team, business, enterprise: about 60, 25,
# 10 and 5 %).  order_id and customer_id are unique
# across the whole fleet, so a tenant can move to any shard without key
# collisions.  Everything is derived from row numbers by integer arithmetic
# (FLEET_SEED, default 1, varies it), so the same arguments always give the
# same rows.  Rows are generated inside sqlite3 (generate_series), one
# sqlite3 process per shard, shards built in parallel; a few hundred
# thousand rows take a second or two.
#
# Run as root, the result is handed to the OS user postgres (owner, folders
# 0775, files 0664) so the server can read and write it.

set -euo pipefail

usage()
{
	echo "usage: $0 DIR [NSHARDS [NTENANTS [ROWS]]]" >&2
	exit 2
}

if [ $# -lt 1 ] || [ $# -gt 4 ]; then
	usage
fi
DIR=$1
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
NSHARDS=${2:-4}
NTENANTS=${3:-300}
ROWS=${4:-200000}
SEED=${FLEET_SEED:-1}

for n in "$NSHARDS" "$NTENANTS" "$ROWS" "$SEED"; do
	[[ "$n" =~ ^[0-9]+$ ]] || usage
done
if [ "$NSHARDS" -lt 1 ] || [ "$NTENANTS" -lt 1 ]; then
	echo "fleet.sh: NSHARDS and NTENANTS must be at least 1" >&2
	exit 2
fi

mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
rm -rf "$DIR/shards" "$DIR"/directory.db "$DIR"/directory.db-wal \
	"$DIR"/directory.db-shm
mkdir -p "$DIR/shards"

PLAN="$DIR/.fleet_plan.db"
rm -f "$PLAN"
trap 'rm -f "$PLAN"' EXIT

# The plan: one row per tenant with its shard, its number of orders and
# customers, and the first order_id and customer_id of its range.
HEAVY=$(( (NTENANTS + 19) / 20 ))	# 5 %, at least one tenant
sqlite3 -bail "$PLAN" >/dev/null <<SQL
PRAGMA journal_mode = OFF;
PRAGMA synchronous = OFF;
CREATE TABLE plan(
	t INTEGER PRIMARY KEY,
	tenant_id TEXT NOT NULL,
	shard INTEGER NOT NULL,
	shard_id TEXT NOT NULL,
	heavy INTEGER NOT NULL,
	w REAL NOT NULL,
	nrows INTEGER,
	start INTEGER,
	ncust INTEGER,
	cstart INTEGER
);
INSERT INTO plan(t, tenant_id, shard, shard_id, heavy, w)
SELECT value,
	   printf('tenant_%04d', value),
	   (value - 1) % $NSHARDS,
	   printf('shard_%02d', (value - 1) % $NSHARDS),
	   value <= $HEAVY,
	   CASE WHEN value <= $HEAVY
			THEN 4 + ((value * 37 + $SEED) % 5)
			ELSE 1 + ((value * 13 + $SEED) % 7) / 3.0 END
FROM generate_series(1, $NTENANTS);

-- the heavy tenants share 60 % of the rows (all of them if every tenant is
-- heavy), the others the rest, each in proportion to its weight
WITH tot AS (
	SELECT sum(CASE WHEN heavy THEN w END) AS wh,
		   sum(CASE WHEN NOT heavy THEN w END) AS wl,
		   count(*) > $HEAVY AS has_light
	FROM plan)
UPDATE plan SET nrows = (
	SELECT CAST(round($ROWS * CASE WHEN plan.heavy
		THEN (CASE WHEN has_light THEN 0.6 ELSE 1.0 END) * plan.w / wh
		ELSE 0.4 * plan.w / wl END) AS INTEGER)
	FROM tot);
UPDATE plan SET ncust = CASE WHEN nrows = 0 THEN 0 ELSE 1 + nrows / 20 END;
WITH r AS (
	SELECT t,
		   1 + sum(nrows) OVER w - nrows AS start,
		   1 + sum(ncust) OVER w - ncust AS cstart
	FROM plan
	WINDOW w AS (ORDER BY t ROWS UNBOUNDED PRECEDING))
UPDATE plan SET start = r.start, cstart = r.cstart FROM r WHERE r.t = plan.t;
CREATE INDEX plan_shard ON plan(shard);
SQL

# The control database.
sqlite3 -bail "$DIR/directory.db" >/dev/null <<SQL
PRAGMA journal_mode = WAL;
.read $HERE/directory.sql
ATTACH '$PLAN' AS p;
BEGIN;
INSERT INTO shards(shard_id, path)
SELECT printf('shard_%02d', value), printf('shards/shard_%02d.db', value)
FROM generate_series(0, $NSHARDS - 1);
INSERT INTO shard_map(tenant_id, shard_id, status, target_shard_id, updated_at)
SELECT tenant_id, shard_id, 'ACTIVE', NULL, 1735689600
FROM p.plan ORDER BY t;
COMMIT;
SQL

# hash_sql EXPR: print an SQLite expression that hashes the integer EXPR to
# 0 .. 2^31-2, well mixed (two rounds of an affine step and a square modulo
# the prime 2^31-1; every product stays below 2^63) and seeded by FLEET_SEED.
hash_sql()
{
	local x1="((($1) + $SEED * 1000003) * 48271 + 11) % 2147483647"
	local h1="(($x1) * ($x1)) % 2147483647"
	local x2="(($h1) * 16807 + 7) % 2147483647"
	echo "(($x2) * ($x2)) % 2147483647"
}

# build_shard K: create shards/shard_KK.db with its tenants' rows.
build_shard()
{
	local k=$1
	local db
	db="$DIR/shards/$(printf 'shard_%02d' "$k").db"

	sqlite3 -bail "$db" >/dev/null <<SQL
PRAGMA journal_mode = OFF;
PRAGMA synchronous = OFF;
PRAGMA cache_size = -65536;
ATTACH '$PLAN' AS p;
CREATE TABLE orders(
	order_id INTEGER PRIMARY KEY,
	tenant_id TEXT NOT NULL,
	status TEXT NOT NULL,
	amount_cents INTEGER NOT NULL,
	created_at TEXT NOT NULL,
	customer_id INTEGER
);
CREATE TABLE customers(
	customer_id INTEGER PRIMARY KEY,
	tenant_id TEXT NOT NULL,
	name TEXT NOT NULL,
	country TEXT,
	created_at TEXT NOT NULL,
	plan TEXT NOT NULL
);
BEGIN;
-- h is a deterministic hash of the row id (see hash_sql).
INSERT INTO orders(order_id, tenant_id, status, amount_cents, created_at,
				   customer_id)
SELECT o, tenant_id,
	   CASE WHEN h % 100 < 12 THEN 'new'
			WHEN h % 100 < 62 THEN 'paid'
			WHEN h % 100 < 92 THEN 'shipped'
			ELSE 'cancelled' END,
	   99 + (h / 100) % 49901,
	   datetime(1704067200 + (i * 63072000) / nrows + (h / 7) % 86400,
				'unixepoch'),
	   CASE WHEN (h / 13) % 50 = 0 THEN NULL
			ELSE cstart + (h / 650) % ncust END
FROM (SELECT o, i, tenant_id, nrows, cstart, ncust, $(hash_sql o) AS h
	  FROM (SELECT p.start + g.value AS o, g.value AS i, p.tenant_id, p.nrows,
				   p.cstart, p.ncust
			FROM p.plan p, generate_series(0, p.nrows - 1) g
			WHERE p.shard = $k AND p.nrows > 0));
INSERT INTO customers(customer_id, tenant_id, name, country, created_at, plan)
SELECT c, tenant_id,
	   json_extract('["Ada","Grace","Alan","Edsger","Barbara","Donald","Frances","Ken"]',
					'\$[' || (h % 8) || ']') || ' ' ||
	   json_extract('["Lovelace","Hopper","Turing","Dijkstra","Liskov","Knuth","Allen","Thompson"]',
					'\$[' || ((h / 8) % 8) || ']'),
	   json_extract('["US","DE","FR","GB","JP","BR","IN","CA","NL",null]',
					'\$[' || ((h / 64) % 10) || ']'),
	   datetime(1704067200 + (i * 31536000) / ncust + (h / 7) % 86400,
				'unixepoch'),
	   CASE WHEN (h / 640) % 20 = 0 THEN 'enterprise'
			WHEN (h / 640) % 20 < 3 THEN 'business'
			WHEN (h / 640) % 20 < 8 THEN 'team'
			ELSE 'free' END
FROM (SELECT c, i, tenant_id, ncust, $(hash_sql "c + 7777777") AS h
	  FROM (SELECT p.cstart + g.value AS c, g.value AS i, p.tenant_id, p.ncust
			FROM p.plan p, generate_series(0, p.ncust - 1) g
			WHERE p.shard = $k AND p.ncust > 0));
COMMIT;
CREATE INDEX orders_tenant ON orders(tenant_id, order_id);
CREATE INDEX orders_tenant_created ON orders(tenant_id, created_at);
CREATE INDEX customers_tenant ON customers(tenant_id, customer_id);
ANALYZE main;
DETACH p;
PRAGMA journal_mode = WAL;
SQL
}

# Build the shards in parallel, as many at a time as there are CPUs.
jobs_max=$(nproc 2>/dev/null || echo 2)
running=0
for ((k = 0; k < NSHARDS; k++)); do
	build_shard "$k" &
	running=$((running + 1))
	if [ "$running" -ge "$jobs_max" ]; then
		wait -n
		running=$((running - 1))
	fi
done
while [ "$running" -gt 0 ]; do
	wait -n
	running=$((running - 1))
done

rm -f "$PLAN"

if [ "$(id -u)" -eq 0 ] && id postgres >/dev/null 2>&1; then
	chown -R postgres:postgres "$DIR"
fi
find "$DIR" -type d -exec chmod 0775 {} +
find "$DIR" -type f -exec chmod 0664 {} +
