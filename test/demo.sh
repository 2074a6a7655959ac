#!/usr/bin/env bash
#
# test/demo.sh
#	The demo: what `make demo` runs.  Installs what is missing, builds and
#	installs the extension, builds a sample fleet (4 shards, 300 tenants,
#	200 000 orders) and queries it from a throw-away PostgreSQL cluster.
#
# Usage: bash test/demo.sh [--no-build]
#
# Every statement is echoed before its result.  Stops with a non-zero exit
# at the first error.  The fleet and the cluster are removed afterwards.

set -euo pipefail

# shellcheck source=test/harness.sh
source "$(dirname "${BASH_SOURCE[0]}")/harness.sh"
cd "$SSFDW_ROOT"

NSHARDS=4
NTENANTS=300
NROWS=200000

#
# Inside the cluster: test/demo.sh --inner FLEET_DIR
#
if [ "${1:-}" = "--inner" ]; then
	fleet=$2
	tenant=tenant_0007

	# An order of that tenant, read straight from its shard with the sqlite3
	# CLI, for the routed query below.
	path=$(sqlite3 -bail "$fleet/directory.db" \
		"SELECT s.path FROM shard_map m JOIN shards s USING (shard_id)
		 WHERE m.tenant_id = '$tenant'")
	order_id=$(sqlite3 -bail "$fleet/$path" \
		"SELECT order_id FROM orders WHERE tenant_id = '$tenant'
		 ORDER BY order_id LIMIT 1 OFFSET 41")

	psql -X -e -v ON_ERROR_STOP=1 -d postgres \
		-v directory="$fleet/directory.db" -v tenant="$tenant" \
		-v order_id="$order_id" <<'SQL'
CREATE EXTENSION sqlite_shard_fdw;
CREATE SERVER fleet FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory :'directory');
CREATE FOREIGN TABLE orders (tenant_id text, order_id bigint, status text,
                             amount_cents bigint, created_at timestamp)
  SERVER fleet OPTIONS (table 'orders', tenant_column 'tenant_id');
CREATE FOREIGN TABLE customers (tenant_id text, customer_id bigint, name text,
                                country text, created_at timestamp)
  SERVER fleet OPTIONS (table 'customers', tenant_column 'tenant_id');

-- The fleet: its shards, and where one tenant lives.
SELECT * FROM shard_list('fleet');
SELECT * FROM tenant_locate('fleet', 'tenant_0001');

-- A routed query: one tenant, so one shard is opened.
SELECT * FROM orders WHERE tenant_id = :'tenant' AND order_id = :order_id;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT * FROM orders WHERE tenant_id = :'tenant' AND order_id = :order_id;

-- A cross-shard report: every shard computes its part, PostgreSQL merges.
SELECT status, count(*), sum(amount_cents) FROM orders
GROUP BY status ORDER BY status;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT status, count(*), sum(amount_cents) FROM orders
GROUP BY status ORDER BY status;

-- The biggest tenants: each shard returns only its own first five.
SELECT tenant_id, count(*) AS orders, sum(amount_cents) AS cents
FROM orders GROUP BY tenant_id ORDER BY cents DESC LIMIT 5;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT tenant_id, count(*) AS orders, sum(amount_cents) AS cents
FROM orders GROUP BY tenant_id ORDER BY cents DESC LIMIT 5;

-- One tenant's customers by country.
SELECT country, count(*) FROM customers WHERE tenant_id = :'tenant'
GROUP BY country ORDER BY country;
SQL
	exit 0
fi

if [ "${1:-}" != "--no-build" ]; then
	bash test/deps.sh
	# shellcheck disable=SC2119
	ssfdw_build
fi

# The fleet lives in a temporary folder the server's OS user can reach
# (fleet.sh hands the files to postgres when run as root).
work=$(mktemp -d -t ssfdw_demo.XXXXXX)
trap 'rm -rf "$work"' EXIT
chmod 0755 "$work"
echo "building a fleet of $NSHARDS shards, $NTENANTS tenants, $NROWS orders in $work/fleet"
bash test/fleet.sh "$work/fleet" "$NSHARDS" "$NTENANTS" "$NROWS"

ssfdw_virtualenv bash test/demo.sh --inner "$work/fleet"
