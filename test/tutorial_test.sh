#!/usr/bin/env bash
#
# test/tutorial_test.sh
#	Every command of docs/tutorial.md, in order, so that the tutorial
#	cannot go stale.  The fenced blocks of the file are taken in document
#	order: a ```sh block runs with bash -e (as root, the tutorial's
#	reader), a ```sql block with psql -v ON_ERROR_STOP=1, each in a
#	session of its own; other blocks (```text: output, a BI tool's
#	settings, an interactive psql) are not run.  Each block run is one
#	check, "ok      tutorial block N: its first line"; a block that fails
#	prints its output and error.
#
#	The reader's names become the test's before a block runs:
#	- the fleet folder /srv/fleet (and $FLEET, which the tutorial's first
#	  block exports) becomes a fresh folder under /tmp that the server's
#	  user can reach;
#	- the database "shop", which the tutorial makes with createdb and the
#	  sql blocks run in, becomes "<PGDATABASE>_shop".
#	The roles the tutorial makes (bi_reader, acme_reader) are dropped at
#	the start and at the end, with that database.
#
#	The logins of the tutorial's sh blocks (psql -h 127.0.0.1 -U bi_reader
#	and -U acme_reader, with PGPASSWORD) run as written: the throw-away
#	cluster of pg_virtualenv, as Debian's pg_hba.conf, admits a role with
#	its password over TCP on 127.0.0.1 (scram-sha-256), and psql takes the
#	port from PGPORT.
#
# Run by test/run_suites.sh inside a throw-away cluster, with PGDATABASE
# set to a fresh database; by hand (PGDATABASE unset or "postgres"), in its
# own database ssfdw_tutorial, made afresh.  Needs root (the tutorial runs
# as root: createdb and chown); without it, every check is skipped as
# passed.  TUTORIAL_OUTPUT=DIR keeps each block's output in DIR/NN.out (for
# the output the tutorial shows).  Prints one line per block, then "N
# passed, M failed".

set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export LC_ALL=C.UTF-8
source test/fixtures/common.sh
source test/script_common.sh
script_limit ssfdw_tutorial 300
script_tmp ssfdw_tutorial

tutorial=docs/tutorial.md

if [ "$(id -u)" -ne 0 ]; then
	echo "tutorial: not root, nothing to check"
	script_end
	exit 0
fi

fleet="$tmp/fleet"
shopdb="${PGDATABASE}_shop"
roles="bi_reader acme_reader"

# drop_all: the tutorial's database and roles, from an earlier run too
drop_all()
{
	local r

	psql -X -q -d postgres -c "DROP DATABASE IF EXISTS \"$shopdb\" WITH (FORCE)" \
		>/dev/null 2>&1 || true
	for r in $roles; do
		psql -X -q -d postgres -c "DROP ROLE IF EXISTS $r" >/dev/null 2>&1 || true
	done
}
drop_all
trap 'drop_all; script_cleanup' EXIT

# blocks: split the tutorial into $tmp/blocks/NN.sh and NN.sql, in order,
# with the reader's names replaced by the test's (see above)
mkdir -p "$tmp/blocks"
awk -v dir="$tmp/blocks" '
	/^```/ && !inblock {
		lang = substr($0, 4)
		inblock = 1
		if (lang == "sh" || lang == "sql") {
			n++
			file = sprintf("%s/%02d.%s", dir, n, lang)
			printf "" > file
		} else
			file = ""
		next
	}
	/^```/ && inblock {
		inblock = 0
		if (file != "")
			close(file)
		file = ""
		next
	}
	inblock && file != "" { print > file }
	END {
		if (inblock) {
			print "unterminated block" > "/dev/stderr"
			exit 1
		}
	}
' "$tutorial"
for f in "$tmp/blocks"/*; do
	sed -i -e "s|/srv/fleet|$fleet|g" -e "s/\\bshop\\b/$shopdb/g" "$f"
done

nblocks=$(find "$tmp/blocks" -type f | wc -l)
if [ "$nblocks" -eq 0 ]; then
	result failed "the tutorial has sh and sql blocks" "none found in $tutorial"
	script_end
	exit 1
fi

# claims: what the tutorial says a block shows, checked on its output
# right after it ran ("ok      tutorial claim: ...").  Each line: the
# block's first line, a string its output must hold (or, after "!", must
# not), and what the tutorial says; fields separated by " ~ ".
claims="SELECT * FROM shard_orphans('fleet'); ~ (0 rows) ~ adopted, no row is left to no tenant or to the wrong shard
SELECT * FROM shard_orphans('fleet'); ~ eu1      | /srv/fleet/shards/eu1.db |       3 ~ eu1 answers for its three tenants
IMPORT FOREIGN SCHEMA main LIMIT TO (customers) ~ importing column \"signed_up\" of table \"customers\" as date ~ IMPORT says it reads signed_up as dates
SELECT status, count(*), sum(amount_cents) ~ Shards: 1 of 3 (eu2) ~ a tenant's query is routed to its shard
SELECT tenant_id, count(*) AS orders, sum(amount_cents) AS cents ~ Shards: 3 of 3 (eu1, eu2, us1) ~ a query without a tenant reads every shard
\\copy orders FROM '/srv/fleet/load/orders.csv' WITH (FORMAT csv, HEADER) ~ COPY 3 ~ COPY loads the three rows
PGPASSWORD=acme-secret psql -h 127.0.0.1 -U acme_reader -d shop \\ ~  acme      | 20000 ~ the scoped login sees acme's orders
PGPASSWORD=acme-secret psql -h 127.0.0.1 -U acme_reader -d shop \\ ~ !globex ~ the scoped login sees no other tenant
SELECT tenant_move('fleet', 'initech', 'us1'); ~ copied table \"orders\" to shard \"us1\": 1500 rows ~ the move copies initech's orders from eu1
SELECT * FROM tenant_cleanup('fleet', 'initech'); ~  initech   | eu1      |         1520 ~ the cleanup deletes initech's rows from eu1
SELECT * FROM shard_rebalance_plan('fleet'); ~ (1 row) ~ the plan moves one tenant
CALL shard_rebalance('fleet'); ~ (0 rows) ~ after the rebalance, nothing is left to plan"
claims=${claims//\/srv\/fleet/$fleet}
claims=$(sed "s/\bshop\b/$shopdb/g" <<<"$claims")

# check_claims FIRST_LINE OUTPUT_FILE: the claims about the block whose
# first line is FIRST_LINE
check_claims()
{
	local first=$1 out=$2 line block want what

	while IFS= read -r line; do
		block=${line%% ~ *}
		line=${line#* ~ }
		want=${line%% ~ *}
		what=${line#* ~ }
		[ "$block" = "$first" ] || continue
		if [ "${want:0:1}" = "!" ]; then
			if grep -qF -- "${want:1}" "$out"; then
				result failed "tutorial claim: $what" \
					"the output holds: ${want:1}"$'\n'"$(head -n 25 "$out")"
			else
				result ok "tutorial claim: $what"
			fi
		elif grep -qF -- "$want" "$out"; then
			result ok "tutorial claim: $what"
		else
			result failed "tutorial claim: $what" \
				"the output lacks: $want"$'\n'"$(head -n 25 "$out")"
		fi
	done <<<"$claims"
}

# Each block runs from a folder of its own, with FLEET set as the
# tutorial's first block sets it.
export FLEET="$fleet"
mkdir -p "$tmp/cwd"
chmod 0777 "$tmp/cwd"
n=0
for f in $(find "$tmp/blocks" -type f | LC_ALL=C sort); do
	n=$((n + 1))
	first=$(grep -m1 -v '^[[:space:]]*$' "$f" || true)
	out="$tmp/out.$n"
	rc=0
	case $f in
		*.sh)
			(cd "$tmp/cwd" && bash -e -o pipefail "$f") >"$out" 2>&1 || rc=$?
			;;
		*.sql)
			(cd "$tmp/cwd" && psql -X -v ON_ERROR_STOP=1 -d "$shopdb" -f "$f") \
				>"$out" 2>&1 || rc=$?
			;;
	esac
	if [ -n "${TUTORIAL_OUTPUT:-}" ]; then
		mkdir -p "$TUTORIAL_OUTPUT"
		cp "$out" "$TUTORIAL_OUTPUT/$(printf %02d "$n").out"
	fi
	if [ "$rc" -eq 0 ]; then
		result ok "tutorial block $n: $first"
		check_claims "$first" "$out"
	else
		result failed "tutorial block $n: $first" \
			"exit $rc; the block's last output:"$'\n'"$(tail -n 25 "$out")"
	fi
done

script_end
