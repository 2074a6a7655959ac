#!/usr/bin/env bash
#
# test/fanout_progress_test.sh
#	fanout_progress() seen from a second session while a fan-out over
#	2,000 tenant files runs, in a cluster of the test's own with
#	sqlite_shard_fdw in shared_preload_libraries (its progress lives in
#	shared memory, which only a preloaded library can have).
#
# One file's write lock is held by another process, so the fan-out waits
# there (busy_timeout_ms 30 s) after reading the others; a second session
# must see the fan-out's pid, server, table and total, and files done short
# of it; a role without pg_read_all_stats sees none of it; then
# pg_cancel_backend stops the fan-out (57014, within 2 s: the delay is
# printed), its session answers the report right, and the row is gone.
#
# Run by test/run_suites.sh (its own cluster, whatever PGDATABASE says).
# The cluster and the fleet live in a new /tmp/ssfdw_fprog.XXXXXX folder,
# removed at the end.  Takes about 30 seconds; stops by itself after 200.

set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export LC_ALL=C.UTF-8
source test/fixtures/common.sh
source test/script_common.sh
script_time_limit 200

PG_MAJOR=${PG_MAJOR:-15}
BIN=/usr/lib/postgresql/$PG_MAJOR/bin

script_tmp ssfdw_fprog
script_cluster "shared_preload_libraries = 'sqlite_shard_fdw'"

q()
{
	psql -X -q -At -v ON_ERROR_STOP=1 -c "$1"
}

d="$tmp/fleet"
python3 test/fixtures/tenantfiles.py build "$d" --tenants 2000 --rows 5
chown -R postgres "$d"
chmod -R a+rwX "$d"

psql -X -q -v ON_ERROR_STOP=1 <<SQL >/dev/null
SET client_min_messages = warning;
CREATE EXTENSION sqlite_shard_fdw;
CREATE SERVER fp FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '$d/directory.db', layout 'file_per_tenant',
           tenant_path 'tenants/%s.db', busy_timeout_ms '30000');
CREATE FOREIGN TABLE orders (tenant_id text, order_id bigint, status text,
  amount_cents bigint, created_at timestamp) SERVER fp;
CREATE ROLE regress_fprog_other LOGIN;
GRANT SELECT ON orders TO regress_fprog_other;
CREATE USER MAPPING FOR regress_fprog_other SERVER fp;
SQL

REPORT="SELECT status, count(*), sum(amount_cents) FROM orders GROUP BY status ORDER BY status"
want=$(q "$REPORT")

# Nothing runs: no row.
got=$(q "SELECT count(*) FROM fanout_progress()")
[ "$got" = 0 ] && result ok "no fan-out, no row" ||
	result failed "no fan-out, no row" "$got rows"

# One file locked by another process (a rollback-journal file: its writer's
# lock, once it has written, keeps readers out).
python3 - "$d/tenants/t1500.db" "$tmp/stop" <<'PY' &
import os, sqlite3, sys, time
path, stop = sys.argv[1], sys.argv[2]
conn = sqlite3.connect(path, isolation_level=None)
conn.execute("BEGIN EXCLUSIVE")
open(stop + ".held", "w").close()
deadline = time.time() + 60
while not os.path.exists(stop) and time.time() < deadline:
    time.sleep(0.05)
conn.execute("ROLLBACK")
PY
helpers+=("$!")
for _ in $(seq 1 100); do
	[ -e "$tmp/stop.held" ] && break
	sleep 0.05
done

psql -X -A -t -v VERBOSITY=verbose >"$tmp/a.out" 2>&1 <<SQL &
SET application_name = 'fprog_a';
$REPORT;
SELECT 'after: ' || count(*) FROM ($REPORT) r;
SQL
a=$!
helpers+=("$a")

# The second session watches until the fan-out waits at the locked file.
row=""
for _ in $(seq 1 200); do
	row=$(q "SELECT p.pid = a.pid, server, table_name, files_done, files_total,
	                started <= now()
	           FROM fanout_progress() p JOIN pg_stat_activity a
	             ON a.application_name = 'fprog_a'")
	done_files=$(echo "$row" | cut -d'|' -f4)
	[ -n "$done_files" ] && [ "$done_files" -ge 1000 ] && break
	sleep 0.05
done
if echo "$row" | grep -qE '^t\|fp\|orders\|[0-9]+\|2000\|t$' &&
	[ "$(echo "$row" | cut -d'|' -f4)" -lt 2000 ]; then
	result ok "a second session sees the fan-out: pid, server, table, files done of 2000"
else
	result failed "a second session sees the fan-out: pid, server, table, files done of 2000" "$row"
fi
echo "figure: files done while waiting at the locked file: $(echo "$row" | cut -d'|' -f4) of 2000"

got=$(psql -X -q -At -U regress_fprog_other -c "SELECT count(*) FROM fanout_progress()")
[ "$got" = 0 ] && result ok "another role without pg_read_all_stats sees no row" ||
	result failed "another role without pg_read_all_stats sees no row" "$got rows"
q "GRANT pg_read_all_stats TO regress_fprog_other"
got=$(psql -X -q -At -U regress_fprog_other -c "SELECT files_total FROM fanout_progress()")
[ "$got" = 2000 ] && result ok "a member of pg_read_all_stats sees it" ||
	result failed "a member of pg_read_all_stats sees it" "$got"

# Cancel it while it waits; the lock is let go, and the session goes on.
start=$(date +%s%N)
q "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'fprog_a'" >/dev/null
for _ in $(seq 1 400); do
	grep -q "ERROR" "$tmp/a.out" && break
	sleep 0.005
done
late=$((($(date +%s%N) - start) / 1000000))
touch "$tmp/stop"
wait "$a" || true
out=$(cat "$tmp/a.out")
if echo "$out" | grep -q "ERROR:  57014" && [ "$late" -lt 2000 ] &&
	echo "$out" | grep -q '^after: 5$'; then
	result ok "pg_cancel_backend stops the waiting fan-out, and its session goes on"
else
	result failed "pg_cancel_backend stops the waiting fan-out, and its session goes on" "after $late ms: $out"
fi
echo "figure: from pg_cancel_backend to the error: $late ms"
got=$(q "SELECT count(*) FROM fanout_progress()")
[ "$got" = 0 ] && result ok "the cancelled fan-out's row is gone" ||
	result failed "the cancelled fan-out's row is gone" "$got rows"
got=$(q "$REPORT")
[ "$got" = "$want" ] && result ok "the report after" || result failed "the report after" "$got"

script_end
