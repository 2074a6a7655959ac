#!/usr/bin/env bash
#
# test/tenantrule_agree_test.sh
#	Every path that decides which stored rows are a tenant's decides it
#	alike.  For each way a shard may declare and store a tenant column (a
#	TEXT column under NOCASE and RTRIM, an untyped column holding integers
#	and text, integers in INTEGER and TEXT columns, uuids in every stored
#	form, char(n)), a shard holds a corpus of stored values, each marked
#	with whether it is tenant T's by the rule docs/reference/directory.md gives.  Then:
#
#	1. a routed read of T returns exactly the marked rows;
#	2. tenant_move(T) copies exactly them to the target;
#	3. the fence the move leaves in the source (a trigger, plain SQLite
#	   SQL that runs in the application's connections) matches exactly
#	   them: its condition is evaluated over the corpus;
#	4. a direct write of a marked value to the source is refused by the
#	   fence, and of an unmarked one accepted;
#	5. tenant_cleanup(T) deletes exactly them from the source, and says
#	   so in its count; the rest of the corpus is untouched.
#
# Run by test/run_suites.sh inside a throw-away cluster, with PGDATABASE
# set to a fresh database; by hand (PGDATABASE unset or "postgres"), in
# its own database ssfdw_tenantrule, made afresh.  The fleets live in a new
# /tmp/ssfdw_tenantrule.XXXXXX folder, removed at the end.  Prints one
# line per check, then "N passed, M failed".

set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export LC_ALL=C.UTF-8
source test/fixtures/common.sh
source test/script_common.sh
script_limit ssfdw_tenantrule 300
script_tmp ssfdw_tenantrule

# check NAME EXPECTED ACTUAL
check()
{
	if [ "$2" = "$3" ]; then
		result ok "$1"
	else
		result failed "$1" "expected: $2"$'\n'"actual:   $3"
	fi
}

q()
{
	psql -X -q -At -v ON_ERROR_STOP=1 -c "$1"
}

# one_case NAME PGTYPE DECL TENANT CORPUS
#	CORPUS: SQLite rows "(id, stored value, mine)", mine 1 when the value
#	is TENANT's by the rule.  Decoys are every unmarked row.
one_case()
{
	local name=$1 pgtype=$2 decl=$3 tenant=$4 corpus=$5
	local d="$tmp/$name" want got fence id value cleaned left

	mkdir -p "$d/shards"
	fx_directory "$d"
	for s in s1 s2; do
		fx_sqlite "$d/shards/$s.db" \
			"CREATE TABLE t(id INTEGER PRIMARY KEY, tenant_id $decl, v TEXT);"
		fx_add_shard "$d" "$s" "shards/$s.db"
	done
	fx_sqlite "$d/shards/s1.db" \
		"CREATE TABLE corpus(id INTEGER PRIMARY KEY, val, mine);
		 INSERT INTO corpus VALUES $corpus;
		 INSERT INTO t SELECT id, val, 'row ' || id FROM corpus;"
	fx_add_tenant "$d" "$tenant" s1
	fx_done "$d"
	want=$(fx_query "$d/shards/s1.db" \
		"SELECT group_concat(id) FROM (SELECT id FROM corpus WHERE mine ORDER BY id)")

	q "CREATE SERVER ${name}_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
	     OPTIONS (directory '$d/directory.db');
	   CREATE FOREIGN TABLE ${name}_t (id bigint, tenant_id $pgtype, v text)
	     SERVER ${name}_srv OPTIONS (table 't');"

	got=$(q "SELECT string_agg(id::text, ',' ORDER BY id) FROM ${name}_t
	         WHERE tenant_id = $(fx_quote "$tenant")")
	check "$name: a routed read returns the tenant's rows" "$want" "$got"

	q "SELECT tenant_move('${name}_srv', $(fx_quote "$tenant"), 's2')" >/dev/null
	got=$(fx_query "$d/shards/s2.db" \
		"SELECT group_concat(id) FROM (SELECT id FROM t ORDER BY id)")
	check "$name: the move copies the tenant's rows" "$want" "$got"
	got=$(q "SELECT string_agg(id::text, ',' ORDER BY id) FROM ${name}_t
	         WHERE tenant_id = $(fx_quote "$tenant")")
	check "$name: after the move, a routed read returns them from the target" \
		"$want" "$got"

	# the fence's condition, evaluated over the stored values (a table of
	# no affinity, as a trigger's NEW carries none)
	fence=$(fx_query "$d/shards/s1.db" \
		"SELECT sql FROM sqlite_schema WHERE type = 'trigger' AND name LIKE '%fence_i%'")
	fence=${fence#*WHEN }
	fence=${fence% BEGIN SELECT RAISE*}
	got=$(sqlite3 -bail -list -noheader "$d/shards/s1.db" \
		"CREATE TEMP TABLE nv(id, tenant_id);
		 INSERT INTO nv SELECT id, val FROM corpus;
		 SELECT group_concat(id) FROM (SELECT id FROM nv AS NEW WHERE $fence ORDER BY id);")
	check "$name: the fence's condition matches the tenant's rows" "$want" "$got"

	# direct writes: each stored value again, under a new key
	got=""
	while IFS='|' read -r id; do
		if sqlite3 "$d/shards/s1.db" \
			"INSERT INTO t SELECT id + 1000, val, 'again' FROM corpus WHERE id = $id" \
			2>/dev/null; then
			value=accepted
		else
			value=refused
		fi
		got+="$id:$value "
	done < <(fx_query "$d/shards/s1.db" "SELECT id FROM corpus ORDER BY id")
	want_writes=$(fx_query "$d/shards/s1.db" \
		"SELECT group_concat(id || ':' || CASE WHEN mine THEN 'refused' ELSE 'accepted' END, ' ')
		 FROM (SELECT * FROM corpus ORDER BY id)")
	check "$name: the fence refuses the tenant's values, not the decoys'" \
		"$want_writes " "$got"
	fx_sqlite "$d/shards/s1.db" "DELETE FROM t WHERE id > 1000"

	cleaned=$(q "SELECT rows_deleted FROM tenant_cleanup('${name}_srv', $(fx_quote "$tenant"))")
	left=$(fx_query "$d/shards/s1.db" \
		"SELECT group_concat(id) FROM (SELECT id FROM t ORDER BY id)")
	want=$(fx_query "$d/shards/s1.db" \
		"SELECT group_concat(id) FROM (SELECT id FROM corpus WHERE NOT mine ORDER BY id)")
	check "$name: cleanup leaves the decoys" "$want" "$left"
	want=$(fx_query "$d/shards/s1.db" "SELECT count(*) FROM corpus WHERE mine")
	check "$name: cleanup counts the tenant's rows" "$want" "$cleaned"
}

q "CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw"

one_case nocase text "TEXT COLLATE NOCASE" acme \
	"(1, 'acme', 1), (2, 'ACME', 0), (3, 'Acme', 0), (4, 'acme ', 0),
	 (5, ' acme', 0), (6, 'acm', 0), (7, 'acme', 1), (8, X'61636d65', 0)"
one_case rtrim text "TEXT COLLATE RTRIM" acme \
	"(1, 'acme', 1), (2, 'acme ', 0), (3, 'acme  ', 0), (4, 'ACME', 0),
	 (5, 'acme', 1)"
one_case textnum text "" 42 \
	"(1, 42, 1), (2, '42', 1), (3, '042', 0), (4, 42.0, 0), (5, ' 42', 0),
	 (6, X'3432', 0), (7, 420, 0)"
one_case untypedint bigint "" 1 \
	"(1, 1, 1), (2, '01', 1), (3, ' 1', 1), (4, '+1', 1), (5, '1 ', 1),
	 (6, 1.0, 1), (7, '1.0', 0), (8, 1.5, 0), (9, '18446744073709551617', 0),
	 (10, '-1', 0), (11, 'x1', 0), (12, X'01', 0), (13, 11, 0), (14, '10', 0),
	 (15, '+-1', 0), (16, char(9) || '001' || char(10), 1), (17, '', 0)"
one_case integercol integer INTEGER 7 \
	"(1, 7, 1), (2, '07', 1), (3, 'seven', 0), (4, '7.5', 0), (5, 7.0, 1),
	 (6, 17, 0), (7, '0x7', 0)"
one_case textint integer TEXT 7 \
	"(1, '7', 1), (2, '07', 1), (3, ' 7', 1), (4, '7.0', 0), (5, 'seven', 0),
	 (6, '-7', 0), (7, 7, 1)"
one_case negsmall smallint "" -5 \
	"(1, -5, 1), (2, '-05', 1), (3, ' -5 ', 1), (4, '+5', 0), (5, '5', 0),
	 (6, -5.0, 1), (7, '-0005', 1), (8, 65531, 0), (9, '- 5', 0)"
one_case zero bigint "" 0 \
	"(1, 0, 1), (2, '-0', 1), (3, '+0', 1), (4, '000', 1), (5, '', 0),
	 (6, '-', 0), (7, 0.0, 1), (8, '0.0', 0), (9, ' 0 ', 1)"
one_case uuid uuid "" a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11 \
	"(1, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 1),
	 (2, 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11', 1),
	 (3, '{a0eebc999c0b4ef8bb6d6bb9bd380a11}', 1),
	 (4, 'a0ee-bc99-9c0b-4ef8-bb6d-6bb9-bd38-0a11', 1),
	 (5, X'a0eebc999c0b4ef8bb6d6bb9bd380a11', 1),
	 (6, 'a0eebc99-9c0b4ef8-bb6d6bb9bd380a11', 1),
	 (7, 'a0eeb-c999c0b4ef8bb6d6bb9bd380a11', 0),
	 (8, '{a0eebc999c0b4ef8bb6d6bb9bd380a11', 0),
	 (9, 'b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 0),
	 (10, 'not-a-uuid', 0), (11, X'a0eebc999c0b4ef8bb6d6bb9bd380a', 0),
	 (12, '-a0eebc999c0b4ef8bb6d6bb9bd380a11', 0),
	 (13, 'a0eebc999c0b4ef8bb6d6bb9bd380a11-', 0)"
one_case chartenant "char(4)" TEXT ab \
	"(1, 'ab', 1), (2, 'ab  ', 0), (3, 'AB', 0), (4, 'ab ', 0), (5, 'ab', 1)"

script_end
