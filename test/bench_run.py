#!/usr/bin/env python3
#
# test/bench_run.py
#	The measuring half of `make bench`.  test/bench.sh sets up the cluster
#	(the native table, the foreign tables, the key tables) and runs this
#	inside it, with the PG* variables set.
#
# Usage: python3 test/bench_run.py --bench-dir DIR [--big]
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
# Exit status 1 when a query fails; missed targets do not fail.

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time

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

LABELS = {"native": "native PG", "ext": "extension", "big": "ext, 1M-tenant dir"}


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


def pg_env(schema):
    env = dict(os.environ)
    env["PGOPTIONS"] = ("-c search_path=%s,public -c statement_timeout=%s"
                        % (schema, STATEMENT_TIMEOUT))
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
    # the -r report: "   0.075   0  SELECT * FROM orders ..." (latency, failures)
    lat = None
    for line in out.splitlines():
        mm = re.match(r"^\s+([0-9.]+)\s+(?:\d+\s+)?(SELECT .*\bFROM orders\b.*)$", line)
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench-dir", required=True)
    ap.add_argument("--big", action="store_true")
    args = ap.parse_args()

    errors, notes = [], []
    load_start = loadavg()

    setup = Psql("public")
    try:
        nkeys = int(setup.value("SELECT count(*) FROM public.bench_keys"))
        ntypical = int(setup.value("SELECT count(*) FROM public.bench_tenants"))
        typical = setup.value("SELECT min(orders) || '-' || max(orders) "
                              "FROM public.bench_tenants")
        nrows = int(setup.value("SELECT count(*) FROM native.orders"))
        shards = setup.rows("SELECT path FROM shard_list('fleet') ORDER BY shard_id")
    finally:
        setup.close()
    defs = {"nkeys": nkeys, "ntenants": ntypical}

    # EXPLAIN of the extension's queries, for the reader; and the SQLite
    # query it sends for each fan-out, for the floor of its own shape.
    explain_path = os.path.join(args.bench_dir, "explain.txt")
    ext_shapes = {}
    ex = Psql("ext")
    try:
        with open(explain_path, "w") as f:
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

    log("%d shards, %d orders; pgbench keys: %d (tenant, order) pairs, %d typical tenants "
        "(%s orders each)" % (len(shards), nrows, nkeys, ntypical, typical))
    log("each query: a warm-up, then %d runs, engines taking turns; pgbench runs of %d s; "
        "EXPLAIN VERBOSE of the extension's queries in %s" % (RUNS, PGBENCH_SECONDS,
                                                              explain_path))
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
        % (len(shards), "{:,}".format(nrows), RUNS, load_start, loadavg()))
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
    met, missed = [], []

    def check(r, limit, text):
        if r is None:
            missed.append(text + " (not measured)")
        elif r <= limit:
            met.append(text)
        else:
            missed.append("%s (%s)" % (text, fmt_ratio(r)))

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
        missed.append("export memory flat (not measured)")
    elif growth < FLAT_MB:
        met.append("export memory flat")
    else:
        missed.append("export memory flat (%+.0f MB)" % growth)
    if args.big:
        check(ratio(pt.get("big") and pt["big"]["us"], pt.get("ext") and pt["ext"]["us"]),
              1.1, "1M-tenant directory point lookup within 10%")

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
        % (len(met), len(met) + len(missed), "; ".join(missed) if missed else "none"))
    return 1 if errors else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as e:
        print("bench: %s" % e, file=sys.stderr)
        sys.exit(1)
