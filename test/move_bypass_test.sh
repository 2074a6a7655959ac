#!/usr/bin/env bash
#
# test/move_bypass_test.sh
#	Writes that the move's capture triggers do not see, made between the
#	move's verification and its cutover: the check under the source's
#	write lock must find each, and the move fail rather than flip to a
#	copy that lacks it.  The move waits after its verification before
#	the lock (sqlite_shard_fdw.move_pause_at = 'verified', with
#	move_pause_ms, so that it goes on), and meanwhile an application
#	process (test/move_bypass.py, plain SQLite) writes the source with
#	one of:
#
#	- replace: an INSERT OR REPLACE of another tenant's row that removes a
#	  row of the tenant through a second unique index (SQLite fires no
#	  delete trigger for it: recursive_triggers is off);
#	- blob: an incremental blob write into a row of the tenant;
#	- notrigger: an UPDATE of a row of the tenant on a connection with
#	  triggers disabled (SQLITE_DBCONFIG_ENABLE_TRIGGER, through ctypes).
#
#	For each: the write leaves no entry in the change log; the move fails
#	with XX001 naming the table, the tenant and both shards; the tenant
#	stays on the source, which holds the write and takes the tenant's
#	writes, and PostgreSQL reads it there; running the move again moves
#	every row, the write included (nothing is lost).  Then, as a control,
#	writes the triggers do see (INSERT, UPDATE, DELETE, an INSERT OR
#	REPLACE by primary key) at the same point: the move goes through, and
#	its copy equals the source.
#
# Run by test/run_suites.sh inside a throw-away cluster, with PGDATABASE
# set to a fresh database (by hand: PGDATABASE of a scratch database).
# The fleet lives in a new /tmp/ssfdw_mbypass.XXXXXX folder, removed at
# the end.  Takes about 30 seconds; stops by itself after 240.  Prints one
# line per check, then "N passed, M failed"; exits non-zero if anything
# failed.

set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export LC_ALL=C.UTF-8
source test/fixtures/common.sh

if [ -z "${MBYPASS_INNER:-}" ]; then
	rc=0
	MBYPASS_INNER=1 timeout --kill-after=5 240 bash "${BASH_SOURCE[0]}" || rc=$?
	if [ "$rc" -eq 124 ]; then
		echo "the test did not finish within 240 s"
		echo "0 passed, 1 failed"
	fi
	exit "$rc"
fi

tmp=$(mktemp -d -t ssfdw_mbypass.XXXXXX)
chmod 0777 "$tmp"
bg_pid=""
cleanup()
{
	if [ -n "$bg_pid" ]; then
		kill "$bg_pid" 2>/dev/null || true
		wait "$bg_pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 143' TERM INT

passed=0
failed=0

# check NAME EXPECTED ACTUAL: one check line.
check()
{
	if [ "$2" = "$3" ]; then
		echo "ok - $1"
		passed=$((passed + 1))
	else
		echo "FAILED - $1: expected \"$2\", got \"$3\""
		failed=$((failed + 1))
	fi
}

# q SQL: one value from PostgreSQL.
q()
{
	psql -X -q -At -v ON_ERROR_STOP=1 -c "$1"
}

# q_state SQL: the SQLSTATE a statement fails with, or "ok".
q_state()
{
	local out
	out=$(psql -X -q -At -v VERBOSITY=sqlstate -c "$1" 2>&1 >/dev/null |
		sed -n 's/^ERROR: *\([0-9A-Z]\{5\}\).*/\1/p')
	echo "${out:-ok}"
}

# sq FILE SQL: the sqlite3 CLI, the application's view, with a wait.
sq()
{
	sqlite3 -bail -list -noheader -cmd ".timeout 5000" "$d/$1" "$2" 2>&1
}

d="$tmp/fleet"
mkdir -p "$d/shards"
fx_directory "$d"
for s in a b; do
	fx_sqlite "$d/shards/$s.db" "PRAGMA journal_mode = WAL;" \
		"CREATE TABLE accounts(tenant_id TEXT NOT NULL,
		   account_id INTEGER NOT NULL, email TEXT NOT NULL UNIQUE, name TEXT,
		   PRIMARY KEY (tenant_id, account_id));
		 CREATE TABLE docs(tenant_id TEXT NOT NULL, doc_id INTEGER NOT NULL,
		   body BLOB, PRIMARY KEY (tenant_id, doc_id));
		 CREATE TABLE orders(tenant_id TEXT NOT NULL, order_id INTEGER NOT NULL,
		   amount_cents INTEGER, PRIMARY KEY (tenant_id, order_id));"
	fx_add_shard "$d" "$s" "shards/$s.db"
done
# b in rollback-journal mode: the check runs in both journal modes
fx_sqlite "$d/shards/b.db" "PRAGMA journal_mode = DELETE;"
fx_sqlite "$d/shards/a.db" \
	"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000)
	 INSERT INTO accounts SELECT 'bp', i, 'bp-' || i || '@example.com', 'n' || i FROM n;
	 WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200)
	 INSERT INTO docs SELECT 'bp', i, zeroblob(64) FROM n;
	 WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
	 INSERT INTO orders SELECT 'bp', i, i % 997 FROM n;
	 INSERT INTO accounts VALUES ('other', 1, 'other-1@example.com', 'o');"
fx_add_tenant "$d" bp a
fx_add_tenant "$d" other a
fx_done "$d"

psql -X -q -v ON_ERROR_STOP=1 <<SQL >/dev/null
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS sqlite_shard_fdw CASCADE;
CREATE EXTENSION sqlite_shard_fdw;
CREATE SERVER mbypass FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '$d/directory.db', busy_timeout_ms '5000');
CREATE FOREIGN TABLE bp_accounts (tenant_id text, account_id bigint,
  email text, name text) SERVER mbypass OPTIONS (table 'accounts');
CREATE FOREIGN TABLE bp_docs (tenant_id text, doc_id bigint, body bytea)
  SERVER mbypass OPTIONS (table 'docs');
CREATE FOREIGN TABLE bp_orders (tenant_id text, order_id bigint,
  amount_cents bigint) SERVER mbypass OPTIONS (table 'orders');
SQL

# tenant_rows SHARD: every row of tenant bp SHARD holds, as the CLI reads
# them, one digest per table.
tenant_rows()
{
	sq "shards/$1.db" "SELECT
	  (SELECT count(*) || ':' || coalesce(sum(length(account_id || email || name)), 0)
	     || ':' || coalesce(max(account_id), 0) || ':' || coalesce(sum(account_id), 0)
	   FROM accounts WHERE tenant_id = 'bp') || ' ' ||
	  (SELECT count(*) || ':' || hex(group_concat(doc_id || hex(body)))
	   FROM (SELECT * FROM docs WHERE tenant_id = 'bp' ORDER BY doc_id)) || ' ' ||
	  (SELECT count(*) || ':' || sum(order_id * amount_cents)
	   FROM orders WHERE tenant_id = 'bp')" | md5sum | cut -c1-12
}

# pg_rows: the same through PostgreSQL, routed to the tenant's owner.
pg_rows()
{
	q "SELECT
	  (SELECT count(*) || ':' || coalesce(sum(length(account_id || email || name)), 0)
	     || ':' || coalesce(max(account_id), 0) || ':' || coalesce(sum(account_id), 0)
	   FROM bp_accounts WHERE tenant_id = 'bp') || ' ' ||
	  (SELECT count(*) || ':' || upper(encode(convert_to(string_agg(doc_id || upper(encode(body, 'hex')), ',' ORDER BY doc_id), 'UTF8'), 'hex'))
	   FROM bp_docs WHERE tenant_id = 'bp') || ' ' ||
	  (SELECT count(*) || ':' || sum(order_id * amount_cents)
	   FROM bp_orders WHERE tenant_id = 'bp')" | md5sum | cut -c1-12
}

# owner: the shard the directory says answers for bp, and its status.
owner()
{
	sq directory.db "SELECT CASE WHEN status = 'DONE' THEN target_shard_id
	  ELSE shard_id END || ' ' || status FROM shard_map WHERE tenant_id = 'bp'"
}

# log_top SHARD: the last entry of the running move's change log on SHARD.
log_top()
{
	local id
	id=$(q "SELECT max(move_id) FROM tenant_moves('mbypass')")
	sq "shards/$1.db" "SELECT coalesce(max(seq), 0) FROM _ssfdw_move_${id}_log"
}

# move_paused TO WRITE...: run the move to TO; when it waits after its
# verification, run each WRITE (a shell command) against the source, and
# let the move go on.  Leaves the move's stderr in $tmp/move.err, and
# sets moved to ok or the move's SQLSTATE.
move_paused()
{
	local to=$1 _ w
	shift
	psql -X -q -At -v VERBOSITY=verbose \
		-c "SET sqlite_shard_fdw.move_pause_at = 'verified'" \
		-c "SET sqlite_shard_fdw.move_pause_ms = 4000" \
		-c "SELECT tenant_move('mbypass', 'bp', '$to')" \
		>"$tmp/move.out" 2>"$tmp/move.err" &
	bg_pid=$!
	for _ in $(seq 1 600); do
		grep -q 'paused at "verified"' "$tmp/move.err" 2>/dev/null && break
		sleep 0.05
	done
	for w in "$@"; do
		eval "$w" || echo "the write \"$w\" failed" >&2
	done
	moved=ok
	wait "$bg_pid" || moved=$(sed -n 's/^ERROR: *\([0-9A-Z]\{5\}\):.*/\1/p' "$tmp/move.err")
	bg_pid=""
}

# one_bypass KIND FROM TO KEY WHAT: the write KIND of key KEY during a
# move from FROM to TO must fail it on table WHAT, and lose nothing.
one_bypass()
{
	local kind=$1 from=$2 to=$3 key=$4 table=$5 top

	top=""
	move_paused "$to" \
		"top=\$(log_top $from)" \
		"python3 test/move_bypass.py $kind '$d/shards/$from.db' bp $key" \
		"check '$kind: the write left no entry in the change log' \"\$top\" \"\$(log_top $from)\""
	check "$kind: the move fails with XX001" XX001 "$moved"
	check "$kind: the error names the table, the tenant and both shards" 1 \
		"$(grep -c "^ERROR: *XX001: copy of table \"$table\" of tenant \"bp\" on shard \"$to\" does not match shard \"$from\"" "$tmp/move.err")"
	check "$kind: the error says what happened" 1 \
		"$(grep -c "compared under the write lock of shard \"$from\": a write the move's capture triggers did not see" "$tmp/move.err")"
	check "$kind: the directory still names shard $from" "$from MIGRATING" "$(owner)"
	check "$kind: tenant_moves keeps the error" 1 \
		"$(q "SELECT count(*) FROM tenant_moves('mbypass') WHERE move_id = (SELECT max(move_id) FROM tenant_moves('mbypass')) AND phase = 'cutover' AND error LIKE 'copy of table \"$table\"%'")"
	case $kind in
		replace)
			check "replace: shard $from lost account $key of bp, as the application asked" \
				"0 1" "$(sq "shards/$from.db" "SELECT (SELECT count(*) FROM accounts WHERE tenant_id = 'bp' AND account_id = $key) || ' ' || (SELECT count(*) FROM accounts WHERE tenant_id = 'other' AND account_id = 100000 + $key)")"
			check "replace: PostgreSQL reads the account gone" 0 \
				"$(q "SELECT count(*) FROM bp_accounts WHERE tenant_id = 'bp' AND account_id = $key")"
			;;
		blob)
			check "blob: PostgreSQL reads the blob write" deadbeef \
				"$(q "SELECT encode(substr(body, 1, 4), 'hex') FROM bp_docs WHERE tenant_id = 'bp' AND doc_id = $key")"
			;;
		notrigger)
			check "notrigger: PostgreSQL reads the update" $((key % 997 + 1)) \
				"$(q "SELECT amount_cents FROM bp_orders WHERE tenant_id = 'bp' AND order_id = $key")"
			;;
	esac
	check "$kind: PostgreSQL reads every row from shard $from" "$(tenant_rows "$from")" "$(pg_rows)"
	check "$kind: the tenant takes writes on shard $from" ok \
		"$(q_state "UPDATE bp_orders SET amount_cents = amount_cents + 2 WHERE tenant_id = 'bp' AND order_id = 1")"
	ref=$(tenant_rows "$from")
	check "$kind: the move run again finishes" ok \
		"$(q_state "SELECT tenant_move('mbypass', 'bp', '$to')")"
	check "$kind: shard $to holds every row, the write included" "$ref" "$(tenant_rows "$to")"
	check "$kind: PostgreSQL reads them there" "$ref" "$(pg_rows)"
	check "$kind: tenant_cleanup" ok \
		"$(q_state "SELECT * FROM tenant_cleanup('mbypass', 'bp')")"
	check "$kind: the directory names shard $to" "$to ACTIVE" "$(owner)"
}

one_bypass blob a b 3 docs
one_bypass notrigger b a 11 orders
one_bypass replace a b 7 accounts

# The control: writes the triggers see, at the same point, move through.
move_paused a \
	"sq shards/b.db \"INSERT INTO orders VALUES ('bp', 50001, 5)\"" \
	"sq shards/b.db \"UPDATE orders SET amount_cents = 9 WHERE tenant_id = 'bp' AND order_id = 2\"" \
	"sq shards/b.db \"DELETE FROM orders WHERE tenant_id = 'bp' AND order_id = 3\"" \
	"sq shards/b.db \"INSERT OR REPLACE INTO accounts VALUES ('bp', 8, 'bp-8@example.com', 'renamed')\"" \
	"sq shards/b.db \"UPDATE docs SET body = x'0102' WHERE tenant_id = 'bp' AND doc_id = 4\""
check "captured writes during the pause: the move goes through" ok "$moved"
check "captured writes: the directory names shard a" "a DONE" "$(owner)"
check "captured writes: shard a holds every row of shard b" "$(tenant_rows b)" "$(tenant_rows a)"
check "captured writes: PostgreSQL reads them" "$(tenant_rows b)" "$(pg_rows)"
check "captured writes: the other tenant's rows are untouched" \
	"1:other-1@example.com 1:100007:bp-7@example.com" \
	"$(sq shards/a.db "SELECT count(*) || ':' || group_concat(email) FROM accounts WHERE tenant_id = 'other' AND account_id = 1; SELECT count(*) || ':' || group_concat(account_id || ':' || email) FROM accounts WHERE tenant_id = 'other' AND account_id > 1" | tr '\n' ' ' | sed 's/ $//')"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
