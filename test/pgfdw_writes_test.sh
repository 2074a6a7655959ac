#!/usr/bin/env bash
#
# test/pgfdw_writes_test.sh
#	The write statements of PostgreSQL's postgres_fdw regression suite,
#	run on foreign tables of a small fleet and on native tables with the
#	same rows: outcomes (rows, command tags, notices, SQLSTATEs) and the
#	tables' contents must be the same after every statement.  The work is
#	done by test/pgfdw_writes.py; see there for the sections, the
#	statements left out (with their reasons) and the list of statements
#	known to fail today (EXPECTED_FAIL, CRASHERS).
#
# Run by test/run_suites.sh inside a throw-away cluster, with PGDATABASE
# set to a fresh database.  Run by hand (PGDATABASE unset or "postgres"),
# it uses its own database ssfdw_pgfdw, made afresh:
#
#	pg_virtualenv -v 15 bash -c 'cd /work/main && test/pgfdw_writes_test.sh'
#
# PGFDW_SECTIONS picks sections, PGFDW_VERBOSE=1 prints every statement.
# Takes about ten seconds; stops by itself after 60.  Prints the failures,
# then "N passed, M failed"; exits non-zero if anything failed.

set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export LC_ALL=C.UTF-8

if [ -z "${PGDATABASE:-}" ] || [ "$PGDATABASE" = "postgres" ]; then
	psql -X -q -d postgres -c 'DROP DATABASE IF EXISTS ssfdw_pgfdw' \
		-c 'CREATE DATABASE ssfdw_pgfdw'
	export PGDATABASE=ssfdw_pgfdw
fi

rc=0
timeout --kill-after=5 60 python3 test/pgfdw_writes.py || rc=$?
if [ "$rc" -eq 124 ]; then
	echo "the test did not finish within 60 s"
	echo "0 passed, 1 failed"
fi
exit "$rc"
