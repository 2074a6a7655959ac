#!/usr/bin/env python3
#
# test/bench_run.py
#	The measuring half of `make bench` (test/bench.sh sets up the cluster,
#	the native table, the foreign tables and the key tables, then runs this
#	inside the throw-away cluster, PG* variables set).
#
# For every query, side by side:
#	sqlite3 floor	the sqlite3 CLI on the same shard files: one sqlite3
#					process per shard runs the per-shard query (one warm-up,
#					then BENCH_RUNS runs) and times each run itself
#					(.timer on); per run, the sum over shards and the slowest
#					shard; the floor is max(slowest shard, sum / 2), the best
#					two cores can do.  Also measured: the shards run two at a
#					time (two sqlite3 processes, shards split by their times),
#					wall time.
#	native PG		schema native: a heap table with the same rows and indexes
#	extension		schema ext: the foreign tables
# Fan-out queries and the export: one psql session per engine and query,
# one warm-up run (its result is compared between native and extension),
# then BENCH_RUNS runs timed by psql's \timing; the median is reported.
# Routed queries: pgbench -M prepared, one client, the same random keys for
# every engine (--random-seed), the latency of the measured statement alone
# (pgbench -r), median over BENCH_RUNS runs after a warm-up run.
# Export: the backend's memory, from /proc/<pid>/status: VmHWM after the
# runs, and RssAnon sampled every few ms while they run.
#
# Exit status 1 when a query fails (numbers that miss a target do not fail).

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time

RUNS = int(os.environ.get("BENCH_RUNS", "5"))
PGBENCH_SECONDS = int(os.environ.get("BENCH_PGBENCH_SECONDS", "3"))
STATEMENT_TIMEOUT = "300s"
PGBENCH_SEED = "20250101"

HERE = os.path.dirname(os.path.abspath(__file__))


class BenchError(Exception):
    pass


def log(msg):
    print(msg, flush=True)


# ---------------------------------------------------------------- queries

FANOUT = [
    {
        "key": "groupby",
        "name": "fan-out GROUP BY status, 5 aggregates",
        "sql": "SELECT status, count(*), sum(amount_cents), avg(amount_cents), "
               "min(amount_cents), max(amount_cents) FROM orders GROUP BY status",
        "shard_sql": "SELECT status, count(*), sum(amount_cents), avg(amount_cents), "
                     "min(amount_cents), max(amount_cents) FROM orders GROUP BY status",
        "ordered": False,
    },
    {
        "key": "top10",
        "name": "fan-out top-10 tenants by revenue",
        "sql": "SELECT tenant_id, sum(amount_cents) FROM orders "
               "GROUP BY tenant_id ORDER BY 2 DESC LIMIT 10",
        "shard_sql": "SELECT tenant_id, sum(amount_cents) FROM orders "
                     "GROUP BY tenant_id ORDER BY 2 DESC LIMIT 10",
        "ordered": True,
    },
    {
        "key": "count",
        "name": "fan-out filtered count",
        "sql": "SELECT count(*) FROM orders "
               "WHERE status = 'cancelled' AND amount_cents > 20000",
        "shard_sql": "SELECT count(*) FROM orders "
                     "WHERE status = 'cancelled' AND amount_cents > 20000",
        "ordered": True,
    },
]

EXPORT = {
    "key": "export",
    "name": "full export",
    "sql": "COPY (SELECT * FROM orders) TO '/dev/null'",
    "shard_sql": "SELECT * FROM orders",
}

ROUTED = [
    {"key": "point", "name": "routed point lookup (pgbench latency)",
     "script": os.path.join(HERE, "bench_pgbench_point.sql")},
    {"key": "report", "name": "routed tenant report, typical tenant",
     "script": os.path.join(HERE, "bench_pgbench_report.sql")},
]

ENGINES = [("native", "native PG"), ("ext", "extension")]


# ---------------------------------------------------------------- sqlite3 CLI floor

def sqlite_cli(script, db=None):
    cmd = ["sqlite3", "-bail"] + ([db] if db else [])
    p = subprocess.run(cmd, input=script, capture_output=True, text=True)
    if p.returncode != 0 or p.stderr.strip():
        raise BenchError("sqlite3 %s failed: %s" % (db or "", p.stderr.strip()[:500]))
    return p.stdout


def sqlite_quote(s):
    return "'" + s.replace("'", "''") + "'"


def floor(shards, shard_sql, two=True):
    """Per-shard times (one sqlite3 process per shard, timed inside) and,
    with two, the two-at-a-time wall time.  Returns a dict of medians in ms."""
    per_shard = []
    for db in shards:
        script = ".timer on\n.output /dev/null\n" + (shard_sql + ";\n") * (RUNS + 1)
        out = sqlite_cli(script, db)
        times = [float(x) * 1000.0 for x in re.findall(r"Run Time: real ([0-9.]+)", out)]
        if len(times) != RUNS + 1:
            raise BenchError("sqlite3 %s: expected %d timings, got: %s"
                             % (db, RUNS + 1, out[:300]))
        per_shard.append(times[1:])
    sums = [sum(t[r] for t in per_shard) for r in range(RUNS)]
    slowest = [max(t[r] for t in per_shard) for r in range(RUNS)]

    # Two at a time: split the shards between two sqlite3 processes, longest
    # first onto the less loaded one, and time both to the end.
    medians = sorted(((statistics.median(t), db) for t, db in zip(per_shard, shards)),
                     reverse=True)
    groups = [[], []]
    load = [0.0, 0.0]
    for t, db in medians:
        g = 0 if load[0] <= load[1] else 1
        groups[g].append(db)
        load[g] += t
    walls = []
    if not two:
        groups = []
    with tempfile.TemporaryDirectory(prefix="ssfdw_bench_") as tmp:
        files = []
        for i, g in enumerate(groups):
            path = os.path.join(tmp, "worker%d.sql" % i)
            with open(path, "w") as f:
                f.write(".bail on\n.output /dev/null\n" +
                        "".join(".open %s\n%s;\n" % (sqlite_quote(db), shard_sql)
                                for db in g))
            files.append(path)
        for _ in range(RUNS + 1 if groups else 0):
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
    s = statistics.median(sums)
    m = statistics.median(slowest)
    return {"sum": s, "slowest": m, "half": s / 2.0, "floor": max(m, s / 2.0),
            "two": statistics.median(walls[1:]) if groups else None}


# ---------------------------------------------------------------- psql sessions

ERROR_RE = re.compile(r"\b(ERROR|FATAL|PANIC):|server closed the connection|"
                      r"connection to server .* failed|no connection to the server")
TIME_RE = re.compile(r"^Time: ([0-9.]+) ms")


class Psql:
    """One psql process, fed statement by statement through a pipe; each
    batch ends with an \\echo marker so its output can be read back."""

    def __init__(self, schema):
        env = dict(os.environ)
        env["PGOPTIONS"] = ("-c search_path=%s,public -c statement_timeout=%s"
                            % (schema, STATEMENT_TIMEOUT))
        self.schema = schema
        self.n = 0
        self.warnings = []
        self.p = subprocess.Popen(
            ["stdbuf", "-oL", "psql", "-X", "-q", "-P", "pager=off",
             "-v", "ON_ERROR_STOP=0"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True, bufsize=1, env=env)

    def run(self, sql, what=None):
        self.n += 1
        mark = "__ssfdw_bench_%d__" % self.n
        self.p.stdin.write(sql.rstrip() + "\n\\echo " + mark + "\n")
        self.p.stdin.flush()
        lines = []
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise BenchError("%s: psql exited while running: %s\n%s"
                                 % (self.schema, what or sql, "\n".join(lines[-20:])))
            line = line.rstrip("\n")
            if line == mark:
                break
            lines.append(line)
        errors = [ln for ln in lines if ERROR_RE.search(ln)]
        if errors:
            raise BenchError("%s: %s\n  %s" % (self.schema, what or sql,
                                                "\n  ".join(lines[-10:])))
        self.warnings += [ln for ln in lines if "WARNING:" in ln]
        return lines

    def value(self, sql):
        lines = self.run("\\pset tuples_only on\n\\pset format unaligned\n" + sql +
                         ";\n\\pset tuples_only off\n\\pset format aligned")
        lines = [ln for ln in lines if ln.strip()]
        return lines[0] if lines else None

    def result(self, sql):
        """The rows of sql, unaligned, as a list of lines."""
        return self.run("\\pset tuples_only on\n\\pset format unaligned\n" + sql +
                        ";\n\\pset tuples_only off\n\\pset format aligned", sql)

    def timed(self, sql, runs):
        """Run sql runs times (results to /dev/null); the \\timing times, ms."""
        times = []
        self.run("\\timing on\n\\o /dev/null")
        try:
            for _ in range(runs):
                lines = self.run(sql + ";", sql)
                t = [float(m.group(1)) for m in map(TIME_RE.match, lines) if m]
                if len(t) != 1:
                    raise BenchError("%s: no timing for %s: %s" % (self.schema, sql, lines))
                times.append(t[0])
        finally:
            self.run("\\o\n\\timing off")
        return times

    def close(self):
        try:
            self.p.stdin.close()
        except OSError:
            pass
        self.p.wait(timeout=60)


def proc_status(pid):
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


def run_fanout(q, schema):
    """Warm-up (result kept) + RUNS timed runs on one engine."""
    s = Psql(schema)
    try:
        rows = normalise(s.result(q["sql"]), q["ordered"])
        times = s.timed(q["sql"], RUNS)
    finally:
        s.close()
    return {"ms": statistics.median(times), "rows": rows, "all": times,
            "warnings": s.warnings}


def run_export(q, schema):
    """Warm-up + RUNS timed runs of the export on one engine, with the
    backend's memory."""
    s = Psql(schema)
    try:
        pid = int(s.value("SELECT pg_backend_pid()"))
        # The baseline: a fan-out over every page of every shard (handles
        # open, page caches full) whose result is one row.
        s.result(FANOUT[2]["sql"])
        base = proc_status(pid)
        sampler = Sampler(pid)
        sampler.start()
        try:
            s.timed(q["sql"], 1)		# warm-up
            times = s.timed(q["sql"], RUNS)
        finally:
            sampler.stop.set()
            sampler.join()
        after = proc_status(pid)
    finally:
        s.close()
    peak_anon = max(sampler.peak_anon, after.get("RssAnon", 0.0))
    return {"ms": statistics.median(times), "all": times,
            "hwm": after.get("VmHWM", 0.0),
            "base_anon": base.get("RssAnon", 0.0),
            "peak_anon": peak_anon,
            "growth": peak_anon - base.get("RssAnon", 0.0),
            "warnings": s.warnings}


# ---------------------------------------------------------------- pgbench

def pgbench_once(schema, script, seconds):
    env = dict(os.environ)
    env["PGOPTIONS"] = ("-c search_path=%s,public -c statement_timeout=%s"
                        % (schema, STATEMENT_TIMEOUT))
    cmd = ["pgbench", "-n", "-M", "prepared", "-r", "-c", "1", "-j", "1",
           "-T", str(seconds), "--random-seed=" + PGBENCH_SEED,
           "-D", "nkeys=%d" % NKEYS, "-D", "ntenants=%d" % NTENANTS_TYPICAL,
           "-f", script]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    out = p.stdout + p.stderr
    m = re.search(r"number of failed transactions: (\d+)", out)
    failed = int(m.group(1)) if m else 0
    if p.returncode != 0 or failed or ERROR_RE.search(p.stderr):
        raise BenchError("pgbench %s on %s failed (exit %d):\n%s"
                         % (os.path.basename(script), schema, p.returncode,
                            "\n".join(out.strip().splitlines()[-15:])))
    m = re.search(r"number of transactions actually processed: (\d+)", out)
    ntx = int(m.group(1)) if m else 0
    # statement latencies: "   0.075   0  SELECT * FROM orders ..."
    lat = None
    for line in out.splitlines():
        mm = re.match(r"^\s+([0-9.]+)\s+(?:\d+\s+)?(SELECT .*FROM orders.*)$", line)
        if mm:
            lat = float(mm.group(1)) * 1000.0
    if lat is None or ntx == 0:
        raise BenchError("pgbench %s on %s: no statement latency in:\n%s"
                         % (os.path.basename(script), schema, out[-2000:]))
    return lat, ntx


def run_routed(q, schema):
    pgbench_once(schema, q["script"], 1)			# warm-up
    lats, ntx = [], 0
    for _ in range(RUNS):
        lat, n = pgbench_once(schema, q["script"], PGBENCH_SECONDS)
        lats.append(lat)
        ntx += n
    return {"us": statistics.median(lats), "all": lats, "ntx": ntx}


# ---------------------------------------------------------------- report

def fmt_ms(v):
    return "-" if v is None else "%.0f ms" % v


def fmt_us(v):
    return "-" if v is None else "%.0f us" % v


def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def fmt_ratio(r):
    return "-" if r is None else "%.2fx" % r


def table(header, rows):
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    def line(r):
        return " | ".join((str(c).ljust(w) if i == 0 else str(c).rjust(w))
                          for i, (c, w) in enumerate(zip(r, widths)))
    out = [line(header), "-+-".join("-" * w for w in widths)]
    out += [line(r) for r in rows]
    return "\n".join(out)


def main():
    global NKEYS, NTENANTS_TYPICAL
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench-dir", required=True)
    ap.add_argument("--big", action="store_true")
    args = ap.parse_args()
    fleet = os.path.join(args.bench_dir, "fleet")

    errors = []
    notes = []

    setup = Psql("public")
    NKEYS = int(setup.value("SELECT count(*) FROM public.bench_keys"))
    NTENANTS_TYPICAL = int(setup.value("SELECT count(*) FROM public.bench_tenants"))
    nrows = int(setup.value("SELECT count(*) FROM native.orders"))
    typical = setup.value("SELECT min(orders) || '-' || max(orders) FROM public.bench_tenants")
    shards_rows = setup.result("SELECT path FROM shard_list('fleet') ORDER BY shard_id")
    shards = [ln.strip() for ln in shards_rows if ln.strip()]
    # EXPLAIN of every extension query, for the reader.
    explain_path = os.path.join(args.bench_dir, "explain.txt")
    ext_shapes = {}
    with open(explain_path, "w") as f:
        ex = Psql("ext")
        for q in FANOUT + [{"sql": "SELECT * FROM orders"},
                           {"sql": "SELECT * FROM orders WHERE tenant_id = 'tenant_0007' "
                                   "AND order_id = 42"},
                           {"sql": "SELECT status, count(*), sum(amount_cents) FROM orders "
                                   "WHERE tenant_id = 'tenant_0007' GROUP BY status"}]:
            try:
                f.write("=== " + q["sql"] + "\n")
                lines = ex.run("EXPLAIN (VERBOSE) " + q["sql"] + ";")
                f.write("\n".join(lines) + "\n\n")
                shapes = [m.group(1) for m in
                          (re.match(r"^\s*(?:->\s*)?SQLite query: (.*)$", ln) for ln in lines) if m]
                if "key" in q and len(shapes) == 1:
                    ext_shapes[q["key"]] = shapes[0].strip()
            except BenchError as e:
                f.write("failed: %s\n\n" % e)
        ex.close()
    setup.close()
    log("%d shards; pgbench keys: %d (tenant, order) pairs; typical tenants: %d "
        "(%s orders each); EXPLAIN of the extension's queries in %s"
        % (len(shards), NKEYS, NTENANTS_TYPICAL, typical, explain_path))
    log("each query: 1 warm-up + %d runs, medians; pgbench runs of %d s"
        % (RUNS, PGBENCH_SECONDS))

    results = {}		# key -> {"floor": dict|None, "native": v, "ext": v}

    # Routed queries.
    for q in ROUTED:
        r = {"floor": None}
        for schema, label in ENGINES:
            t0 = time.time()
            try:
                r[schema] = run_routed(q, schema)
                log("  %-40s %-10s %8.0f us  (%d transactions, %.0f s)"
                    % (q["name"], label, r[schema]["us"], r[schema]["ntx"],
                       time.time() - t0))
            except BenchError as e:
                errors.append(str(e))
                log("  %-40s %-10s FAILED" % (q["name"], label))
                r[schema] = None
        results[q["key"]] = r

    # Fan-out queries.
    for q in FANOUT:
        t0 = time.time()
        r = {}
        try:
            r["floor"] = floor(shards, q["shard_sql"])
        except BenchError as e:
            errors.append(str(e))
            r["floor"] = None
        # The extension's own SQLite query on the CLI (when it binds no
        # parameters): how much of the gap to the floor is the query's shape.
        r["ext_floor"] = None
        shape = ext_shapes.get(q["key"])
        if shape and "?" not in shape:
            try:
                r["ext_floor"] = floor(shards, shape, two=False)
            except BenchError as e:
                notes.append("%s: the extension's SQLite query failed on the CLI: %s"
                             % (q["name"], e))
        for schema, _ in ENGINES:
            try:
                r[schema] = run_fanout(q, schema)
                for w in r[schema]["warnings"]:
                    notes.append("%s on %s: %s" % (q["name"], schema, w))
            except BenchError as e:
                errors.append(str(e))
                r[schema] = None
        if r["native"] and r["ext"] and r["native"]["rows"] != r["ext"]["rows"]:
            notes.append("%s: the extension's result differs from the native table's:\n"
                         "    native:    %s\n    extension: %s"
                         % (q["name"], r["native"]["rows"], r["ext"]["rows"]))
        results[q["key"]] = r
        fl = r["floor"]
        log("  %-40s floor %s, native %s, extension %s  (%.0f s)"
            % (q["name"], fmt_ms(fl and fl["floor"]),
               fmt_ms(r.get("native") and r["native"]["ms"]),
               fmt_ms(r.get("ext") and r["ext"]["ms"]), time.time() - t0))

    # Export.
    t0 = time.time()
    r = {}
    try:
        r["floor"] = floor(shards, EXPORT["shard_sql"])
    except BenchError as e:
        errors.append(str(e))
        r["floor"] = None
    for schema, _ in ENGINES:
        try:
            r[schema] = run_export(EXPORT, schema)
            for w in r[schema]["warnings"]:
                notes.append("%s on %s: %s" % (EXPORT["name"], schema, w))
        except BenchError as e:
            errors.append(str(e))
            r[schema] = None
    results["export"] = r
    log("  %-40s floor %s, native %s, extension %s  (%.0f s)"
        % (EXPORT["name"], fmt_ms(r["floor"] and r["floor"]["floor"]),
           fmt_ms(r.get("native") and r["native"]["ms"]),
           fmt_ms(r.get("ext") and r["ext"]["ms"]), time.time() - t0))

    # The large directory.
    big = None
    if args.big:
        t0 = time.time()
        try:
            big = run_routed(ROUTED[0], "big")
            log("  %-40s %-10s %8.0f us  (%d transactions, %.0f s)"
                % (ROUTED[0]["name"], "1M dir", big["us"], big["ntx"], time.time() - t0))
        except BenchError as e:
            errors.append(str(e))

    # ------------------------------------------------------------ the table
    rows = []
    for q in ROUTED:
        r = results[q["key"]]
        nat = r["native"] and r["native"]["us"]
        ext = r["ext"] and r["ext"]["us"]
        rows.append([q["name"], "-", fmt_us(nat), fmt_us(ext), "-",
                     fmt_ratio(ratio(ext, nat))])
    for q in FANOUT + [EXPORT]:
        r = results[q["key"]]
        fl = r["floor"] and r["floor"]["floor"]
        nat = r.get("native") and r["native"]["ms"]
        ext = r.get("ext") and r["ext"]["ms"]
        rows.append([q["name"], fmt_ms(fl), fmt_ms(nat), fmt_ms(ext),
                     fmt_ratio(ratio(ext, fl)), fmt_ratio(ratio(ext, nat))])
    log("")
    log("sqlite_shard_fdw benchmark: %d shards, %s orders, medians of %d runs"
        % (len(shards), "{:,}".format(nrows), RUNS))
    log("")
    log(table(["query", "sqlite3 floor", "native PG", "extension", "ext/floor",
               "ext/native"], rows))

    log("")
    log("sqlite3 floor, per-shard times inside one sqlite3 process per shard; last column: "
        "the same floor for the SQLite query the extension sends (EXPLAIN VERBOSE), "
        "when it has no parameters:")
    frows = []
    for q in FANOUT + [EXPORT]:
        fl = results[q["key"]]["floor"]
        ef = results[q["key"]].get("ext_floor")
        if fl:
            frows.append([q["name"], fmt_ms(fl["sum"]), fmt_ms(fl["slowest"]),
                          fmt_ms(fl["half"]), fmt_ms(fl["floor"]), fmt_ms(fl["two"]),
                          fmt_ms(ef and ef["floor"])])
    log(table(["query", "sum of shards", "slowest shard", "sum/2",
               "floor = max", "2 at a time (wall)", "ext's query floor"], frows))

    ex = results["export"]
    if ex.get("native") and ex.get("ext"):
        log("")
        log("full export, backend memory (MB): peak RSS = VmHWM (shared buffers included); "
            "private = RssAnon, sampled every 5 ms")
        mrows = []
        for schema, label in ENGINES:
            e = ex[schema]
            mrows.append([label, "%.0f" % e["hwm"], "%.0f" % e["base_anon"],
                          "%.0f" % e["peak_anon"], "%+.0f" % e["growth"]])
        log(table(["engine", "peak RSS", "private before", "private peak",
                   "private growth"], mrows))

    if big:
        small = results["point"]["ext"]
        log("")
        log("routed point lookup, extension: directory of 2,000 tenants %s, "
            "of 1,000,000 tenants %s (%s)"
            % (fmt_us(small and small["us"]), fmt_us(big["us"]),
               fmt_ratio(ratio(big["us"], small and small["us"]))))

    # ------------------------------------------------------------ targets
    met, missed = [], []

    def check(ok, text):
        if ok is None:
            missed.append(text + " (not measured)")
        elif ok:
            met.append(text)
        else:
            missed.append(text)

    for q in FANOUT:
        r = results[q["key"]]
        fl = r["floor"] and r["floor"]["floor"]
        nat = r.get("native") and r["native"]["ms"]
        ext = r.get("ext") and r["ext"]["ms"]
        rf, rn = ratio(ext, fl), ratio(ext, nat)
        check(None if rf is None else rf <= 1.2, "%s <=1.2x floor (%s)" % (q["key"], fmt_ratio(rf)))
        check(None if rn is None else rn <= 1.0, "%s <=native (%s)" % (q["key"], fmt_ratio(rn)))
    for q in ROUTED:
        r = results[q["key"]]
        rn = ratio(r["ext"] and r["ext"]["us"], r["native"] and r["native"]["us"])
        check(None if rn is None else rn <= 1.2, "%s <=1.2x native (%s)" % (q["key"], fmt_ratio(rn)))
    rf = ratio(ex.get("ext") and ex["ext"]["ms"], ex["floor"] and ex["floor"]["floor"])
    check(None if rf is None else rf <= 1.3, "export <=1.3x floor (%s)" % fmt_ratio(rf))
    growth = ex.get("ext") and ex["ext"]["growth"]
    check(None if growth is None else growth < 64,
          "export memory flat (%s)" % ("-" if growth is None else "%+.0f MB" % growth))
    if args.big:
        small = results["point"]["ext"]
        rb = ratio(big and big["us"], small and small["us"])
        check(None if rb is None else rb <= 1.1, "1M-tenant directory within 10%% (%s)"
              % fmt_ratio(rb))

    if notes:
        log("")
        log("notes:")
        for n in notes:
            log("  " + n)
    if errors:
        log("")
        log("ERRORS:")
        for e in errors:
            log("  " + e.replace("\n", "\n  "))
    log("")
    log("targets: %d of %d met; missed: %s" % (len(met), len(met) + len(missed),
                                               "; ".join(missed) if missed else "none"))
    return 1 if errors else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as e:
        print("bench: %s" % e, file=sys.stderr)
        sys.exit(1)
