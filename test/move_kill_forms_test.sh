#!/usr/bin/env bash
#
# test/move_kill_forms_test.sh
#	The kill test (test/move_kill_test.sh) again, on each fleet of
#	test/fixtures/move_forms.sh, whose tenant column SQLite compares
#	otherwise than the tenant rule (nocase: TEXT COLLATE NOCASE, with
#	decoy tenants MK, Mk and mK; ints: a bigint tenant stored as '7',
#	'07', ' 7', '+7', 7 and 7.0, with decoys '070' and ' 17'): every
#	kill's checks, and after the last cleanup the decoys' rows untouched,
#	counted once and routed, the tenant's rows moved in every stored form,
#	and the fence refusing another form of the tenant but not a decoy
#	(test/move_kill_fleets.sh).
#
# Run by test/run_suites.sh inside a throw-away cluster, with PGDATABASE
# set to a fresh database; each fleet runs in a database of its own
# (PGDATABASE_nocase, PGDATABASE_ints, dropped at the end) and a fixture
# folder of its own.  Takes about 10 seconds per fleet.  Prints the kill
# test's lines prefixed with the fleet's name, then "N passed, M failed"
# over both; exits non-zero if anything failed.

set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export LC_ALL=C.UTF-8
source test/fixtures/move_forms.sh

mf_run_fleets test/move_kill_test.sh
