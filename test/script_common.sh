#!/usr/bin/env bash
#
# test/script_common.sh
#	Shell functions shared by the scripted tests that run real second
#	processes (test/commit_test.sh, test/update_concurrency_test.sh) or a
#	cluster of their own (test/fanout_progress_test.sh,
#	test/perfile_fds_test.sh, test/rollup_cron_test.sh).
#
# Sourced, not run, from the repository root (after test/fixtures/common.sh).

# script_time_limit SECONDS
#	Run the calling script again under a time limit of SECONDS (its helper
#	processes are killed by the trap script_tmp sets) and exit with its
#	status.  Returns only inside the limited run.
script_time_limit()
{
	local limit=$1 rc=0

	[ -n "${SCRIPT_LIMITED:-}" ] && return 0
	SCRIPT_LIMITED=1 timeout --kill-after=5 "$limit" bash "$0" || rc=$?
	if [ "$rc" -eq 124 ]; then
		echo "the test did not finish within $limit s"
		echo "0 passed, 1 failed"
	fi
	exit "$rc"
}

# script_limit DATABASE SECONDS
#	script_time_limit SECONDS; run by hand (PGDATABASE unset or
#	"postgres"), in a database DATABASE made afresh.
script_limit()
{
	[ -n "${SCRIPT_LIMITED:-}" ] && return 0
	if [ -z "${PGDATABASE:-}" ] || [ "$PGDATABASE" = "postgres" ]; then
		psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $1" \
			-c "CREATE DATABASE $1"
		export PGDATABASE=$1
	fi
	script_time_limit "$2"
}

# script_tmp NAME
#	Make the test's folder $tmp (/tmp/NAME.XXXXXX, writable by the
#	server's OS user), removed at the end with every process whose pid
#	is in helpers.
script_tmp()
{
	tmp=$(mktemp -d -t "$1.XXXXXX")
	chmod 0777 "$tmp"
	helpers=()
	trap script_cleanup EXIT
	trap 'exit 143' TERM INT
}

script_cleanup()
{
	local p
	for p in "${helpers[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	for p in "${helpers[@]}"; do
		wait "$p" 2>/dev/null || true
	done
	rm -rf "$tmp"
}

# as_pg CMD...: run as the server's OS user (initdb refuses root).
as_pg()
{
	if [ "$(id -u)" -eq 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

# script_cluster CONF
#	Start a cluster of the test's own in $tmp/pgdata (after script_tmp;
#	the server binaries in $BIN) on a random port and a socket in $tmp,
#	with the lines CONF added to its postgresql.conf, and point psql at
#	it.  At the end $tmp/stop is made (the test's loops end on it), the
#	server is stopped and script_cleanup runs.
script_cluster()
{
	port=$((20000 + RANDOM % 20000))
	data="$tmp/pgdata"
	chown postgres "$tmp" 2>/dev/null || true
	as_pg "$BIN/initdb" -D "$data" -U postgres -A trust >"$tmp/initdb.log" 2>&1
	printf "port = %s\nlisten_addresses = ''\nunix_socket_directories = '%s'\n%s\n" \
		"$port" "$tmp" "$1" >>"$data/postgresql.conf"
	as_pg "$BIN/pg_ctl" -D "$data" -l "$tmp/server.log" -w start >/dev/null
	trap script_stop_cluster EXIT
	export PGHOST=$tmp PGPORT=$port PGUSER=postgres PGDATABASE=postgres
}

script_stop_cluster()
{
	touch "$tmp/stop"
	as_pg "$BIN/pg_ctl" -D "$data" -m immediate -w stop >/dev/null 2>&1 || true
	script_cleanup
}

# result ok|failed NAME [DETAIL]: count and print one check.
passed=0
failed=0
result()
{
	if [ "$1" = ok ]; then
		echo "ok      $2"
		passed=$((passed + 1))
	else
		echo "FAILED  $2"
		failed=$((failed + 1))
		if [ -n "${3:-}" ]; then
			echo "$3" | sed 's/^/        /' | head -n 30
		fi
	fi
}

# script_end: the counts, and the exit status.
script_end()
{
	echo "$passed passed, $failed failed"
	[ "$failed" -eq 0 ]
}

# q SQL: the value of a statement.
q()
{
	psql -X -q -A -t -v ON_ERROR_STOP=1 -c "$1"
}

# as_server_user: the lines that begin the tests' python3 programs, after
# their imports (the interpreter may be one the server's OS user cannot
# read): run as that user when the test runs as root, since a WAL
# database's -wal and -shm files are shared with the server's backends.
as_server_user='import os, pwd
if os.geteuid() == 0:
    try:
        pw = pwd.getpwnam("postgres")
        os.setgid(pw.pw_gid)
        os.setuid(pw.pw_uid)
    except KeyError:
        pass
'
