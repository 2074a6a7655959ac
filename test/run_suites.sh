#!/usr/bin/env bash
#
# test/run_suites.sh
#	Run every test suite against an existing PostgreSQL cluster that already
#	has the extension installed; the inner half of test/run_tests.sh, which
#	runs it inside pg_virtualenv.
#
# Usage: bash test/run_suites.sh RESULT_FILE OUTPUT_DIR [NAME...]
#
# Connection settings come from the environment (PGHOST, PGPORT, PGUSER,
# PGPASSWORD, as pg_virtualenv sets them).  Three kinds of suites, each
# optional:
#
#  1. pg_regress: sql/NAME.sql against expected/NAME.out, run by the
#	  pg_regress schedule test/schedule if it exists ("test: a b" lines),
#	  else every sql/*.sql sorted by name, in one database
#	  contrib_regression (created afresh; the suites share it, so each
#	  cleans up after itself).  psql runs as root with the repository root
#	  as its working directory, so a suite builds its fixtures with
#	  "\! bash test/fixtures/NAME.sh" (see test/fixtures/common.sh).  A
#	  suite without an expected file fails alone, its diff showing all of
#	  its output.  Each test counts once.
#  2. scripts: every test/*_test.sh, run with bash from the repository root,
#	  with the cluster's environment and PGDATABASE set to a fresh database
#	  named after the script.  Exit status 0 means it passed; if it prints a
#	  line "N passed, M failed" those counts are used instead of 1.
#  3. isolation: test/isolation/specs/NAME.spec (or test/isolation/NAME.spec)
#	  against test/isolation/expected/NAME.out (or test/isolation/NAME.out),
#	  through pg_isolation_regress in database isolation_regression.  If
#	  test/isolation/NAME.sh exists it runs first (its fixtures).
#
# NAME arguments restrict the run to the suites, scripts (with or without
# _test.sh) and specs of those names.  Writes "PASSED FAILED" to RESULT_FILE;
# results, diffs and logs go to OUTPUT_DIR.  Time limits per stage (seconds):
# SSFDW_REGRESS_TIMEOUT (900), SSFDW_SCRIPT_TIMEOUT (600 per script),
# SSFDW_ISOLATION_TIMEOUT (600).

set -euo pipefail

[ $# -ge 2 ] || { echo "usage: $0 RESULT_FILE OUTPUT_DIR [NAME...]" >&2; exit 2; }
RESULT=$1
OUT=$2
shift 2
FILTER=("$@")

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
export LC_ALL=C.UTF-8

PG_CONFIG=${PG_CONFIG:-pg_config}
PGXS_DIR=$(cd "$(dirname "$("$PG_CONFIG" --pgxs)")/../.." && pwd)
PG_REGRESS="$PGXS_DIR/src/test/regress/pg_regress"
PG_ISOLATION_REGRESS="$PGXS_DIR/src/test/isolation/pg_isolation_regress"
BINDIR=$("$PG_CONFIG" --bindir)

passed=0
failed=0
mkdir -p "$OUT"

# Fixture scripts write under this fixed, world-writable folder.
FX_ROOT=/tmp/ssfdw_regress
mkdir -p "$FX_ROOT"
chmod 0777 "$FX_ROOT"

# wanted NAME: true if NAME was asked for (or nothing was).
wanted()
{
	local f
	[ "${#FILTER[@]}" -eq 0 ] && return 0
	for f in "${FILTER[@]}"; do
		[ "$f" = "$1" ] && return 0
	done
	return 1
}

# count_regress LOG: add the per-test results pg_regress (or
# pg_isolation_regress) printed in LOG to the counters and echo the test
# lines.  Understands the format of PostgreSQL 14 and 15 ("test NAME ...
# ok", "     NAME ... FAILED") and the TAP format of 16 and later ("ok 1 -
# NAME", "not ok 2 - NAME").  Sets regress_counted to the number of tests.
count_regress()
{
	local line
	regress_counted=0
	while IFS= read -r line; do
		if [[ "$line" =~ ^(test[[:space:]]+|[[:space:]]+)[^[:space:]]+[[:space:]]+\.\.\.[[:space:]]+(ok|FAILED|failed) ]]; then
			echo "$line"
			regress_counted=$((regress_counted + 1))
			case ${BASH_REMATCH[2]} in
				ok) passed=$((passed + 1)) ;;
				*) failed=$((failed + 1)) ;;
			esac
		elif [[ "$line" =~ ^(ok|not\ ok)[[:space:]]+[0-9]+[[:space:]]+[-+] ]]; then
			echo "$line"
			regress_counted=$((regress_counted + 1))
			case ${BASH_REMATCH[1]} in
				ok) passed=$((passed + 1)) ;;
				*) failed=$((failed + 1)) ;;
			esac
		fi
	done <"$1"
}

# fresh_database NAME: drop and create database NAME, waiting up to 30 s
# for the server (it restarts by itself after a backend crashed).
fresh_database()
{
	local _
	for _ in $(seq 1 30); do
		if psql -X -q -v ON_ERROR_STOP=1 -d postgres \
			-c "DROP DATABASE IF EXISTS \"$1\"" -c "CREATE DATABASE \"$1\""; then
			return 0
		fi
		sleep 1
	done
	return 1
}

# show_diffs FILE: print the first 300 lines of a regression.diffs.
show_diffs()
{
	if [ -s "$1" ]; then
		echo "--- $1 (first 300 lines) ---"
		head -n 300 "$1"
		echo "--- end of diffs ---"
	fi
}

#
# 1. pg_regress suites
#
regress_tests=()
if [ -f test/schedule ]; then
	while read -r kind rest; do
		case $kind in
			test:)
				for t in $rest; do
					if wanted "$t"; then
						regress_tests+=("$t")
					fi
				done ;;
		esac
	done <test/schedule
else
	while IFS= read -r f; do
		t=$(basename "$f" .sql)
		if wanted "$t"; then
			regress_tests+=("$t")
		fi
	done < <(find sql -maxdepth 1 -name '*.sql' 2>/dev/null | LC_ALL=C sort)
fi

# The schedule itself when it runs whole (it may have parallel groups),
# else the list of names.
if [ -f test/schedule ] && [ "${#FILTER[@]}" -eq 0 ]; then
	regress_args=(--schedule=test/schedule)
else
	regress_args=("${regress_tests[@]}")
fi

if [ "${#regress_tests[@]}" -gt 0 ]; then
	echo "== pg_regress: ${#regress_tests[@]} suites"
	log="$OUT/regress.log"
	mkdir -p "$OUT/regress/expected"
	# pg_regress stops the whole run at a test without an expected file;
	# give such a test an empty one (pg_regress looks in the output folder
	# first), so it fails alone and its diff shows the whole output.
	for t in "${regress_tests[@]}"; do
		if [ ! -f "expected/$t.out" ]; then
			echo "$t: expected/$t.out does not exist"
			: >"$OUT/regress/expected/$t.out"
		fi
	done
	rc=0
	# Plans cost a fan-out over sqlite_shard_fdw.fanout_parallelism threads,
	# whose default is the machine's processor count: the expected plans
	# were made with 2, which every session of the suites starts with.
	PGOPTIONS="${PGOPTIONS:-} -c sqlite_shard_fdw.fanout_parallelism=2" \
	timeout --kill-after=10 "${SSFDW_REGRESS_TIMEOUT:-900}" "$PG_REGRESS" \
		--bindir="$BINDIR" --inputdir=. \
		--outputdir="$OUT/regress" --dbname=contrib_regression \
		"${regress_args[@]}" >"$log" 2>&1 || rc=$?
	count_regress "$log"
	if [ "$rc" -ne 0 ]; then
		if [ "$rc" -eq 124 ]; then
			echo "pg_regress: timed out after ${SSFDW_REGRESS_TIMEOUT:-900} s"
		fi
		if [ "$regress_counted" -lt "${#regress_tests[@]}" ]; then
			# a test that never reported (timeout, crash of pg_regress,
			# database could not be created) still counts as failed
			failed=$((failed + ${#regress_tests[@]} - regress_counted))
			grep -E -i 'error|fail|fatal|could not|no such|abort|terminat' "$log" |
				tail -n 20 || true
		fi
		show_diffs "$OUT/regress/regression.diffs"
		echo "actual output: $OUT/regress/results/"
	fi
fi

#
# 2. scripted tests
#
scripts=()
while IFS= read -r f; do
	name=$(basename "$f" .sh)
	if wanted "$name" || wanted "${name%_test}"; then
		scripts+=("$f")
	fi
done < <(find test -maxdepth 1 -name '*_test.sh' 2>/dev/null | LC_ALL=C sort)

if [ "${#scripts[@]}" -gt 0 ]; then
	echo "== scripts: ${#scripts[@]}"
	for f in "${scripts[@]}"; do
		name=$(basename "$f" .sh)
		log="$OUT/$name.log"
		db=$name
		if ! fresh_database "$db" >"$log" 2>&1; then
			printf '%-40s ... FAILED (could not create database "%s")\n' "$name" "$db"
			cat "$log"
			failed=$((failed + 1))
			continue
		fi
		start=$SECONDS
		rc=0
		PGDATABASE=$db timeout --kill-after=10 "${SSFDW_SCRIPT_TIMEOUT:-600}" \
			bash "$f" >"$log" 2>&1 </dev/null || rc=$?
		secs=$((SECONDS - start))
		counts=$(grep -E '^([A-Za-z]+: )?[0-9]+ passed, [0-9]+ failed' "$log" |
				 tail -n 1 || true)
		if [[ "$counts" =~ ([0-9]+)\ passed,\ ([0-9]+)\ failed ]]; then
			p=${BASH_REMATCH[1]}
			m=${BASH_REMATCH[2]}
			# a script that failed must not be counted as all passed
			if [ "$rc" -ne 0 ] && [ "$m" -eq 0 ]; then
				m=1
			fi
		elif [ "$rc" -eq 0 ]; then
			p=1 m=0
		else
			p=0 m=1
		fi
		passed=$((passed + p))
		failed=$((failed + m))
		if [ "$rc" -eq 0 ] && [ "$m" -eq 0 ]; then
			printf '%-40s ... ok (%d passed) %d s\n' "$name" "$p" "$secs"
		else
			if [ "$rc" -eq 124 ]; then
				what="timed out after ${SSFDW_SCRIPT_TIMEOUT:-600} s"
			else
				what="exit $rc"
			fi
			printf '%-40s ... FAILED (%d passed, %d failed, %s) %d s\n' \
				"$name" "$p" "$m" "$what" "$secs"
			echo "--- $log (last 100 lines) ---"
			tail -n 100 "$log"
			echo "--- end of $name ---"
		fi
	done
fi

#
# 3. isolation specs
#
specs=()
if [ -d test/isolation ]; then
	while IFS= read -r f; do
		t=$(basename "$f" .spec)
		if wanted "$t"; then
			specs+=("$f")
		fi
	done < <(find test/isolation -maxdepth 2 -name '*.spec' 2>/dev/null |
			 LC_ALL=C sort)
fi

if [ "${#specs[@]}" -gt 0 ]; then
	echo "== isolation: ${#specs[@]} specs"
	# Stage the specs and expected files in the layout
	# pg_isolation_regress wants (DIR/specs/NAME.spec, DIR/expected/NAME.out).
	iso_in="$OUT/isolation_in"
	mkdir -p "$iso_in/specs" "$iso_in/expected"
	names=()
	fixture_failed=0
	for f in "${specs[@]}"; do
		t=$(basename "$f" .spec)
		names+=("$t")
		cp "$f" "$iso_in/specs/$t.spec"
		for e in test/isolation/expected/"$t".out test/isolation/expected/"$t"_[0-9].out \
				 test/isolation/"$t".out test/isolation/"$t"_[0-9].out; do
			if [ -f "$e" ]; then
				cp "$e" "$iso_in/expected/"
			fi
		done
		if [ ! -f "$iso_in/expected/$t.out" ]; then
			echo "$t: test/isolation/expected/$t.out does not exist"
			: >"$iso_in/expected/$t.out"
		fi
		if [ -f "test/isolation/$t.sh" ] &&
		   ! bash "test/isolation/$t.sh" >"$OUT/isolation_$t.fixture.log" 2>&1; then
			echo "test/isolation/$t.sh failed:"
			tail -n 20 "$OUT/isolation_$t.fixture.log"
			fixture_failed=1
		fi
	done
	log="$OUT/isolation.log"
	mkdir -p "$OUT/isolation"
	rc=0
	timeout --kill-after=10 "${SSFDW_ISOLATION_TIMEOUT:-600}" "$PG_ISOLATION_REGRESS" \
		--bindir="$BINDIR" --inputdir="$iso_in" \
		--outputdir="$OUT/isolation" --dbname=isolation_regression \
		"${names[@]}" >"$log" 2>&1 || rc=$?
	count_regress "$log"
	if [ "$rc" -ne 0 ] || [ "$fixture_failed" -ne 0 ]; then
		if [ "$rc" -eq 124 ]; then
			echo "pg_isolation_regress: timed out after ${SSFDW_ISOLATION_TIMEOUT:-600} s"
		fi
		if [ "$regress_counted" -lt "${#names[@]}" ]; then
			failed=$((failed + ${#names[@]} - regress_counted))
			grep -E -i 'error|fail|fatal|could not|no such|abort|terminat' "$log" |
				tail -n 20 || true
		elif [ "$rc" -eq 0 ]; then
			failed=$((failed + 1))	# only the fixture failed
		fi
		show_diffs "$OUT/isolation/regression.diffs"
		echo "actual output: $OUT/isolation/results/"
	fi
fi

#
# A backend that crashed shows in the server log, not always in a diff:
# print those lines (pg_virtualenv -t keeps the log next to its
# configuration folder).
#
server_log="${PG_CLUSTER_CONF_ROOT:-/nonexistent}/../log/postgresql-${PGVERSION:-15}-regress.log"
if [ -f "$server_log" ]; then
	cp "$server_log" "$OUT/server.log"
	crash='terminated by signal|was terminated by|exited with exit code|PANIC:|TRAP:|server process .* exited'
	# backends a test killed on purpose (test/move_kill_test.sh) are
	# announced in the log first: "sqlite_shard_fdw test kills backend N"
	killed=$(sed -n 's/.*sqlite_shard_fdw test kills backend \([0-9][0-9]*\).*/\1/p' "$server_log" |
		sed 's/.*/(PID &) was terminated by signal 9/')
	if grep -E "$crash" "$server_log" | grep -q -v -F "${killed:-no backend was killed}"; then
		echo "== the server log reports a crash (full log: $OUT/server.log)"
		grep -B 8 -E "$crash" "$server_log" | tail -n 60
		if [ "$failed" -eq 0 ]; then
			failed=1
		fi
	fi
fi

echo "$passed $failed" >"$RESULT"
