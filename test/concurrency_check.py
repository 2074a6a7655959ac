#!/usr/bin/env python3
#
# test/concurrency_check.py
#	The concurrency test: an application process
#	writes a WAL shard while PostgreSQL reads the fleet.  Run by
#	test/concurrency_test.sh; "writer" mode is the application process.
#
# Usage:
#	python3 test/concurrency_check.py				the test
#	python3 test/concurrency_check.py writer DB STOPFILE READYFILE RESULT
#
# Environment: CONC_SECONDS (longest the writer runs, default 8; it stops
# earlier once the readers are done), CONC_DIR (fixture folder; default a
# new /tmp/ssfdw_conc.XXXXXX, removed afterwards unless CONC_KEEP=1),
# PGHOST... for psql.
#
# The fleet: shard_w (WAL journal) holds tenants w1, w2, w3 and is written
# by the writer; shard_s (rollback journal) holds s1, s2 and does not
# change.  The writer is a separate OS process (as the user postgres when
# run as root, since the server's backends share the -wal and -shm files)
# that inserts rows in transactions of 1 to 200 rows whose amounts always
# add up to 1000000, with a passive checkpoint now and then, and now and
# then holds the write lock before it commits (0.3 s; once 3 s, longer
# than a read may take).  While it runs, four psql sessions read through
# the foreign table conc_ft:
#
#	fan		READ COMMITTED: fan-out count(*) and sum(amount), a routed count
#			of the writer's tenants, and one statement that counts the
#			fleet twice (two scans of every shard in one statement).
#	rr		REPEATABLE READ and SERIALIZABLE transactions that read twice,
#			a pause in between, and once more routed to the writer's shard.
#	rc		READ COMMITTED transaction blocks that read twice, with a pause.
#	agg		grouped aggregates per tenant.
#
# Checks: no reader or writer error; in READ COMMITTED, counts never go
# down from one statement to the next and every read sees whole writer
# transactions (sum - initial sum is a multiple of 1000000); one statement
# sees one state of a shard (both counts of the double count agree); a
# READ COMMITTED block sees the writer's progress between its statements;
# REPEATABLE READ and SERIALIZABLE see the same rows in every statement of
# the transaction; no read waits for the writer (WAL); and at the end the
# foreign table holds exactly the initial rows plus what the writer
# committed.  Prints each check and "N passed, M failed".

import json
import os
import pwd
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

# The directory's tables, shared with every fixture builder (read when a
# fleet is built: this file may run as a copy elsewhere).
REPO_TEST_DIR = os.path.dirname(os.path.abspath(__file__))


def directory_schema():
    with open(os.path.join(REPO_TEST_DIR, "directory.sql")) as f:
        return f.read()

UNIT = 1000000                  # the amounts of one writer transaction
W_TENANTS = ["w1", "w2", "w3"]
S_TENANTS = ["s1", "s2"]
MAX_READ_SECONDS = 2.0          # a read that waits longer was blocked
HOLD_LONG = 3.0                 # the writer holds its lock this long once
NFAN, NRR, NRC, NAGG = 400, 30, 30, 200     # iterations of the readers


# ---------------------------------------------------------------------------
# The writer: a separate process, as an application would be
# ---------------------------------------------------------------------------

def writer(db, stopfile, readyfile, result):
    rng = random.Random(7)
    deadline = time.monotonic() + float(os.environ.get("CONC_SECONDS", "8"))
    out = {"txns": 0, "rows": 0, "amount": 0, "max_commit_s": 0.0,
           "checkpoints": 0, "held": 0, "errors": []}
    try:
        con = sqlite3.connect(db, timeout=10, isolation_level=None)
        con.execute("PRAGMA busy_timeout = 10000")
        while time.monotonic() < deadline and not os.path.exists(stopfile):
            n = 200 if rng.random() < 0.03 else rng.randint(1, 20)
            rows = []
            for k in range(n):
                amount = 1 if k < n - 1 else UNIT - (n - 1)
                rows.append((rng.choice(W_TENANTS), amount, out["txns"] + 1))
            t0 = time.monotonic()
            con.execute("BEGIN IMMEDIATE")
            con.executemany("INSERT INTO events(tenant_id, amount, txn) "
                            "VALUES (?, ?, ?)", rows)
            if out["txns"] % 100 == 99:
                # hold the write lock a while (once long enough to tell a
                # blocked reader): WAL readers must neither wait nor see
                # the rows before the commit
                time.sleep(HOLD_LONG if out["txns"] == 99 else 0.3)
                out["held"] += 1
            con.execute("COMMIT")
            if out["txns"] % 100 != 99:
                out["max_commit_s"] = max(out["max_commit_s"],
                                          time.monotonic() - t0)
            out["txns"] += 1
            out["rows"] += n
            out["amount"] += UNIT
            if out["txns"] == 1:
                open(readyfile, "w").close()
            if out["txns"] % 50 == 0:
                con.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                out["checkpoints"] += 1
            time.sleep(rng.uniform(0, 0.006))
        con.close()
    except Exception as e:      # reported by the test, not raised
        out["errors"].append(repr(e))
    if out["txns"] == 0:
        open(readyfile, "w").close()
    tmp = result + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(out, fh)
    os.rename(tmp, result)
    return 0


# ---------------------------------------------------------------------------
# The test
# ---------------------------------------------------------------------------

class Checks:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, ok, what, detail=""):
        if ok:
            self.passed += 1
            print("ok      %s" % what, flush=True)
        else:
            self.failed += 1
            print("FAILED  %s" % what, flush=True)
            if detail:
                for line in detail.rstrip("\n").split("\n"):
                    print("        " + line, flush=True)


def psql(script, timeout=40):
    p = subprocess.run(["psql", "-X", "-q", "-A", "-t", "-F", "|",
                        "-v", "ON_ERROR_STOP=1", "-f", "-"],
                       input=script, capture_output=True, text=True,
                       timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def server_user():
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam("postgres")
    except KeyError:
        return None


def hand_over(path, pw):
    """Make the fixture the server's: owner postgres, group-writable."""
    for base, dirs, files in os.walk(path):
        if pw:
            os.chown(base, pw.pw_uid, pw.pw_gid)
        os.chmod(base, 0o775)
        for f in files:
            p = os.path.join(base, f)
            if pw:
                os.chown(p, pw.pw_uid, pw.pw_gid)
            os.chmod(p, 0o664)


def build_fleet(d):
    os.makedirs(os.path.join(d, "shards"))
    con = sqlite3.connect(os.path.join(d, "directory.db"))
    con.executescript("""
        PRAGMA journal_mode = WAL;""")
    con.executescript(directory_schema())
    con.executescript("""
        INSERT INTO shards VALUES ('shard_w', 'shards/shard_w.db'),
                                  ('shard_s', 'shards/shard_s.db');
        INSERT INTO shard_map(tenant_id, shard_id, updated_at) VALUES
            ('w1', 'shard_w', 1735689600), ('w2', 'shard_w', 1735689600),
            ('w3', 'shard_w', 1735689600), ('s1', 'shard_s', 1735689600),
            ('s2', 'shard_s', 1735689600);""")
    con.close()
    initial = {}
    rng = random.Random(11)
    for shard, tenants, nrows, wal in (("shard_w", W_TENANTS, 300, True),
                                       ("shard_s", S_TENANTS, 200, False)):
        con = sqlite3.connect(os.path.join(d, "shards", shard + ".db"))
        con.executescript("""
            CREATE TABLE events(id INTEGER PRIMARY KEY,
                                tenant_id TEXT NOT NULL,
                                amount INTEGER NOT NULL,
                                txn INTEGER NOT NULL);
            CREATE INDEX events_tenant ON events(tenant_id);""")
        rows = [(rng.choice(tenants), rng.randint(1, 999), 0)
                for _ in range(nrows)]
        with con:
            con.executemany("INSERT INTO events(tenant_id, amount, txn) "
                            "VALUES (?, ?, ?)", rows)
        con.execute("PRAGMA journal_mode = %s" % ("WAL" if wal else "DELETE"))
        con.close()
        initial[shard] = (len(rows), sum(r[1] for r in rows))
    return initial


def parse_reader(out):
    """[(label, [fields], seconds)] from a reader's output: the rows of each
    query, then psql's "Time: ... ms" line for it."""
    results = []
    pending = []
    for line in out.split("\n"):
        if line.startswith("Time: "):
            ms = float(line.split()[1])
            for row in pending:
                results.append((row[0], row[1:], ms / 1000.0))
            pending = []
        elif "|" in line:
            pending.append(line.split("|"))
    return results


READER_HEAD = """
\\set ON_ERROR_STOP 0
SET statement_timeout = '20s';
\\timing on
"""


def fan_script(n):
    routed = ", ".join("'%s'" % t for t in W_TENANTS)
    one = f"""
SELECT 'fan', count(*), coalesce(sum(amount), 0) FROM conc_ft;
SELECT 'route', count(*) FROM conc_ft WHERE tenant_id IN ({routed});
SELECT 'double', a.c, b.c FROM (SELECT count(*) AS c FROM conc_ft) a,
  (SELECT count(*) AS c FROM conc_ft) b;
SELECT 'sleep', pg_sleep(0.005);
"""
    return READER_HEAD + one * n


def rr_script(n):
    routed = ", ".join("'%s'" % t for t in W_TENANTS)
    out = [READER_HEAD]
    for k in range(n):
        level = "REPEATABLE READ" if k % 2 == 0 else "SERIALIZABLE"
        out.append(f"""
BEGIN ISOLATION LEVEL {level};
SELECT 'rr1', {k}, count(*), coalesce(sum(amount), 0) FROM conc_ft;
SELECT 'sleep', pg_sleep(0.1);
SELECT 'rr2', {k}, count(*), coalesce(sum(amount), 0) FROM conc_ft;
SELECT 'rr3', {k}, count(*) FROM conc_ft WHERE tenant_id = ANY (ARRAY[{routed}]);
COMMIT;
""")
    return "".join(out)


def rc_script(n):
    out = [READER_HEAD]
    for k in range(n):
        out.append(f"""
BEGIN ISOLATION LEVEL READ COMMITTED;
SELECT 'rc1', {k}, count(*) FROM conc_ft;
SELECT 'sleep', pg_sleep(0.1);
SELECT 'rc2', {k}, count(*) FROM conc_ft;
COMMIT;
""")
    return "".join(out)


def agg_script(n):
    one = """
SELECT 'agg', tenant_id, count(*), sum(amount) FROM conc_ft GROUP BY tenant_id;
SELECT 'sleep', pg_sleep(0.02);
"""
    return READER_HEAD + one * n


def main():
    c = Checks()
    t_start = time.monotonic()
    pw = server_user()
    own_dir = not os.environ.get("CONC_DIR")
    d = os.environ.get("CONC_DIR") or tempfile.mkdtemp(prefix="ssfdw_conc.",
                                                        dir="/tmp")
    if not own_dir and os.path.exists(d):
        shutil.rmtree(d)
    procs = []
    keep = False
    try:
        initial = build_fleet(d)
        hand_over(d, pw)
        c0 = sum(v[0] for v in initial.values())
        s0 = sum(v[1] for v in initial.values())
        static_rows = initial["shard_s"][0]

        rc, out, err = psql(f"""
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
DROP SERVER IF EXISTS conc_fleet CASCADE;
CREATE SERVER conc_fleet FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory '{d}/directory.db', busy_timeout_ms '10000');
CREATE FOREIGN TABLE conc_ft (tenant_id text, id bigint, amount bigint,
                              txn bigint)
  SERVER conc_fleet OPTIONS (table 'events');
SELECT count(*), sum(amount) FROM conc_ft;
""")
        ok = rc == 0 and out.strip() == "%d|%d" % (c0, s0)
        c.check(ok, "setup: the foreign table shows the %d initial rows" % c0,
                "" if ok else "got %r\n%s" % (out.strip(), err))
        if not ok:
            return c

        stopfile = os.path.join(d, "stop")
        readyfile = os.path.join(d, "ready")
        result = os.path.join(d, "writer.json")
        # The writer runs as the server's OS user, from a copy of this file
        # in the fixture folder, with a system interpreter (the repository
        # or a root-only Python may be out of that user's reach).
        kw = {}
        python = sys.executable
        script = os.path.abspath(__file__)
        if pw:
            kw = {"user": pw.pw_uid, "group": pw.pw_gid, "extra_groups": [],
                  "cwd": d}
            for cand in ("/usr/bin/python3", "/bin/python3"):
                if os.path.exists(cand):
                    python = cand
                    break
            script = os.path.join(d, "concurrency_writer.py")
            shutil.copy(os.path.abspath(__file__), script)
            hand_over(d, pw)
        wproc = subprocess.Popen(
            [python, script, "writer",
             os.path.join(d, "shards", "shard_w.db"), stopfile, readyfile,
             result],
            **kw)
        procs.append(wproc)
        deadline = time.monotonic() + 10
        while not os.path.exists(readyfile) and time.monotonic() < deadline \
                and wproc.poll() is None:
            time.sleep(0.01)

        readers = {}
        for name, script in (("fan", fan_script(NFAN)), ("rr", rr_script(NRR)),
                             ("rc", rc_script(NRC)), ("agg", agg_script(NAGG))):
            p = subprocess.Popen(
                ["psql", "-X", "-q", "-A", "-t", "-F", "|", "-f", "-"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, text=True)
            procs.append(p)
            readers[name] = (p, script)
        outputs = {}

        def talk(name, p, script):
            try:
                o, e = p.communicate(script, timeout=40)
            except subprocess.TimeoutExpired:
                o, e = "", "timed out after 40 s"
            outputs[name] = (p.returncode, o, e)

        threads = [threading.Thread(target=talk, args=(n, p, s))
                   for n, (p, s) in readers.items()]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        open(stopfile, "w").close()
        try:
            wproc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            pass

        # --- the writer ---
        w = None
        if os.path.exists(result):
            with open(result) as fh:
                w = json.load(fh)
        c.check(w is not None and not w["errors"] and w["txns"] > 0,
                "writer: committed transactions without error",
                "writer result: %r (exit %r)" % (w, wproc.returncode))
        if w is None:
            w = {"txns": 0, "rows": 0, "amount": 0, "max_commit_s": 0,
                 "checkpoints": 0, "errors": []}
        print("        writer: %d transactions, %d rows, %d checkpoints, "
              "%d write locks held, slowest other commit %.3f s" % (
                  w["txns"], w["rows"], w["checkpoints"], w.get("held", 0),
                  w["max_commit_s"]))
        c.check(w["max_commit_s"] < MAX_READ_SECONDS,
                "writer: never waited for the readers (slowest commit "
                "%.3f s)" % w["max_commit_s"])

        # --- reader errors ---
        for name, (rcode, o, e) in outputs.items():
            errs = [l for l in e.split("\n") if l.strip()]
            c.check(rcode == 0 and not errs,
                    "%s reader: no errors" % name,
                    "exit %r\n%s" % (rcode, "\n".join(errs[:10])))

        res = {n: parse_reader(outputs[n][1]) for n in outputs}

        # --- fan: monotonic, whole transactions, one state per statement ---
        fan = [(int(f[0]), int(f[1])) for l, f, s in res["fan"] if l == "fan"]
        route = [int(f[0]) for l, f, s in res["fan"] if l == "route"]
        double = [(int(f[0]), int(f[1])) for l, f, s in res["fan"]
                  if l == "double"]
        c.check(len(fan) == NFAN and len(route) == NFAN and
                len(double) == NFAN,
                "fan reader: every query answered (%d, %d, %d of %d)" % (
                    len(fan), len(route), len(double), NFAN))
        drops = [(a, b) for a, b in zip(fan, fan[1:]) if b[0] < a[0]]
        c.check(not drops, "fan reader: fan-out count never goes down "
                "(%d reads, %d distinct counts)" % (
                    len(fan), len({x[0] for x in fan})),
                "; ".join("%d -> %d" % (a[0], b[0]) for a, b in drops[:5]))
        torn = [x for x in fan if (x[1] - s0) % UNIT != 0 or
                (x[1] - s0) // UNIT > w["txns"] or x[0] < c0]
        c.check(not torn, "fan reader: every read sees whole writer "
                "transactions", "; ".join("count %d sum %d" % x
                                          for x in torn[:5]))
        rdrops = [(a, b) for a, b in zip(route, route[1:]) if b < a]
        c.check(not rdrops, "fan reader: routed count never goes down",
                "; ".join("%d -> %d" % x for x in rdrops[:5]))
        split = [x for x in double if x[0] != x[1]]
        c.check(not split, "fan reader: one statement sees one state of the "
                "shard (%d of %d double counts disagree)" % (
                    len(split), len(double)),
                "; ".join("%d vs %d" % x for x in split[:5]))
        grew = len({x[0] for x in fan}) > 2
        c.check(grew, "fan reader: saw the writer's rows arrive (the test "
                "overlapped the writer)")

        # --- rc blocks: each statement a new state ---
        rc1 = {int(f[0]): int(f[1]) for l, f, s in res["rc"] if l == "rc1"}
        rc2 = {int(f[0]): int(f[1]) for l, f, s in res["rc"] if l == "rc2"}
        back = [(k, rc1[k], rc2[k]) for k in rc1 if k in rc2 and
                rc2[k] < rc1[k]]
        moved = [k for k in rc1 if k in rc2 and rc2[k] > rc1[k]]
        c.check(len(rc1) == NRC and len(rc2) == NRC and not back,
                "rc reader: the second read of a READ COMMITTED block never "
                "sees fewer rows", "; ".join("#%d: %d then %d" % x
                                             for x in back[:5]))
        c.check(len(moved) > 0, "rc reader: a READ COMMITTED block sees rows "
                "committed between its statements (%d of %d blocks)" % (
                    len(moved), len(rc1)))

        # --- rr / serializable: one snapshot per transaction ---
        rr = {}
        for l, f, s in res["rr"]:
            if l in ("rr1", "rr2", "rr3"):
                rr.setdefault(int(f[0]), {})[l] = [int(x) for x in f[1:]]
        bad = []
        for k, v in sorted(rr.items()):
            if set(v) != {"rr1", "rr2", "rr3"}:
                bad.append("#%d: incomplete %r" % (k, v))
            elif v["rr1"] != v["rr2"]:
                bad.append("#%d (%s): %r then %r" % (
                    k, "RR" if k % 2 == 0 else "SERIALIZABLE",
                    v["rr1"], v["rr2"]))
            elif v["rr3"][0] != v["rr1"][0] - static_rows:
                bad.append("#%d: routed %d, fan-out %d - %d static" % (
                    k, v["rr3"][0], v["rr1"][0], static_rows))
        c.check(len(rr) == NRR and not bad,
                "rr reader: REPEATABLE READ and SERIALIZABLE transactions "
                "see one state of the shards", "\n".join(bad[:8]))

        # --- aggregates ---
        groups = {}
        for l, f, s in res["agg"]:
            if l == "agg":
                groups.setdefault(f[0], []).append((int(f[1]), int(f[2])))
        agg_bad = [t for t, v in groups.items()
                   if any(b[0] < a[0] for a, b in zip(v, v[1:]))]
        c.check(set(groups) == set(W_TENANTS + S_TENANTS) and not agg_bad,
                "agg reader: per-tenant counts never go down",
                "tenants %r, going down: %r" % (sorted(groups), agg_bad))

        # --- no read was blocked by the writer ---
        slow = [(n, l, s) for n in res for l, f, s in res[n]
                if l != "sleep" and s > MAX_READ_SECONDS]
        c.check(not slow, "readers: no read took longer than %.1f s" %
                MAX_READ_SECONDS, "; ".join("%s %s %.2f s" % x
                                            for x in slow[:5]))

        # --- the end state ---
        rc_, out, err = psql("SELECT count(*), sum(amount), count(DISTINCT "
                             "txn) FROM conc_ft;\n"
                             "SELECT count(*) FROM conc_ft WHERE tenant_id "
                             "IN ('w1', 'w2', 'w3');\n")
        want = "%d|%d|%d\n%d" % (c0 + w["rows"], s0 + w["amount"],
                                 w["txns"] + 1,
                                 c0 - static_rows + w["rows"])
        c.check(rc_ == 0 and out.strip() == want,
                "end: the foreign table holds the initial rows plus the "
                "writer's %d" % w["rows"],
                "expected %r, got %r %s" % (want, out.strip(), err))
    except Exception as e:
        import traceback
        c.check(False, "the test ran to its end", traceback.format_exc())
    finally:
        for p in procs:
            if p.poll() is None:
                try:
                    p.terminate()
                    p.wait(timeout=5)
                except (OSError, subprocess.TimeoutExpired):
                    p.kill()
        if os.environ.get("CONC_KEEP") == "1":
            print("fixture kept in %s" % d)
        elif own_dir:
            shutil.rmtree(d, ignore_errors=True)
    print("(took %.1f s)" % (time.monotonic() - t_start))
    return c


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "writer":
        sys.exit(writer(*sys.argv[2:6]))
    # SIGTERM (the wrapper's trap, timeout) ends the test through its
    # cleanup, which stops the writer and the readers; a second SIGTERM
    # (timeout signals its whole process group) must not cut that short.

    def on_sigterm(signo, frame):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        sys.exit(143)

    signal.signal(signal.SIGTERM, on_sigterm)
    checks = main()
    print("%d passed, %d failed" % (checks.passed, checks.failed))
    sys.exit(0 if checks.failed == 0 else 1)
