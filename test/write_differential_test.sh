#!/usr/bin/env bash
#
# test/write_differential_test.sh
#	The write differential test: random sequences of INSERT and COPY
#	statements in transactions (committed, rolled back, with savepoints),
#	applied to a foreign table over a small fleet and to a native table
#	with the same constraints, must have the same outcomes and leave the
#	same rows.  The work is done by
#	test/write_differential.py; see there for what is generated and
#	compared.
#
# Run by test/run_suites.sh inside a throw-away cluster, with PGDATABASE
# set to a fresh database.  Run by hand (PGDATABASE unset or "postgres"),
# it uses its own database ssfdw_wdiff, made afresh:
#
#	pg_virtualenv -v 15 bash -c 'cd /work/main && test/write_differential_test.sh'
#
# WDIFF_SEEDS (default 1,2,3,4,5,6) picks the seeds, WDIFF_BLOCKS (default 60)
# the blocks per seed; a failure names its seed, to run it again alone.
# The fixture lives in a new /tmp/ssfdw_wdiff.XXXXXX folder, removed at
# the end (WDIFF_KEEP=1 keeps it).  Takes about ten seconds; stops by
# itself after 60.  Prints the failures, then "N passed, M failed"; exits
# non-zero if anything failed.

set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export LC_ALL=C.UTF-8

if [ -z "${PGDATABASE:-}" ] || [ "$PGDATABASE" = "postgres" ]; then
	psql -X -q -d postgres -c 'DROP DATABASE IF EXISTS ssfdw_wdiff' \
		-c 'CREATE DATABASE ssfdw_wdiff'
	export PGDATABASE=ssfdw_wdiff
fi

rc=0
timeout --kill-after=5 60 python3 test/write_differential.py || rc=$?
if [ "$rc" -eq 124 ]; then
	echo "the test did not finish within 60 s"
	echo "0 passed, 1 failed"
fi
exit "$rc"
