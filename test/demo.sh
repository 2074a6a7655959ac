#!/usr/bin/env bash
#
# test/demo.sh
#	The demo: what `make demo` runs.  Installs what is missing, builds and
#	installs the extension, builds a sample fleet (4 shards, 300 tenants,
#	200 000 orders) and queries it from a PostgreSQL cluster, saying before
#	each step what it shows and which plan lines to look at.
#
# Usage: bash test/demo.sh [--no-build] [--keep]
#	KEEP=1 in the environment (`make demo KEEP=1`) is the same as --keep.
#
# Without --keep the fleet lives in a temporary folder and the cluster is
# pg_virtualenv's; both are removed at the end.  With --keep (as root) the
# cluster is a real one, made with pg_createcluster and named ssfdw_demo
# (ssfdw_demo_2, ... when that is taken), and the fleet lives next to the
# clusters' data, in /var/lib/postgresql/<cluster>-fleet, where the server's
# OS user can read and write it; both are left running at the end, and the
# last lines say how to connect, stop and remove them.  If the demo fails,
# a kept cluster and its fleet are removed as well.
#
# Stops with a non-zero exit at the first error.

set -euo pipefail

# shellcheck source=test/harness.sh
source "$(dirname "${BASH_SOURCE[0]}")/harness.sh"
cd "$SSFDW_ROOT"

NSHARDS=4
NTENANTS=300
NROWS=200000
TENANT=tenant_0007

#
# Inside the cluster: test/demo.sh --inner FLEET_DIR, with PGHOST, PGPORT,
# PGUSER and PGDATABASE set.
#
if [ "${1:-}" = "--inner" ]; then
	fleet=$2

	# The tenant's shard and one of its orders, read straight from the
	# files with the sqlite3 CLI, for the routed query below.
	IFS='|' read -r shard path < <(sqlite3 -bail "$fleet/directory.db" \
		"SELECT s.shard_id, s.path FROM shard_map m JOIN shards s USING (shard_id)
		 WHERE m.tenant_id = '$TENANT'")
	order_id=$(sqlite3 -bail "$fleet/$path" \
		"SELECT order_id FROM orders WHERE tenant_id = '$TENANT'
		 ORDER BY order_id LIMIT 1 OFFSET 41")

	# \echo lines say what each step shows; -e echoes each statement before
	# its result.
	psql -X -e -q -v ON_ERROR_STOP=1 \
		-v directory="$fleet/directory.db" -v tenant="$TENANT" \
		-v shard="$shard" -v order_id="$order_id" -v nshards="$NSHARDS" \
		-v ntenants="$NTENANTS" <<'SQL'
\echo
\echo '== 1. Setup ==============================================================='
\echo 'The extension; a server that points at the fleet''s directory, a SQLite'
\echo 'file listing the shard files and which shard holds each tenant; and two'
\echo 'foreign tables over tables that every shard has.'
\echo
CREATE EXTENSION sqlite_shard_fdw;
CREATE SERVER fleet FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory :'directory');
CREATE FOREIGN TABLE orders (tenant_id text, order_id bigint, status text,
                             amount_cents bigint, created_at timestamp)
  SERVER fleet OPTIONS (table 'orders', tenant_column 'tenant_id');
CREATE FOREIGN TABLE customers (tenant_id text, customer_id bigint, name text,
                                country text, created_at timestamp)
  SERVER fleet OPTIONS (table 'customers', tenant_column 'tenant_id');

\echo
\echo '== 2. The fleet ==========================================================='
\echo 'shard_list() reads the directory: ':nshards' shard files, ':ntenants' tenants.'
\echo 'tenant_locate() says which shard holds one tenant.'
\echo
SELECT * FROM shard_list('fleet');
SELECT * FROM tenant_locate('fleet', :'tenant');

\echo
\echo '== 3. A routed query: one tenant, one shard ==============================='
\echo 'The WHERE clause names the tenant, so only the shard that holds it is'
\echo 'opened; the other shards are not touched.'
\echo
SELECT * FROM orders WHERE tenant_id = :'tenant' AND order_id = :order_id;
\echo 'In its plan, look at:'
\echo '- "Shards: 1 of ':nshards' (':shard')": only ':tenant'''s shard is opened.'
\echo '- "Pushdown: rows": the shard returns rows (there is nothing to aggregate).'
\echo '- "SQLite query": what the shard runs.  Both conditions are evaluated'
\echo '  inside SQLite, with the values bound as ?1 and ?2.'
\echo
EXPLAIN (VERBOSE, COSTS OFF)
SELECT * FROM orders WHERE tenant_id = :'tenant' AND order_id = :order_id;

\echo
\echo '== 4. A fan-out: a report over every tenant ==============================='
\echo 'No tenant condition, so every shard is read, all at once on worker'
\echo 'threads.  Each shard sends one partial row per status, and PostgreSQL'
\echo 'adds the parts up.'
\echo
SELECT status, count(*), sum(amount_cents) FROM orders
GROUP BY status ORDER BY status;
\echo 'In its plan, look at:'
\echo '- "Shards: ':nshards' of ':nshards'": every shard is read.'
\echo '- "Pushdown: partial aggregates, merged": count and sum are computed per'
\echo '  shard and merged by PostgreSQL.'
\echo '- "Grouped By: reading threads": the thread that reads a shard groups its'
\echo '  rows as they arrive.'
\echo '- "SQLite query": only the two columns the report needs leave SQLite.'
\echo
EXPLAIN (VERBOSE, COSTS OFF)
SELECT status, count(*), sum(amount_cents) FROM orders
GROUP BY status ORDER BY status;

\echo
\echo '== 5. The same fan-out, run and measured (EXPLAIN ANALYZE) ================'
\echo 'Look at:'
\echo '- "Shard Rows": what each shard sent to PostgreSQL, one partial row per'
\echo '  status instead of the 50 000 or so orders it holds.'
\echo '- "Slowest Shard": the shards run in parallel, so the slowest one, not'
\echo '  the sum of all, sets the query''s time.  (Times vary from run to run.)'
\echo
EXPLAIN (ANALYZE, COSTS OFF)
SELECT status, count(*), sum(amount_cents) FROM orders
GROUP BY status ORDER BY status;

\echo
\echo '== 6. The biggest tenants: a top 5 computed inside the shards ============='
\echo 'A tenant lives in one shard, so grouping by the tenant column gives whole'
\echo 'groups in each shard: each shard ranks its own tenants and sends only its'
\echo 'top 5, and PostgreSQL picks the top 5 of those.'
\echo
SELECT tenant_id, count(*) AS orders, sum(amount_cents) AS cents
FROM orders GROUP BY tenant_id ORDER BY cents DESC LIMIT 5;
\echo 'In its plan, look at:'
\echo '- "Pushdown: whole groups per shard, sorted and limited": grouping,'
\echo '  ordering and the limit all happen in the shards.'
\echo '- "Groups Per Shard: 5": each shard sends at most 5 rows.'
\echo
EXPLAIN (VERBOSE, COSTS OFF)
SELECT tenant_id, count(*) AS orders, sum(amount_cents) AS cents
FROM orders GROUP BY tenant_id ORDER BY cents DESC LIMIT 5;

\echo
\echo '== 7. A routed report: one tenant''s customers by country =================='
\echo 'Routed again: only ':shard' is read, and it sends one row per country.'
\echo
SELECT country, count(*) FROM customers WHERE tenant_id = :'tenant'
GROUP BY country ORDER BY country;
SQL
	exit 0
fi

build=1
keep=0
case ${KEEP:-} in
	'' | 0 | no | false) ;;
	*) keep=1 ;;
esac
for arg in "$@"; do
	case $arg in
		--no-build) build=0 ;;
		--keep) keep=1 ;;
		*)
			echo "usage: $0 [--no-build] [--keep]" >&2
			exit 2
			;;
	esac
done

if [ "$keep" -eq 1 ] && [ "$(id -u)" -ne 0 ]; then
	echo "demo.sh: keeping the cluster (KEEP=1) needs root, to create it with pg_createcluster" >&2
	exit 1
fi

if [ "$build" -eq 1 ]; then
	bash test/deps.sh
	# shellcheck disable=SC2119
	ssfdw_build
fi

build_fleet()
{
	echo "building a fleet of $NSHARDS shards, $NTENANTS tenants, $NROWS orders in $1"
	bash test/fleet.sh "$1" "$NSHARDS" "$NTENANTS" "$NROWS"
}

if [ "$keep" -eq 0 ]; then
	# The fleet lives in a temporary folder the server's OS user can reach
	# (fleet.sh hands the files to postgres when run as root).
	work=$(mktemp -d -t ssfdw_demo.XXXXXX)
	trap 'rm -rf "$work"' EXIT
	chmod 0755 "$work"
	build_fleet "$work/fleet"
	ssfdw_virtualenv bash test/demo.sh --inner "$work/fleet"
	echo
	echo "The demo's cluster and fleet are removed now.  To keep them and go on"
	echo "exploring, run: make demo KEEP=1"
	exit 0
fi

#
# --keep: a cluster that outlives this script.  pg_virtualenv drops its
# cluster when its command exits, so this one is made with
# pg_createcluster: owned by postgres, listening on its own port and on the
# usual socket folder, started by hand (start.conf manual, so it does not
# come back at boot).  Local connections use peer authentication, so a
# superuser role named after the OS user running the demo (root) logs in
# without a password, and nobody else can.
#
name=ssfdw_demo
n=1
pgroot=/var/lib/postgresql
while [ -e "/etc/postgresql/$PG_MAJOR/$name" ] ||
	[ -e "$pgroot/$PG_MAJOR/$name" ] || [ -e "$pgroot/$name-fleet" ]; do
	n=$((n + 1))
	name=ssfdw_demo_$n
done
fleet=$pgroot/$name-fleet
port=$(ssfdw_free_port)
socket=/var/run/postgresql
role=$(id -un)
db=demo

# Until the demo has run, a failure removes what it made.
kept=0
cleanup()
{
	if [ "$kept" -eq 0 ]; then
		pg_dropcluster --stop "$PG_MAJOR" "$name" >/dev/null 2>&1 || true
		rm -rf "$fleet"
	fi
}
trap cleanup EXIT

mkdir -p "$fleet"
chown postgres:postgres "$fleet"
build_fleet "$fleet"

echo "creating PostgreSQL $PG_MAJOR cluster \"$name\" on port $port"
pg_createcluster --quiet --port "$port" --start-conf manual \
	--encoding UTF8 --locale C.UTF-8 "$PG_MAJOR" "$name" >/dev/null
pg_ctlcluster "$PG_MAJOR" "$name" start
runuser -u postgres -- psql -X -q -v ON_ERROR_STOP=1 -h "$socket" \
	-p "$port" -d postgres -v role="$role" -v db="$db" <<'SQL'
CREATE ROLE :"role" LOGIN SUPERUSER;
CREATE DATABASE :"db" OWNER :"role";
SQL

PGHOST=$socket PGPORT=$port PGUSER=$role PGDATABASE=$db \
	bash test/demo.sh --inner "$fleet"
kept=1

# A login scoped to one tenant, to try as docs/reference/scoped-logins.md
# describes.  Peer authentication on the socket admits only an
# operating system user of the role's name, so it logs in over TCP with a
# password (Debian's pg_hba.conf: scram-sha-256 on 127.0.0.1).
scoped=tenant_0042_reader
runuser -u postgres -- psql -X -q -v ON_ERROR_STOP=1 -h "$socket" \
	-p "$port" -d "$db" -v scoped="$scoped" <<'SQL'
CREATE ROLE :"scoped" LOGIN PASSWORD 'demo';
CREATE USER MAPPING FOR :"scoped" SERVER fleet OPTIONS (tenants 'tenant_0042');
GRANT USAGE ON SCHEMA public TO :"scoped";
GRANT SELECT, INSERT, UPDATE, DELETE ON orders, customers TO :"scoped";
SQL

connect="psql -h $socket -p $port -U $role -d $db"
cat <<EOF

== Kept: the cluster and the fleet ========================================
The cluster and the fleet are still there, to go on exploring:

  cluster  PostgreSQL $PG_MAJOR "$name", port $port (pg_lsclusters lists it)
  fleet    $fleet (directory.db, shards/)

Connect (as $role; the role "$role" is a superuser in that cluster):

  $connect

and try, for instance:

  SELECT * FROM tenant_locate('fleet', 'tenant_0042');
  EXPLAIN (ANALYZE, VERBOSE)
  SELECT count(*) FROM orders WHERE tenant_id IN ('tenant_0001', 'tenant_0002');
  CREATE SCHEMA imported;
  IMPORT FOREIGN SCHEMA main FROM SERVER fleet INTO imported;

Log in as $scoped, a role that sees tenant_0042 only (its user mapping
has OPTIONS (tenants 'tenant_0042'); the socket's peer authentication
admits only an operating system user of that name, so it comes in over TCP
with its password):

  PGPASSWORD=demo psql -h 127.0.0.1 -p $port -U $scoped -d $db

and try:

  SELECT tenant_id, count(*) FROM orders GROUP BY 1;    -- tenant_0042 alone
  SELECT count(*) FROM orders WHERE tenant_id = 'tenant_0001';   -- 0 rows

Stop it, and start it again later (the files stay):

  pg_ctlcluster $PG_MAJOR $name stop
  pg_ctlcluster $PG_MAJOR $name start

Remove the cluster and the fleet:

  pg_dropcluster --stop $PG_MAJOR $name && rm -rf $fleet
EOF
