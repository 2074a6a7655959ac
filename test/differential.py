#!/usr/bin/env python3
#
# test/differential.py
#	The differential test: random queries over the
#	same rows through a foreign table and through a native PostgreSQL table;
#	any difference fails.
#
# Usage: python3 test/differential.py   (normally through
#	test/differential_test.sh, which picks the database)
#
# Environment:
#	DIFF_SEED		seed of the fleet and of the queries (default 20241129)
#	DIFF_QUERIES	number of query cases (default 800)
#	DIFF_DIR		fixture folder (default: a new /tmp/ssfdw_diff.XXXXXX; a
#					fixed path would collide with other runs on the machine)
#	DIFF_VERBOSE	1: print every case, not only the failures
#	DIFF_KEEP		1: keep the fixture folder (it is removed otherwise)
#	PGHOST, PGPORT, PGUSER, PGDATABASE ...: where to connect (psql)
#
# What it does:
#
#  1. Builds, with the seed, a fleet of four SQLite shards (two in WAL mode,
#	  two with a rollback journal; the tables declared differently on each:
#	  loose or missing types, a NOCASE text column, a WITHOUT ROWID table,
#	  columns in another order), a fifth whose table is empty (a tenant
#	  without rows), and a directory.db placing a dozen tenants on them.  Values cover NULLs, int8 limits, infinities, non-ASCII and
#	  LIKE/GLOB metacharacters in text, every stored date and time form the
#	  wrapper documents, numbers stored as text, text stored as numbers.
#	  Every shard also holds the same copy of a reference table, plans
#	  (distribution 'reference', foreign table diff_rt, native diff_rn),
#	  declared differently in each: about 40 plans keyed by some of the
#	  fact rows' j values (others no plan has; j is NULL in some rows), one
#	  plan with a NULL key, names that the rows' t holds, prices up to the
#	  int8 extremes.
#  2. Reads every shard back with Python's sqlite3 module and converts each
#	  stored value the way the wrapper documents (convert.c: offsets applied
#	  to UTC, Unix time for numbers, shortest round-trip text for reals,
#	  ...), and loads the result into a native table diff_nt with the same
#	  columns and collations as the foreign table diff_ft.
#  3. Generates query cases: WHERE trees of comparisons with constants of
#	  matching and cross types, IS [NOT] NULL, AND/OR/NOT, IN, = ANY,
#	  <> ALL, BETWEEN, LIKE/ILIKE with wildcards and escapes, text ordering
#	  under the default, "C", "en-x-icu" and a non-deterministic
#	  collation, tenant routing; aggregates, ORDER BY ... LIMIT, joins,
#	  correlated subqueries and LATERAL (rescans), and prepared statements
#	  run with generic and custom plans.  Then DIFF_QUERIES / 5 top-N
#	  reports grouped by the tenant (ORDER BY aggregates and keys, LIMIT,
#	  OFFSET), half of them with thread aggregation off; at least a fifth
#	  of them must be sorted and limited in the shards (EXPLAIN), or the
#	  run fails.  And DIFF_QUERIES / 5 ORDER BY ... LIMIT [OFFSET] cases
#	  of rows (keys of every type and direction, NULLS FIRST/LAST, ties
#	  broken by id; the fleet, routed tenants, conditions, keyset
#	  pagination, scoped logins), a quarter of which must be sorted and
#	  limited in the shards.  And DIFF_QUERIES / 4 joins of two and three
#	  instances of the table (inner, left, right, full; on the tenant and
#	  keys with NULLs; routed, filtered to tenants with rows on one side
#	  only, scoped logins; rows, aggregates, ORDER BY ... LIMIT), a fifth
#	  of which must be joined in the shards (about a quarter are, by seed).
#	  And, from a random stream of their own (the cases above stay what
#	  they were), DIFF_QUERIES / 4 joins with the reference table: the
#	  fact table and the plans (inner, left with the plans nullable, now
#	  and then right, full or the plans first, which PostgreSQL joins),
#	  fact, a tenant's dimension (the table again, on the tenant) and the
#	  plans, the plans twice, EXISTS and IN; integer and text keys; routed
#	  (by a constant, or by a prepared statement's parameter with generic
#	  and custom plans), tenant lists, fan-out, scoped logins; rows,
#	  aggregates grouped by the plans' columns, ORDER BY ... LIMIT.  A
#	  fifth of them must show the reference table in a join the shards
#	  run (EXPLAIN "Relations:"; about three in ten do), and a tenth
#	  routed.  And DIFF_QUERIES / 10 reads of the plans alone (conditions,
#	  aggregates, ORDER BY ... LIMIT, the plans joined with themselves),
#	  and reference_check finds every copy alike.  And, from a stream of
#	  their own, DIFF_QUERIES / 10 joins as above ordered by a time
#	  column (timestamp, timestamptz, date; every stored form) of any of
#	  their tables first, then every output; a tenth of them must be
#	  sorted and limited in the shards by that key (EXPLAIN "Time Key").
#	  And, from a stream of their own, DIFF_QUERIES / 10 aggregates of the
#	  table's columns over joins PostgreSQL runs with the plans (inner,
#	  left and right keeping the table, the plans twice, conditions other
#	  than equality, the table on the nullable side), run with
#	  sqlite_shard_fdw.eager_aggregate = always; a third of them must
#	  group the table in the shards under the join (EXPLAIN).
#	  And, chosen by a stream of their own, three in ten of the groupings
#	  (the eager ones included) run on both sides with work_mem = 64kB,
#	  where a merge of the shards' groups sets rows aside on disk; at
#	  least one must (EXPLAIN ANALYZE "Merge Batches").
#  4. Runs every case on both tables in one psql session (markers between
#	  results; a crashed backend is reported and the run resumes in a new
#	  session), and compares the rows (sorted, unless the query fixes the
#	  order).  An error on one side only is a failure; an error on both
#	  sides passes.
#
# Prints one line per failure (the query, and the rows that differ), and
# last "N passed, M failed".  Exits 1 if anything failed.
#
# The data holds no newlines (psql's unaligned output is split into lines)
# and no NaN (SQLite stores NaN as NULL).

import datetime
import decimal
import math
import os
import pwd
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

# The directory's tables, shared with every fixture builder (read when a
# fleet is built: this file may run as a copy elsewhere).
REPO_TEST_DIR = os.path.dirname(os.path.abspath(__file__))


def directory_schema():
    with open(os.path.join(REPO_TEST_DIR, "directory.sql")) as f:
        return f.read()

SEED = int(os.environ.get("DIFF_SEED", "20241129"))
NCASES = int(os.environ.get("DIFF_QUERIES", "800"))
DIR = None                      # the fixture folder, chosen by main()
VERBOSE = os.environ.get("DIFF_VERBOSE", "") == "1"

FT = "diff_ft"
NT = "diff_nt"
# A role whose user mapping limits it to some tenants (one unknown): through
# the foreign table it must see what the native view diff_nt_scoped shows.
SCOPED_ROLE = "regress_diff_scoped"
NT_SCOPED = "diff_nt_scoped"
SCOPED_TENANTS = ["acme", "müller", "o'brien", "tenant_%", "nobody"]
SERVER = "diff_fleet"
# The reference table (distribution 'reference'): plans, a copy in every
# shard, declared differently in each but holding the same rows; the fact
# table's j refers to its plan_id, and its t to its name.
RT = "diff_rt"
RN = "diff_rn"
REF_PLANS = []                  # its rows, set by build_fleet
REF_COLUMNS = [("plan_id", "integer"), ("name", "text"), ("tier", "integer"),
               ("price", "bigint")]
NULL_TEXT = "<NULL>"
FS = "\x1f"                     # field separator of psql's output

# Column list of both tables: name, PostgreSQL type, kind, SQLite column.
COLUMNS = [
    ("tenant_id", "text", "text", "tenant_id"),
    ("id", "bigint", "int", "id"),
    ("i", "bigint", "int", "i"),
    ("j", "integer", "int", "j"),
    ("k", "bigint", "int", "k"),
    ("f", "double precision", "float", "f"),
    ("g", "double precision", "float", "g"),
    ("t", "text", "text", "t"),
    ("tc", 'text COLLATE "en-x-icu"', "text", "t"),
    ("u", "text", "text", "u"),
    ("ts", "timestamp", "ts", "ts"),
    ("tz", "timestamptz", "tz", "ts"),
    ("d", "date", "date", "ts"),
    ("te", "timestamp", "ts", "te"),
    ("b", "boolean", "bool", "b"),
    ("n", "numeric", "num", "n"),
]
COLNAMES = [c[0] for c in COLUMNS]
KIND = {c[0]: c[2] for c in COLUMNS}

TENANTS = ["acme", "ACME", "globex", "initech", "müller", "o'brien",
           "umbrella corp", "tenant_%", "wayne", "stark", "tyrell",
           "empty_one"]
SHARDS = ["shard_a", "shard_b", "shard_c", "shard_d", "shard_e"]
DATA_SHARDS = SHARDS[:4]        # shard_e holds only tenant empty_one: no rows

STRINGS = [
    "apple", "Apple", "APPLE", "apples", "banana", "Banana", "cherry",
    "Ärger", "ärger", "Arger", "école", "Ecole", "ecole", "e\u0301cole",
    "日本", "日本語", "", " ", "  padded  ", "a%b", "a_b", "a\\b", "a\\\\b",
    "%", "_", "\\", "star*", "q?", "[x]", "x]", "[", "a[b]c", "O'Reilly",
    'say "hi"', "tab\there", "zzz", "Zebra", "10", "9", "100", "ß", "SS",
    "ss", "İstanbul", "ıi", "ﬁsh", "😀 smile", "naïve", "NAÏVE", "abc",
    "ABC", "aBc", "a", "b", "-", "a-b", "a b", "ab", "a*b", "a?b",
]

EDGE_INTS = [0, 1, -1, 2, 7, 42, -42, 100, 2147483647, -2147483648,
             2147483648, -2147483649, 9007199254740993, 9223372036854775807,
             -9223372036854775808, 9223372036854775806, 4294967296]
EDGE_FLOATS = [0.0, 1.0, -1.0, 0.1, 0.2, 0.30000000000000004, 1.5, -2.25,
               2.5, 1e308, -1e308, 5e-324, 1e-300, 1e15, 1e16, 123456.0,
               9007199254740992.0, 9007199254740993, 3, -7,
               float("inf"), float("-inf")]

failures = []
notes = []


def log(msg=""):
    print(msg, flush=True)


# ---------------------------------------------------------------------------
# Conversions the wrapper documents (src/convert.c)
# ---------------------------------------------------------------------------

def pg_float_text(x):
    """float8out / double_to_shortest_decimal: the shortest text that reads
    back as x, fixed notation for decimal exponents -4 .. 14."""
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0" if math.copysign(1.0, x) < 0 else "0"
    sign, digits, exp = decimal.Decimal(repr(x)).as_tuple()
    digits = list(digits)
    while len(digits) > 1 and digits[-1] == 0:
        digits.pop()
        exp += 1
    nd = len(digits)
    e10 = exp + nd - 1
    ds = "".join(map(str, digits))
    s = "-" if sign else ""
    if -4 <= e10 < 15:
        if exp >= 0:
            s += ds + "0" * exp
        else:
            point = nd + exp
            if point > 0:
                s += ds[:point] + "." + ds[point:]
            else:
                s += "0." + "0" * (-point) + ds
    else:
        s += ds[0] + ("." + ds[1:] if nd > 1 else "")
        s += "e" + ("+" if e10 >= 0 else "-") + "%02d" % abs(e10)
    return s


EPOCH = datetime.datetime(1970, 1, 1)
PG_EPOCH_UNIX = 946684800        # 2000-01-01 in Unix time

DT_RE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})"
                   r"(?:[ T](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?"
                   r"(Z|[+-]\d{2}:\d{2})?)?$")


def parse_sqlite_time(s):
    """Microseconds since the Unix epoch (UTC) of a stored text time, as
    parse_sqlite_datetime reads it."""
    m = DT_RE.match(s)
    if not m:
        raise ValueError("not a time: %r" % s)
    y, mo, d, hh, mi, ss, frac, off = m.groups()
    us = 0
    if frac:
        us = int(frac[:6].ljust(6, "0"))
        if len(frac) > 6 and frac[6] >= "5":
            us += 1
    offset = 0
    if off and off != "Z":
        sign = -1 if off[0] == "-" else 1
        offset = sign * (int(off[1:3]) * 3600 + int(off[4:6]) * 60)
    day = datetime.datetime(int(y), int(mo), int(d))
    secs = (day - EPOCH).days * 86400 + int(hh or 0) * 3600 + \
        int(mi or 0) * 60 + int(ss or 0) - offset
    return secs * 1000000 + us


def epoch_to_us(v):
    """Unix time stored as an integer or a real, in microseconds, rounded
    as the wrapper rounds it (rint of the offset from 2000-01-01)."""
    if isinstance(v, int):
        return v * 1000000
    pg_us = round((v - float(PG_EPOCH_UNIX)) * 1000000.0)
    return pg_us + PG_EPOCH_UNIX * 1000000


def time_value(v):
    if isinstance(v, str):
        return parse_sqlite_time(v)
    return epoch_to_us(v)


def fmt_ts(us):
    dt = EPOCH + datetime.timedelta(microseconds=us)
    return dt.strftime("%Y-%m-%d %H:%M:%S.%f")


def fmt_date(us):
    dt = EPOCH + datetime.timedelta(microseconds=us)
    return dt.strftime("%Y-%m-%d")


BOOL_TEXT = {"t": True, "true": True, "yes": True, "on": True, "1": True,
             "y": True, "f": False, "false": False, "no": False,
             "off": False, "0": False, "n": False}


def expected_row(r):
    """The native row (COPY text fields) for one row read from a shard."""
    (tenant, id_, i, j, k, f, g, t, u, ts, te, b, n) = r
    out = {}
    out["tenant_id"] = tenant
    out["id"] = str(id_)
    out["i"] = None if i is None else str(int(i))
    out["j"] = None if j is None else str(int(j))
    if k is None:
        out["k"] = None
    elif isinstance(k, str):
        out["k"] = str(int(k.strip()))
    else:
        out["k"] = str(int(k))
    out["f"] = None if f is None else pg_float_text(float(f))
    out["g"] = None if g is None else pg_float_text(float(g))
    out["t"] = t
    out["tc"] = t
    if u is None or isinstance(u, str):
        out["u"] = u
    elif isinstance(u, int):
        out["u"] = str(u)
    else:
        out["u"] = pg_float_text(u)
    if ts is None:
        out["ts"] = out["tz"] = out["d"] = None
    else:
        us = time_value(ts)
        out["ts"] = fmt_ts(us)
        out["tz"] = fmt_ts(us) + "+00"
        out["d"] = fmt_date(us)
    out["te"] = None if te is None else fmt_ts(time_value(te))
    if b is None:
        out["b"] = None
    elif isinstance(b, str):
        out["b"] = "t" if BOOL_TEXT[b.strip().lower()] else "f"
    else:
        out["b"] = "t" if b == 1 else "f"
    if n is None:
        out["n"] = None
    elif isinstance(n, str):
        out["n"] = n
    elif isinstance(n, int):
        out["n"] = str(n)
    else:
        out["n"] = pg_float_text(n)
    return [out[c] for c in COLNAMES]


def copy_field(v):
    if v is None:
        return "\\N"
    return (v.replace("\\", "\\\\").replace("\t", "\\t")
            .replace("\n", "\\n").replace("\r", "\\r"))


# ---------------------------------------------------------------------------
# The fleet
# ---------------------------------------------------------------------------

SCHEMAS = {
    # plain, WAL
    "shard_a": """
        CREATE TABLE items(tenant_id TEXT NOT NULL, id INTEGER NOT NULL,
            i INTEGER, j INTEGER, k, f REAL, g, t TEXT, u, ts TEXT, te,
            b INTEGER, n, PRIMARY KEY(tenant_id, id));
        CREATE INDEX items_i ON items(i);
        CREATE INDEX items_t ON items(t);
        CREATE INDEX items_ts ON items(ts);
        CREATE INDEX items_te ON items(te);""",
    # other column order, NOCASE text, NUMERIC integer, rollback journal
    "shard_b": """
        CREATE TABLE items(n, b INTEGER, te DATETIME, ts TEXT, u, t TEXT COLLATE NOCASE,
            g, f FLOAT, k, j INT, i NUMERIC, id INTEGER PRIMARY KEY,
            tenant_id TEXT COLLATE NOCASE NOT NULL);
        CREATE INDEX items_t ON items(t);
        CREATE INDEX items_tenant ON items(tenant_id);
        CREATE INDEX items_f ON items(f);
        CREATE INDEX items_te ON items(te);""",
    # WITHOUT ROWID, WAL
    "shard_c": """
        CREATE TABLE items(tenant_id TEXT NOT NULL, id INTEGER NOT NULL,
            i INTEGER, j INTEGER, k, f REAL, g, t TEXT, u, ts TEXT, te,
            b INTEGER, n, PRIMARY KEY(tenant_id, id)) WITHOUT ROWID;
        CREATE INDEX items_j ON items(j);""",
    # the types an application might write, rollback journal
    "shard_d": """
        CREATE TABLE items(tenant_id VARCHAR(64) NOT NULL, id BIGINT NOT NULL,
            i BIGINT, j INT, k, f DOUBLE, g, t VARCHAR(100), u, ts DATETIME,
            te, b BOOLEAN, n, UNIQUE(tenant_id, id));
        CREATE INDEX items_i ON items(i, t);
        CREATE INDEX items_ts ON items(tenant_id, ts);
        CREATE INDEX items_te ON items(te);""",
}
SCHEMAS["shard_e"] = SCHEMAS["shard_a"]

# The reference table's copy in each shard: the same rows, declared as an
# application might (other column order, a NOCASE name, no index, the
# types of another database), all of INTEGER and TEXT affinity.
REF_SCHEMAS = {
    "shard_a": """
        CREATE TABLE plans(plan_id INTEGER, name TEXT, tier INTEGER,
            price INTEGER);
        CREATE UNIQUE INDEX plans_id ON plans(plan_id);""",
    "shard_b": """
        CREATE TABLE plans(price BIGINT, name TEXT COLLATE NOCASE, tier INT,
            plan_id INT);
        CREATE INDEX plans_name ON plans(name);""",
    "shard_c": """
        CREATE TABLE plans(plan_id INTEGER, name TEXT, tier INTEGER,
            price INTEGER);""",
    "shard_d": """
        CREATE TABLE plans(plan_id BIGINT, name VARCHAR(40), tier SMALLINT,
            price BIGINT, PRIMARY KEY(plan_id));""",
}
REF_SCHEMAS["shard_e"] = REF_SCHEMAS["shard_a"]
WAL = {"shard_a": True, "shard_b": False, "shard_c": True, "shard_d": False,
       "shard_e": True}


def gen_time_text(rng):
    """A time in one of the stored forms the wrapper reads."""
    base = datetime.datetime(1990, 1, 1) + datetime.timedelta(
        seconds=rng.randrange(0, 50 * 365 * 86400))
    if rng.random() < 0.15:
        base = base.replace(hour=10, minute=0, second=0)
    form = rng.randrange(9)
    date = base.strftime("%Y-%m-%d")
    hm = base.strftime("%H:%M")
    hms = base.strftime("%H:%M:%S")
    sep = rng.choice([" ", "T"])
    if form == 0:
        return date
    if form == 1:
        return date + sep + hm
    if form == 2:
        return date + sep + hms
    frac = "".join(rng.choice("0123456789")
                   for _ in range(rng.choice([1, 3, 6, 7, 9])))
    if rng.random() < 0.1:
        frac = "9999995"
    if form == 3:
        return date + sep + hms + "." + frac
    zone = "Z" if form in (4, 5) else "%s%02d:%02d" % (
        rng.choice("+-"), rng.randrange(15), rng.choice([0, 30, 45, 59]))
    if form == 4:
        return date + sep + hm + zone
    if form in (5, 6):
        return date + sep + hms + zone
    return date + sep + hms + "." + frac + zone


def gen_row(rng, tenant, id_):
    def maybe_null(p=0.12):
        return rng.random() < p

    i = None if maybe_null() else rng.choice(
        EDGE_INTS + [rng.randrange(-1000, 1000) for _ in range(10)] +
        [rng.randrange(-2**62, 2**62)])
    j = None if maybe_null() else rng.choice(
        [0, 1, -1, 7, 42, 2147483647, -2147483648] +
        [rng.randrange(-500, 500) for _ in range(10)])
    k = None if maybe_null() else rng.choice(
        [rng.randrange(-100, 100), 9223372036854775807, -5, 42, "42",
         " 17", "-000123", "+8", 5.0, 1e18, -3.0, str(rng.randrange(1000))])
    f = None if maybe_null() else rng.choice(
        EDGE_FLOATS + [round(rng.uniform(-1000, 1000), rng.randrange(6))
                       for _ in range(10)])
    g = None if maybe_null() else rng.choice(
        [9007199254740993, 9007199254740992, 9223372036854775807,
         -9223372036854775807, 3, 0, -1, 2**53 + 5, 0.5, 1e20,
         9007199254740992.0, 1.5, rng.randrange(-50, 50)])
    t = None if maybe_null(0.08) else rng.choice(STRINGS)
    u = None if maybe_null() else rng.choice(
        STRINGS[:20] + [42, -7, 0, 12345678901234567, 0.1, 2.5,
                        0.30000000000000004, 1e300, 1e16, 1e15, 123456.0,
                        1e-5, 100.0, -0.5, float("inf")])
    ts = None if maybe_null(0.08) else gen_time_text(rng)
    r = rng.random()
    if maybe_null(0.08):
        te = None
    elif r < 0.4:
        te = rng.randrange(-30610224000, 253402300799) if rng.random() < 0.2 \
            else rng.randrange(600000000, 2200000000)
    elif r < 0.7:
        te = rng.randrange(600000000, 2200000000) + \
            rng.choice([0.5, 0.25, 0.125, 0.001, 0.1234567, 0.0000005])
    else:
        te = gen_time_text(rng)
    b = None if maybe_null() else rng.choice(
        [0, 1, 0, 1, 1, "true", "f", "yes", "off", "T", " on"])
    n = None if maybe_null() else rng.choice(
        ["123.4500", "-0.0001", "1e5", "0", "0.000", "99999999999999999999.99",
         "-12345678901234567890.123456789", "3.14159", "2.5", "-2.5",
         9223372036854775807, -9223372036854775808, 0, 42, -1,
         2.5, 0.1, 1e16, 1e-7, str(rng.randrange(-10**6, 10**6)) + "." +
         str(rng.randrange(1000)).zfill(3)])
    return dict(tenant_id=tenant, id=id_, i=i, j=j, k=k, f=f, g=g, t=t, u=u,
                ts=ts, te=te, b=b, n=n)


SQLITE_COLS = ["tenant_id", "id", "i", "j", "k", "f", "g", "t", "u", "ts",
               "te", "b", "n"]


def write_table(shard, schema, table, cols, rows):
    """Create a table in the shard's file by schema and insert rows (dicts
    of cols) into it, committed; returns the open connection."""
    con = sqlite3.connect(os.path.join(DIR, "shards", shard + ".db"))
    con.executescript(schema)
    with con:
        con.executemany(
            "INSERT INTO %s(%s) VALUES (%s)" % (
                table, ", ".join(cols), ", ".join("?" * len(cols))),
            [tuple(r[c] for c in cols) for r in rows])
    return con


def build_fleet(rng):
    """Create DIR with directory.db and the shards; return the placement."""
    if os.path.isdir(DIR):
        shutil.rmtree(DIR)
    os.makedirs(os.path.join(DIR, "shards"))
    placement = {}
    for n, tenant in enumerate(TENANTS):
        placement[tenant] = DATA_SHARDS[n % len(DATA_SHARDS)]
    placement["empty_one"] = "shard_e"
    # acme and ACME on different shards (by the round robin), tenant_% and
    # o'brien too.
    con = sqlite3.connect(os.path.join(DIR, "directory.db"))
    con.executescript("""
        PRAGMA journal_mode = WAL;""")
    con.executescript(directory_schema())
    with con:
        for s in SHARDS:
            con.execute("INSERT INTO shards VALUES (?, ?)",
                        (s, "shards/%s.db" % s))
        for tenant, s in placement.items():
            con.execute("INSERT INTO shard_map(tenant_id, shard_id, status, "
                        "updated_at) VALUES (?, ?, 'ACTIVE', 1735689600)",
                        (tenant, s))
    con.close()

    id_ = 0
    rows_by_shard = {s: [] for s in SHARDS}
    for tenant in TENANTS:
        if tenant == "empty_one":
            continue
        for _ in range(rng.randrange(25, 70)):
            id_ += 1
            rows_by_shard[placement[tenant]].append(gen_row(rng, tenant, id_))
    for s in SHARDS:
        con = write_table(s, SCHEMAS[s], "items", SQLITE_COLS,
                          rows_by_shard[s])
        con.execute("PRAGMA journal_mode = %s" % ("WAL" if WAL[s] else "DELETE"))
        con.close()
    global REF_PLANS
    REF_PLANS = build_reference([r for s in SHARDS for r in rows_by_shard[s]])

    if os.geteuid() == 0:
        try:
            pw = pwd.getpwnam("postgres")
            for base, dirs, files in os.walk(DIR):
                os.chown(base, pw.pw_uid, pw.pw_gid)
                for f in files:
                    os.chown(os.path.join(base, f), pw.pw_uid, pw.pw_gid)
        except KeyError:
            pass
    for base, dirs, files in os.walk(DIR):
        os.chmod(base, 0o775)
        for f in files:
            os.chmod(os.path.join(base, f), 0o664)
    return placement


def gen_reference(rows):
    """The reference table's rows: plans keyed by some of the fact rows'
    j values (0, 1, 7 and 42, which many rows hold, among them; -1 and
    -2147483648 never), by keys no fact row holds, and one NULL key; names
    from the strings the fact rows' t holds, some shared, some NULL; tiers
    0 to 4 or NULL; prices with NULLs and int8 extremes, whose sums over a
    join overflow int8.  A random stream of its own (seeded by the seed),
    so that the fleet and the other cases stay what they were."""
    rng = random.Random(SEED * 31 + 7)
    js = sorted({r["j"] for r in rows if r["j"] is not None} -
                {-1, -2147483648, 0, 1, 7, 42})
    keys = [0, 1, 7, 42, 2147483647] + rng.sample(js, min(len(js), 30)) + \
        [rng.randrange(600, 100000) for _ in range(6)]
    keys = list(dict.fromkeys(keys)) + [None]
    rng.shuffle(keys)
    out = []
    for k in keys:
        name = None if rng.random() < 0.1 else rng.choice(STRINGS[:30])
        tier = None if rng.random() < 0.15 else rng.randrange(5)
        price = None if rng.random() < 0.1 else rng.choice(
            [rng.randrange(0, 5000), rng.randrange(-100, 100), 0,
             4611686018427387904, 9223372036854775807,
             -9223372036854775808, rng.randrange(0, 5000)])
        out.append(dict(plan_id=k, name=name, tier=tier, price=price))
    return out


def build_reference(rows):
    """Write the reference table's copy into every shard, and its rows, as
    the native table reads them, into ref.copy."""
    plans = gen_reference(rows)
    cols = [c for c, _ in REF_COLUMNS]
    for s in SHARDS:
        write_table(s, REF_SCHEMAS[s], "plans", cols, plans).close()
    with open(os.path.join(DIR, "ref.copy"), "w", encoding="utf-8") as fh:
        for p in plans:
            fh.write("\t".join(copy_field(None if p[c] is None else str(p[c]))
                               for c in cols) + "\n")
    return plans


def read_back():
    """Every row as the shards store it, converted to the native table's
    text fields."""
    rows = []
    for s in SHARDS:
        con = sqlite3.connect("file:%s?mode=ro" % os.path.join(
            DIR, "shards", s + ".db"), uri=True)
        for r in con.execute("SELECT %s FROM items" % ", ".join(SQLITE_COLS)):
            rows.append(expected_row(r))
        con.close()
    return rows


# ---------------------------------------------------------------------------
# psql
# ---------------------------------------------------------------------------

def psql(script, timeout=100):
    """Run a script in one psql session; returns (rc, stdout, stderr)."""
    p = subprocess.run(
        ["psql", "-X", "-q", "-A", "-t", "-F", FS, "-v", "ON_ERROR_STOP=0",
         "-f", "-"],
        input=script, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def sql_str(s):
    return "'" + s.replace("'", "''") + "'"


def setup_sql(has_icu, has_ci):
    cols = []
    for name, typ, kind, scol in COLUMNS:
        if not has_icu:
            typ = typ.replace(' COLLATE "en-x-icu"', "")
        cols.append((name, typ, scol))
    ft_cols = []
    for n, t, s in cols:
        typ, _, coll = t.partition(" COLLATE ")
        ft_cols.append("%s %s%s%s" % (
            n, typ, "" if n == s else " OPTIONS (column %s)" % sql_str(s),
            " COLLATE " + coll if coll else ""))
    ft_cols = ",\n  ".join(ft_cols)
    nt_cols = ",\n  ".join("%s %s" % (n, t) for n, t, s in cols)
    ref_cols = ", ".join("%s %s" % c for c in REF_COLUMNS)
    ci = ""
    if has_ci:
        ci = ("CREATE COLLATION IF NOT EXISTS diff_ci (provider = icu, "
              "locale = 'und-u-ks-level2', deterministic = false);\n")
    return f"""
\\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
DROP SERVER IF EXISTS {SERVER} CASCADE;
DROP TABLE IF EXISTS {NT} CASCADE;
{ci}CREATE SERVER {SERVER} FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory {sql_str(os.path.join(DIR, "directory.db"))});
CREATE FOREIGN TABLE {FT} (
  {ft_cols}
) SERVER {SERVER} OPTIONS (table 'items', tenant_column 'tenant_id');
CREATE TABLE {NT} (
  {nt_cols}
);
\\copy {NT} FROM {sql_str(os.path.join(DIR, "native.copy"))}
ANALYZE {NT};
ANALYZE {FT};
DROP TABLE IF EXISTS {RN};
CREATE FOREIGN TABLE {RT} ({ref_cols}) SERVER {SERVER}
  OPTIONS (table 'plans', distribution 'reference');
CREATE TABLE {RN} ({ref_cols});
\copy {RN} FROM {sql_str(os.path.join(DIR, "ref.copy"))}
ANALYZE {RN};
ANALYZE {RT};
DROP VIEW IF EXISTS {NT_SCOPED};
CREATE VIEW {NT_SCOPED} AS SELECT * FROM {NT}
  WHERE tenant_id IN ({", ".join(sql_str(t) for t in SCOPED_TENANTS)});
DO $$BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{SCOPED_ROLE}') THEN
    CREATE ROLE {SCOPED_ROLE} NOLOGIN;
  END IF;
END$$;
GRANT SELECT ON {FT}, {NT}, {NT_SCOPED}, {RT}, {RN} TO {SCOPED_ROLE};
CREATE USER MAPPING FOR {SCOPED_ROLE} SERVER {SERVER}
  OPTIONS (tenants {sql_str(",".join(SCOPED_TENANTS))});
"""


SESSION = f"""
\\pset null '{NULL_TEXT}'
SET TimeZone = 'Asia/Kolkata';
SET DateStyle = 'ISO, MDY';
SET extra_float_digits = 1;
SET statement_timeout = '30s';
SET client_min_messages = error;
"""


# ---------------------------------------------------------------------------
# Query generation
# ---------------------------------------------------------------------------

class Gen:
    def __init__(self, rng, rows, has_icu, has_ci):
        self.rng = rng
        self.has_icu = has_icu
        self.has_ci = has_ci
        # values present in the data, per column, as text fields
        self.vals = {c: sorted({r[n] for r in rows if r[n] is not None})
                     for n, c in enumerate(COLNAMES)}

    def pick(self, seq):
        return self.rng.choice(seq)

    def chance(self, p):
        return self.rng.random() < p

    # --- literals ---------------------------------------------------------

    def int_value(self, col):
        vals = self.vals.get(col) or ["0"]
        if self.chance(0.6):
            return int(self.pick(vals))
        return self.pick(EDGE_INTS + [self.rng.randrange(-100, 100)])

    def int4_value(self):
        while True:
            v = self.int_value("j")
            if -2**31 <= v < 2**31:
                return v

    def int_literal(self, col, v=None):
        if v is None:
            v = self.int_value(col)
        forms = ["plain", "plain", "bigint", "int", "smallint", "quoted",
                 "numeric", "half", "float", "numcast"]
        form = self.pick(forms)
        s = str(v)
        if form == "plain":
            return s if v >= 0 else "(%s)" % s
        if form == "bigint":
            return "%s::bigint" % sql_str(s) if v < 0 else s + "::bigint"
        if form == "int":
            if -2**31 <= v < 2**31:
                return "%s::int" % sql_str(s)
            return "%s::bigint" % sql_str(s)
        if form == "smallint":
            if -2**15 <= v < 2**15:
                return "%s::smallint" % sql_str(s)
            return "%s::bigint" % sql_str(s)
        if form == "quoted":
            return sql_str(s)
        if form == "numeric":
            return "%s.0" % s if v >= 0 else "(%s.0)" % s
        if form == "half":
            return "%s.5" % s if v >= 0 else "(%s.5)" % s
        if form == "float":
            return "%s::float8" % sql_str(s)
        return "%s::numeric" % sql_str(s)

    def float_literal(self, col):
        vals = self.vals.get(col) or ["0"]
        r = self.rng.random()
        if r < 0.5:
            v = self.pick(vals)
            if v in ("Infinity", "-Infinity"):
                return "%s::float8" % sql_str(v)
            return self.pick([v, "%s::float8" % sql_str(v),
                              "%s::double precision" % sql_str(v)])
        if r < 0.7:
            return self.pick(["'Infinity'::float8", "'-Infinity'::float8",
                              "'NaN'::float8", "'inf'::float8", "1e308",
                              "5e-324::float8", "0.1", "0.30000000000000004",
                              "9007199254740992", "9007199254740993",
                              "9223372036854775807", "1.5::real", "2.5",
                              "0", "-0.0", "'-0'::float8", "1e16"])
        return self.int_literal("i", self.int_value("i"))

    def text_value(self, col):
        vals = self.vals.get(col) or [""]
        if col == "tenant_id":
            pool = TENANTS + ["nobody", "Acme", "MÜLLER", "tenant_x",
                              "O'BRIEN", "acme "]
            return self.pick(pool)
        if self.chance(0.6):
            return self.pick(vals)
        return self.pick(STRINGS + ["0.3", "0.30000000000000004", "1e+300",
                                    "1.0e+300", "42", "1e+16", "Inf",
                                    "Infinity", "0.1", "123456", "123456.0",
                                    "b", "m", "Z", "é", "日"])

    def collate(self, allow_ci=True):
        opts = ["", "", "", ' COLLATE "C"', ' COLLATE "default"',
                ' COLLATE "POSIX"']
        if self.has_icu:
            opts += [' COLLATE "en-x-icu"', ' COLLATE "en-x-icu"']
        if self.has_ci and allow_ci:
            opts += [" COLLATE diff_ci"]
        return self.pick(opts)

    def text_literal(self, col):
        return sql_str(self.text_value(col))

    def ts_literal(self, col):
        kind = KIND[col]
        vals = self.vals.get(col) or ["2020-01-01 00:00:00"]
        v = self.pick(vals)
        if kind == "date":
            r = self.rng.random()
            if r < 0.6:
                return sql_str(v) + self.pick(["", "::date"])
            return sql_str(v + " 12:00") + "::timestamp"
        v = v.replace("+00", "")
        if self.chance(0.3):
            v = v[:10] + self.pick([" 00:00:00", " 10:00:00", ""])
        if self.chance(0.2):
            v = self.pick(["1990-01-01", "2015-06-30 12:00", "2040-12-31",
                           "1000-01-01", "9999-12-31 23:59:59.999999",
                           "infinity", "-infinity", "2024-02-29"])
        casts = {"ts": ["", "::timestamp", "::timestamptz", "::date"],
                 "tz": ["", "::timestamptz", "::timestamp", "::date",
                        "::timestamptz + interval '5 hours'"]}
        return sql_str(v) + self.pick(casts[kind if kind != "date" else "ts"])

    def num_literal(self):
        vals = self.vals.get("n") or ["0"]
        if self.chance(0.5):
            v = self.pick(vals)
            return self.pick([sql_str(v), "%s::numeric" % sql_str(v)])
        return self.pick(["2.5", "0", "-0.0001", "1e5", "100000",
                          "123.45", "9223372036854775807", "0.1::float8",
                          "'NaN'::numeric", "42", "(-1)", "1e16",
                          "99999999999999999999.99"])

    def literal_for(self, col):
        k = KIND[col]
        if k == "int":
            return self.int_literal(col)
        if k == "float":
            return self.float_literal(col)
        if k == "text":
            return self.text_literal(col)
        if k in ("ts", "tz", "date"):
            return self.ts_literal(col)
        if k == "num":
            return self.num_literal()
        return self.pick(["true", "false", "'t'", "'yes'::bool"])

    # --- predicates ---------------------------------------------------------

    def like_pattern(self, col):
        base = self.text_value(col) if col != "tenant_id" else \
            self.pick(TENANTS)
        parts = []
        # a substring of a value, some characters replaced by wildcards
        if base and self.chance(0.7):
            a = self.rng.randrange(len(base))
            b = self.rng.randrange(a, len(base) + 1)
            chunk = base[a:b]
            for ch in chunk:
                r = self.rng.random()
                if r < 0.1:
                    parts.append("_")
                elif r < 0.15:
                    parts.append("%")
                elif ch in "%_\\" and r < 0.8:
                    parts.append("\\" + ch)
                else:
                    parts.append(ch)
            if self.chance(0.6):
                parts.insert(0, "%")
            if self.chance(0.6):
                parts.append("%")
        else:
            for _ in range(self.rng.randrange(1, 5)):
                parts.append(self.pick(["%", "_", "a", "A", "\\%", "\\_",
                                        "\\\\", "*", "?", "[", "]", "[x]",
                                        "\\a", "é", "日", "'", "%%", "ß",
                                        "b", "1", "."]))
        # No lone escape at the end: PostgreSQL raises its error only for a
        # row that reaches the LIKE, and which rows do depends on the plan
        # (a fixed case checks the error).
        return "".join(parts)

    def like_atom(self, col):
        pat = self.like_pattern(col)
        op = self.pick(["LIKE", "LIKE", "NOT LIKE", "ILIKE", "NOT ILIKE",
                        "~~", "!~~", "~~*"])
        lit = sql_str(pat)
        if op in ("LIKE", "NOT LIKE") and self.chance(0.2):
            esc = self.pick(["#", "", "\\", "!"])
            if esc == "#":
                lit = sql_str(pat.replace("\\", "#"))
            return "%s %s %s ESCAPE %s" % (col, op, lit, sql_str(esc))
        # Not the non-deterministic collation: with statistics, the planner
        # itself raises its "not supported for LIKE" error (patternsel),
        # without, only a row that reaches the operator does.
        coll = self.collate(False) if self.chance(0.3) else ""
        return "%s %s %s%s" % (col, op, lit, coll)

    def list_of(self, col, n=None):
        n = n or self.rng.randrange(1, 6)
        items = [self.literal_for(col) for _ in range(n)]
        if self.chance(0.15):
            items.append("NULL")
        return items

    def array_const(self, col):
        """A constant array literal '{...}'::type[]."""
        k = KIND[col]
        if k == "int":
            vals = [str(self.int_value(col)) for _ in
                    range(self.rng.randrange(1, 5))]
            typ = self.pick(["bigint[]", "int[]"] if all(
                -2**31 <= int(v) < 2**31 for v in vals) else ["bigint[]"])
        elif k == "text":
            vals = ['"%s"' % self.text_value(col).replace("\\", "\\\\")
                    .replace('"', '\\"') for _ in
                    range(self.rng.randrange(1, 5))]
            typ = "text[]"
        else:
            return None
        if self.chance(0.15):
            vals.append("NULL")
        return sql_str("{" + ",".join(vals) + "}") + "::" + typ

    def atom(self, col=None):
        col = col or self.pick(COLNAMES + ["i", "j", "t", "tc", "f", "tenant_id",
                                           "t", "i", "u", "k"])
        k = KIND[col]
        r = self.rng.random()
        if r < 0.08:
            return "%s IS %sNULL" % (col, self.pick(["", "NOT "]))
        if k == "bool":
            return self.pick(["b", "NOT b", "b IS TRUE", "b IS NOT TRUE",
                              "b IS FALSE", "b IS NOT FALSE", "b IS UNKNOWN",
                              "b = true", "b <> false", "b = 't'",
                              "b AND i > 0", "b IS DISTINCT FROM false"])
        if k == "text" and r < 0.3:
            return self.like_atom(col)
        if r < 0.55:
            op = self.pick(["=", "=", "<>", "!=", "<", "<=", ">", ">="])
            lit = self.literal_for(col)
            if k == "text":
                lit += self.collate()
            if self.chance(0.2):
                return "%s %s %s" % (lit, op, col)
            return "%s %s %s" % (col, op, lit)
        if r < 0.68:
            items = self.list_of(col)
            form = self.pick(["IN", "NOT IN", "ANY", "ALL", "CONST"])
            coll = self.collate() if k == "text" and self.chance(0.3) else ""
            if form == "IN":
                return "%s%s IN (%s)" % (col, coll, ", ".join(items))
            if form == "NOT IN":
                return "%s%s NOT IN (%s)" % (col, coll, ", ".join(items))
            if k not in ("int", "text"):
                typ = {"float": "float8", "ts": "timestamp",
                       "tz": "timestamptz", "date": "date",
                       "num": "numeric"}[k]
                items = ["(%s)::%s" % (x, typ) for x in items]
            if form == "ANY":
                return "%s%s = ANY (ARRAY[%s])" % (col, coll, ", ".join(items))
            if form == "ALL":
                return "%s%s <> ALL (ARRAY[%s])" % (col, coll, ", ".join(items))
            arr = self.array_const(col)
            if arr is None:
                return "%s IN (%s)" % (col, ", ".join(items))
            return "%s%s %s (%s)" % (col, coll, self.pick(["= ANY", "<> ALL"]),
                                     arr)
        if r < 0.78:
            a, b = self.literal_for(col), self.literal_for(col)
            if k == "text" and self.chance(0.4):
                a = "(%s%s)" % (a, self.collate(False))
            return "%s %s %s AND %s" % (
                col, self.pick(["BETWEEN", "NOT BETWEEN", "BETWEEN SYMMETRIC"]),
                a, b)
        if r < 0.86:
            # column against column, or an expression PostgreSQL must compute
            same = [c for c in COLNAMES if KIND[c] == k and c != col]
            if k == "int":
                return self.pick(["%s = %s" % (col, self.pick(same)),
                                  "%s < %s" % (col, self.pick(same)),
                                  "%s %% 7 = %d" % (col, self.rng.randrange(-3, 7)),
                                  "%s / 3 > 1" % col,
                                  "abs(j::bigint) > 100", "i::numeric > 2.5",
                                  "j::bigint + 1 > 0", "j / 3 = 1",
                                  "%s = n" % col, "%s::float8 = g" % col])
            if k == "float":
                return self.pick(["f = g", "f < g", "f > i", "f::numeric > 2.5",
                                  "g = i", "f::numeric * 2 > 1", "f = 'NaN'",
                                  "g >= 9007199254740992", "f = i"])
            if k == "text":
                return self.pick([
                    "lower(%s) = %s" % (col, self.text_literal(col)),
                    "upper(%s) LIKE 'A%%'" % col,
                    "length(%s) > 3" % col,
                    "%s || 'x' = 'applex'" % col,
                    "%s ~ '^[a-z]'" % col, "%s ~* 'É'" % col,
                    "%s SIMILAR TO '%%(a|b)%%'" % col,
                    "t = tc", "t < tc", "t = u", "tenant_id = t",
                    "%s > u COLLATE \"C\"" % col,
                    "position('a' in %s) = 1" % col,
                    "%s = ''" % col, "%s <> ''" % col])
            if k in ("ts", "tz", "date"):
                return self.pick(["ts = te", "ts < te", "tz::date = d",
                                  "date_trunc('day', ts) = d",
                                  "extract(year from ts) > 2010",
                                  "te > ts - interval '1 year'",
                                  "d = '2024-02-29'", "ts::date = d",
                                  "extract(microseconds from ts) > 500000",
                                  "ts::date >= '2024-01-01'",
                                  "CAST(te AS date) = '2024-02-29'",
                                  "ts >= CAST(now() - interval '5000 days' AS date)",
                                  "tz < '2020-01-01'::date"])
            if k == "num":
                return self.pick(["n = i", "n > j", "n::float8 > f",
                                  "n = 2.5", "n < 0", "n = round(n)",
                                  "n * 2 > 5", "scale(n) > 2"])
        if r < 0.93 and k in ("int", "text"):
            return self.routing_atom()
        op = self.pick(["=", "<>", "<", ">="])
        return "%s %s %s" % (col, op, self.literal_for(col))

    # --- time conditions and buckets -----------------------------------------
    # Every form of time condition the shards run (an exact check plus an
    # index range on the stored column): each comparison, BETWEEN and IN,
    # values of every time type against every time column, values computed
    # once per statement; over ts (TEXT in shards a-c, DATETIME, so NUMERIC,
    # in d), te (untyped in a and c, DATETIME in b and d: integers, reals
    # and text) and the dates of both.

    def time_value(self, col):
        """A value of any time type, near the column's stored values."""
        col = "te" if "te" in col else col.split("::")[0]
        vals = self.vals.get(col) or ["2020-01-01 00:00:00"]
        v = self.pick(vals).replace("+00", "")
        if self.chance(0.3):
            v = v[:10] + self.pick([" 00:00:00", " 23:59:59.999999", "",
                                    " 05:30", " 12:00:00.5"])
        if self.chance(0.1):
            v = self.pick(["1970-01-01", "1969-12-31 23:59:59.75",
                           "0001-01-01", "9999-12-31 23:59:59",
                           "infinity", "-infinity", "2024-03-10 02:30",
                           "2024-11-03 01:30"])
        r = self.rng.random()
        if r < 0.55:
            return sql_str(v) + self.pick(["", "::timestamp",
                                           "::timestamptz", "::date"])
        if r < 0.7:
            return "%s::timestamptz %s interval '%d %s'" % (
                sql_str(v), self.pick(["-", "+"]), self.rng.randrange(0, 40),
                self.pick(["days", "hours", "minutes"]))
        if r < 0.8:
            return "to_timestamp(%s)" % self.pick([
                str(self.rng.randrange(0, 2200000000)), "1710054000.5",
                "-86400.25", "946684800"])
        if r < 0.9:
            return "date_trunc('%s', %s::timestamptz)" % (
                self.pick(["day", "month", "hour"]), sql_str(v))
        return self.pick(["now() - interval '%d days'" % self.rng.randrange(0, 20000),
                          "current_date - %d" % self.rng.randrange(0, 20000),
                          "CAST(now() + interval '-30 day' AS date)",
                          "localtimestamp - interval '40 years'"])

    def time_atom(self):
        col = self.pick(["ts", "ts", "tz", "d", "te", "te", "ts::date",
                         "CAST(te AS date)"])
        r = self.rng.random()
        if r < 0.6:
            op = self.pick(["=", "<>", "<", "<=", ">", ">="])
            if self.chance(0.15):
                return "%s %s %s" % (self.time_value(col), op, col)
            return "%s %s %s" % (col, op, self.time_value(col))
        if r < 0.8:
            return "%s %sBETWEEN %s AND %s" % (
                col, self.pick(["", "", "NOT "]), self.time_value(col),
                self.time_value(col))
        typ = {"tz": "timestamptz", "d": "date", "ts::date": "date",
               "CAST(te AS date)": "date"}.get(col, "timestamp")
        items = [self.time_value(col) for _ in range(self.rng.randrange(1, 4))]
        if self.chance(0.2):
            items.append("NULL")
        return "%s %s (%s)" % (col, self.pick(["IN", "IN", "NOT IN"]),
                               ", ".join("(%s)::%s" % (x, typ) for x in items))

    def time_case(self):
        """Rows by time conditions (mostly ANDed, at the top, where their
        index ranges go), with other conditions and routing now and then."""
        conds = [self.time_atom() for _ in range(self.rng.randrange(1, 4))]
        if self.chance(0.3):
            conds.append(self.pred(2))
        if self.chance(0.25):
            conds.append(self.routing_atom())
        glue = " AND " if self.chance(0.85) else " OR "
        case = Case("SELECT id, ts, tz, d, te FROM {T} x WHERE %s" %
                    glue.join(conds))
        case.time = True
        return case

    TIME_BUCKETS = [
        "date_trunc('%s', %s)" % (u, c)
        for u in ("minute", "hour", "day", "week", "month", "quarter", "year")
        for c in ("ts", "te")] + [
        "extract(%s FROM %s)" % (f, c)
        for f in ("year", "quarter", "month", "day", "hour", "minute", "dow",
                  "isodow", "doy")
        for c in ("ts", "te", "d")] + [
        "date_trunc('%s', d::timestamp)" % u
        for u in ("day", "week", "month", "quarter", "year")] + [
        "date_part('hour', ts)", "date_part('doy', te)", "date_part('dow', d)",
        "ts::date", "CAST(te AS date)", "date_trunc('month', d)",
        "date_trunc('week', d)", "d"]

    # Bucket forms as BI tools write them (the shards group by a stand-in,
    # the merge computes the key): Metabase's casts of extract, Sunday
    # weeks and report time zones, Grafana's $__timeGroup, Superset's
    # minute grains, numeric bins.
    BUCKET_FORMS = [
        "CAST(extract(%s FROM %s) AS integer)" % (u, c)
        for u in ("day", "dow", "isodow", "doy", "week", "month", "quarter",
                  "year")
        for c in ("ts", "te", "tz", "d")
    ] + [
        f.replace("{c}", c)
        for f in ("CAST(extract(hour FROM {c}) AS integer)",
                  "CAST(extract(minute FROM {c}) AS integer)",
                  "(CAST(extract(dow FROM {c}) AS integer) + 1)",
                  "(date_trunc('week', ({c} + INTERVAL '1 day')) + "
                  "INTERVAL '-1 day')",
                  "CAST((date_trunc('week', ({c} + INTERVAL '1 day')) + "
                  "INTERVAL '-1 day') AS date)",
                  "date_trunc('day', timezone('America/New_York', "
                  "timezone('UTC', {c})))",
                  "date_trunc('hour', timezone('Asia/Kathmandu', "
                  "timezone('UTC', {c})))",
                  "timezone('Europe/Berlin', timezone('UTC', {c}))",
                  "floor(extract(epoch from {c})/300)*300",
                  "floor(extract(epoch from {c})/86400)*86400",
                  "floor(extract(epoch from {c})/604800)*604800",
                  "date_trunc('hour', {c}) + INTERVAL '5 minute' * "
                  "floor(extract(minute FROM {c}) / 5)",
                  "date_trunc('hour', {c}) + INTERVAL '15 minute' * "
                  "floor(extract(minute FROM {c}) / 15)")
        for c in ("ts", "te", "tz")
    ] + [
        "date_trunc('day', timezone('Asia/Kolkata', tz))",
        "CAST((CAST(date_trunc('week', CAST((d + INTERVAL '1 day') AS date)) "
        "AS date) + INTERVAL '-1 day') AS date)",
        "floor((j / 5000.0)) * 5000.0", "floor((i / 50.0)) * 50.0",
        "floor(((k - 3.0) / 7)) * 7 + 3.0", "floor((j / 1)) * 1"]

    def time_bucket_case(self):
        """Time buckets of every unit and field, with min/max of times,
        grouped in the shards (by the reading threads or by SQLite)."""
        keys = self.rng.sample(self.TIME_BUCKETS, self.rng.randrange(1, 3))
        if self.chance(0.5):
            keys[0] = self.pick(self.BUCKET_FORMS)
        if self.chance(0.2):
            keys.append("tenant_id")
        aggs = ", ".join(self.rng.sample(
            ["count(*)", "sum(j)", "min(ts)", "max(ts)", "min(te)", "max(d)",
             "min(tz)", "count(te)", "max(id)"], self.rng.randrange(1, 4)))
        where = " AND ".join(self.time_atom() for _ in
                             range(self.rng.randrange(0, 2))) or "true"
        g = ", ".join(keys)
        case = Case("SELECT %s, %s FROM {T} x WHERE %s GROUP BY %s" % (
            g, aggs, where, g))
        if self.chance(0.4):
            case.setting = "sqlite_shard_fdw.thread_aggregation = off"
        case.bucket = True
        return case

    def routing_atom(self):
        r = self.rng.random()
        tv = lambda: sql_str(self.text_value("tenant_id"))
        if r < 0.35:
            return "tenant_id = %s%s" % (tv(), self.collate() if
                                         self.chance(0.3) else "")
        if r < 0.55:
            return "tenant_id IN (%s)" % ", ".join(
                tv() for _ in range(self.rng.randrange(1, 4)))
        if r < 0.7:
            return "tenant_id = ANY (ARRAY[%s])" % ", ".join(
                tv() for _ in range(self.rng.randrange(1, 4)))
        if r < 0.8:
            return "tenant_id = ANY (%s)" % self.array_const("tenant_id")
        if r < 0.9:
            return "%s = tenant_id" % tv()
        return "tenant_id <> %s" % tv()

    def pred(self, depth=0):
        r = self.rng.random()
        if depth >= 3 or r < 0.35:
            return self.atom()
        if r < 0.65:
            n = self.rng.randrange(2, 4)
            return "(" + " AND ".join(self.pred(depth + 1) for _ in range(n)) + ")"
        if r < 0.9:
            n = self.rng.randrange(2, 4)
            return "(" + " OR ".join(self.pred(depth + 1) for _ in range(n)) + ")"
        return "NOT (%s)" % self.pred(depth + 1)

    def where(self):
        p = self.pred()
        if self.chance(0.25):
            p = "%s AND %s" % (self.routing_atom(), p)
        return p

    def select_list(self):
        if self.chance(0.05):
            return "x"                       # the whole row
        if self.chance(0.05):
            return "*"
        cols = ["id"] + self.rng.sample(COLNAMES, self.rng.randrange(1, 7))
        return ", ".join(dict.fromkeys(cols))

    # --- cases --------------------------------------------------------------

    def case(self):
        case = self.some_case()
        if self.chance(0.15):
            case.scoped = True
        return case

    def some_case(self):
        r = self.rng.random()
        if r < 0.62:
            return Case("SELECT %s FROM {T} x WHERE %s" % (
                self.select_list(), self.where()))
        if r < 0.7:
            return self.aggregate_case()
        if r < 0.77:
            order = self.pick([
                "t COLLATE \"en-x-icu\"" if self.has_icu else "t",
                "tc DESC", "t COLLATE \"C\"", "f DESC NULLS LAST", "i",
                "ts", "tz DESC", "n", "u", "b, j", "g NULLS FIRST",
                "tenant_id", "te"])
            return Case("SELECT id, %s FROM {T} x WHERE %s ORDER BY %s, id "
                        "LIMIT %d" % (order.split()[0].split(",")[0],
                                      self.pred(), order,
                                      self.rng.randrange(1, 30)),
                        ordered=True)
        if r < 0.82:
            return Case(self.pick([
                "SELECT x.id, y.yid FROM {T} x JOIN (SELECT id AS yid, "
                "tenant_id AS ytn, j AS yj FROM {T}) y ON x.tenant_id = y.ytn "
                "AND x.j = y.yj WHERE %s" % self.pred(),
                "SELECT x.id, y.yt FROM {T} x JOIN (SELECT id AS yid, t AS yt "
                "FROM %s) y ON x.id = y.yid WHERE x.t IS DISTINCT FROM y.yt "
                "OR %s" % (NT, self.pred()),
                "SELECT x.tenant_id, count(*) FROM {T} x LEFT JOIN (SELECT "
                "id AS yid, i AS yi FROM {T}) y ON x.i = y.yi AND x.id <> "
                "y.yid WHERE %s GROUP BY 1" % self.pred(),
                "SELECT x.id FROM {T} x WHERE x.i IN (SELECT y.i FROM {T} y "
                "WHERE %s)" % self.pred(),
            ]))
        if r < 0.87:
            tenants = ", ".join("(%s)" % sql_str(self.text_value("tenant_id"))
                                for _ in range(self.rng.randrange(2, 6)))
            return Case(self.pick([
                # rescans with new parameter values: routing per outer row
                "SELECT v.tn, (SELECT count(*) FROM {T} x WHERE "
                "x.tenant_id = v.tn AND %s) FROM (VALUES %s) v(tn)" % (
                    self.pred(), tenants),
                "SELECT v.tn, s.c, s.m FROM (VALUES %s) v(tn), LATERAL "
                "(SELECT count(*) AS c, max(id) AS m FROM {T} x WHERE "
                "x.tenant_id = v.tn AND %s) s" % (tenants, self.pred()),
                "SELECT y.id, (SELECT count(*) FROM {T} x WHERE x.i = y.i) "
                "FROM %s y WHERE y.id %% 17 = %d" % (NT, self.rng.randrange(17)),
                "SELECT id, t FROM {T} x WHERE x.tenant_id = (SELECT "
                "min(tenant_id) FROM %s WHERE %s)" % (NT, self.pred()),
                "SELECT id FROM {T} x WHERE x.i = (SELECT max(i) FROM %s "
                "WHERE %s)" % (NT, self.pred()),
                "SELECT id FROM {T} x WHERE x.t = ANY (SELECT t FROM %s "
                "WHERE id %% 5 = 0) AND %s" % (NT, self.pred()),
                # joins and semi-joins with a local list of tenants: a scan
                # per outer row, routed to that row's tenant
                "SELECT v.tn, count(x.id), sum(x.i) FROM (VALUES %s) v(tn) "
                "JOIN {T} x ON x.tenant_id = v.tn WHERE %s GROUP BY 1" % (
                    tenants, self.pred()),
                "SELECT v.tn, x.id FROM (VALUES %s) v(tn) LEFT JOIN {T} x "
                "ON x.tenant_id = v.tn AND %s" % (tenants, self.pred()),
                "SELECT id, tenant_id FROM {T} x WHERE x.tenant_id IN "
                "(SELECT tn FROM (VALUES %s) v(tn)) AND %s" % (
                    tenants, self.pred()),
                "SELECT v.tn FROM (VALUES %s) v(tn) WHERE %sEXISTS (SELECT 1 "
                "FROM {T} x WHERE x.tenant_id = v.tn AND %s)" % (
                    tenants, self.pick(["", "NOT "]), self.pred()),
            ]))
        return self.prepared_case()

    AGGREGATES = [
        "count(*)", "count(i)", "count(t)", "count(DISTINCT t)",
        "count(DISTINCT tc)", "min(i)", "max(i)", "sum(i)", "avg(i)",
        "min(j)", "max(j)", "sum(j)", "avg(j)", "sum(k)", "avg(k)",
        "min(t)", "max(t)", "min(tc)", "max(tc)", "min(t COLLATE \"C\")",
        "max(u)", "min(ts)", "max(tz)", "min(d)", "max(te)", "count(ts)",
        "count(d)", "count(te)",
        "bool_and(b)", "bool_or(b)", "every(b)", "min(f)", "max(f)",
        "min(g)", "max(g)", "count(n)", "sum(n)", "min(n)::float8",
        "sum(i) FILTER (WHERE j > 0)", "count(*) FILTER (WHERE b)",
        "string_agg(t, ',' ORDER BY t COLLATE \"C\", id)",
        "array_agg(id ORDER BY id)", "sum(j::bigint * 2)",
        "max(length(t))", "sum(CASE WHEN b THEN 1 ELSE 0 END)",
        "bit_or(j)", "bit_and(i)",
    ]

    def aggregate_case(self):
        """Aggregates (the shards may compute part of them), grouped or
        not, with HAVING, ORDER BY and LIMIT."""
        aggs = ", ".join(self.rng.sample(self.AGGREGATES,
                                         self.rng.randrange(1, 7)))
        where = self.where() if self.chance(0.7) else "true"
        r = self.rng.random()
        if r < 0.25:
            return Case("SELECT %s FROM {T} x WHERE %s" % (aggs, where))
        g = self.pick(["tenant_id", "tenant_id", "b", "j % 3", "t", "tc",
                       "d", "(i > 0)", "n IS NULL", "tenant_id, b",
                       "date_trunc('year', ts)", "lower(t)", "f", "i",
                       "extract(month FROM d)", "date_part('dow', d)",
                       "date_trunc('week', d::timestamp)", "tenant_id, d",
                       "date_trunc('month', d)", "date_trunc('day', tz)",
                       "date_trunc('hour', tz), b", "date_trunc('week', tz)",
                       "extract(hour FROM tz)", "date_part('dow', tz), b",
                       "CAST(tz AS date)",
                       "date_trunc('day', tz AT TIME ZONE 'America/New_York')",
                       "extract(hour FROM tz AT TIME ZONE 'UTC')"])
        having = self.pick(["", "", " HAVING count(*) > 1",
                            " HAVING min(i) < 0", " HAVING sum(j) > 0",
                            " HAVING max(t) > 'b'"])
        ngroup = len(g.split(","))
        sql = "SELECT %s, %s FROM {T} x WHERE %s GROUP BY %s%s" % (
            g, aggs, where, g, having)
        if r < 0.45:
            # order by every grouping column: a determined order
            return Case(sql + " ORDER BY %s LIMIT %d" % (
                ", ".join(str(n + 1) for n in range(ngroup)),
                self.rng.randrange(1, 8)), ordered=True)
        if r < 0.65:
            return self.top_n_case()
        return Case(sql)

    # Aggregates a top-N report orders by; most of them each shard can
    # order its groups by, so that it returns only its first ones (k has
    # no declared affinity and f is a float: those are not).
    TOP_N_ORDER = [
        "count(*)", "count(i)", "sum(i)", "sum(j)", "min(i)", "max(i)",
        "max(j)", "min(t COLLATE \"C\")", "max(t COLLATE \"C\")",
        "count(*)", "sum(i)", "sum(k)", "avg(j)", "min(f)",
    ]

    def top_n_case(self):
        """A report grouped by the tenant, ordered by aggregates and keys,
        with LIMIT and OFFSET; or a LIMIT without ORDER BY, counted."""
        g = self.pick(["tenant_id", "tenant_id", "tenant_id, j",
                       "tenant_id, t"])
        keys = ['tenant_id COLLATE "C"'] + \
            (["j"] if g.endswith(", j") else []) + \
            (['t COLLATE "C"'] if g.endswith(", t") else [])
        aggs = ", ".join(self.rng.sample(self.TOP_N_ORDER,
                                         self.rng.randrange(1, 4)))
        where = self.where() if self.chance(0.4) else "true"
        limit = " LIMIT %d" % self.rng.choice([0, 1, 1, 2, 3, 5, 7, 20])
        if self.chance(0.3):
            limit += " OFFSET %d" % self.rng.randrange(0, 5)
        sql = "SELECT %s, %s FROM {T} x WHERE %s GROUP BY %s" % (
            g, aggs, where, g)
        if self.chance(0.15):
            # any groups will do: how many there are is determined
            return Case("SELECT count(*) FROM (%s%s) s" % (sql, limit))
        order = [self.pick(self.TOP_N_ORDER) +
                 self.pick(["", " DESC", " NULLS FIRST", " DESC NULLS LAST"])
                 for _ in range(self.rng.randrange(1, 3))]
        case = Case(sql + " ORDER BY %s%s" % (", ".join(order + keys), limit),
                    ordered=True)
        case.top_n = True
        if self.chance(0.5):
            # the shards' own ORDER BY ... LIMIT rather than the threads'
            case.setting = "sqlite_shard_fdw.thread_aggregation = off"
        return case

    # ORDER BY keys of row scans: every type, pushed or not (order.c)
    ROW_KEYS = ["id", "i", "j", "k", "f", "g", 't COLLATE "C"', "t", "tc",
                "u", "ts", "tz", "d", "te", "b", "n", 'tenant_id COLLATE "C"']
    KEYSET_COLS = ["i", "j", "ts", "d", 't COLLATE "C"']

    def row_top_n_case(self):
        """Rows of the whole fleet, of routed tenants or of a condition,
        ORDER BY keys of every type (id last, for a total order), LIMIT and
        OFFSET; or keyset pagination: WHERE (key, id) < (value, n)."""
        rng = self.rng
        dirs = ["", " DESC", " NULLS FIRST", " DESC NULLS LAST",
                " ASC NULLS LAST"]
        limit = " LIMIT %d" % rng.choice([1, 2, 3, 5, 10, 20, 40])
        if self.chance(0.3):
            limit += " OFFSET %d" % rng.randrange(0, 25)
        if self.chance(0.25):
            col = self.pick(self.KEYSET_COLS)
            name = col.split()[0]
            desc = self.chance(0.6)
            op = self.pick(["<", "<="] if desc else [">", ">="])
            where = "(%s, id) %s (%s, %d)" % (
                col, op, self.literal_for(name), rng.randrange(0, 2000))
            if self.chance(0.3):
                where += " AND " + self.routing_atom()
            d = " DESC" if desc else ""
            order = "%s%s, id%s" % (col, d, d)
            sel = name
        else:
            keys = [self.pick(self.ROW_KEYS) + self.pick(dirs)
                    for _ in range(rng.randrange(1, 3))]
            order = ", ".join(keys + ["id" + self.pick(["", " DESC"])])
            sel = ", ".join(k.split()[0] for k in keys)
            r = rng.random()
            where = ("true" if r < 0.4 else self.routing_atom() if r < 0.7
                     else self.pred())
        case = Case("SELECT id, %s FROM {T} x WHERE %s ORDER BY %s%s" % (
            sel, where, order, limit), ordered=True)
        case.row_top = True
        if self.chance(0.2):
            case.scoped = True
        return case

    def keyed_limit_case(self, keys, sql_from, where):
        """Rows of sql_from ORDER BY keys, each output (so that the order
        is determined), in random directions, LIMIT and now and then
        OFFSET."""
        return Case("SELECT %s FROM %s WHERE %s ORDER BY %s LIMIT %d%s" % (
            ", ".join(k.split()[0] for k in keys), sql_from, where,
            ", ".join(k + self.pick(["", " DESC", " NULLS FIRST",
                                     " DESC NULLS LAST"]) for k in keys),
            self.rng.randrange(1, 25),
            " OFFSET %d" % self.rng.randrange(1, 6)
            if self.chance(0.3) else ""), ordered=True)

    def grouped_case(self, g, aggs, sql_from, where, having=""):
        """Aggregates aggs of sql_from grouped by g (none if empty); when
        grouped, now and then ORDER BY every output and LIMIT."""
        sql = "SELECT %s%s FROM %s WHERE %s%s%s" % (
            g + ", " if g else "", aggs, sql_from, where,
            " GROUP BY " + g if g else "", having)
        if g and self.chance(0.4):
            ngroup = len(g.split(","))
            return Case(sql + " ORDER BY %s LIMIT %d" % (
                ", ".join("%d" % (n + 1) for n in range(
                    ngroup + len(aggs.split(", ")))),
                self.rng.randrange(1, 6)), ordered=True)
        return Case(sql)

    # Join keys: (column of one side, column of the other).  Integers and
    # text join in the shards; k and u (declared without a type in a shard)
    # and times do not; i and j hold NULLs.
    JOIN_KEYS = [("j", "j"), ("i", "i"), ("id", "id"), ("t", "t"),
                 ("j", "i"), ("tc", "tc"), ("j", "j"), ("k", "k"),
                 ("u", "u"), ("ts", "ts")]

    def join_side(self):
        """A side of a join: the table, or its rows of a condition (which
        the planner makes that table's own), some of a tenant only."""
        if self.chance(0.4):
            return "{T}"
        w = self.atom() if self.chance(0.6) else self.pred()
        if self.chance(0.3):
            w = "%s AND %s" % (self.routing_atom(), w)
        return "(SELECT * FROM {T} WHERE %s)" % w

    def join_case(self, time_key=False):
        """Joins of two or three instances of the table, inner, left, right
        or full, on the tenant and another key (now and then without the
        tenant's equality, which stays in PostgreSQL), routed or not; rows,
        aggregates, ORDER BY ... LIMIT; with time_key, ORDER BY ... LIMIT
        whose first key is a time column of any of the tables."""
        aliases = ["x", "y", "z"][:3 if self.chance(0.35) else 2]
        sql_from = "%s x" % self.join_side()
        for n, a in enumerate(aliases[1:]):
            prev = self.pick(aliases[:n + 1])
            jt = self.pick(["JOIN", "JOIN", "LEFT JOIN", "RIGHT JOIN",
                            "FULL JOIN"])
            lk, rk = self.pick(self.JOIN_KEYS)
            on = ["%s.%s = %s.%s" % (prev, lk, a, rk)]
            if self.chance(0.92):
                on.insert(0, "%s.tenant_id = %s.tenant_id" % (prev, a))
            if self.chance(0.2):
                on.append("%s.%s" % (self.pick([prev, a]), self.pick(
                    ["j > 0", "t IS NOT NULL", "i < 100", "b", "k = 42"])))
            sql_from += " %s %s %s ON %s" % (jt, self.join_side(), a,
                                              " AND ".join(on))
        where = "true"
        r = self.rng.random()
        if r < 0.3:
            where = "x.tenant_id = %s" % sql_str(self.text_value("tenant_id"))
        elif r < 0.4:
            where = "%s.id IS NULL" % self.pick(aliases)
        r = self.rng.random()
        if time_key:
            r = 0.5
        if r < 0.45:
            cols = []
            for a in aliases:
                cols += ["%s.tenant_id" % a, "%s.id" % a] + [
                    "%s.%s" % (a, c) for c in
                    self.rng.sample(COLNAMES, self.rng.randrange(0, 3))]
            case = Case("SELECT %s FROM %s WHERE %s" % (
                ", ".join(dict.fromkeys(cols)), sql_from, where))
        elif r < 0.6:
            # every output a key: integers first (the shards may sort
            # them), the tenants in the "C" collation
            keys = ["%s.%s" % (a, c) for a in aliases for c in ("id", "j")]
            self.rng.shuffle(keys)
            keys += ['%s.tenant_id COLLATE "C"' % a for a in aliases]
            if time_key:
                keys.insert(0, "%s.%s" % (self.pick(aliases), self.pick(
                    ["ts", "tz", "d", "te"])))
            case = self.keyed_limit_case(keys, sql_from, where)
        else:
            a = self.pick(aliases)
            aggs = ", ".join(self.rng.sample(
                ["count(*)", "count(%s.id)" % a, "sum(%s.j)" % a,
                 "min(%s.i)" % a, "max(x.j)", "avg(%s.j)" % a,
                 "count(DISTINCT %s.tenant_id)" % a,
                 "max(%s.t COLLATE \"C\")" % a, "sum(x.id)"],
                self.rng.randrange(1, 4)))
            g = self.pick(["", "x.tenant_id", "%s.tenant_id" % a,
                           "%s.j %% 3" % a, "x.tenant_id, %s.b" % a])
            case = self.grouped_case(g, aggs, sql_from, where)
        if time_key:
            case.join_time = True
        else:
            case.join = True
        if self.chance(0.2):
            case.scoped = True
        return case

    # --- the reference table ------------------------------------------------
    # Plans (distribution 'reference'): read from one shard's copy, joined
    # with the fact table x (and y, the fact table again as a tenant's
    # dimension) inside each shard with the shard's own copy, unless the
    # plans' rows are preserved (then in PostgreSQL).  self.plans holds its
    # rows (set by run_test).

    REF_KEYS = [("j", "plan_id")] * 11 + [("i", "plan_id")] * 3 + \
        [("t", "name")] * 4 + [("k", "plan_id"), ("u", "name")]

    def ref_value(self, col, plain=False):
        """A literal for a column of the plans, mostly one they hold (an
        integer in any form, or plain: an array element)."""
        vals = [p[col] for p in self.plans if p[col] is not None]
        if col == "name":
            return sql_str(self.pick(vals) if vals and self.chance(0.7)
                           else self.text_value("t"))
        if vals and self.chance(0.6):
            v = self.pick(vals)
        else:
            v = self.pick(EDGE_INTS[:8] + [-1, 3, 5, 1000] +
                          [self.rng.randrange(-500, 500)])
        if col != "price" and not -2**31 <= v < 2**31:
            v = self.pick([0, 1, 2, 42])
        if plain:
            return str(v) if v >= 0 else "(%d)" % v
        return self.int_literal("j", v)

    def ref_atom(self, a=None):
        """A condition on the plans' columns (of alias a, or unqualified):
        most the shards evaluate, some PostgreSQL does."""
        col = self.pick(["plan_id", "plan_id", "name", "name", "tier",
                         "price"])
        q = "%s.%s" % (a, col) if a else col
        r = self.rng.random()
        if r < 0.1:
            return "%s IS %sNULL" % (q, self.pick(["", "NOT "]))
        if col == "name":
            if r < 0.3:
                return "%s %s %s" % (q, self.pick(["LIKE", "NOT LIKE",
                                                   "ILIKE"]),
                                     sql_str(self.like_pattern("t")))
            if r < 0.45:
                return "%s IN (%s)" % (q, ", ".join(
                    self.ref_value(col) for _ in range(self.rng.randrange(1, 4))))
            if r < 0.55:
                return self.pick(["length(%s) > 3" % q, "lower(%s) = 'apple'" % q])
            return "%s %s %s%s" % (q, self.pick(["=", "=", "<>", "<", ">="]),
                                   self.ref_value(col),
                                   self.collate(False))
        if r < 0.55:
            return "%s %s %s" % (q, self.pick(["=", "=", "<>", "<", "<=", ">",
                                               ">="]), self.ref_value(col))
        if r < 0.7:
            return "%s %s (%s)" % (q, self.pick(["IN", "NOT IN"]), ", ".join(
                self.ref_value(col) for _ in range(self.rng.randrange(1, 5))))
        if r < 0.8:
            return "%s BETWEEN %s AND %s" % (q, self.ref_value(col),
                                             self.ref_value(col))
        if r < 0.9:
            return "%s = ANY (ARRAY[%s])" % (q, ", ".join(
                self.ref_value(col, True)
                for _ in range(self.rng.randrange(1, 4))))
        return self.pick(["%s %% 2 = 0" % q, "%s::numeric > 2.5" % q,
                          "%s IS DISTINCT FROM 0" % q])

    def ref_pred(self, a=None, depth=0):
        r = self.rng.random()
        if depth >= 2 or r < 0.5:
            return self.ref_atom(a)
        n = self.rng.randrange(2, 4)
        if r < 0.75:
            return "(" + " AND ".join(self.ref_pred(a, depth + 1)
                                      for _ in range(n)) + ")"
        if r < 0.92:
            return "(" + " OR ".join(self.ref_pred(a, depth + 1)
                                     for _ in range(n)) + ")"
        return "NOT (%s)" % self.ref_pred(a, depth + 1)

    def ref_side(self):
        """The plans, or those of a condition (the planner makes it the
        table's own)."""
        if self.chance(0.6):
            return "{R}"
        return "(SELECT * FROM {R} WHERE %s)" % self.ref_pred()

    def ref_on(self, fact, ref):
        """The condition joining a fact alias with a plans alias: a key
        the shards compare, or now and then one they do not (k and u are
        declared without a type in a shard), and a condition more."""
        fk, rk = self.pick(self.REF_KEYS)
        on = ["%s.%s = %s.%s" % (ref, rk, fact, fk)]
        if self.chance(0.2):
            on.append(self.pick(["%s.tier > 1" % ref,
                                 "%s.price IS NOT NULL" % ref,
                                 "%s.j > 0" % fact,
                                 "%s.name <> 'apple'" % ref]))
        return " AND ".join(on)

    def ref_join_case(self):
        """Joins with the plans: the fact table and the plans (inner, left
        with the plans nullable, now and then preserved: right, full, or
        the plans first); fact, a tenant's dimension (the fact table
        again, on the tenant and a key) and the plans; the plans twice;
        semi-joins.  Routed, fanned out, scoped logins; rows, aggregates
        (grouped by the plans' columns), ORDER BY ... LIMIT."""
        aliases = ["x", "r"]
        r = self.rng.random()
        if r < 0.4:
            jt = self.pick(["JOIN", "JOIN", "LEFT JOIN", "LEFT JOIN",
                            "JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN"])
            sql_from = "%s x %s %s r ON %s" % (
                self.join_side(), jt, self.ref_side(), self.ref_on("x", "r"))
            if self.chance(0.1):
                sql_from = "%s r LEFT JOIN %s x ON %s" % (
                    self.ref_side(), self.join_side(), self.ref_on("x", "r"))
        elif r < 0.8:
            aliases = ["x", "y", "r"]
            lk, rk = self.pick([("tenant_id", "tenant_id")] * 2 +
                               [("id", "id"), ("j", "j"), ("i", "i")])
            fy = "y.tenant_id = x.tenant_id" + (
                "" if lk == "tenant_id" else " AND y.%s = x.%s" % (rk, lk))
            if lk == "tenant_id":
                fy += " AND y.id = x.id"
            if self.chance(0.5):
                sql_from = "%s x %s %s y ON %s %s %s r ON %s" % (
                    self.join_side(), self.pick(["JOIN", "JOIN", "LEFT JOIN"]),
                    self.join_side(), fy,
                    self.pick(["JOIN", "LEFT JOIN", "LEFT JOIN"]),
                    self.ref_side(), self.ref_on(self.pick(["x", "y"]), "r"))
            else:
                sql_from = "%s x %s %s r ON %s %s %s y ON %s" % (
                    self.join_side(), self.pick(["JOIN", "LEFT JOIN"]),
                    self.ref_side(), self.ref_on("x", "r"),
                    self.pick(["JOIN", "LEFT JOIN"]), self.join_side(),
                    fy + self.pick(["", "", " AND y.j = r.tier",
                                    " AND y.t = r.name"]))
        elif r < 0.9:
            aliases = ["x", "r", "q"]
            sql_from = "%s x %s %s r ON %s %s %s q ON %s" % (
                self.join_side(), self.pick(["JOIN", "LEFT JOIN"]),
                self.ref_side(), self.ref_on("x", "r"),
                self.pick(["JOIN", "LEFT JOIN"]), self.ref_side(),
                self.pick(["q.plan_id = r.tier", "q.tier = r.tier",
                           "q.name = r.name", "q.plan_id = x.i"]))
        else:
            case = Case("SELECT x.tenant_id, x.id, x.j FROM {T} x WHERE "
                        "%sEXISTS (SELECT 1 FROM {R} r WHERE %s AND %s)%s" % (
                            self.pick(["", "NOT "]), self.ref_on("x", "r"),
                            self.ref_pred("r"),
                            self.pick(["", " AND " + self.routing_atom()])))
            if self.chance(0.5):
                case = Case("SELECT x.tenant_id, x.id FROM {T} x WHERE x.j "
                            "%sIN (SELECT plan_id FROM {R} WHERE %s)" % (
                                self.pick(["", "NOT "]), self.ref_pred()))
            case.refjoin = True
            case.scoped = self.chance(0.2)
            return case
        where = []
        param = False
        w = self.rng.random()
        if w < 0.3:
            # now and then a parameter: routed when the executor starts
            param = self.chance(0.3)
            where.append("x.tenant_id = %s" % ("$1" if param else sql_str(
                self.text_value("tenant_id"))))
        elif w < 0.4:
            where.append("x.tenant_id IN (%s)" % ", ".join(
                sql_str(self.text_value("tenant_id"))
                for _ in range(self.rng.randrange(1, 4))))
        if self.chance(0.1):
            where.append("r.plan_id IS NULL")
        elif self.chance(0.2):
            where.append(self.ref_pred("r"))
        if self.chance(0.1):
            where.append(self.pick(["x.j > 0", "x.t IS NOT NULL",
                                    "x.i < 100", "x.t LIKE 'a%'"]))
        where = " AND ".join(where) or "true"
        refs = [a for a in aliases if a in ("r", "q")]
        facts = [a for a in aliases if a in ("x", "y")]
        r = self.rng.random()
        if r < 0.4:
            cols = []
            for a in facts:
                cols += ["%s.tenant_id" % a, "%s.id" % a]
            if self.chance(0.3):
                cols += ["x.j", "x.t"]
            for a in refs:
                cols += ["%s.%s" % (a, c) for c, _ in REF_COLUMNS]
            case = Case("SELECT %s FROM %s WHERE %s" % (
                ", ".join(cols), sql_from, where))
        elif r < 0.6:
            # every output a key: integers first (the shards may sort
            # them), text in the "C" collation
            keys = ["%s.id" % a for a in facts] + \
                ["%s.%s" % (a, c) for a in refs
                 for c in ("plan_id", "tier", "price")]
            self.rng.shuffle(keys)
            keys += ['%s.name COLLATE "C"' % a for a in refs] + \
                ['%s.tenant_id COLLATE "C"' % a for a in facts]
            case = self.keyed_limit_case(keys, sql_from, where)
        else:
            a = self.pick(refs)
            aggs = ", ".join(self.rng.sample(
                ["count(*)", "count(%s.plan_id)" % a, "sum(%s.price)" % a,
                 "min(%s.price)" % a, "max(%s.price)" % a,
                 "min(%s.name COLLATE \"C\")" % a, "max(%s.tier)" % a,
                 "sum(x.j)", "count(DISTINCT %s.name)" % a,
                 "avg(%s.price)" % a, "sum(%s.tier)" % a, "count(x.id)",
                 "max(%s.name)" % a, "min(x.i)"],
                self.rng.randrange(1, 5)))
            g = self.pick(["", "%s.name" % a, "%s.tier" % a, "%s.tier" % a,
                           "x.tenant_id", "x.tenant_id, %s.tier" % a,
                           "%s.plan_id" % a, "%s.name, %s.tier" % (a, a)])
            case = self.grouped_case(g, aggs, sql_from, where)
        if param:
            case.types = "text"
            case.execs = [sql_str(self.text_value("tenant_id"))
                          for _ in range(self.rng.randrange(2, 5))]
            case.mode = self.pick(["force_generic_plan",
                                   "force_generic_plan", "force_custom_plan"])
        case.refjoin = True
        if self.chance(0.2):
            case.scoped = True
        return case

    def eager_case(self):
        """Aggregates of the fact table's columns over a join PostgreSQL
        runs with the plans (on the plans' keys or with other conditions),
        the fact table grouped in the shards first wherever that is exact
        (sqlite_shard_fdw.eager_aggregate = always): inner, left and right
        joins keeping the facts, the plans twice, the facts on the nullable
        side (left as they are); conditions on either side; grouped by the
        plans' columns or the facts' own."""
        r = self.rng.random()
        on = self.ref_on("x", "r")
        if r < 0.35:
            sql_from = "{T} x %s {R} r ON %s" % (
                self.pick(["JOIN", "LEFT JOIN"]), on)
        elif r < 0.5:
            sql_from = "{R} r RIGHT JOIN {T} x ON %s" % on
        elif r < 0.7:
            sql_from = "{T} x %s {R} r ON %s %s {R} q ON %s" % (
                self.pick(["JOIN", "LEFT JOIN"]), on,
                self.pick(["JOIN", "LEFT JOIN"]),
                self.pick(["q.tier = r.tier", "q.plan_id = x.j",
                           "q.name = x.t", "q.price > x.i"]))
        elif r < 0.85:
            sql_from = "{T} x JOIN {R} r ON %s" % self.pick(
                ["r.price > x.i", "r.tier = x.j % 4", "r.name < x.t",
                 "r.plan_id = x.j AND r.price > x.k"])
        else:
            sql_from = "{R} r LEFT JOIN {T} x ON %s" % on
        where = []
        if self.chance(0.3):
            where.append(self.pick(["x.j > 0", "x.t IS NOT NULL", "x.i < 100",
                                    "x.t LIKE 'a%'", "x.b", "x.j % 3 = 1"]))
        if self.chance(0.2):
            where.append(self.pick(["x.tenant_id = %s" % sql_str(
                self.text_value("tenant_id")), "x.tenant_id IN ('acme', 'globex')"]))
        if self.chance(0.2):
            where.append(self.ref_pred("r"))
        if self.chance(0.1):
            where.append(self.pick(["x.j > r.tier", "r.name IS NULL OR x.j IS NULL"]))
        where = " AND ".join(where) or "true"
        aggs = ", ".join(self.rng.sample(
            ["count(*)", "count(x.j)", "sum(x.j)", "sum(x.i)", "min(x.i)",
             "max(x.j)", "avg(x.j)", "avg(x.i)", "min(x.t)",
             'max(x.t COLLATE "C")', "sum(x.k)", "count(x.t)",
             "sum(x.j) FILTER (WHERE x.t IS NOT NULL)",
             "count(*) FILTER (WHERE x.j > 0)", "min(x.ts)", "max(x.d)",
             "min(x.f)", "max(x.n)", "sum(x.n)"],
            self.rng.randrange(1, 5)))
        g = self.pick(["", "r.name", "r.tier", "r.tier, r.name", "x.j",
                       "r.tier, x.t", "x.b", "x.f", "x.tenant_id"])
        having = self.pick(["", "", " HAVING count(*) > 2"]) if g else ""
        case = self.grouped_case(g, aggs, sql_from, where, having)
        case.setting = "sqlite_shard_fdw.eager_aggregate = always"
        case.eager = True
        case.scoped = self.chance(0.15)
        return case

    def ref_read_case(self):
        """Reads of the plans alone: conditions, aggregates (grouped or
        not), ORDER BY ... LIMIT [OFFSET] (plan_id last: its values are
        distinct), the plans joined with themselves; now and then as the
        scoped login, which reads them whole."""
        r = self.rng.random()
        where = self.ref_pred() if self.chance(0.7) else "true"
        if r < 0.35:
            case = Case("SELECT %s FROM {R} r WHERE %s" % (
                ", ".join(["plan_id"] + self.rng.sample(
                    ["name", "tier", "price"], self.rng.randrange(1, 4))),
                where))
        elif r < 0.65:
            aggs = ", ".join(self.rng.sample(
                ["count(*)", "count(name)", "sum(price)", "min(price)",
                 "max(price)", "avg(price)", "min(name COLLATE \"C\")",
                 "max(name)", "sum(tier)", "max(plan_id)",
                 "count(DISTINCT tier)", "bool_or(tier > 2)"],
                self.rng.randrange(1, 5)))
            g = self.pick(["", "", "tier", "name", "tier, name",
                           "plan_id % 3", "price IS NULL"])
            case = self.grouped_case(g, aggs, "{R} r", where, self.pick(
                ["", "", " HAVING count(*) > 1"]) if g else "")
        elif r < 0.9:
            key = self.pick(["price", "tier", 'name COLLATE "C"', "name",
                             "plan_id"])
            case = Case("SELECT plan_id, %s FROM {R} r WHERE %s ORDER BY "
                        "%s%s, plan_id%s LIMIT %d%s" % (
                            key.split()[0], where, key,
                            self.pick(["", " DESC", " NULLS FIRST",
                                       " DESC NULLS LAST"]),
                            self.pick(["", " DESC"]),
                            self.rng.randrange(1, 20),
                            " OFFSET %d" % self.rng.randrange(1, 10)
                            if self.chance(0.3) else ""), ordered=True)
        else:
            case = Case("SELECT r.plan_id, r.name, q.plan_id, q.price FROM "
                        "{R} r %s {R} q ON %s WHERE %s" % (
                            self.pick(["JOIN", "LEFT JOIN"]),
                            self.pick(["q.plan_id = r.tier",
                                       "q.tier = r.tier",
                                       "q.name = r.name"]),
                            self.ref_pred("r")))
        case.refread = True
        if self.chance(0.2):
            case.scoped = True
        return case

    def param_atom(self, n):
        """A condition on parameter $n: (sql, type, value generator)."""
        r = self.rng.random()
        if r < 0.2:
            return ("tenant_id = $%d" % n, "text",
                    lambda: sql_str(self.text_value("tenant_id")))
        if r < 0.3:
            return ("tenant_id = ANY ($%d)" % n, "text[]",
                    lambda: self.array_const("tenant_id"))
        if r < 0.45:
            col = self.pick(["i", "j", "k", "id"])
            op = self.pick(["=", "<", ">=", "<>"])
            typ = self.pick(["bigint", "int", "numeric", "float8"])
            return ("%s %s $%d" % (col, op, n), typ,
                    lambda: sql_str(str(self.int_value(col)) if typ in
                                    ("bigint", "numeric", "float8") else
                                    str(self.rng.randrange(-600, 600))))
        if r < 0.55:
            col = self.pick(["i", "j", "id"])
            typ = self.pick(["bigint[]", "int[]"])
            return ("%s %s ($%d)" % (col, self.pick(["= ANY", "<> ALL"]), n),
                    typ, lambda: sql_str("{%s}" % ",".join(
                        [str(self.int4_value() if typ == "int[]" else
                             self.int_value(col))
                         for _ in range(self.rng.randrange(1, 4))] +
                        (["NULL"] if self.chance(0.15) else []))))
        if r < 0.7:
            col = self.pick(["t", "tc", "u"])
            op = self.pick(["=", "<>", "<", ">="])
            return ("%s %s $%d" % (col, op, n), "text",
                    lambda: sql_str(self.text_value(col)))
        if r < 0.78:
            col = self.pick(["t", "u"])
            return ("%s = ANY ($%d)" % (col, n), "text[]",
                    lambda: self.array_const(col))
        if r < 0.85:
            return ("t LIKE $%d" % n, "text",
                    lambda: sql_str(self.like_pattern("t")))
        if r < 0.92:
            col = self.pick(["f", "g"])
            return ("%s %s $%d" % (col, self.pick(["=", "<", ">="]), n),
                    "float8", lambda: self.float_literal(col))
        col = self.pick(["ts", "te", "tz"])
        return ("%s %s $%d" % (col, self.pick(["=", "<", ">="]), n),
                "timestamptz" if col == "tz" else "timestamp",
                lambda: self.ts_literal("ts").split("::")[0])

    def prepared_case(self):
        atoms = [self.param_atom(n + 1) for n in range(self.rng.randrange(1, 4))]
        conds = [a[0] for a in atoms]
        if self.chance(0.5):
            conds.append(self.pred(2))
        glue = " AND " if self.chance(0.7) else " OR "
        if self.chance(0.3):
            # aggregates with run-time routing and parameters
            aggs = ", ".join(self.rng.sample(self.AGGREGATES,
                                             self.rng.randrange(1, 5)))
            group = self.pick(["", " GROUP BY tenant_id", " GROUP BY b"])
            query = "SELECT %s%s FROM {T} x WHERE %s%s" % (
                group.replace(" GROUP BY ", "") + ", " if group else "",
                aggs, glue.join(conds), group)
        else:
            query = "SELECT %s FROM {T} x WHERE %s" % (self.select_list(),
                                                        glue.join(conds))
        types = ", ".join(a[1] for a in atoms)
        mode = self.pick(["force_generic_plan", "force_generic_plan",
                          "force_custom_plan", "auto"])
        nexec = 7 if mode == "auto" else self.rng.randrange(2, 4)
        execs = [", ".join(a[2]() for a in atoms) for _ in range(nexec)]
        return Case(query, types=types, execs=execs, mode=mode)


# Cases every seed runs: the whole table, and spots where SQLite's rules
# differ from PostgreSQL's (loosely declared columns, a NOCASE column with an
# index, conversions, errors that both sides must raise).
FIXED_CASES = [
    "SELECT * FROM {T} x",
    "SELECT count(*) FROM {T} x",
    "SELECT x FROM {T} x",
    "SELECT tenant_id, count(*) FROM {T} x GROUP BY 1",
    "SELECT id, ts, tz, d, te FROM {T} x",
    "SELECT id, g FROM {T} x WHERE g = 9007199254740992",
    "SELECT id, g FROM {T} x WHERE g >= 9223372036854775807",
    "SELECT id, g FROM {T} x WHERE g IN (3, 9007199254740992)",
    "SELECT id, u FROM {T} x WHERE u = '42'",
    "SELECT id, u FROM {T} x WHERE u <> '0.1'",
    "SELECT id, u FROM {T} x WHERE u IN ('42', '0.1', 'apple')",
    "SELECT id, u FROM {T} x WHERE u LIKE '1e+%'",
    "SELECT id, u FROM {T} x WHERE u < 'a' COLLATE \"C\"",
    "SELECT id, k FROM {T} x WHERE k = 42",
    "SELECT id, k FROM {T} x WHERE k IN (42, 17)",
    "SELECT id, k FROM {T} x WHERE k = ANY ('{42,17,-123}'::bigint[])",
    "SELECT id, t FROM {T} x WHERE t = 'apple' OR t = 'zzz'",
    "SELECT id, t FROM {T} x WHERE t = 'Apple' OR t = 'ZZZ' OR t = 'x'",
    "SELECT id, tenant_id FROM {T} x WHERE tenant_id = 'Acme' OR "
    "tenant_id = 'nobody'",
    "SELECT id, t FROM {T} x WHERE t IN ('Apple', 'ZZZ')",
    "SELECT id, t FROM {T} x WHERE t LIKE 'a%' OR t LIKE 'A%'",
    "SELECT id, t FROM {T} x WHERE t LIKE '%\\%%' OR t LIKE '%[%' OR "
    "t LIKE '%*%' OR t LIKE '%?%' OR t LIKE '%\\\\%'",
    "SELECT id, t FROM {T} x WHERE t < 'b' COLLATE \"C\"",
    "SELECT id, t FROM {T} x WHERE t >= 'a' COLLATE \"C\" AND t < 'b' "
    "COLLATE \"C\"",
    "SELECT id, 100 / j FROM {T} x",
    "SELECT id FROM {T} x WHERE t LIKE 'a\\'",
    "SELECT count(*), sum(i), avg(i), sum(j), avg(j), min(t), max(t), "
    "min(tc), max(tc), min(f), max(f), min(g), max(g), sum(n), bool_and(b) "
    "FROM {T} x",
    "SELECT tenant_id, count(*), sum(i), min(tc), max(tc) FROM {T} x "
    "GROUP BY tenant_id",
    "SELECT tc, count(*) FROM {T} x GROUP BY tc",
    "SELECT t, count(*) FROM {T} x GROUP BY t ORDER BY t LIMIT 10",
    "SELECT sum(i), avg(i), count(*) FROM {T} x WHERE i > 0",
    "SELECT count(*), sum(i), max(t), bool_and(b) FROM {T} x "
    "WHERE tenant_id = 'nobody'",
    "SELECT count(*), sum(i), max(t) FROM {T} x WHERE tenant_id = 'empty_one'",
    "SELECT tenant_id, count(*) FROM {T} x WHERE tenant_id IN ('empty_one', "
    "'nobody') GROUP BY tenant_id",
    "SELECT tenant_id, sum(i), avg(i), min(i), max(i) FROM {T} x "
    "GROUP BY tenant_id",
    "SELECT j, count(*) FROM {T} x GROUP BY j",
    "SELECT count(*), sum(j) FROM {T} x WHERE tenant_id = 'acme'",
    "SELECT count(DISTINCT j), count(DISTINCT t) FROM {T} x",
    "SELECT tenant_id, count(*) FROM {T} x GROUP BY tenant_id "
    "HAVING count(*) > 30",
    "SELECT min(ts), max(tz), min(d), max(te) FROM {T} x",
    "SELECT b, count(*), bool_and(b), bool_or(b) FROM {T} x GROUP BY b",
    "SELECT id, j + 2147483647 FROM {T} x WHERE j IS NOT NULL",
    "SELECT id, f FROM {T} x WHERE f = 'Infinity' OR f = '-Infinity'",
    "SELECT id, i FROM {T} x WHERE i = 9223372036854775807 OR "
    "i = -9223372036854775808",
    "SELECT id, i FROM {T} x WHERE i = ANY ('{-9223372036854775808,"
    "9223372036854775807}'::bigint[])",
]


class Case:
    def __init__(self, query, ordered=False, types=None, execs=None, mode=None):
        self.query = query
        self.ordered = ordered
        self.types = types
        self.execs = execs
        self.mode = mode
        self.scoped = False

    def sql(self, table=FT):
        """The query over table ({T}) and the reference table of its side
        ({R}: the foreign one with the foreign table, else the native)."""
        return self.query.replace("{T}", table).replace(
            "{R}", RT if table == FT else RN)

    def describe(self):
        q = self.sql()
        role = "SET ROLE %s; " % SCOPED_ROLE if self.scoped else ""
        if getattr(self, "setting", None):
            role += "SET %s; " % self.setting
        if getattr(self, "work_mem", None):
            role += "SET work_mem = '%s'; " % self.work_mem
        if self.execs is None:
            return role + q
        return "%sSET plan_cache_mode = %s; PREPARE p(%s) AS %s; %s" % (
            role, self.mode, self.types, q,
            "; ".join("EXECUTE p(%s)" % e for e in self.execs))

    def script(self, idx, side, table):
        """psql lines running this case on one table, with markers."""
        out = []

        def run(r, sql):
            out.append("\\echo @@Q %d %s %d" % (idx, side, r))
            out.append(sql + ";")
            out.append("\\echo @@E %d %s %d :ERROR :SQLSTATE" % (idx, side, r))
            out.append("\\if :ERROR")
            out.append("\\echo @@M :LAST_ERROR_MESSAGE")
            out.append("\\endif")

        if self.scoped:
            if table == NT:
                table = NT_SCOPED
            out.append("SET ROLE %s;" % SCOPED_ROLE)
        q = self.sql(table)
        if self.execs is None:
            setting = getattr(self, "setting", None)
            if setting:
                out.append("SET %s;" % setting)
            if getattr(self, "work_mem", None):
                out.append("SET work_mem = '%s';" % self.work_mem)
            run(0, q)
            if setting:
                out.append("RESET %s;" % setting.split(" ")[0])
            if getattr(self, "work_mem", None):
                out.append("RESET work_mem;")
            if self.scoped:
                out.append("RESET ROLE;")
            return out
        name = "p_%d_%s" % (idx, side)
        out.append("SET plan_cache_mode = %s;" % self.mode)
        out.append("PREPARE %s(%s) AS %s;" % (name, self.types, q))
        for r, e in enumerate(self.execs):
            run(r, "EXECUTE %s(%s)" % (name, e))
        out.append("DEALLOCATE %s;" % name)
        out.append("RESET plan_cache_mode;")
        if self.scoped:
            out.append("RESET ROLE;")
        return out


# ---------------------------------------------------------------------------
# Running and comparing
# ---------------------------------------------------------------------------

def parse_output(text):
    """{(idx, side, run): (rows, error)} from the marked psql output, and
    the last case started."""
    results = {}
    cur = None
    rows = []
    last = None
    for line in text.split("\n"):
        if line.startswith("@@Q "):
            _, idx, side, r = line.split(" ")
            cur = (int(idx), side, int(r))
            last = cur
            rows = []
        elif line.startswith("@@E ") and cur is not None:
            parts = line.split(" ")
            err = None
            if parts[4] == "true":
                err = parts[5] if len(parts) > 5 else "?"
            results[cur] = [rows, err]
            cur = None
        elif line.startswith("@@M ") and cur is None and last is not None:
            if last in results and results[last][1] is not None:
                results[last][1] += " " + line[4:]
        elif cur is not None:
            rows.append(line)
    return results, last


def server_ready(deadline):
    while time.time() < deadline:
        p = subprocess.run(["psql", "-X", "-A", "-t", "-c", "SELECT 1"],
                           capture_output=True, text=True)
        if p.returncode == 0:
            return True
        time.sleep(0.5)
    return False


def run_cases(cases):
    """Run every case on both tables; returns the results dictionary."""
    results = {}
    start = 0
    crashes = 0
    while start < len(cases):
        lines = [SESSION]
        for idx in range(start, len(cases)):
            for side, table in (("F", FT), ("N", NT)):
                lines += cases[idx].script(idx, side, table)
        rc, out, err = psql("\n".join(lines) + "\n", timeout=110)
        got, last = parse_output(out)
        results.update(got)
        expected_last = (len(cases) - 1, "N", len(cases[-1].execs or [0]) - 1)
        if rc == 0 and expected_last in got:
            break
        # psql stopped early: a backend crashed (or the connection was lost)
        crashes += 1
        idx = last[0] if last else start
        tail = "\n".join(l for l in err.splitlines()[-6:])
        failures.append("case %d: psql stopped (exit %d) while running it; "
                        "the server may have crashed\n  query: %s\n  %s" % (
                            idx, rc, cases[idx].describe(), tail))
        cases[idx].crashed = True
        if crashes >= 5 or not server_ready(time.time() + 30):
            for j in range(idx + 1, len(cases)):
                cases[j].crashed = True
            failures.append("giving up after %d psql sessions stopped early"
                            % crashes)
            break
        start = idx + 1
    return results


def top_n_pushdown(cases, attr="top_n"):
    """(top-N cases, how many of them EXPLAIN shows sorted and limited in
    the shards): the comparison above proves them right only if the path
    that does it is taken."""
    top = [c for c in cases if getattr(c, attr, False)]
    lines = [SESSION]
    for c in top:
        setting = getattr(c, "setting", None)
        lines += (["SET %s;" % setting] if setting else []) + \
            ["EXPLAIN (COSTS OFF) %s;" % c.sql()] + \
            (["RESET %s;" % setting.split(" ")[0]] if setting else [])
    rc, out, err = psql("\n".join(lines) + "\n")
    return len(top), out.count("sorted and limited")


def explained(cases, attr):
    """The cases marked attr, and EXPLAIN VERBOSE of all of them as one
    text."""
    cases = [c for c in cases if getattr(c, attr, False)]
    lines = [SESSION] + ["EXPLAIN (VERBOSE, COSTS OFF) %s;" %
                         c.sql() for c in cases]
    rc, out, err = psql("\n".join(lines) + "\n")
    return cases, out


def explained_each(cases, attr):
    """The cases marked attr, and EXPLAIN VERBOSE of each (of a prepared
    one's first EXECUTE; nothing where EXPLAIN fails)."""
    cases = [c for c in cases if getattr(c, attr, False)]
    lines = [SESSION]
    for n, c in enumerate(cases):
        if c.scoped:
            lines.append("SET ROLE %s;" % SCOPED_ROLE)
        lines.append("\\echo @@X %d" % n)
        if c.execs:
            lines += ["SET plan_cache_mode = %s;" % c.mode,
                      "PREPARE px(%s) AS %s;" % (c.types, c.sql()),
                      "EXPLAIN (VERBOSE, COSTS OFF) EXECUTE px(%s);" %
                      c.execs[0], "DEALLOCATE px;", "RESET plan_cache_mode;"]
        else:
            lines.append("EXPLAIN (VERBOSE, COSTS OFF) %s;" % c.sql())
        if c.scoped:
            lines.append("RESET ROLE;")
    rc, out, err = psql("\n".join(lines) + "\n")
    plans = [""] * len(cases)
    n = None
    for line in out.split("\n"):
        if line.startswith("@@X "):
            n = int(line[4:])
        elif n is not None:
            plans[n] += line + "\n"
    return cases, plans


def reference_pushdown(cases):
    """(reference join cases, how many EXPLAIN shows joined with the
    reference table in the shards, how many of those routed)."""
    cases, plans = explained_each(cases, "refjoin")
    pushed = [p for p in plans if re.search(
        r"Relations: .*\b%s\b.* JOIN |Relations: .* JOIN .*\b%s\b" % (
            RT, RT), p)]
    return len(cases), len(pushed), sum(
        1 for p in pushed if re.search(r"Shards: [01] of ", p))


def time_pushdown(cases):
    """(time cases, how many of them run every condition in the shards):
    the comparison proves the exact checks and index ranges right only if
    they are sent."""
    cases, out = explained(cases, "time")
    return len(cases), out.count("Foreign Scan") - out.count("Filter:")


def join_pushdown(cases):
    """(join cases, how many of them EXPLAIN shows joined in the shards)."""
    cases, out = explained(cases, "join")
    return len(cases), out.count("Relations: ")


def join_time_pushdown(cases):
    """(time-keyed join cases, how many of them EXPLAIN shows sorted and
    limited in the shards by a time key)."""
    cases, out = explained(cases, "join_time")
    return len(cases), out.count("Time Key: ")


def bucket_pushdown(cases):
    """(time bucket cases, how many of them the shards group, with no
    text made per row)."""
    cases, out = explained(cases, "bucket")
    return len(cases), out.count("Pushdown: partial") + \
        out.count("Pushdown: whole") - out.count("strftime(")


def eager_grouping(cases):
    """(eager cases, how many of them plan differently with the setting
    always than with it off: the fact table grouped under the join)."""
    eager = [c for c in cases if getattr(c, "eager", False)]
    lines = [SESSION, "LOAD 'sqlite_shard_fdw';"]
    for c in eager:
        for mode in ("off", "always"):
            lines += ["SET sqlite_shard_fdw.eager_aggregate = %s;" % mode,
                      "\\echo @@PLAN",
                      "EXPLAIN (COSTS OFF) %s;" % c.sql()]
    rc, out, err = psql("\n".join(lines) + "\n")
    plans = out.split("@@PLAN")[1:]
    return len(eager), sum(1 for off, always in zip(plans[0::2], plans[1::2])
                           if off != always)


def merge_spills(cases):
    """(cases run with a small work_mem, how many of them have a merge
    that set rows aside: EXPLAIN ANALYZE's "Merge Batches")."""
    small = [c for c in cases if getattr(c, "work_mem", None)]
    lines = [SESSION, "LOAD 'sqlite_shard_fdw';"]
    for c in small:
        lines += ["SET work_mem = '%s';" % c.work_mem]
        if getattr(c, "setting", None):
            lines += ["SET %s;" % c.setting]
        lines += ["\\echo @@PLAN",
                  "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) %s;"
                  % c.sql(),
                  "RESET work_mem;"]
        if getattr(c, "setting", None):
            lines += ["RESET %s;" % c.setting.split(" ")[0]]
    rc, out, err = psql("\n".join(lines) + "\n")
    plans = out.split("@@PLAN")[1:]
    return len(small), sum(1 for p in plans if "Merge Batches" in p)


def compare(cases, results):
    passed = failed = both_err = 0
    for idx, case in enumerate(cases):
        if getattr(case, "crashed", False):
            failed += 1
            continue
        problems = []
        nruns = len(case.execs) if case.execs else 1
        for r in range(nruns):
            f = results.get((idx, "F", r))
            n = results.get((idx, "N", r))
            if f is None or n is None:
                problems.append("run %d: no result (%s missing)" % (
                    r, "foreign" if f is None else "native"))
                continue
            frows, ferr = f
            nrows, nerr = n
            label = "" if nruns == 1 else "EXECUTE #%d (%s): " % (
                r + 1, case.execs[r])
            if ferr and nerr:
                both_err += 1
                if VERBOSE:
                    log("case %d: both fail: %s | %s\n  query: %s" % (
                        idx, ferr, nerr, case.describe()))
                if ferr.split()[0] != nerr.split()[0]:
                    notes.append("case %d: both sides fail, with different "
                                 "errors\n  query: %s\n  foreign: %s\n  "
                                 "native:  %s" % (idx, case.describe(),
                                                  ferr, nerr))
                continue
            if ferr:
                problems.append("%sforeign table fails, native table does "
                                "not (%d rows): %s" % (label, len(nrows), ferr))
                continue
            if nerr and nerr.split()[0] == "22025":
                # An invalid LIKE pattern fails on the first row the LIKE
                # reads, and such a pattern is never pushed: the foreign
                # side succeeds only where no row reached its LIKE, since
                # PostgreSQL evaluates the conditions of an AND in no set
                # order and a condition pushed into the shards kept every
                # row away (as an index on it would in the native table).
                notes.append("case %d: %snative table fails (%s), a pushed "
                             "condition left the LIKE no row to read\n  "
                             "query: %s" % (idx, label, nerr, case.describe()))
                continue
            if nerr:
                problems.append("%snative table fails, foreign table does "
                                "not (%d rows): %s" % (label, len(frows), nerr))
                continue
            a, b = (frows, nrows) if case.ordered else (sorted(frows),
                                                        sorted(nrows))
            if a != b:
                fset, nset = {}, {}
                for x in frows:
                    fset[x] = fset.get(x, 0) + 1
                for x in nrows:
                    nset[x] = nset.get(x, 0) + 1
                only_f = [x for x in fset if fset[x] > nset.get(x, 0)]
                only_n = [x for x in nset if nset[x] > fset.get(x, 0)]
                msg = "%srows differ: foreign %d, native %d" % (
                    label, len(frows), len(nrows))
                if not only_f and not only_n:
                    msg += " (same rows, different order)"
                for x in only_f[:8]:
                    msg += "\n    only foreign: " + x.replace(FS, " | ")
                for x in only_n[:8]:
                    msg += "\n    only native:  " + x.replace(FS, " | ")
                problems.append(msg)
        if problems:
            failed += 1
            failures.append("case %d FAILED\n  query: %s\n  %s" % (
                idx, case.describe(), "\n  ".join(problems)))
        else:
            passed += 1
            if VERBOSE:
                log("case %d ok: %s" % (idx, case.describe()))
    return passed, failed, both_err


def main():
    global DIR
    DIR = os.environ.get("DIFF_DIR") or tempfile.mkdtemp(prefix="ssfdw_diff.",
                                                         dir="/tmp")
    try:
        return run_test()
    finally:
        if os.environ.get("DIFF_KEEP") == "1":
            log("fixture kept in %s" % DIR)
        elif not os.environ.get("DIFF_DIR"):
            shutil.rmtree(DIR, ignore_errors=True)


def run_test():
    t0 = time.time()
    rng = random.Random(SEED)
    log("differential test: seed %d (DIFF_SEED), %d cases, fleet in %s" % (
        SEED, NCASES, DIR))

    build_fleet(rng)
    rows = read_back()
    with open(os.path.join(DIR, "native.copy"), "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write("\t".join(copy_field(v) for v in r) + "\n")

    rc, out, err = psql("SELECT count(*) FROM pg_collation WHERE collname = "
                        "'en-x-icu';\n")
    has_icu = rc == 0 and out.strip() == "1"
    has_ci = has_icu
    if not has_icu:
        log("note: collation \"en-x-icu\" does not exist; tc uses the "
            "default collation")

    rc, out, err = psql(setup_sql(has_icu, has_ci))
    if rc != 0:
        log("setup failed:\n" + err)
        log("0 passed, 1 failed")
        return 1

    cases = [Case(q) for q in FIXED_CASES]
    cases += [
        Case("SELECT id, i FROM {T} x WHERE i = ANY ($1)", types="bigint[]",
             execs=["'{-9223372036854775808,9223372036854775807,NULL}'",
                    "'{0,42,-1}'", "'{}'"], mode="force_generic_plan"),
        Case("SELECT id, t FROM {T} x WHERE t = ANY ($1)", types="text[]",
             execs=["'{\"a\\\\b\",\"say \\\"hi\\\"\",\"日本\",\"tab\there\"}'",
                    "'{Apple,NULL}'"], mode="force_generic_plan"),
        Case("SELECT id, tenant_id FROM {T} x WHERE tenant_id = $1",
             types="text", execs=["'acme'", "'ACME'", "'o''brien'",
                                  "'nobody'", "'müller'", "'tenant_%'"],
             mode="force_generic_plan"),
        Case("SELECT id, tenant_id FROM {T} x WHERE tenant_id = ANY ($1) "
             "AND j <> ALL ($2)", types="text[], int[]",
             execs=["'{acme,ACME,globex}', '{1,NULL}'",
                    "'{stark,nobody}', '{7,42}'"],
             mode="force_generic_plan"),
    ]
    gen = Gen(rng, rows, has_icu, has_ci)
    while len(cases) < NCASES:
        cases.append(gen.case())
    cases += [gen.top_n_case() for _ in range(NCASES // 5)]
    cases += [gen.row_top_n_case() for _ in range(NCASES // 5)]

    cases += [gen.join_case() for _ in range(NCASES // 4)]
    cases += [gen.time_case() for _ in range(NCASES // 4)]
    cases += [gen.time_bucket_case() for _ in range(NCASES // 8)]
    # the reference table's cases draw from a random stream of their own,
    # so that the cases above stay what they were
    rgen = Gen(random.Random(SEED * 31 + 11), rows, has_icu, has_ci)
    rgen.plans = REF_PLANS
    cases += [rgen.ref_join_case() for _ in range(NCASES // 4)]
    cases += [rgen.ref_read_case() for _ in range(NCASES // 10)]
    # joins ordered by a time column first, from a stream of their own too
    tgen = Gen(random.Random(SEED * 37 + 5), rows, has_icu, has_ci)
    cases += [tgen.join_case(time_key=True) for _ in range(NCASES // 10)]

    # aggregates over joins, the facts grouped first: a stream of their own
    egen = Gen(random.Random(SEED * 41 + 3), rows, has_icu, has_ci)
    egen.plans = REF_PLANS
    cases += [egen.eager_case() for _ in range(NCASES // 10)]

    # groupings at a small work_mem, chosen by a stream of their own
    mgen = random.Random(SEED * 43 + 7)
    for c in cases:
        if "GROUP BY" in c.query and c.execs is None and mgen.random() < 0.3:
            c.work_mem = "64kB"

    results = run_cases(cases)
    passed, failed, both_err = compare(cases, results)
    # each check: one passed case, or one failed case with its message
    checks = []

    def enough(what, n, total, need, detail=""):
        """At least need of total cases pushed, or a failed check."""
        checks.append((n >= need,
                       "too few %s: %d of %d%s" % (what, n, total, detail)))

    ntop, npushed = top_n_pushdown(cases)
    log("%d top-N cases, %d of them sorted and limited in the shards" % (
        ntop, npushed))
    enough("top-N cases were sorted and limited in the shards", npushed,
           ntop, max(1, ntop // 5))
    nrow, nrow_pushed = top_n_pushdown(cases, "row_top")
    log("%d ORDER BY ... LIMIT cases of rows, %d of them sorted and limited "
        "in the shards" % (nrow, nrow_pushed))
    enough("ORDER BY ... LIMIT cases of rows were sorted and limited in "
           "the shards", nrow_pushed, nrow, max(1, nrow // 4))

    njt, njt_pushed = join_time_pushdown(cases)
    log("%d joins ordered by a time column first, %d of them sorted and limited "
        "in the shards" % (njt, njt_pushed))
    enough("joins ordered by a time were sorted and limited in the shards",
           njt_pushed, njt, max(1, njt // 10))

    njoin, npushed = join_pushdown(cases)
    log("%d join cases, %d of them joined in the shards" % (njoin, npushed))
    enough("join cases were joined in the shards", npushed, njoin,
           njoin // 5)

    nref, npushed, nrouted = reference_pushdown(cases)
    log("%d reference join cases, %d of them joined with the reference "
        "table in the shards (%d routed)" % (nref, npushed, nrouted))
    enough("reference join cases were joined in the shards", npushed, nref,
           nref // 5)
    enough("reference join cases were routed and joined in the shards",
           nrouted, nref, nref // 10)
    # every copy of the reference table alike, by reference_check
    rc, out, err = psql("SELECT count(*), bool_and(same), count(DISTINCT "
                        "digest) FROM reference_check('%s');\n" % RT)
    checks.append((out.strip() == FS.join(["%d" % len(SHARDS), "t", "1"]),
                   "reference_check('%s') does not find %d copies alike: "
                   "%s %s" % (RT, len(SHARDS), out.strip(), err.strip())))

    neager, ngrouped = eager_grouping(cases)
    log("%d aggregates over joins, %d of them with the facts grouped in the "
        "shards first" % (neager, ngrouped))
    enough("aggregates over joins grouped the facts first", ngrouped, neager,
           neager // 3)

    nsmall, nspilled = merge_spills(cases)
    log("%d groupings at work_mem 64kB, %d of them with a merge that set "
        "rows aside on disk" % (nsmall, nspilled))
    enough("groupings at a small work_mem set rows aside", nspilled, nsmall, 1)

    ntime, npushed = time_pushdown(cases)
    log("%d time cases, %d of them pushed whole" % (ntime, npushed))
    enough("time cases ran every condition in the shards", npushed, ntime,
           ntime // 2)
    nbucket, npushed = bucket_pushdown(cases)
    log("%d time bucket cases, %d of them grouped in the shards" % (
        nbucket, npushed))
    enough("time bucket cases were grouped in the shards", npushed, nbucket,
           nbucket // 2)

    for ok, msg in checks:
        if ok:
            passed += 1
        else:
            failures.append(msg)
            failed += 1

    for msg in failures:
        log(msg)
        log()
    for msg in notes:
        log("note: " + msg)
    log("%d rows in %d shards; %d cases (%d where both sides fail); "
        "%.1f s; seed %d" % (len(rows), len(SHARDS), len(cases), both_err,
                             time.time() - t0, SEED))
    log("%d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    # SIGTERM (a time limit, a stopped run) ends the test through main()'s
    # cleanup, which removes the fixture folder.
    def on_signal(signo, frame):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        sys.exit(128 + signo)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    sys.exit(main())
