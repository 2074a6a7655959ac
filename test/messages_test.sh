#!/usr/bin/env bash
#
# test/messages_test.sh
#	Messages are written out whole, for translation (the PostgreSQL Error
#	Message Style Guide): no message of the backend side (src/, less the
#	thread side in src/sqlite/, which raises none) is assembled from a verb
#	or a noun phrase filled in at run time, as "could not %s on shard" with
#	"read table ..." was.  A message's own values (names, numbers, SQLite's
#	text) still fill its %s.
#
# Reads the sources only; needs no cluster.  Prints one line per check,
# then "N passed, M failed"; exits non-zero if anything failed.

set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

passed=0
failed=0

# check NAME REGEX: no C source line of the backend side matches REGEX.
check()
{
	local hits
	hits=$(grep -rnE --include='*.c' --include='*.h' -e "$2" src |
		grep -v '^src/sqlite/' || true)
	if [ -z "$hits" ]; then
		echo "ok: $1"
		passed=$((passed + 1))
	else
		echo "FAIL: $1"
		echo "$hits" | sed 's/^/    /'
		failed=$((failed + 1))
	fi
}

check 'no "could not %s" or "cannot %s"' '"[^"]*(could not|cannot) %s'
check 'no "permission denied to %s"' '"[^"]*permission denied to %s'
check 'no verb in %s in a detail ("may %s.")' '"[^"]*may %s\.'
check 'no message that opens with a verb in %s' \
	'(errmsg|errcontext|errdetail)\("%s (table|into|from)'
check 'no operation in %s in a lock wait detail' 'tried to %s'
check 'no purpose in %s in a detail ("To %s, ...")' '"To %s,'
check 'no thread detail "was to %s"' 'was to %s'
check 'no shard or directory label in %s' \
	'"[^"]*(writes to|wrote to|savepoint on|writes of this transaction to) %s'
check 'no verb phrase built into a message by psprintf' \
	'psprintf\("(%s table|prepare to %s|(read|prepare|bind|count|delete|list) [^"]*)"'

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
