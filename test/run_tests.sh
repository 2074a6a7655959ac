#!/usr/bin/env bash
#
# test/run_tests.sh
#	The test driver: what `make test` and CI run.
#
# Usage: bash test/run_tests.sh [--no-build] [NAME...]
#
# Installs what is missing (test/deps.sh), builds with -Werror and installs
# the extension, then runs every suite (test/run_suites.sh: pg_regress
# suites in sql/, scripts test/*_test.sh, isolation specs in
# test/isolation/) inside a throw-away PostgreSQL cluster made by
# pg_virtualenv.  NAME arguments run only the suites of those names;
# --no-build skips deps, build and install.
#
# Prints one line per test and, last, exactly one line "N passed, M failed".
# Exits non-zero if anything failed, or if no test ran.  Results, diffs and
# logs are kept in a /tmp/ssfdw_test.* folder (named in the output) when
# something failed, and removed otherwise.

set -euo pipefail

# shellcheck source=test/harness.sh
source "$(dirname "${BASH_SOURCE[0]}")/harness.sh"
cd "$SSFDW_ROOT"

build=1
if [ "${1:-}" = "--no-build" ]; then
	build=0
	shift
fi

# finish PASSED FAILED: print the closing line and exit accordingly.
finish()
{
	if [ "$(($1 + $2))" -eq 0 ]; then
		echo "no test ran"
		echo "0 passed, 0 failed"
		exit 1
	fi
	echo "$1 passed, $2 failed"
	if [ "$2" -eq 0 ]; then
		exit 0
	fi
	exit 1
}

if [ "$build" -eq 1 ]; then
	if ! bash test/deps.sh; then
		echo "test/deps.sh failed"
		finish 0 1
	fi
	if ! ssfdw_build WERROR=1; then
		finish 0 1
	fi
fi

OUT=$(mktemp -d -t ssfdw_test.XXXXXX)
RESULT="$OUT/result"
start=$SECONDS
rc=0
ssfdw_virtualenv bash test/run_suites.sh "$RESULT" "$OUT" "$@" || rc=$?

if [ -s "$RESULT" ]; then
	read -r passed failed <"$RESULT"
else
	echo "test/run_suites.sh stopped before it finished (exit $rc)"
	passed=0
	failed=1
fi
if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
	echo "test/run_suites.sh exited with status $rc"
	failed=1
fi

echo "(took $((SECONDS - start)) s)"
if [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]; then
	rm -rf "$OUT"
else
	echo "results, diffs and logs: $OUT"
fi
finish "$passed" "$failed"
