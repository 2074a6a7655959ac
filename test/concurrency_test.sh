#!/usr/bin/env bash
#
# test/concurrency_test.sh
#	The concurrency test: an application process writes a WAL shard while
#	PostgreSQL sessions read the fleet in READ COMMITTED, REPEATABLE READ
#	and SERIALIZABLE.  The work is done by
#	test/concurrency_check.py; see there for what is checked.
#
# Run by test/run_suites.sh inside a throw-away cluster, with PGDATABASE
# set to a fresh database.  Run by hand (PGDATABASE unset or "postgres"),
# it uses its own database ssfdw_conc, made afresh:
#
#	pg_virtualenv -v 15 bash -c 'cd /work/main && test/concurrency_test.sh'
#
# Takes about 6 seconds; stops by itself after 60.  The fixture lives in a
# new /tmp/ssfdw_conc.XXXXXX folder, removed at the end (CONC_KEEP=1 keeps
# it).  Prints one line per check, then "N passed, M failed"; exits
# non-zero if anything failed.

set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export LC_ALL=C.UTF-8

if [ -z "${PGDATABASE:-}" ] || [ "$PGDATABASE" = "postgres" ]; then
	psql -X -q -d postgres -c 'DROP DATABASE IF EXISTS ssfdw_conc' \
		-c 'CREATE DATABASE ssfdw_conc'
	export PGDATABASE=ssfdw_conc
fi

# timeout runs the checker in a process group of its own, with its writer
# and readers; the checker stops them itself when it ends or gets SIGTERM,
# and the trap covers this script being stopped.
checker=
cleanup()
{
	if [ -n "$checker" ] && kill -0 "$checker" 2>/dev/null; then
		kill -TERM -- "-$checker" 2>/dev/null || kill -TERM "$checker" 2>/dev/null || true
		for _ in 1 2 3 4 5 6 7 8 9 10; do
			kill -0 "$checker" 2>/dev/null || return 0
			sleep 0.5
		done
		kill -KILL -- "-$checker" 2>/dev/null || true
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

timeout --kill-after=5 60 python3 test/concurrency_check.py &
checker=$!
rc=0
wait "$checker" || rc=$?
checker=
if [ "$rc" -eq 124 ]; then
	echo "the test did not finish within 60 s"
	echo "0 passed, 1 failed"
fi
exit "$rc"
