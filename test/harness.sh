#!/usr/bin/env bash
#
# test/harness.sh
#	Shell functions shared by the test driver (test/run_tests.sh) and the
#	demo (test/demo.sh): building and installing the extension, and running
#	a command inside a throw-away PostgreSQL cluster.
#
# Sourced, not run.  Sets SSFDW_ROOT (the repository root) and PG_CONFIG.

set -euo pipefail

SSFDW_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PG_MAJOR=${PG_MAJOR:-15}
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/$PG_MAJOR/bin/pg_config}
export SSFDW_ROOT PG_MAJOR PG_CONFIG

# ssfdw_build [MAKE ARGS...]
#	make clean, make (with the given arguments), make install, output kept
#	in a log that is shown only when a step fails.  Returns non-zero on
#	failure.
ssfdw_build()
{
	local log step
	local jobs

	jobs=$(nproc 2>/dev/null || echo 2)
	log=$(mktemp -t ssfdw_build.XXXXXX)
	for step in clean build install; do
		local args=()
		case $step in
			clean) args=(clean) ;;
			build) args=(-j"$jobs" all "$@") ;;
			install) args=(install "$@") ;;
		esac
		if ! make -C "$SSFDW_ROOT" --no-print-directory PG_CONFIG="$PG_CONFIG" \
			"${args[@]}" >"$log" 2>&1; then
			echo "make ${args[*]} failed:" >&2
			grep -E -i 'error|warning' "$log" | head -n 60 >&2 || true
			echo "--- last lines of the make output ---" >&2
			tail -n 40 "$log" >&2
			rm -f "$log"
			return 1
		fi
	done
	rm -f "$log"
}

# ssfdw_free_port
#	Print a TCP port that no server listens on, for the throw-away cluster
#	(pg_virtualenv -t would otherwise give every cluster port 5432, and two
#	runs at once would collide).
ssfdw_free_port()
{
	local port

	for _ in $(seq 1 200); do
		port=$((20000 + RANDOM % 10000))
		[ -e "/var/run/postgresql/.s.PGSQL.$port" ] && continue
		[ -e "/var/run/postgresql/.s.PGSQL.$port.lock" ] && continue
		if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			continue
		fi
		echo "$port"
		return 0
	done
	echo "could not find a free port" >&2
	return 1
}

# ssfdw_virtualenv COMMAND...
#	Run COMMAND (as root, cwd unchanged) with PGHOST, PGPORT, PGUSER,
#	PGPASSWORD and PGDATABASE set for a fresh PostgreSQL $PG_MAJOR cluster
#	whose server runs as the OS user postgres; the cluster is dropped
#	afterwards.  UTF8 encoding and the C.UTF-8 locale, so output is the
#	same on every machine (and the collation is not "C", so the code
#	that must keep non-C text ordering out of SQLite is exercised).
#	pg_virtualenv's own chatter is dropped; the server log is printed when
#	COMMAND fails.
ssfdw_virtualenv()
{
	local port rc

	port=$(ssfdw_free_port)
	set +e
	PGPORT=$port pg_virtualenv -t -v "$PG_MAJOR" \
		-i '--encoding=UTF8 --locale=C.UTF-8' "$@" |
		grep --line-buffered -v -E \
			'^(Creating new PostgreSQL cluster|Dropping cluster) '
	rc=${PIPESTATUS[0]}
	set -e
	return "$rc"
}
