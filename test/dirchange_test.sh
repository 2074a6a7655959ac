#!/usr/bin/env bash
#
# test/dirchange_test.sh
#	The directory change check under fire: another process moves a tenant
#	from shard to shard as fast as it can commit, while PostgreSQL sessions
#	run routed statements, and every statement must route by a directory at
#	least as new as the last move that had committed when it started.
#
# src/directory.c decides per statement whether the directory
# changed: by a stamp read without a lock (shardio_change_stamp), in WAL
# mode the WAL-index header in the -shm file, in rollback-journal mode the
# database header, and when the stamp moved (or none can be had) by PRAGMA
# data_version.  This test is what those shortcuts are kept on.  The
# fleet: shards s0 .. s99, shard sK holding one row ('t', K), and a
# directory whose tenant t the writer (a separate process, as the user
# postgres, like the application) moves to shard s(i mod 100) in its i-th
# commit, writing i to a side file once each commit has returned.  Each
# reader statement is preceded by a statement that reads the side file
# (c: the last commit known finished) and itself reads the side file
# again after routing (c2); the shard it read, K, must be that of some
# commit j with c <= j <= c2 + 1.  Windows of 100 commits or more prove
# nothing and are counted apart.  Phases, each a few seconds:
#
#	wal		the directory in WAL mode, with a PASSIVE checkpoint every 20
#			commits, so the WAL restarts from its start again and again;
#	delete	the directory in rollback-journal mode: the header stamp,
#			data_version whenever it moved;
#	persist	rollback-journal mode with journal_mode = PERSIST (the commit
#			zeroes the journal's header and leaves the file), the writer
#			pausing up to 3 ms between commits, so that a check often
#			finds the header as the last check left it;
#	switch	WAL mode with wal_checkpoint(TRUNCATE) every 25 commits and
#			attempts to switch the journal mode to DELETE and back every
#			100; readers reconnect often, so that a switch out of WAL can
#			succeed (SQLite refuses it while any connection, such as a
#			backend's directory handle, has the WAL open).
#
# Readers run plain routed statements and prepared ones under a generic
# plan, and pause now and then (up to 30 ms) so that many commits, and
# WAL restarts, pass between two checks of one backend.  Prints one line per check and "N passed, M failed"; exits non-zero
# on failure.  Run by test/run_suites.sh with PGDATABASE set to a fresh
# database; DIRCHANGE_SECONDS sets each phase's length (default 6).  Takes
# about 35 seconds and stops by itself after 90.

set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export LC_ALL=C.UTF-8

if [ -z "${PGDATABASE:-}" ] || [ "$PGDATABASE" = "postgres" ]; then
	psql -X -q -d postgres -c 'DROP DATABASE IF EXISTS ssfdw_dirchange' \
		-c 'CREATE DATABASE ssfdw_dirchange'
	export PGDATABASE=ssfdw_dirchange
fi

dir=$(mktemp -d -t ssfdw_dirchange.XXXXXX)
chmod 0755 "$dir"
checker=
cleanup()
{
	if [ -n "$checker" ] && kill -0 "$checker" 2>/dev/null; then
		kill -TERM -- "-$checker" 2>/dev/null || kill -TERM "$checker" 2>/dev/null || true
		sleep 1
		kill -KILL -- "-$checker" 2>/dev/null || true
	fi
	if [ -z "${DIRCHANGE_KEEP:-}" ]; then
		rm -rf "$dir"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cp test/directory.sql test/concurrency_check.py "$dir/"
cat >"$dir/dirchange.py" <<'PY'
import os
import pwd
import random
import sqlite3
import subprocess
import sys
import threading
import time

# shared with the concurrency test, copied next to this file
from concurrency_check import Checks, directory_schema

NSHARDS = 100
PHASE_SECONDS = float(os.environ.get("DIRCHANGE_SECONDS", "6"))


def write_counter(d, i):
    tmp = os.path.join(d, "commit.tmp")
    with open(tmp, "w") as f:
        f.write("%d" % i)
    os.replace(tmp, os.path.join(d, "commit.txt"))


def writer(d, phase, stopfile, result):
    """The application: move tenant t to shard s(i mod N) in commit i."""
    con = sqlite3.connect(os.path.join(d, "directory.db"),
                          isolation_level=None, timeout=10)
    con.execute("PRAGMA synchronous = OFF")
    i = int(open(os.path.join(d, "commit.txt")).read())
    mode = con.execute("PRAGMA journal_mode").fetchone()[0]
    stats = {"commits": 0, "checkpoints": 0, "to_delete": 0,
             "to_delete_refused": 0, "to_wal": 0}
    while not os.path.exists(stopfile):
        i += 1
        con.execute("BEGIN IMMEDIATE")
        con.execute("UPDATE shard_map SET shard_id = ?, updated_at = ? "
                    "WHERE tenant_id = 't'", ("s%d" % (i % NSHARDS), i))
        con.execute("COMMIT")
        write_counter(d, i)
        stats["commits"] += 1
        if phase == "persist":
            time.sleep(random.choice([0, 0, 0.0005, 0.001, 0.003]))
        if phase == "wal" and i % 20 == 0:
            con.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            stats["checkpoints"] += 1
        if phase == "switch":
            if mode == "wal" and i % 25 == 0:
                con.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
                stats["checkpoints"] += 1
            if i % 100 == 0:
                con.execute("PRAGMA busy_timeout = 20")
                try:
                    if mode == "wal":
                        got = con.execute(
                            "PRAGMA journal_mode = DELETE").fetchone()[0]
                        if got == "delete":
                            stats["to_delete"] += 1
                        else:
                            stats["to_delete_refused"] += 1
                    else:
                        got = con.execute(
                            "PRAGMA journal_mode = WAL").fetchone()[0]
                        if got == "wal":
                            stats["to_wal"] += 1
                    mode = got
                except sqlite3.OperationalError:
                    if mode == "wal":
                        stats["to_delete_refused"] += 1
                con.execute("PRAGMA busy_timeout = 10000")
    if phase == "switch" and mode != "wal":
        con.execute("PRAGMA journal_mode = WAL").fetchall()
    con.close()
    with open(result, "w") as f:
        f.write(repr(stats))


def reader_script(d, n):
    counter = os.path.join(d, "commit.txt")
    lines = ["SET plan_cache_mode = force_generic_plan;",
             "PREPARE p(text) AS SELECT v, pg_read_file('%s') "
             "FROM dc_items WHERE tenant_id = $1;" % counter]
    rng = random.Random(n)
    for k in range(n):
        # Pauses let several commits, checkpoints and WAL restarts pass
        # between two checks of one backend, as they would between the
        # statements of an idle application session.
        if k % 2 == 0:
            lines.append("SELECT pg_sleep(%.4f) \\gset z_"
                         % rng.choice([0, 0.001, 0.003, 0.01, 0.03]))
        lines.append("SELECT pg_read_file('%s') AS c \\gset" % counter)
        if k % 2:
            lines.append("SELECT 'r|' || :c || '|' || v || '|' || "
                         "pg_read_file('%s') FROM dc_items "
                         "WHERE tenant_id = 't';" % counter)
        else:
            lines.append("EXECUTE p('t') \\gset e_")
            lines.append("\\echo p|:c|:e_v|:e_pg_read_file")
    return "\n".join(lines) + "\n"


def run_phase(d, phase, checks):
    python = sys.executable
    stopfile = os.path.join(d, "stop.%s" % phase)
    result = os.path.join(d, "writer.%s" % phase)
    kw = {}
    if os.geteuid() == 0:
        # as the server's user, with a Python that user may run
        pw = pwd.getpwnam("postgres")
        kw = {"user": pw.pw_uid, "group": pw.pw_gid, "extra_groups": []}
        for cand in ("/usr/bin/python3", "/bin/python3"):
            if os.path.exists(cand):
                python = cand
                break
    wproc = subprocess.Popen([python, os.path.join(d, "dirchange.py"),
                              "writer", d, phase, stopfile, result], **kw)
    nreaders, nstmts = (3, 400) if phase != "switch" else (2, 30)
    lock = threading.Lock()
    obs = []
    errors = []
    sessions = [0]
    deadline = time.monotonic() + PHASE_SECONDS

    def reader():
        script = reader_script(d, nstmts)
        while time.monotonic() < deadline:
            p = subprocess.run(["psql", "-X", "-q", "-A", "-t", "-f", "-"],
                               input=script, capture_output=True, text=True,
                               timeout=40)
            with lock:
                sessions[0] += 1
                obs.extend(l for l in p.stdout.split("\n") if l)
                if p.returncode != 0 or p.stderr.strip():
                    errors.append(p.stderr.strip()[:2000])
            if phase == "switch":
                time.sleep(0.02)

    threads = [threading.Thread(target=reader) for _ in range(nreaders)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    open(stopfile, "w").close()
    wproc.wait(timeout=30)
    stats = eval(open(result).read()) if os.path.exists(result) else {}

    stale = []
    vacuous = 0
    kinds = {"r": 0, "p": 0}
    for line in obs:
        kind, c, v, c2 = line.split("|")
        c, v, c2 = int(c), int(v), int(c2)
        kinds[kind] += 1
        if c2 + 1 - c + 1 >= NSHARDS:
            vacuous += 1
            continue
        if not any(j % NSHARDS == v for j in range(c, c2 + 2)):
            stale.append(line)
    checked = len(obs) - vacuous
    print("        %s: %d statements (%d routed, %d prepared) in %d "
          "sessions, %d without a usable window; writer %s"
          % (phase, len(obs), kinds["r"], kinds["p"], sessions[0], vacuous,
             stats), flush=True)
    checks.check(not errors, "%s: no reader error" % phase,
                 "\n".join(errors[:3]))
    checks.check(stats.get("commits", 0) >= 200,
                 "%s: the writer committed at least 200 moves" % phase)
    checks.check(checked >= 300,
                 "%s: at least 300 statements checked" % phase)
    checks.check(not stale,
                 "%s: every statement routed by a directory at least as new "
                 "as the last commit before it" % phase,
                 "statement kind|c|shard read|c2, for example:\n"
                 + "\n".join(stale[:10]))
    return stats


def main():
    d = sys.argv[1]
    pw = pwd.getpwnam("postgres") if os.geteuid() == 0 else None
    for k in range(NSHARDS):
        con = sqlite3.connect(os.path.join(d, "s%d.db" % k))
        con.executescript("CREATE TABLE items(tenant_id TEXT, v INTEGER);"
                          "INSERT INTO items VALUES ('t', %d);" % k)
        con.close()
    con = sqlite3.connect(os.path.join(d, "directory.db"))
    con.execute("PRAGMA journal_mode = WAL").fetchall()
    con.executescript(directory_schema())
    con.executemany("INSERT INTO shards VALUES (?, ?)",
                    [("s%d" % k, "s%d.db" % k) for k in range(NSHARDS)])
    con.execute("INSERT INTO shard_map(tenant_id, shard_id, updated_at) "
                "VALUES ('t', 's0', 0)")
    con.commit()
    con.close()
    write_counter(d, 0)
    for f in os.listdir(d) + ["."]:
        p = os.path.join(d, f)
        if pw:
            os.chown(p, pw.pw_uid, pw.pw_gid)
        os.chmod(p, 0o775 if os.path.isdir(p) else 0o664)

    p = subprocess.run(
        ["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-f", "-"],
        input="""
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
DROP SERVER IF EXISTS dc_srv CASCADE;
CREATE SERVER dc_srv FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '%s/directory.db');
CREATE FOREIGN TABLE dc_items (tenant_id text, v bigint)
  SERVER dc_srv OPTIONS (table 'items');
""" % d, capture_output=True, text=True)
    if p.returncode != 0:
        print(p.stderr)
        print("0 passed, 1 failed")
        return 1

    checks = Checks()
    for phase in ("wal", "delete", "persist", "switch"):
        con = sqlite3.connect(os.path.join(d, "directory.db"),
                              isolation_level=None, timeout=10)
        want = phase if phase in ("delete", "persist") else "wal"
        got = con.execute("PRAGMA journal_mode = %s" % want).fetchone()[0]
        con.close()
        if got != want:
            checks.check(False, "%s: the directory is in %s mode" % (phase, want),
                         "PRAGMA journal_mode answered %s" % got)
            continue
        stats = run_phase(d, phase, checks)
        if phase == "switch":
            checks.check(stats.get("to_delete", 0) > 0 and
                         stats.get("to_wal", 0) > 0,
                         "switch: the journal mode changed both ways while "
                         "sessions read")
    subprocess.run(["psql", "-X", "-q", "-c",
                    "DROP SERVER dc_srv CASCADE"], capture_output=True)
    print("%d passed, %d failed" % (checks.passed, checks.failed), flush=True)
    return 1 if checks.failed else 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "writer":
        writer(*sys.argv[2:6])
    else:
        sys.exit(main())
PY

setsid timeout --kill-after=5 90 python3 "$dir/dirchange.py" "$dir" &
checker=$!
rc=0
wait "$checker" || rc=$?
checker=
if [ "$rc" -eq 124 ]; then
	echo "the test did not finish within 90 s"
	echo "0 passed, 1 failed"
fi
exit "$rc"
