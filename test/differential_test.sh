#!/usr/bin/env bash
#
# test/differential_test.sh
#	The differential test: random queries through a foreign table and
#	through a native table holding the same rows must give the same answer:
#	pushdown never changes an answer.  The work is done by
#	test/differential.py; see there for what is generated and compared.
#
# Run by test/run_suites.sh inside a throw-away cluster, with PGDATABASE
# set to a fresh database.  Run by hand (PGDATABASE unset or "postgres"),
# it uses its own database ssfdw_diff, made afresh:
#
#	pg_virtualenv -v 15 bash -c 'cd /work/main && test/differential_test.sh'
#
# DIFF_SEED (default 20241129) changes the fleet and the queries,
# DIFF_QUERIES (default 800) the number of query cases; DIFF_SEEDS (default
# "20241129 11 2026") runs one fleet per seed, each with its own queries,
# time conditions over every stored form among them.  The fixture lives
# in a new /tmp/ssfdw_diff.XXXXXX folder, removed at the end (DIFF_KEEP=1
# keeps it).  Takes a few seconds.  Prints the failures, then
# "N passed, M failed"; exits non-zero if anything failed.

set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export LC_ALL=C.UTF-8

if [ -z "${PGDATABASE:-}" ] || [ "$PGDATABASE" = "postgres" ]; then
	psql -X -q -d postgres -c 'DROP DATABASE IF EXISTS ssfdw_diff' \
		-c 'CREATE DATABASE ssfdw_diff'
	export PGDATABASE=ssfdw_diff
fi

# One run per seed; the counts add up to the last line.
if [ -n "${DIFF_SEED:-}" ]; then
	exec python3 test/differential.py
fi
passed=0
failed=0
for seed in ${DIFF_SEEDS:-20241129 11 2026}; do
	out=$(DIFF_SEED=$seed python3 test/differential.py) || true
	echo "$out" | sed '$d'
	last=$(echo "$out" | tail -n 1)
	if [[ "$last" =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
		passed=$((passed + BASH_REMATCH[1]))
		failed=$((failed + BASH_REMATCH[2]))
	else
		echo "$last"
		failed=$((failed + 1))
	fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
