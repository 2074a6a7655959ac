#!/usr/bin/env python3
#
# test/bench_run.py
#	The measuring half of `make bench`.  test/bench.sh sets up the cluster
#	(the native table, the foreign tables, the key tables) and runs this
#	inside it, with the PG* variables set.
#
# Usage: python3 test/bench_run.py --bench-dir DIR [--big] [--parts read,bi,write]
#			[--copy-first-id N]
#
# Three engines, side by side, on the same rows:
#	sqlite3 floor	the sqlite3 CLI on the shard files: one sqlite3 process
#					per shard runs the per-shard query (one warm-up, then
#					BENCH_RUNS runs) and times every run itself (.timer on).
#					Per run: the sum over shards and the slowest shard; the
#					floor is max(slowest shard, sum / 2), the best that two
#					cores can do.  Also measured: the shards two at a time (two
#					sqlite3 processes, the shards split by their times), wall
#					time, and the same per-shard floor for the SQLite query the
#					extension actually sends (from EXPLAIN VERBOSE).
#	native PG		schema native: a heap table, the same rows and indexes
#	extension		schema ext: the foreign tables (schema big: the same
#					shards through a directory of 1,000,000 tenants)
# Fan-out queries and the export: one psql session per engine, a warm-up
# run (its result is compared between native and extension), then
# BENCH_RUNS runs timed by psql's \timing, the engines taking turns run by
# run so that a change in the machine's load hits both alike; medians.
# Routed queries: pgbench -M prepared, one client, the same random keys for
# every engine (--random-seed), the latency of the measured statement alone
# (pgbench -r); BENCH_RUNS runs of BENCH_PGBENCH_SECONDS per engine, taking
# turns, after a warm-up run; medians.
# Export: the backend's memory from /proc/<pid>/status: VmHWM after the runs,
# and RssAnon (private memory) sampled every 5 ms while they run, against
# its value after a fan-out that read every page of every shard.
#
# Writes, with fsync turned on in the cluster (pg_virtualenv's runs without
# it) and SQLite's synchronous = FULL, so a COMMIT is on disk on both sides:
#	COPY FROM		BENCH_COPY_RUNS rounds, engines taking turns, each run on a
#					fresh copy: the native table in a database copied from a
#					template (the table with the same rows and indexes), the
#					extension on a copy of the fleet's files (BENCH_DIR/wfleet),
#					the sqlite3 CLI's .import of the same rows, split by shard,
#					one transaction per shard, on another copy (BENCH_DIR/cfleet)
#	single-row		routed INSERT and UPDATE by key, pgbench as above, on the
#					tables the last COPY left
#	tenant UPDATE	every order of the largest tenant, timed as the fan-outs
# A statement the extension cannot run yet ("cannot update foreign table")
# is reported as not supported yet, and its target as missed.
#
# Exit status 1 when a query fails; missed targets do not fail.

import argparse
import os
import pwd
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import types

RUNS = max(1, int(os.environ.get("BENCH_RUNS", "5")))
PGBENCH_SECONDS = max(1, int(os.environ.get("BENCH_PGBENCH_SECONDS", "3")))
STATEMENT_TIMEOUT = "300s"
PGBENCH_SEED = "20250101"
FLAT_MB = 64			# "flat memory": private memory grows by less than this

HERE = os.path.dirname(os.path.abspath(__file__))


class BenchError(Exception):
    pass


def log(msg=""):
    print(msg, flush=True)


# ---------------------------------------------------------------- the workload

GROUPBY_SQL = ("SELECT status, count(*), sum(amount_cents), avg(amount_cents), "
               "min(amount_cents), max(amount_cents) FROM orders GROUP BY status")
TOP10_SQL = ("SELECT tenant_id, sum(amount_cents) FROM orders "
             "GROUP BY tenant_id ORDER BY 2 DESC LIMIT 10")
COUNT_SQL = ("SELECT count(*) FROM orders "
             "WHERE status = 'cancelled' AND amount_cents > 20000")

# sql: what PostgreSQL runs; shard_sql: what one shard runs for the floor
# (the same query: every one of these is complete per shard, or a
# per-shard part whose merge is negligible); ordered: compare results in order.
FANOUT = [
    {"key": "groupby", "name": "fan-out GROUP BY status, 5 aggregates",
     "sql": GROUPBY_SQL, "shard_sql": GROUPBY_SQL, "ordered": False},
    {"key": "top10", "name": "fan-out top-10 tenants by revenue",
     "sql": TOP10_SQL, "shard_sql": TOP10_SQL, "ordered": True},
    {"key": "count", "name": "fan-out filtered count",
     "sql": COUNT_SQL, "shard_sql": COUNT_SQL, "ordered": True},
]

EXPORT = {"key": "export", "name": "full export",
          "sql": "COPY (SELECT * FROM orders) TO '/dev/null'",
          "shard_sql": "SELECT * FROM orders"}

ROUTED = [
    {"key": "point", "name": "routed point lookup (pgbench latency)",
     "script": os.path.join(HERE, "bench_pgbench_point.sql")},
    {"key": "report", "name": "routed tenant report, typical tenant",
     "script": os.path.join(HERE, "bench_pgbench_report.sql")},
]

LABELS = {"native": "native PG", "ext": "extension", "big": "ext, 1M-tenant dir",
          "wnative": "native PG", "wext": "extension", "cli": "sqlite3 CLI"}


# ---------------------------------------------------------------- sqlite3 floor

def sqlite_quote(s):
    return "'" + s.replace("'", "''") + "'"


def sqlite_cli(script, db):
    p = subprocess.run(["sqlite3", "-bail", db], input=script, capture_output=True,
                       text=True)
    if p.returncode != 0 or p.stderr.strip():
        raise BenchError("sqlite3 %s failed: %s" % (db, p.stderr.strip()[:500]))
    return p.stdout


def floor(shards, shard_sql, runs, two_runs, warmup=1):
    """The floor of shard_sql: per-shard times (one sqlite3 process per shard,
    timed inside, warmup runs dropped, then runs), and two_runs times the
    shards two at a time.  Medians, in ms."""
    per_shard = []
    for db in shards:
        script = ".timer on\n.output /dev/null\n" + (shard_sql + ";\n") * (warmup + runs)
        out = sqlite_cli(script, db)
        times = [float(x) * 1000.0 for x in re.findall(r"Run Time: real ([0-9.]+)", out)]
        if len(times) != warmup + runs:
            raise BenchError("sqlite3 %s: expected %d timings, got: %s"
                             % (db, warmup + runs, out[:300]))
        per_shard.append(times[warmup:])
    sums = [sum(t[r] for t in per_shard) for r in range(runs)]
    slowest = [max(t[r] for t in per_shard) for r in range(runs)]
    s = statistics.median(sums)
    m = statistics.median(slowest)
    res = {"sum": s, "slowest": m, "half": s / 2.0, "floor": max(m, s / 2.0),
           "two": None}
    if two_runs <= 0:
        return res

    # Two at a time: the shards split between two sqlite3 processes (longest
    # first onto the less loaded one), both started at once, timed to the end
    # of the last (process start-up included, a millisecond or two).
    order = sorted(((statistics.median(t), db) for t, db in zip(per_shard, shards)),
                   reverse=True)
    groups, load = [[], []], [0.0, 0.0]
    for t, db in order:
        g = 0 if load[0] <= load[1] else 1
        groups[g].append(db)
        load[g] += t
    walls = []
    with tempfile.TemporaryDirectory(prefix="ssfdw_bench_") as tmp:
        files = []
        for i, g in enumerate(groups):
            path = os.path.join(tmp, "worker%d.sql" % i)
            with open(path, "w") as f:
                f.write(".bail on\n.output /dev/null\n" +
                        "".join(".open %s\n%s;\n" % (sqlite_quote(db), shard_sql)
                                for db in g))
            files.append(path)
        for _ in range(two_runs):
            inputs = [open(path) for path in files]
            t0 = time.perf_counter()
            procs = [subprocess.Popen(["sqlite3"], stdin=inp, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE, text=True)
                     for inp in inputs]
            errs = [p.communicate()[1] for p in procs]
            walls.append((time.perf_counter() - t0) * 1000.0)
            for inp in inputs:
                inp.close()
            for p, e in zip(procs, errs):
                if p.returncode != 0 or e.strip():
                    raise BenchError("sqlite3 (two at a time) failed: %s" % e.strip()[:500])
    res["two"] = statistics.median(walls)
    return res


# ---------------------------------------------------------------- psql sessions

ERROR_RE = re.compile(r"\b(ERROR|FATAL|PANIC):|server closed the connection|"
                      r"connection to server .* failed|no connection to the server")
TIME_RE = re.compile(r"^Time: ([0-9.]+) ms")


# The engines of the write benchmarks: the native table's fresh copy in its
# own database (made per COPY run, see copy_native), the foreign table over
# the fleet's fresh copy; engine -> (schema, database).  Every other engine
# is a schema of the cluster's database.
WRITE_ENGINES = {"wnative": ("native", "ssfdw_wrun"), "wext": ("wext", None)}


# The engines of the time queries that read with aggregate pushdown off:
# engine -> schema.
PUSHDOWN_OFF_ENGINES = {"extoff": "ext", "exttzoff": "exttz"}


def pg_env(engine):
    schema, db = WRITE_ENGINES.get(engine, (engine, None))
    env = dict(os.environ)
    env["PGOPTIONS"] = ("-c search_path=%s,public -c statement_timeout=%s"
                        % (PUSHDOWN_OFF_ENGINES.get(schema, schema), STATEMENT_TIMEOUT))
    if engine in PUSHDOWN_OFF_ENGINES:
        env["PGOPTIONS"] += " -c sqlite_shard_fdw.aggregate_pushdown=off"
    if db:
        env["PGDATABASE"] = db
    return env


class Psql:
    """One psql process fed through a pipe; each batch of input ends with an
    \\echo marker, so that its output can be read back."""

    def __init__(self, schema):
        self.schema = schema
        self.n = 0
        self.warnings = []
        self.p = subprocess.Popen(
            ["stdbuf", "-oL", "psql", "-X", "-q", "-P", "pager=off",
             "-v", "ON_ERROR_STOP=0"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True, bufsize=1, env=pg_env(schema))

    def run(self, sql, what=None):
        self.n += 1
        mark = "__ssfdw_bench_%d__" % self.n
        try:
            self.p.stdin.write(sql.rstrip() + "\n\\echo " + mark + "\n")
            self.p.stdin.flush()
        except OSError:
            raise BenchError("%s: psql is gone, at: %s" % (LABELS.get(self.schema, self.schema),
                                                          what or sql))
        lines = []
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise BenchError("%s: psql exited while running: %s\n  %s"
                                 % (LABELS.get(self.schema, self.schema), what or sql,
                                    "\n  ".join(lines[-20:])))
            line = line.rstrip("\n")
            if line == mark:
                break
            lines.append(line)
        if any(ERROR_RE.search(ln) for ln in lines):
            raise BenchError("%s: %s\n  %s" % (LABELS.get(self.schema, self.schema),
                                               what or sql, "\n  ".join(lines[-10:])))
        self.warnings += [ln for ln in lines if "WARNING:" in ln]
        return lines

    def rows(self, sql):
        """The rows of sql, unaligned, one line each."""
        lines = self.run("\\pset tuples_only on\n\\pset format unaligned\n" + sql +
                         ";\n\\pset tuples_only off\n\\pset format aligned", sql)
        return [ln for ln in lines if ln.strip()]

    def value(self, sql):
        rows = self.rows(sql)
        return rows[0] if rows else None

    def timing_on(self):
        self.run("\\timing on\n\\o /dev/null")

    def time_one(self, sql):
        """One run of sql (after timing_on), in ms by psql's \\timing."""
        lines = self.run(sql + ";", sql)
        t = [float(m.group(1)) for m in map(TIME_RE.match, lines) if m]
        if len(t) != 1:
            raise BenchError("%s: no timing for %s: %s"
                             % (LABELS.get(self.schema, self.schema), sql, lines[-5:]))
        return t[0]

    def close(self):
        try:
            self.p.stdin.close()
        except OSError:
            pass
        try:
            self.p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def proc_status(pid):
    """The kB fields of /proc/pid/status, in MB."""
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            if v.strip().endswith("kB"):
                out[k] = int(v.split()[0]) / 1024.0
    return out


class Sampler(threading.Thread):
    """Peak VmRSS and RssAnon of a process, sampled every 5 ms."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid = pid
        self.stop = threading.Event()
        self.peak_rss = 0.0
        self.peak_anon = 0.0

    def run(self):
        while not self.stop.is_set():
            try:
                st = proc_status(self.pid)
            except (OSError, ValueError):
                return
            self.peak_rss = max(self.peak_rss, st.get("VmRSS", 0.0))
            self.peak_anon = max(self.peak_anon, st.get("RssAnon", 0.0))
            time.sleep(0.005)


def normalise(lines, ordered):
    rows = [ln.strip() for ln in lines if ln.strip()]
    return rows if ordered else sorted(rows)


def take_turns(schemas, errors, start, step, finish):
    """For each engine start(schema) -> state; then RUNS rounds in which every
    engine still standing does step(state) -> ms; then finish(state, times)
    -> result.  An engine that fails is recorded in errors and dropped."""
    states, times, out = {}, {}, {}
    for sch in schemas:
        try:
            states[sch] = start(sch)
            times[sch] = []
        except BenchError as e:
            errors.append(str(e))
    for _ in range(RUNS):
        for sch in list(states):
            try:
                times[sch].append(step(states[sch]))
            except BenchError as e:
                errors.append(str(e))
                try:
                    finish(states.pop(sch), None)
                except BenchError:
                    pass
    for sch, st in states.items():
        try:
            out[sch] = finish(st, times[sch])
        except BenchError as e:
            errors.append(str(e))
    return out


def run_fanout(q, schemas, errors):
    """Warm-up (result kept), then RUNS timed runs, engines taking turns."""
    def start(sch):
        s = Psql(sch)
        try:
            rows = normalise(s.rows(q["sql"]), q["ordered"])
            s.timing_on()
        except BenchError:
            s.close()
            raise
        return {"s": s, "rows": rows}

    def step(st):
        return st["s"].time_one(q["sql"])

    def finish(st, times):
        st["s"].close()
        if times is None:
            return None
        return {"ms": statistics.median(times), "all": times, "rows": st["rows"],
                "warnings": st["s"].warnings}

    return take_turns(schemas, errors, start, step, finish)


def run_export(q, schemas, errors):
    """A baseline fan-out, a warm-up export, then RUNS timed exports, engines
    taking turns; each backend's memory sampled all along."""
    def start(sch):
        s = Psql(sch)
        try:
            pid = int(s.value("SELECT pg_backend_pid()"))
            s.rows(COUNT_SQL)		# every page of every shard read, one row out
            base = proc_status(pid)
            sampler = Sampler(pid)
            sampler.start()
            s.timing_on()
            s.time_one(q["sql"])	# warm-up
        except BenchError:
            s.close()
            raise
        return {"s": s, "pid": pid, "base": base, "sampler": sampler}

    def step(st):
        return st["s"].time_one(q["sql"])

    def finish(st, times):
        sampler = st["sampler"]
        after = proc_status(st["pid"]) if times is not None else {}
        sampler.stop.set()
        sampler.join()
        st["s"].close()
        if times is None:
            return None
        peak_anon = max(sampler.peak_anon, after.get("RssAnon", 0.0))
        return {"ms": statistics.median(times), "all": times,
                "hwm": after.get("VmHWM", 0.0),
                "base_anon": st["base"].get("RssAnon", 0.0),
                "peak_anon": peak_anon,
                "growth": peak_anon - st["base"].get("RssAnon", 0.0),
                "warnings": st["s"].warnings}

    return take_turns(schemas, errors, start, step, finish)


# ---------------------------------------------------------------- pgbench

def pgbench_once(schema, script, seconds, defs):
    cmd = ["pgbench", "-n", "-M", "prepared", "-r", "-c", "1", "-j", "1",
           "-T", str(seconds), "--random-seed=" + PGBENCH_SEED, "-f", script]
    for k, v in defs.items():
        cmd += ["-D", "%s=%s" % (k, v)]
    p = subprocess.run(cmd, capture_output=True, text=True, env=pg_env(schema))
    out = p.stdout + p.stderr
    m = re.search(r"number of failed transactions: (\d+)", out)
    failed = int(m.group(1)) if m else 0
    if p.returncode != 0 or failed or ERROR_RE.search(p.stderr):
        raise BenchError("pgbench %s on %s failed (exit %d):\n  %s"
                         % (os.path.basename(script), LABELS.get(schema, schema),
                            p.returncode, "\n  ".join(out.strip().splitlines()[-15:])))
    m = re.search(r"number of transactions actually processed: (\d+)", out)
    ntx = int(m.group(1)) if m else 0
    # the -r report: "   0.075   0  SELECT * FROM orders ..." (latency,
    # failures); the statement on orders is the one measured
    lat = None
    for line in out.splitlines():
        mm = re.match(r"^\s+([0-9.]+)\s+(?:\d+\s+)?"
                      r"((?:SELECT .*\bFROM|INSERT INTO|UPDATE) orders\b.*)$", line)
        if mm:
            lat = float(mm.group(1)) * 1000.0
    if lat is None or ntx == 0:
        raise BenchError("pgbench %s on %s: no statement latency in:\n%s"
                         % (os.path.basename(script), LABELS.get(schema, schema),
                            out[-2000:]))
    return lat, ntx


def run_routed(q, schemas, errors, defs):
    def start(sch):
        pgbench_once(sch, q["script"], 1, defs)		# warm-up
        return {"sch": sch, "ntx": 0}

    def step(st):
        lat, n = pgbench_once(st["sch"], q["script"], PGBENCH_SECONDS, defs)
        st["ntx"] += n
        return lat

    def finish(st, times):
        if times is None:
            return None
        return {"us": statistics.median(times), "all": times, "ntx": st["ntx"]}

    return take_turns(schemas, errors, start, step, finish)


# ---------------------------------------------------------------- writes

WRITE_DB = WRITE_ENGINES["wnative"][1]
TEMPLATE_DB = "ssfdw_wtemplate"	# the native table as test/bench.sh loaded it
COPY_RUNS = max(1, int(os.environ.get("BENCH_COPY_RUNS", "3")))
# Single-row statements the sqlite3 CLI times: 500 per shard, so that each
# shard's WAL passes SQLite's autocheckpoint (1,000 pages, about 90 INSERTs
# here) several times, as it does under the extension's pgbench runs; with
# 60 per shard the CLI never checkpointed and its mean left that cost out.
CLI_STATEMENTS = 8000
CLI_FIRST_ID = 300000001	# order ids of its INSERTs: above the others'
# What PostgreSQL says of an UPDATE on a foreign table whose wrapper does
# not do UPDATE: such a statement is "not supported yet", not a failure.
NOT_SUPPORTED = "cannot update foreign table"

ROUTED_WRITES = [
    {"key": "insert", "name": "routed single-row INSERT",
     "script": os.path.join(HERE, "bench_pgbench_insert.sql"),
     "probe": None, "limit": 1.3, "limit_cli": 1.1,
     "explain": "INSERT INTO orders (tenant_id, order_id, status, amount_cents, created_at) "
                "VALUES ('tenant_0007', 1, 'new', 100, '2025-06-01 12:00:00')"},
    {"key": "update", "name": "routed single-row UPDATE by key",
     "script": os.path.join(HERE, "bench_pgbench_update.sql"),
     "probe": "UPDATE orders SET amount_cents = 100 "
              "WHERE tenant_id = 'tenant_0007' AND order_id = -1",
     "limit": 1.3,
     "explain": "UPDATE orders SET amount_cents = 100 "
                "WHERE tenant_id = 'tenant_0007' AND order_id = 42"},
]


def psql_admin(*sqls, db=None):
    """psql -c for each of sqls (each its own transaction), unaligned
    tuples; stop at the first error."""
    cmd = ["psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1"]
    for q in sqls:
        cmd += ["-c", q]
    env = dict(os.environ)
    if db:
        env["PGDATABASE"] = db
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise BenchError("psql -c %s: %s" % (sqls[0][:80], p.stderr.strip()[:500]))
    return p.stdout.strip()


def set_fsync(value):
    """Turn the cluster's fsync on or off (a reload; new sessions see it)."""
    psql_admin("ALTER SYSTEM SET fsync = %s" % value, "SELECT pg_reload_conf()")
    for _ in range(100):
        if psql_admin("SHOW fsync") == value:
            return
        time.sleep(0.05)
    raise BenchError("fsync is still not %s after a reload" % value)


def chown_postgres(top):
    """Hand a tree to the OS user postgres (folders 0775, files 0664), as
    test/fleet.sh does, when run as root."""
    try:
        pw = pwd.getpwnam("postgres")
    except KeyError:
        pw = None
    for root, dirs, files in os.walk(top):
        for path, mode in ([(root, 0o775)] + [(os.path.join(root, f), 0o664) for f in files]):
            os.chmod(path, mode)
            if pw and os.getuid() == 0:
                os.chown(path, pw.pw_uid, pw.pw_gid)


def copy_fleet(w, dst, for_server):
    """A fresh copy of the benchmark fleet (its directory and shard files,
    each with its WAL when that holds anything) in dst, in place of what was
    there: new files, so that no handle on the old copy writes into the new
    one; flushed to disk, so that the writeback does not land in the timed
    run."""
    if os.path.isdir(dst):
        shutil.rmtree(dst)
    for path in [os.path.join(w.fleet_dir, "directory.db")] + w.shard_paths:
        rel = os.path.relpath(path, w.fleet_dir)
        os.makedirs(os.path.dirname(os.path.join(dst, rel)), exist_ok=True)
        for suffix in ("", "-wal"):
            src = path + suffix
            if suffix and (not os.path.exists(src) or os.path.getsize(src) == 0):
                continue
            shutil.copyfile(src, os.path.join(dst, rel + suffix))
    if for_server:
        chown_postgres(dst)
    os.sync()


def pg_quote(s):
    return "'" + s.replace("'", "''") + "'"


def timed_copy(engine, w):
    """COPY the rows into engine's orders in a new session (autocommit, so
    the commit is timed too); check that every row arrived.  Seconds."""
    s = Psql(engine)
    try:
        s.timing_on()
        ms = s.time_one("COPY orders FROM %s (FORMAT csv)" % pg_quote(w.csv))
        s.run("\\timing off\n\\o")
        n = int(s.value("SELECT count(*) FROM orders WHERE order_id >= %d" % w.first_id))
    finally:
        s.close()
    if n != w.rows:
        raise BenchError("COPY into %s: %d rows arrived, not %d" % (LABELS[engine], n, w.rows))
    return ms / 1000.0


def copy_native(w):
    """COPY into a fresh copy of the native table (a database made from the
    template by copying its files, as the shard files are copied)."""
    psql_admin("DROP DATABASE IF EXISTS %s WITH (FORCE)" % WRITE_DB,
               "CREATE DATABASE %s TEMPLATE %s STRATEGY FILE_COPY" % (WRITE_DB, TEMPLATE_DB))
    os.sync()
    return timed_copy("wnative", w)


def copy_ext(w):
    """COPY through the extension into a fresh copy of the fleet."""
    copy_fleet(w, w.wfleet_dir, True)
    return timed_copy("wext", w)


def copy_cli(w):
    """The sqlite3 CLI imports the same rows into a fresh copy of the fleet,
    shard by shard (the rows already split by shard, as the application's
    router would), one transaction per shard, synchronous = FULL: one
    sqlite3 process timed from start to exit."""
    copy_fleet(w, w.cfleet_dir, False)
    dbs = [os.path.join(w.cfleet_dir, os.path.relpath(p, w.fleet_dir)) for p in w.shard_paths]
    script = ".bail on\n" + "".join(
        ".open %s\nPRAGMA synchronous = FULL;\nBEGIN;\n.import --csv %s orders\nCOMMIT;\n"
        % (sqlite_quote(db), sqlite_quote(os.path.join(w.copy_dir, sid + ".csv")))
        for sid, db in zip(w.shard_ids, dbs))
    t0 = time.perf_counter()
    p = subprocess.run(["sqlite3"], input=script, capture_output=True, text=True)
    secs = time.perf_counter() - t0
    if p.returncode != 0 or p.stderr.strip():
        raise BenchError("sqlite3 .import failed: %s" % p.stderr.strip()[:500])
    n = sum(int(sqlite_cli("SELECT count(*) FROM orders WHERE order_id >= %d;" % w.first_id,
                           db)) for db in dbs)
    if n != w.rows:
        raise BenchError("sqlite3 .import: %d rows arrived, not %d" % (n, w.rows))
    return secs


def run_copy(w, errors):
    """COPY_RUNS rounds in which the native table, the extension and the
    sqlite3 CLI, taking turns, load the same rows into fresh copies.
    Medians, in seconds."""
    engines = {"wnative": copy_native, "wext": copy_ext, "cli": copy_cli}
    times = {e: [] for e in engines}
    for _ in range(COPY_RUNS):
        for e, fn in list(engines.items()):
            try:
                times[e].append(fn(w))
            except BenchError as ex:
                errors.append(str(ex))
                del engines[e]
    return {e: {"s": statistics.median(times[e]), "all": times[e]} for e in engines}


def cli_times(w, by_shard, warmup):
    """Per-statement times in ms of the statements in by_shard (shard id ->
    statements) on the sqlite3 CLI's copy of the fleet: one sqlite3 process
    per shard, every statement in autocommit (its own transaction, as
    pgbench runs them), synchronous = FULL, timed by .timer; the first
    warmup statements of each shard dropped."""
    times = []
    for sid, stmts in sorted(by_shard.items()):
        db = os.path.join(w.cfleet_dir, os.path.relpath(w.shard_paths[w.shard_ids.index(sid)],
                                                        w.fleet_dir))
        out = sqlite_cli("PRAGMA synchronous = FULL;\n.timer on\n" +
                         "".join(sql + ";\n" for sql in stmts), db)
        t = [float(x) * 1000.0 for x in re.findall(r"Run Time: real ([0-9.]+)", out)]
        if len(t) != len(stmts):
            raise BenchError("sqlite3 %s: expected %d timings, got: %s"
                             % (db, len(stmts), out[:300]))
        times += t[warmup:]
    return times


def cli_routed(w, key):
    """The sqlite3 CLI's latency for a routed single-row statement, in us:
    the mean over CLI_STATEMENTS statements on random tenants and keys (the
    first of public.bench_keys, which are in random order), as pgbench
    reports a mean."""
    by_shard = {}
    for n, (tenant, order_id) in enumerate(w.keys[:CLI_STATEMENTS]):
        if key == "insert":
            sql = ("INSERT INTO orders (order_id, tenant_id, status, amount_cents, created_at) "
                   "VALUES (%d, %s, 'new', %d, '2025-06-01 12:00:00')"
                   % (CLI_FIRST_ID + n, sqlite_quote(tenant), 99 + n % 49901))
        else:
            sql = ("UPDATE orders SET amount_cents = %d WHERE tenant_id = %s AND order_id = %s"
                   % (99 + n % 49901, sqlite_quote(tenant), order_id))
        # each shard's first statement, a read, opens the file (dropped)
        by_shard.setdefault(w.tenant_shard[tenant],
                            ["SELECT count(*) FROM orders WHERE order_id = 0"]).append(sql)
    return statistics.mean(cli_times(w, by_shard, 1)) * 1000.0


def supported(engine, sql):
    """Whether engine runs sql (in a transaction rolled back): False when
    PostgreSQL says the foreign table cannot be updated."""
    s = Psql(engine)
    try:
        s.run("BEGIN;\n%s;\nROLLBACK;" % sql, sql)
        return True
    except BenchError as e:
        if NOT_SUPPORTED in str(e):
            return False
        raise
    finally:
        s.close()


def write_explain(explain, items, errors):
    """Append EXPLAIN VERBOSE of the extension's write statements (without
    running them) to the plans file."""
    ex = Psql("wext")
    try:
        with open(explain, "a") as f:
            for sql in items:
                f.write("=== " + sql + "\n")
                try:
                    f.write("\n".join(ex.run("EXPLAIN (VERBOSE) " + sql + ";")) + "\n\n")
                except BenchError as e:
                    f.write("failed: %s\n\n" % e)
    finally:
        ex.close()


def run_writes(args, fleet, explain, errors, notes, targets):
    """The write workload: COPY FROM a CSV spread over every
    tenant, routed single-row INSERT and UPDATE through pgbench, and an
    UPDATE of one large tenant; the native table (fsync on) and the
    extension (synchronous = FULL), and for COPY the sqlite3 CLI."""
    w = types.SimpleNamespace(
        fleet_dir=os.path.join(args.bench_dir, "fleet"),
        wfleet_dir=os.path.join(args.bench_dir, "wfleet"),
        cfleet_dir=os.path.join(args.bench_dir, "cfleet"),
        copy_dir=os.path.join(args.bench_dir, "copy"),
        shard_ids=fleet.shard_ids, shard_paths=fleet.shards,
        first_id=args.copy_first_id,
        rows=int(os.environ["BENCH_COPY_ROWS"]))
    w.csv = os.path.join(w.copy_dir, "copy.csv")
    w.keys = [r.split("|") for r in psql_admin(
        "SELECT tenant_id || '|' || order_id FROM public.bench_keys ORDER BY i "
        "LIMIT %d" % CLI_STATEMENTS).splitlines()]
    w.tenant_shard = dict(r.split("|") for r in sqlite_cli(
        "SELECT tenant_id, shard_id FROM shard_map;",
        os.path.join(w.fleet_dir, "directory.db")).splitlines())
    load_start = loadavg()

    # The same durability on both sides: a write acknowledged by COMMIT is
    # on disk.  pg_virtualenv's cluster runs with fsync off; turn it on.
    cluster_fsync = psql_admin("SHOW fsync")
    set_fsync("on")
    pg_settings = psql_admin(
        "SELECT string_agg(name || '=' || setting, ', ' ORDER BY name) FROM pg_settings "
        "WHERE name IN ('fsync', 'synchronous_commit', 'wal_sync_method', 'full_page_writes')")
    results = {}

    t0 = time.time()
    results["copy"] = run_copy(w, errors)
    log("  %-38s %s  (%.0f s)" % (
        "COPY FROM, %s rows" % "{:,}".format(w.rows),
        ", ".join("%s %s" % (LABELS[e], "%.2f s [%.2f-%.2f]" % (v["s"], min(v["all"]),
                                                               max(v["all"])))
                  for e, v in results["copy"].items()), time.time() - t0))
    sync = sqlite_cli("PRAGMA journal_mode;\nPRAGMA synchronous;\n",
                      os.path.join(w.cfleet_dir, os.path.relpath(w.shard_paths[0],
                                                                 w.fleet_dir))).split()

    # Single-row statements, on the tables as the last COPY left them.
    for q in ROUTED_WRITES:
        t0 = time.time()
        engines = ["wnative", "wext"]
        r = {"unsupported": []}
        for e in engines:
            if q["probe"] and not supported(e, q["probe"]):
                r["unsupported"].append(e)
        r.update(run_routed(q, [e for e in engines if e not in r["unsupported"]], errors,
                            fleet.defs))
        try:
            r["cli"] = cli_routed(w, q["key"])
        except BenchError as e:
            errors.append(str(e))
        results[q["key"]] = r
        log("  %-38s %s, %s %s  (%.0f s)" % (q["name"], ", ".join(
            "%s %s" % (LABELS[e], "not supported yet" if e in r["unsupported"]
                       else spread(r.get(e), "us")) for e in engines),
            LABELS["cli"], fmt_us(r.get("cli")), time.time() - t0))

    # The UPDATE of every order of the largest tenant.
    t0 = time.time()
    big = psql_admin("SELECT tenant_id || ' ' || count(*) FROM native.orders GROUP BY tenant_id "
                     "ORDER BY count(*) DESC, tenant_id LIMIT 1", db=WRITE_DB).split()
    tenant, norders = big[0], int(big[1])
    tq = {"key": "tenant_update",
          "name": "UPDATE of one tenant, %s rows" % "{:,}".format(norders),
          "sql": "UPDATE orders SET amount_cents = amount_cents + 1 WHERE tenant_id = %s"
                 % pg_quote(tenant),
          "probe": "UPDATE orders SET amount_cents = amount_cents + 1 "
                   "WHERE tenant_id = %s AND order_id < 0" % pg_quote(tenant),
          "ordered": False, "limit": 1.5}
    r = {"unsupported": [] if supported("wext", tq["probe"]) else ["wext"]}
    r.update(run_fanout(tq, [e for e in ("wnative", "wext") if e not in r["unsupported"]],
                        errors))
    # the sqlite3 CLI: the same UPDATE in the tenant's shard, a warm-up and
    # RUNS runs, median
    try:
        r["cli"] = statistics.median(cli_times(w, {w.tenant_shard[tenant]:
                                                   [tq["sql"]] * (1 + RUNS)}, 1))
    except BenchError as e:
        errors.append(str(e))
    results[tq["key"]] = r
    log("  %-38s %s, %s %s  (%.0f s)" % (tq["name"], ", ".join(
        "%s %s" % (LABELS[e], "not supported yet" if e in r["unsupported"]
                   else spread(r.get(e), "ms")) for e in ("wnative", "wext")),
        LABELS["cli"], fmt_ms(r.get("cli")), time.time() - t0))

    write_explain(explain, [q["explain"] for q in ROUTED_WRITES] + [tq["sql"]], errors)
    set_fsync(cluster_fsync)

    # ------------------------------------------------------------ the tables
    c = results["copy"]
    ext = c.get("wext")
    log()
    log("sqlite_shard_fdw write benchmark: COPY FROM a CSV of %s rows of all %d tenants "
        "into %d shards holding %s orders, medians of %d runs on fresh copies; "
        "single-row statements medians of %d pgbench runs of %d s (load average %s at "
        "the start, %s at the end)"
        % ("{:,}".format(w.rows), fleet.ntenants, len(w.shard_paths),
           "{:,}".format(fleet.nrows), COPY_RUNS, RUNS, PGBENCH_SECONDS, load_start,
           loadavg()))
    log()
    crows = []
    for e, what in (("cli", "sqlite3 CLI .import, shard by shard"),
                    ("wnative", "native PG COPY"), ("wext", "extension COPY")):
        v = c.get(e)
        crows.append([what, "-" if not v else "%.2f s" % v["s"],
                      "-" if not v else "{:,.0f}".format(w.rows / v["s"]),
                      "-" if not v or e == "wext" or not ext
                      else fmt_ratio(ratio(v["s"], ext["s"]))])
    log(table(["COPY FROM, %s rows" % "{:,}".format(w.rows), "time", "rows/s",
               "ext rows/s vs this"], crows))
    log()
    lrows = []
    for q, unit in [(q, "us") for q in ROUTED_WRITES] + [(tq, "ms")]:
        r = results[q["key"]]
        key = "us" if unit == "us" else "ms"
        fmt = fmt_us if unit == "us" else fmt_ms
        nat = r.get("wnative") and r["wnative"][key]
        cliv = r.get("cli")
        if "wext" in r["unsupported"]:
            extv, rcli, rnat = "not supported yet", "-", "-"
        else:
            e = r.get("wext") and r["wext"][key]
            extv, rcli, rnat = fmt(e), fmt_ratio(ratio(e, cliv)), fmt_ratio(ratio(e, nat))
        lrows.append([q["name"] + (" (latency)" if unit == "us" else ""), fmt(cliv),
                      fmt(nat), extv, rcli, rnat])
    log(table(["statement", "sqlite3 CLI", "native PG", "extension", "ext/CLI",
               "ext/native"], lrows))
    log("sqlite3 CLI: the same statements in autocommit on its copy of the fleet, "
        "timed inside the sqlite3 process (.timer), %d single-row statements on random "
        "keys (mean), the tenant UPDATE a warm-up and %d runs (median)"
        % (CLI_STATEMENTS, RUNS))
    log()
    log("durability: native PG %s (this cluster runs with fsync=%s; the write benchmarks "
        "turn it on); SQLite journal_mode=%s, synchronous=%s (FULL: the library's "
        "default, which the extension keeps; the CLI sets FULL itself)"
        % (pg_settings, cluster_fsync, sync[0] if sync else "?",
           sync[1] if len(sync) > 1 else "?"))

    # ------------------------------------------------------------ targets
    nat = c.get("wnative")
    cli = c.get("cli")
    targets.check(ratio(nat and nat["s"], ext and ext["s"]), 1.0,
                  "COPY rows/s >= native", at_least=True)
    targets.check(ratio(cli and cli["s"], ext and ext["s"]), 0.5,
                  "COPY rows/s >= 0.5x sqlite3 CLI", at_least=True)
    for q in ROUTED_WRITES + [tq]:
        r = results[q["key"]]
        key = "ms" if q is tq else "us"
        text = "%s <= %.1fx native" % (q["key"], q["limit"])
        if "wext" in r["unsupported"]:
            targets.missed.append(text + " (not supported yet)")
        else:
            targets.check(ratio(r.get("wext") and r["wext"][key],
                                r.get("wnative") and r["wnative"][key]), q["limit"], text)
        if "limit_cli" in q and "wext" not in r["unsupported"]:
            targets.check(ratio(r.get("wext") and r["wext"][key], r.get("cli")),
                          q["limit_cli"], "%s <= %.1fx sqlite3 CLI" % (q["key"], q["limit_cli"]))


# ---------------------------------------------------------------- report

def fmt_ms(v):
    return "-" if v is None else "%.0f ms" % v


def fmt_us(v):
    return "-" if v is None else "%.0f us" % v


def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def fmt_ratio(r):
    return "-" if r is None else "%.2fx" % r


def spread(v, unit):
    """'median [min-max]' of a result's runs."""
    if not v:
        return "FAILED"
    key = "us" if unit == "us" else "ms"
    return "%.0f %s [%.0f-%.0f]" % (v[key], unit, min(v["all"]), max(v["all"]))


def table(header, rows):
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]

    def line(r):
        return " | ".join((str(c).ljust(w) if i == 0 else str(c).rjust(w))
                          for i, (c, w) in enumerate(zip(r, widths)))
    return "\n".join([line(header), "-+-".join("-" * w for w in widths)] +
                     [line(r) for r in rows])


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return f.read().split()[0]
    except OSError:
        return "?"


class Targets:
    """The targets met and missed, as one line at the end."""

    def __init__(self):
        self.met, self.missed = [], []

    def check(self, r, limit, text, at_least=False):
        """r, a ratio, against limit: at most limit, or at least it."""
        if r is None:
            self.missed.append(text + " (not measured)")
        elif (r >= limit) if at_least else (r <= limit):
            self.met.append(text)
        else:
            self.missed.append("%s (%s)" % (text, fmt_ratio(r)))


def read_explain(explain, errors):
    """EXPLAIN of the extension's queries, for the reader (appended to the
    plans file); returns the SQLite query each fan-out sends, for the floor
    of its own shape."""
    ext_shapes = {}
    ex = Psql("ext")
    try:
        with open(explain, "a") as f:
            for key, sql in ([(q["key"], q["sql"]) for q in FANOUT] +
                             [("export", "SELECT * FROM orders"),
                              ("point", "SELECT * FROM orders WHERE tenant_id = 'tenant_0007' "
                                        "AND order_id = 42"),
                              ("report", "SELECT status, count(*), sum(amount_cents) "
                                         "FROM orders WHERE tenant_id = 'tenant_0007' "
                                         "GROUP BY status")]):
                f.write("=== " + sql + "\n")
                try:
                    lines = ex.run("EXPLAIN (VERBOSE) " + sql + ";")
                except BenchError as e:
                    errors.append(str(e))
                    f.write("failed: %s\n\n" % e)
                    continue
                f.write("\n".join(lines) + "\n\n")
                shapes = [m.group(1).strip() for m in
                          (re.match(r"^[\s>-]*SQLite query: (.*)$", ln) for ln in lines) if m]
                if len(shapes) == 1:
                    ext_shapes[key] = shapes[0]
    finally:
        ex.close()
    return ext_shapes


def run_reads(args, fleet, explain, errors, notes, targets):
    """The read workload: routed queries through pgbench, the
    fan-out reports and the export; the floor, the native table and the
    extension side by side."""
    shards, nrows, defs = fleet.shards, fleet.nrows, fleet.defs
    ext_shapes = read_explain(explain, errors)
    log("%d shards, %d orders; pgbench keys: %d (tenant, order) pairs, %d typical tenants "
        "(%s orders each)" % (len(shards), nrows, fleet.nkeys, fleet.ntypical, fleet.typical))
    log("each query: a warm-up, then %d runs, engines taking turns; pgbench runs of %d s; "
        "EXPLAIN VERBOSE of the extension's queries in %s" % (RUNS, PGBENCH_SECONDS,
                                                              explain))
    results = {}

    # Routed queries, through pgbench.
    for q in ROUTED:
        t0 = time.time()
        schemas = ["native", "ext"] + (["big"] if args.big and q["key"] == "point" else [])
        r = run_routed(q, schemas, errors, defs)
        r["floor"] = None
        results[q["key"]] = r
        log("  %-38s %s  (%.0f s)" % (q["name"], ", ".join(
            "%s %s" % (LABELS[s], spread(r.get(s), "us")) for s in schemas),
            time.time() - t0))

    # Fan-out queries and the export.
    for q in FANOUT + [EXPORT]:
        t0 = time.time()
        r = {}
        try:
            r["floor"] = floor(shards, q["shard_sql"], RUNS, 3)
        except BenchError as e:
            errors.append(str(e))
            r["floor"] = None
        # The extension's own SQLite query on the CLI, when it binds no
        # parameters and aggregates (a query that returns every row would
        # time the CLI's printing): how much of the gap to the floor is the
        # shape of that query.  The files are warm by now: no warm-up.
        r["ext_floor"] = None
        shape = ext_shapes.get(q["key"])
        if (shape and "?" not in shape and
                re.search(r"\b(count|sum|total|min|max|avg)\s*\(|\bGROUP BY\b", shape, re.I)):
            try:
                r["ext_floor"] = floor(shards, shape, 3, 0, warmup=0)
            except BenchError as e:
                notes.append("%s: the extension's SQLite query fails in the sqlite3 CLI: %s"
                             % (q["name"], e))
        if q is EXPORT:
            r.update(run_export(q, ["native", "ext"], errors))
        else:
            r.update(run_fanout(q, ["native", "ext"], errors))
        for sch in ("native", "ext"):
            for w in (r.get(sch) or {}).get("warnings", []):
                notes.append("%s on %s: %s" % (q["name"], LABELS[sch], w))
        if (r.get("native") and r.get("ext") and "rows" in r["native"] and
                r["native"]["rows"] != r["ext"]["rows"]):
            notes.append("%s: the extension's result differs from the native table's:\n"
                         "    native:    %s\n    extension: %s"
                         % (q["name"], r["native"]["rows"], r["ext"]["rows"]))
        results[q["key"]] = r
        log("  %-38s floor %s, %s %s, %s %s  (%.0f s)"
            % (q["name"], fmt_ms(r["floor"] and r["floor"]["floor"]),
               LABELS["native"], spread(r.get("native"), "ms"),
               LABELS["ext"], spread(r.get("ext"), "ms"), time.time() - t0))

    # ------------------------------------------------------------ the tables
    rows = []
    for q in ROUTED:
        r = results[q["key"]]
        nat = r.get("native") and r["native"]["us"]
        ext = r.get("ext") and r["ext"]["us"]
        rows.append([q["name"], "-", fmt_us(nat), fmt_us(ext), "-",
                     fmt_ratio(ratio(ext, nat))])
    for q in FANOUT + [EXPORT]:
        r = results[q["key"]]
        fl = r["floor"] and r["floor"]["floor"]
        nat = r.get("native") and r["native"]["ms"]
        ext = r.get("ext") and r["ext"]["ms"]
        rows.append([q["name"], fmt_ms(fl), fmt_ms(nat), fmt_ms(ext),
                     fmt_ratio(ratio(ext, fl)), fmt_ratio(ratio(ext, nat))])
    log()
    log("sqlite_shard_fdw benchmark: %d shards, %s orders, medians of %d runs "
        "(load average %s at the start, %s at the end)"
        % (len(shards), "{:,}".format(nrows), RUNS, fleet.load_start, loadavg()))
    log()
    log(table(["query", "sqlite3 floor", "native PG", "extension", "ext/floor",
               "ext/native"], rows))

    log()
    log("sqlite3 floor = max(slowest shard, sum/2), per-shard times inside one sqlite3 "
        "process per shard; last column: the same floor for the SQLite query the "
        "extension sends (EXPLAIN VERBOSE), where it aggregates and binds no parameters")
    frows = []
    for q in FANOUT + [EXPORT]:
        fl = results[q["key"]]["floor"]
        ef = results[q["key"]].get("ext_floor")
        if fl:
            frows.append([q["name"], fmt_ms(fl["sum"]), fmt_ms(fl["slowest"]),
                          fmt_ms(fl["half"]), fmt_ms(fl["floor"]), fmt_ms(fl["two"]),
                          fmt_ms(ef and ef["floor"])])
    log(table(["query", "sum of shards", "slowest shard", "sum/2", "floor",
               "2 at a time (wall)", "ext's query"], frows))

    ex = results["export"]
    if ex.get("native") or ex.get("ext"):
        log()
        log("full export, backend memory in MB: peak RSS = VmHWM (shared buffers "
            "included); private = RssAnon sampled every 5 ms, before = after a fan-out "
            "that read every shard")
        mrows = []
        for sch in ("native", "ext"):
            e = ex.get(sch)
            if e:
                mrows.append([LABELS[sch], "%.0f" % e["hwm"], "%.0f" % e["base_anon"],
                              "%.0f" % e["peak_anon"], "%+.0f" % e["growth"]])
        log(table(["engine", "peak RSS", "private before", "private peak",
                   "private growth"], mrows))

    pt = results["point"]
    if args.big:
        log()
        small = pt.get("ext") and pt["ext"]["us"]
        bigv = pt.get("big") and pt["big"]["us"]
        log("routed point lookup through the extension, runs taking turns: directory of "
            "2,000 tenants %s, of 1,000,000 tenants %s (%s)"
            % (fmt_us(small), fmt_us(bigv), fmt_ratio(ratio(bigv, small))))

    # ------------------------------------------------------------ targets
    check = targets.check
    for q in FANOUT:
        r = results[q["key"]]
        fl = r["floor"] and r["floor"]["floor"]
        nat = r.get("native") and r["native"]["ms"]
        ext = r.get("ext") and r["ext"]["ms"]
        check(ratio(ext, fl), 1.2, "%s <= 1.2x floor" % q["key"])
        check(ratio(ext, nat), 1.0, "%s <= native" % q["key"])
    for q in ROUTED:
        r = results[q["key"]]
        check(ratio(r.get("ext") and r["ext"]["us"], r.get("native") and r["native"]["us"]),
              1.2, "%s <= 1.2x native" % q["key"])
    check(ratio(ex.get("ext") and ex["ext"]["ms"], ex["floor"] and ex["floor"]["floor"]),
          1.3, "export <= 1.3x floor")
    growth = ex.get("ext") and ex["ext"]["growth"]
    if growth is None:
        targets.missed.append("export memory flat (not measured)")
    elif growth < FLAT_MB:
        targets.met.append("export memory flat")
    else:
        targets.missed.append("export memory flat (%+.0f MB)" % growth)
    if args.big:
        check(ratio(pt.get("big") and pt["big"]["us"], pt.get("ext") and pt["ext"]["us"]),
              1.1, "1M-tenant directory point lookup within 10%")



# ---------------------------------------------------------------- time queries
# The time ranges and buckets BI tools send, over created_at
# declared timestamp (schema ext) and timestamptz (exttz), against native
# tables with the same index on created_at; "ext, pushdown off" is the
# extension with sqlite_shard_fdw.aggregate_pushdown off (engines extoff and
# exttzoff, PUSHDOWN_OFF_ENGINES: the threads fetch the rows, PostgreSQL
# groups them), which pushing must never be slower than.  The fleet's times span 2024-01-01 to 2025-12-31; "the last 30
# days" are those before 2026-01-01, computed per statement as BI tools
# compute now() - interval '30 days'.

LAST30 = "now() - (now() - '2026-01-01'::timestamptz) - interval '30 days'"
TIME_QUERIES = [
    {"key": "t_month", "name": "date_trunc month, count, sum",
     "sql": "SELECT date_trunc('month', created_at), count(*), sum(amount_cents) "
            "FROM orders GROUP BY 1",
     "shard_sql": "SELECT substr(created_at, 1, 7), count(*), sum(amount_cents) "
                  "FROM orders GROUP BY 1", "off": True},
    {"key": "t_count", "name": "count, created_at >= '2025-11-01'",
     "sql": "SELECT count(*) FROM orders WHERE created_at >= '2025-11-01'",
     "shard_sql": "SELECT count(*) FROM orders WHERE created_at >= '2025-11-01'"},
    {"key": "t_top5", "name": "top-5 tenants by count since 2025-11-01",
     "sql": "SELECT tenant_id, count(*) FROM orders WHERE created_at >= '2025-11-01' "
            "GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 5",
     "shard_sql": "SELECT tenant_id, count(*) FROM orders WHERE created_at >= "
                  "'2025-11-01' GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 5", "ordered": True},
    {"key": "t_days", "name": "created_at::date, count, one month",
     "sql": "SELECT created_at::date, count(*) FROM orders WHERE created_at >= "
            "'2025-10-01' AND created_at < '2025-11-01' GROUP BY 1",
     "shard_sql": "SELECT substr(created_at, 1, 10), count(*) FROM orders WHERE "
                  "created_at >= '2025-10-01' AND created_at < '2025-11-01' GROUP BY 1",
     "off": True},
    {"key": "t_status", "name": "GROUP BY status, min/max(created_at)",
     "sql": "SELECT status, count(*), sum(amount_cents), avg(amount_cents), "
            "min(created_at), max(created_at) FROM orders GROUP BY status",
     "shard_sql": "SELECT status, count(*), sum(amount_cents), avg(amount_cents), "
                  "min(created_at), max(created_at) FROM orders GROUP BY status",
     "off": True},
    {"key": "t_last30", "name": "count, last 30 days (now() - interval)",
     "sql": "SELECT count(*) FROM orders WHERE created_at >= " + LAST30,
     "shard_sql": "SELECT count(*) FROM orders WHERE created_at >= '2025-12-02'"},
    {"key": "tz_month", "name": "timestamptz: date_trunc month", "tz": True,
     "sql": "SELECT date_trunc('month', created_at), count(*), sum(amount_cents) "
            "FROM orders GROUP BY 1",
     "shard_sql": "SELECT substr(created_at, 1, 7), count(*), sum(amount_cents) "
                  "FROM orders GROUP BY 1", "off": True},
    {"key": "tz_count", "name": "timestamptz: count since 2025-11-01", "tz": True,
     "sql": "SELECT count(*) FROM orders WHERE created_at >= '2025-11-01'",
     "shard_sql": "SELECT count(*) FROM orders WHERE created_at >= '2025-11-01'"},
    {"key": "tz_last30", "name": "timestamptz: last 30 days", "tz": True,
     "sql": "SELECT count(*) FROM orders WHERE created_at >= " + LAST30,
     "shard_sql": "SELECT count(*) FROM orders WHERE created_at >= '2025-12-02'"},
]


def run_time_reads(fleet, explain, errors, notes):
    """The time queries: the floor, the native table, the extension and the
    extension without aggregate pushdown, side by side."""
    log()
    log("time ranges and buckets: created_at timestamp (and "
        "timestamptz), stored as ISO text, index on created_at on both sides")
    with open(explain, "a") as f:
        for q in TIME_QUERIES:
            s = Psql("exttz" if q.get("tz") else "ext")
            try:
                f.write("=== " + q["sql"] + "\n" +
                        "\n".join(s.run("EXPLAIN (VERBOSE) " + q["sql"] + ";")) + "\n\n")
            except BenchError as e:
                errors.append(str(e))
            finally:
                s.close()
    rows = []
    for q in TIME_QUERIES:
        t0 = time.time()
        try:
            fl = floor(fleet.shards, q["shard_sql"], RUNS, 0)
        except BenchError as e:
            errors.append(str(e))
            fl = None
        tz = "tz" if q.get("tz") else ""
        r = run_fanout(dict(q, ordered=q.get("ordered", False)),
                       ["native" + tz, "ext" + tz] + (["ext%soff" % tz] if q.get("off") else []),
                       errors)
        r = {"native": r.get("native" + tz), "ext": r.get("ext" + tz),
             "off": r.get("ext%soff" % tz)}
        for eng in ("ext", "off"):
            if (r.get("native") and r.get(eng) and
                    r["native"]["rows"] != r[eng]["rows"]):
                notes.append("%s: %s's result differs from the native table's"
                             % (q["name"], eng))
        nat = r.get("native") and r["native"]["ms"]
        ext = r.get("ext") and r["ext"]["ms"]
        off = r.get("off") and r["off"]["ms"]
        flv = fl and fl["floor"]
        rows.append([q["name"], fmt_ms(flv), fmt_ms(nat), fmt_ms(ext),
                     fmt_ms(off) if q.get("off") else "-",
                     fmt_ratio(ratio(ext, flv)), fmt_ratio(ratio(ext, nat)),
                     fmt_ratio(ratio(ext, off)) if q.get("off") else "-"])
        log("  %-40s floor %s, native %s, ext %s%s  (%.0f s)"
            % (q["name"], fmt_ms(flv), spread(r.get("native"), "ms"),
               spread(r.get("ext"), "ms"),
               (", pushdown off %s" % spread(r.get("off"), "ms")) if q.get("off") else "",
               time.time() - t0))
    log()
    log(table(["time query", "sqlite3 floor", "native PG", "extension",
               "ext, pushdown off", "ext/floor", "ext/native", "ext/off"], rows))
# ---------------------------------------------------------------- end of time queries


# ---------------------------------------------------------------- ORDER BY ... LIMIT
# The latest rows, as applications and BI tools ask for them: the last
# orders of the largest tenant (routed: its shard's primary key
# (tenant_id, order_id) serves the order) and the fleet's latest orders
# (each shard's index on created_at, then the scan's merge of the
# shards' rows as they come), for 10 rows and for a BI tool's 2,000.
# Target: within 3x of the native table with the same indexes.
# No sqlite3 floor: its timer does not resolve a millisecond.

LIMIT_QUERIES = [
    {"key": "l_routed", "name": "largest tenant's last 10 orders (routed)",
     "sql": "SELECT * FROM orders WHERE tenant_id = {big} "
            "ORDER BY order_id DESC LIMIT 10", "routed": True},
    {"key": "l_fleet", "name": "latest 10 orders of the fleet",
     "sql": "SELECT * FROM orders ORDER BY created_at DESC LIMIT 10"},
    # a BI table's order: tie-breakers after the time, which the shards
    # sort by its first key and PostgreSQL finishes (Incremental Sort)
    {"key": "l_fleet_ties", "name": "latest 10, tie-breakers (BI table)",
     "sql": "SELECT * FROM orders ORDER BY created_at DESC, tenant_id, "
            "order_id LIMIT 10"},
    # no target: the fan-out's own cost, without the time key's window
    {"key": "l_fleet_id", "name": "fleet, ORDER BY order_id DESC LIMIT 10",
     "sql": "SELECT * FROM orders ORDER BY order_id DESC LIMIT 10",
     "no_target": True},
    # a BI tool's row limit (Metabase: 2,000) over the fleet
    {"key": "l_fleet_2000", "name": "latest 2000, tie-breakers (BI table)",
     "sql": "SELECT * FROM orders ORDER BY created_at DESC, tenant_id, "
            "order_id LIMIT 2000", "no_target": True},
    {"key": "l_fleet_id_2000", "name": "fleet, ORDER BY order_id DESC LIMIT 2000",
     "sql": "SELECT * FROM orders ORDER BY order_id DESC LIMIT 2000",
     "no_target": True},
    # one tenant's latest rows: its index, or the time index filtered
    {"key": "l_tenant_time", "name": "largest tenant's latest 10 (created_at)",
     "sql": "SELECT * FROM orders WHERE tenant_id = {big} "
            "ORDER BY created_at DESC LIMIT 10", "routed": True,
     "time_key": True, "no_target": True},
    {"key": "l_tenant_time_2000", "name": "largest tenant's latest 2000 (created_at)",
     "sql": "SELECT * FROM orders WHERE tenant_id = {big} "
            "ORDER BY created_at DESC LIMIT 2000", "routed": True,
     "time_key": True, "no_target": True},
]


def fmt_ms2(v):
    """Milliseconds with two decimals: these queries take about one."""
    return "-" if v is None else "%.2f ms" % v


def spread2(v):
    """'median [min-max]' of a result's runs, in ms with two decimals."""
    if not v:
        return "FAILED"
    return "%.2f ms [%.2f-%.2f]" % (v["ms"], min(v["all"]), max(v["all"]))


def largest_tenant():
    """The tenant with the most orders, and its number of orders."""
    setup = Psql("public")
    try:
        big = setup.value("SELECT tenant_id FROM native.orders GROUP BY 1 "
                          "ORDER BY count(*) DESC, 1 LIMIT 1")
        nbig = int(setup.value("SELECT count(*) FROM native.orders WHERE "
                               "tenant_id = " + pg_quote(big)))
    finally:
        setup.close()
    return big, nbig


def explain_session():
    """A session for EXPLAIN through the extension, its library loaded first:
    a session's first statement loads it only while that statement is
    planned, after the planner hooks (eager aggregation, rollup answers)
    would have run, and the timed sessions have it loaded by their
    warm-up."""
    s = Psql("ext")
    s.run("LOAD 'sqlite_shard_fdw';")
    return s


def explain_one(explain, sql, errors):
    """EXPLAIN VERBOSE of sql through the extension, appended to the plans
    file for the reader."""
    with open(explain, "a") as f:
        s = explain_session()
        try:
            f.write("=== " + sql + "\n" +
                    "\n".join(s.run("EXPLAIN (VERBOSE) " + sql + ";")) + "\n\n")
        except BenchError as e:
            errors.append(str(e))
        finally:
            s.close()


def run_limit_reads(fleet, explain, errors, notes, targets):
    """The ORDER BY ... LIMIT queries: floor, native table and extension."""
    big, nbig = largest_tenant()
    log()
    log("ORDER BY ... LIMIT: the largest tenant %s (%s orders), "
        "and the fleet" % (big, "{:,}".format(nbig)))
    rows = []
    for q in LIMIT_QUERIES:
        sql = q["sql"].format(big=pg_quote(big))
        explain_one(explain, sql, errors)
        t0 = time.time()
        r = run_fanout({"sql": sql, "ordered": True}, ["native", "ext"], errors)
        nat, ext = r.get("native"), r.get("ext")
        if nat and ext:
            # ties in created_at may pick other rows: compare the keys
            # (created_at, the fifth column of orders)
            key = (lambda row: row) if not (q["key"] == "l_fleet" or
                                            q.get("time_key")) else \
                (lambda row: row.split("|")[4])
            if [key(x) for x in nat["rows"]] != [key(x) for x in ext["rows"]]:
                notes.append("%s: the extension's result differs from the "
                             "native table's" % q["name"])
        natv = nat and nat["ms"]
        extv = ext and ext["ms"]
        rows.append([q["name"], fmt_ms2(natv), fmt_ms2(extv),
                     fmt_ratio(ratio(extv, natv))])
        log("  %-40s native %s, ext %s  (%.0f s)"
            % (q["name"], spread2(nat), spread2(ext), time.time() - t0))
        if not q.get("no_target"):
            targets.check(ratio(extv, natv), 3.0, "%s <= 3x native" % q["name"])
    log()
    log(table(["ORDER BY ... LIMIT", "native PG", "extension", "ext/native"],
              rows))
# ---------------------------------------------------------------- end of ORDER BY ... LIMIT


# ---------------------------------------------------------------- joins
# A BI model's fact table with its dimension, and reports driven by a local
# table: orders joined with customers on (tenant_id, customer_id) over the
# fleet, grouped by the customer's plan; the same join for the largest
# tenant, its top 5 customers by revenue; orders of the enterprise accounts
# (public.accounts, a local table: about 200 of the 2,000 tenants, on every
# shard) through a join and through IN (SELECT ...); the fan-out join with
# plans, a reference table.  The floor of a fan-out join: each shard's own
# join.

JOIN_SQL = ("FROM orders o JOIN customers c "
            "ON c.tenant_id = o.tenant_id AND c.customer_id = o.customer_id")
JOIN_QUERIES = [
    {"key": "j_fanout", "name": "orders x customers by plan (fan-out)",
     "sql": "SELECT c.plan, count(*), sum(o.amount_cents) " + JOIN_SQL + " GROUP BY 1",
     "shard_sql": "SELECT c.plan, count(*), sum(o.amount_cents) " + JOIN_SQL +
                  " GROUP BY 1",
     "target": 1.0, "target_text": "fan-out join with aggregate <= 1.0x native"},
    {"key": "j_routed", "name": "largest tenant's top 5 customers (routed)",
     "sql": "SELECT c.customer_id, c.name, sum(o.amount_cents) AS revenue " + JOIN_SQL +
            " WHERE o.tenant_id = {big} GROUP BY 1, 2 ORDER BY 3 DESC, 1 LIMIT 5",
     "ordered": True,
     "target": 1.2, "target_text": "routed join of one tenant <= 1.2x native"},
    {"key": "j_local", "name": "JOIN local accounts (enterprise)",
     "sql": "SELECT count(*), sum(o.amount_cents) FROM accounts a "
            "JOIN orders o USING (tenant_id) WHERE a.enterprise",
     "target": 1.2, "target_text": "join with a local tenant list <= 1.2x native"},
    # no target of its own: the same question as a semi-join
    {"key": "j_in", "name": "tenant_id IN (SELECT local accounts)",
     "sql": "SELECT count(*), sum(amount_cents) FROM orders WHERE tenant_id IN "
            "(SELECT tenant_id FROM accounts WHERE enterprise)"},
    # no target either: the fan-out join with the plans, a reference table
    {"key": "j_reference", "name": "... JOIN plans (reference table)",
     "sql": "SELECT p.plan, count(*), sum(o.amount_cents), sum(p.list_cents) " +
            JOIN_SQL + " JOIN plans p ON p.plan = c.plan GROUP BY 1",
     "shard_sql": "SELECT p.plan, count(*), sum(o.amount_cents), sum(p.list_cents) " +
                  JOIN_SQL + " JOIN plans p ON p.plan = c.plan GROUP BY 1"},
]


def run_join_reads(fleet, explain, errors, notes, targets):
    """The join queries: the floor (fan-out join only), the native tables and
    the extension."""
    big = largest_tenant()[0]
    setup = Psql("public")
    try:
        nent = int(setup.value("SELECT count(*) FROM public.accounts WHERE enterprise"))
        ncust = int(setup.value("SELECT count(*) FROM native.customers"))
    finally:
        setup.close()
    log()
    log("joins: orders with customers (%s rows), the largest tenant %s, "
        "%d enterprise accounts in a local table" % ("{:,}".format(ncust), big, nent))
    rows = []
    for q in JOIN_QUERIES:
        sql = q["sql"].format(big=pg_quote(big))
        explain_one(explain, sql, errors)
        t0 = time.time()
        fl = None
        if q.get("shard_sql"):
            try:
                fl = floor(fleet.shards, q["shard_sql"], RUNS, 0)["floor"]
            except BenchError as e:
                errors.append(str(e))
        r = run_fanout({"sql": sql, "ordered": q.get("ordered", False)},
                       ["native", "ext"], errors)
        nat, ext = r.get("native"), r.get("ext")
        if nat and ext and nat["rows"] != ext["rows"]:
            notes.append("%s: the extension's result differs from the native "
                         "table's" % q["name"])
        natv = nat and nat["ms"]
        extv = ext and ext["ms"]
        rows.append([q["name"], fmt_ms(fl), fmt_ms(natv), fmt_ms(extv),
                     fmt_ratio(ratio(extv, fl)), fmt_ratio(ratio(extv, natv))])
        log("  %-40s floor %s, native %s, ext %s  (%.0f s)"
            % (q["name"], fmt_ms(fl), spread(nat, "ms"), spread(ext, "ms"),
               time.time() - t0))
        if q.get("target"):
            targets.check(ratio(extv, natv), q["target"], q["target_text"])
    log()
    log(table(["join", "sqlite3 floor", "native PG", "extension", "ext/floor",
               "ext/native"], rows))
# ---------------------------------------------------------------- end of joins


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench-dir", required=True)
    ap.add_argument("--big", action="store_true")
    ap.add_argument("--parts", default="read,time,limit,join,write")
    ap.add_argument("--copy-first-id", type=int, default=100000001)
    args = ap.parse_args()
    parts = set(args.parts.split(","))

    errors, notes = [], []
    targets = Targets()
    fleet = types.SimpleNamespace(load_start=loadavg())

    setup = Psql("public")
    try:
        fleet.nkeys = int(setup.value("SELECT count(*) FROM public.bench_keys"))
        fleet.ntenants = int(setup.value("SELECT count(DISTINCT tenant_id) "
                                         "FROM public.bench_keys"))
        fleet.ntypical = int(setup.value("SELECT count(*) FROM public.bench_tenants"))
        fleet.typical = setup.value("SELECT min(orders) || '-' || max(orders) "
                                    "FROM public.bench_tenants")
        fleet.nrows = int(setup.value("SELECT count(*) FROM native.orders"))
        shard_rows = [r.split("|", 1) for r in
                      setup.rows("SELECT shard_id, path FROM shard_list('fleet') "
                                 "ORDER BY shard_id")]
    finally:
        setup.close()
    fleet.shard_ids = [r[0] for r in shard_rows]
    fleet.shards = [r[1] for r in shard_rows]
    fleet.defs = {"nkeys": fleet.nkeys, "ntenants": fleet.ntypical}

    explain = os.path.join(args.bench_dir, "explain.txt")
    open(explain, "w").close()
    if "read" in parts:
        run_reads(args, fleet, explain, errors, notes, targets)
    if "time" in parts:
        try:
            run_time_reads(fleet, explain, errors, notes)
        except BenchError as e:
            errors.append("time queries: %s" % e)
    if "limit" in parts:
        try:
            run_limit_reads(fleet, explain, errors, notes, targets)
        except BenchError as e:
            errors.append("ORDER BY ... LIMIT queries: %s" % e)
    if "join" in parts:
        try:
            run_join_reads(fleet, explain, errors, notes, targets)
        except BenchError as e:
            errors.append("join queries: %s" % e)
    if "bi" in parts:
        import bench_bi		# the BI tools' shapes: test/bench_bi.py
        try:
            bench_bi.run_bi_reads(sys.modules[__name__], explain, errors, notes, targets)
        except BenchError as e:
            errors.append("BI shapes: %s" % e)
    if "write" in parts:
        try:
            run_writes(args, fleet, explain, errors, notes, targets)
        except BenchError as e:
            errors.append("writes: %s" % e)

    if notes:
        log()
        log("notes:")
        for n in notes:
            log("  " + n)
    if errors:
        log()
        log("ERRORS:")
        for e in errors:
            log("  " + e.replace("\n", "\n  "))
    log()
    started = os.environ.get("BENCH_STARTED")
    if started:
        log("make bench took %.0f s up to here (build, fleet, load and runs)"
            % (time.time() - float(started)))
    log("targets: %d of %d met; missed: %s"
        % (len(targets.met), len(targets.met) + len(targets.missed),
           "; ".join(targets.missed) if targets.missed else "none"))
    return 1 if errors else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as e:
        print("bench: %s" % e, file=sys.stderr)
        sys.exit(1)
