#!/usr/bin/env bash
#
# test/write_access_test.sh
#	The first errors of a fleet the server may not write.  SQLite says only
#	"unable to open database file" or "attempt to write a readonly
#	database"; the error must name the folder or file that the server's
#	operating system user needs write permission on, and that user:
#
#	1. directory_init in a folder that does not exist, and in one the
#	   server may not write;
#	2. tenant_add on a directory file the server may not write, and on a
#	   rollback-journal directory in a folder it may not write (the file
#	   itself writable: SQLite creates the journal next to it);
#	3. an INSERT into a rollback-journal shard whose folder the server may
#	   not write, and into a shard file it may not write;
#	4. nothing was written: the directory and the shards hold what they
#	   held, and once the permissions are right the same calls succeed.
#
# Run by test/run_suites.sh inside a throw-away cluster, with PGDATABASE
# set to a fresh database.  Needs root (it hands folders to root and to
# the server's user); without it, every check is skipped as passed.
# Prints one line per check, then "N passed, M failed".

set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export LC_ALL=C.UTF-8
source test/fixtures/common.sh
source test/script_common.sh
script_limit ssfdw_write_access 120
script_tmp ssfdw_write_access

if [ "$(id -u)" -ne 0 ]; then
	echo "write_access: not root, nothing to check"
	script_end
	exit 0
fi

# sql SQL: run SQL, printing its output and any error in full
# ("ERROR:  SQLSTATE: message", "HINT:  ...")
sql()
{
	psql -X -q -At -v ON_ERROR_STOP=1 -v VERBOSITY=verbose -c "$1" 2>&1 || true
}

# has NAME OUTPUT PATTERN...: every PATTERN (grep -F) is in OUTPUT
has()
{
	local name=$1 out=$2 p
	shift 2
	for p in "$@"; do
		if ! grep -qF -- "$p" <<<"$out"; then
			result failed "$name" "missing: $p"$'\n'"output: $out"
			return
		fi
	done
	result ok "$name"
}

q()
{
	psql -X -q -At -v ON_ERROR_STOP=1 -c "$1"
}

q "CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw"
# the server's operating system user owns its data directory
server_user=$(stat -c %U "$(q "SHOW data_directory")")

# 1. directory_init: a missing folder, a folder of root's
q "CREATE SERVER wa_missing FOREIGN DATA WRAPPER sqlite_shard_fdw
     OPTIONS (directory '$tmp/missing/directory.db')"
out=$(sql "SELECT directory_init('wa_missing')")
has "directory_init in a missing folder names it" "$out" \
	"ERROR:  58P01:" "Folder \"$tmp/missing\" does not exist" "\"$server_user\""

mkdir -m 0755 "$tmp/rootdir"
q "CREATE SERVER wa_root FOREIGN DATA WRAPPER sqlite_shard_fdw
     OPTIONS (directory '$tmp/rootdir/directory.db')"
out=$(sql "SELECT directory_init('wa_root')")
has "directory_init in a folder the server may not write names folder and user" \
	"$out" "ERROR:  42501:" \
	"The operating system user \"$server_user\" that runs the server needs write permission on folder \"$tmp/rootdir\""
[ ! -e "$tmp/rootdir/directory.db" ] &&
	result ok "directory_init left no file" ||
	result failed "directory_init left no file"

# 2. tenant_add: a directory file of root's in root's folder; then a
# rollback-journal directory file the server may write in root's folder
d="$tmp/fleet"
mkdir -p "$d/shards"
fx_directory "$d"
fx_sqlite "$d/directory.db" "PRAGMA journal_mode = DELETE;"
fx_sqlite "$d/shards/s1.db" "CREATE TABLE t(tenant_id TEXT, id INTEGER PRIMARY KEY, v TEXT);"
fx_add_shard "$d" s1 shards/s1.db
fx_add_tenant "$d" a s1
fx_done "$d"
chown root:root "$d" "$d/directory.db"
chmod 0755 "$d"
chmod 0644 "$d/directory.db"
q "CREATE SERVER wa_fleet FOREIGN DATA WRAPPER sqlite_shard_fdw
     OPTIONS (directory '$d/directory.db');
   CREATE FOREIGN TABLE wa_t (tenant_id text, id bigint, v text)
     SERVER wa_fleet OPTIONS (table 't')"
out=$(sql "SELECT tenant_add('wa_fleet', 'b', 's1')")
has "tenant_add on a directory the server may not write names the folder" \
	"$out" "ERROR:  42501:" "needs write permission on folder \"$d\"" \
	"\"$server_user\""
chmod 0666 "$d/directory.db"
out=$(sql "SELECT tenant_add('wa_fleet', 'b', 's1')")
has "tenant_add on a writable rollback-journal directory in root's folder names the folder" \
	"$out" "ERROR:  42501:" "needs write permission on folder \"$d\"" \
	"could not" "\"$server_user\""
chmod 0777 "$d"
chown root:root "$d/directory.db"
chmod 0644 "$d/directory.db"
out=$(sql "SELECT tenant_add('wa_fleet', 'b', 's1')")
has "tenant_add on a directory file the server may not write names the file" \
	"$out" "ERROR:  42501:" \
	"needs write permission on file \"$d/directory.db\"" "\"$server_user\""
got=$(fx_query "$d/directory.db" "SELECT count(*) FROM shard_map WHERE tenant_id = 'b'")
[ "$got" = 0 ] && result ok "no tenant was added" ||
	result failed "no tenant was added" "$got"
chown postgres:postgres "$d/directory.db"
chmod 0664 "$d/directory.db"
out=$(sql "SELECT tenant_add('wa_fleet', 'b', 's1')")
has "with the permissions right, tenant_add succeeds" "$out" "s1"

# 3. an INSERT into a rollback-journal shard in a folder of root's, then
# into a shard file of root's
chown root:root "$d/shards"
chmod 0755 "$d/shards"
out=$(sql "INSERT INTO wa_t VALUES ('a', 1, 'x')")
has "an INSERT into a shard whose folder the server may not write names the folder" \
	"$out" "ERROR:  42501:" "shard \"s1\"" \
	"needs write permission on folder \"$d/shards\"" "\"$server_user\""
chmod 0777 "$d/shards"
chown root:root "$d/shards/s1.db"
chmod 0644 "$d/shards/s1.db"
out=$(sql "INSERT INTO wa_t VALUES ('a', 1, 'x')")
has "an INSERT into a shard file the server may not write names the file" \
	"$out" "ERROR:  42501:" "shard \"s1\"" \
	"needs write permission on file \"$d/shards/s1.db\"" "\"$server_user\""
got=$(fx_query "$d/shards/s1.db" "SELECT count(*) FROM t")
[ "$got" = 0 ] && result ok "no row was written" ||
	result failed "no row was written" "$got"
fx_done "$d"
out=$(sql "INSERT INTO wa_t VALUES ('a', 1, 'x'); SELECT count(*) FROM wa_t")
has "with the permissions right, the INSERT succeeds" "$out" "1"

script_end
