#!/usr/bin/env python3
#
# test/write_differential.py
#	The write differential test: random sequences
#	of INSERT and COPY statements inside transactions, applied to a foreign
#	table over a small fleet and to a native PostgreSQL table with the same
#	constraints; the statements' outcomes and the tables' contents must be
#	the same.
#
# Usage: python3 test/write_differential.py   (normally through
#	test/write_differential_test.sh, which picks the database)
#
# Environment:
#	WDIFF_SEEDS		comma-separated seeds (default 1,2,3,4,5,6); each
#					builds a fleet of its own and runs its own sequence
#	WDIFF_BLOCKS	blocks (transactions or runs of autocommit statements)
#					per seed (default 60)
#	WDIFF_DIR		fixture folder (default: a new /tmp/ssfdw_wdiff.XXXXXX)
#	WDIFF_KEEP		1: keep the fixture folder (it is removed otherwise)
#	WDIFF_VERBOSE	1: print every block's statements
#	WDIFF_ALL_KINDS	1: generate the kinds of KNOWN_BROKEN too
#	PGHOST, PGPORT, PGUSER, PGDATABASE ...: where to connect (psql)
#
# The fleet of a seed: three shards holding the table items, declared the
# ways an application may declare it, with the same constraints (NOT NULL,
# CHECK, PRIMARY KEY (tenant_id, id), UNIQUE (tenant_id, code), a DEFAULT
# on qty):
#
#	s1	WAL, a rowid table with declared types (score REAL)
#	s2	rollback journal, columns in another order, most without a type
#		(tenant_id, qty and id have one: aggregates are pushed only over
#		columns, and under conditions on columns, declared alike in every
#		shard)
#	s3	WAL, WITHOUT ROWID (a row-by-row UPDATE or DELETE finds its rows
#		by primary key; tenant "42" lives here, an integer in the TEXT
#		key column)
#
# and a directory placing eight tenants on them (one MIGRATING, written on
# its source s1; one DONE, written on its target s3).  The foreign table
# wd_ft and the native table wd_nt have the same columns (bigint, text,
# numeric, double precision, boolean, date, timestamp, timestamptz, bytea,
# uuid, jsonb); wd_nt declares the shards' constraints, a foreign key to the
# known tenants (an unknown tenant is 23503 on both sides) and qty's
# default; both declare flag's default.  wd_stage is a native table of rows
# to copy from.
#
# A sequence is made of blocks.  A block is either a few autocommit
# statements or a transaction (READ COMMITTED, REPEATABLE READ or
# SERIALIZABLE) that commits or rolls back, with SAVEPOINT, ROLLBACK TO
# and RELEASE in between, sometimes under psql's ON_ERROR_ROLLBACK (a
# savepoint around every statement).  Statements: single-row and
# multi-row INSERT (a random column list, or none), INSERT ... SELECT from
# wd_stage and from the table itself, COPY FROM STDIN (psql's \copy, from
# a file), RETURNING, ON CONFLICT DO NOTHING with duplicate keys, PL/pgSQL
# blocks that catch an error, prepared INSERTs (custom and generic plans),
# two INSERTs in one statement (WITH a AS (INSERT ...) INSERT ...) and in
# one query string (an implicit transaction), statements with one row
# that violates NOT NULL, CHECK, UNIQUE or the tenant's existence, so that
# they fail, and UPDATE and DELETE, row by row and inside the shards
# (change_stmt), some failing on CHECK or NOT NULL, and (correlated_change)
# UPDATEs and DELETEs whose SET or WHERE has a subquery that refers to the
# row being changed (SET (a, b) = (SELECT ...) too), UPDATE ... FROM and
# DELETE ... USING a source where each row matches several source rows,
# some of them run on the table's parent: by the seed's mode, a
# partitioned table whose DEFAULT partition the table is (next to a local
# partition), or a table the table inherits from (holding rows of its
# own), or the table itself; the parent's own rows are read after every
# block.  Kinds listed in KNOWN_BROKEN (wrong today) are not generated
# until the wrapper gets them right.  The batch_size of wd_ft changes
# between blocks.  Every few statements, and after every block, the table
# is read (all of it ORDER BY the key, or one tenant, or counts per
# tenant), inside transactions too: reads of the shards a transaction
# wrote see its writes.  Each seed starts with a fixed block of cases that
# once went wrong.
#
# Each block runs first on wd_ft, then on wd_nt, in one psql session per
# seed.  Compared, statement by statement: the output (RETURNING rows, the
# rows read), psql's ERROR, SQLSTATE and ROW_COUNT, and the errors psql
# prints on stderr (with VERBOSITY sqlstate, their SQLSTATE alone: psql 15
# sets no variable when a COPY fails).  The first difference of a seed
# fails the seed (the tables differ from then on): the seed, the block,
# the statement and both outcomes are printed.  At the end of a seed the
# shard files are read directly: every tenant's rows are in the shard the
# directory names, as many as the native table holds, and stored in
# SQLite's forms (integers, 0/1, BLOBs, text times that SQLite's date
# functions read).
#
# Prints the failures, then "N passed, M failed" (per seed, one check for
# the statements and one for the stored rows); exits 1 if anything failed.
#
# Values avoid what docs/reference/writes.md says the wrapper does not write the same
# way: infinite dates and times and times outside the years 1 to 9999
# (refused, 22008), and -0 in s1's REAL column (SQLite's REAL affinity
# turns the text '-0' the wrapper stores into 0).  RETURNING of INSERT ...
# SELECT from the table itself is ordered, since the rows come back in the
# order they are read.

import datetime
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid

REPO_TEST_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, REPO_TEST_DIR)
# the read differential's: the directory's tables, and waiting for the
# server to accept connections again after a backend crashed
from differential import directory_schema, server_ready  # noqa: E402

SEEDS = [int(s) for s in
         os.environ.get("WDIFF_SEEDS", "1,2,3,4,5,6").split(",") if s.strip()]
NBLOCKS = int(os.environ.get("WDIFF_BLOCKS", "60"))
VERBOSE = os.environ.get("WDIFF_VERBOSE", "") == "1"
ALL_KINDS = os.environ.get("WDIFF_ALL_KINDS", "") == "1"
DIR = None

FT = "wd_ft"
NT = "wd_nt"
# The target of some UPDATEs and DELETEs ({P} in a statement), by the seed's
# mode: the table itself ("plain"), a partitioned table whose DEFAULT
# partition the table is, next to a local partition ("partition"), or a
# table the table inherits from, holding rows of its own ("inherit").
MODES = ["plain", "partition", "inherit"]
PARENT = {FT: FT, NT: NT}
# Generated statements left out until the wrapper gets them right: kind
# (see correlated_change) -> why.  Remove an entry once the kind passes.
KNOWN_BROKEN = {
}
STAGE = "wd_stage"
SERVER = "wd_fleet"
FS = "\x1f"
NULL_TEXT = "<NULL>"

# name, PostgreSQL type
COLUMNS = [
    ("tenant_id", "text"),
    ("id", "bigint"),
    ("qty", "bigint"),
    ("label", "text"),
    ("code", "text"),
    ("price", "numeric"),
    ("score", "double precision"),
    ("flag", "boolean"),
    ("d", "date"),
    ("ts", "timestamp"),
    ("tz", "timestamptz"),
    ("data", "bytea"),
    ("uid", "uuid"),
    ("doc", "jsonb"),
]
COLNAMES = [c[0] for c in COLUMNS]
COLTYPE = dict(COLUMNS)
CAST = {"numeric": "numeric", "double precision": "float8",
        "boolean": "boolean", "date": "date", "timestamp": "timestamp",
        "timestamptz": "timestamptz", "bytea": "bytea", "uuid": "uuid",
        "jsonb": "jsonb"}

SHARDS = ["s1", "s2", "s3"]
WAL = {"s1": True, "s2": False, "s3": True}
# tenant -> (status, shard_id, target_shard_id)
DIRECTORY = {
    "acme": ("ACTIVE", "s1", None),
    "o'hara": ("ACTIVE", "s1", None),
    "globex": ("ACTIVE", "s2", None),
    "zürich": ("ACTIVE", "s2", None),
    "initech": ("ACTIVE", "s3", None),
    "tenant two": ("ACTIVE", "s3", None),
    "42": ("ACTIVE", "s3", None),
    "moving": ("MIGRATING", "s1", "s2"),
    "done": ("DONE", "s1", "s3"),
}
TENANTS = list(DIRECTORY)
# the shard a tenant's rows are written to
OWNER = {t: (tgt if st == "DONE" else s)
         for t, (st, s, tgt) in DIRECTORY.items()}
UNKNOWN_TENANT = "ghost"
# shards whose score column has REAL affinity: -0 is not written there
REAL_SCORE = {"s1"}

SCHEMAS = {
    "s1": """
        CREATE TABLE items(
            tenant_id TEXT NOT NULL, id INTEGER NOT NULL,
            qty INTEGER DEFAULT 0 CHECK (qty >= 0),
            label TEXT NOT NULL CHECK (length(label) <= 20),
            code TEXT, price TEXT, score REAL, flag INTEGER, d TEXT, ts TEXT,
            tz TEXT, data BLOB, uid TEXT, doc TEXT,
            PRIMARY KEY (tenant_id, id), UNIQUE (tenant_id, code));
        CREATE INDEX items_code ON items(code);""",
    "s2": """
        CREATE TABLE items(
            doc, uid, data, tz, ts DATETIME, d, flag BOOLEAN, score, price,
            code, label NOT NULL CHECK (length(label) <= 20),
            qty INT DEFAULT 0 CHECK (qty >= 0), id BIGINT NOT NULL,
            tenant_id TEXT NOT NULL,
            UNIQUE (tenant_id, code), PRIMARY KEY (tenant_id, id));""",
    "s3": """
        CREATE TABLE items(
            tenant_id TEXT NOT NULL, id INTEGER NOT NULL,
            qty INTEGER DEFAULT 0 CHECK (qty >= 0),
            label TEXT NOT NULL CHECK (length(label) <= 20),
            code TEXT, price TEXT, score, flag INTEGER, d TEXT, ts TEXT,
            tz TEXT, data BLOB, uid TEXT, doc TEXT,
            PRIMARY KEY (tenant_id, id), UNIQUE (tenant_id, code))
        WITHOUT ROWID;""",
}

LABELS = ["plain", "o'brien", "back\\slash", "tab\there", "new\nline",
          "ünïcödé", "日本語テキスト", "😀 emoji", "", " ", "50% _off_",
          'say "hi"', "x" * 20, "e\u0301cole", "a;b", "-- not a comment",
          "$$dollar$$", "\\N", "\\."]
LONG_LABELS = ["y" * 21, "😀" * 21, "日本語" * 7 + "!"]
NUMERICS = ["0", "1.50", "-0.000", "NaN", "Infinity", "-Infinity",
            "123456789012345678901234567890.123456789", "1e-20", "-42",
            "0.1", "99999999999999999999.99", "3.14159265358979323846"]
FLOATS = ["0", "0.1", "1e308", "-1e308", "5e-324", "Infinity", "-Infinity",
          "NaN", "-0", "1.5", "-2.5e-10", "9007199254740993", "123456.0",
          "3", "0.30000000000000004"]
JSONS = ['{"a": 1}', '[1, 2.50, "x"]', '"str \\"quoted\\" \\\\ back"',
         'null', '{"ü": {"n": 1e3}}', '12', 'true', '{}', '[]',
         '{"a": 1, "a": 2}', '{"k": [null, false, -0.0, 1.0e-5]}',
         '"tab\\tnew\\nline"', '{"b": 1, "a": 2}', '"日本"']

failures = []


def log(msg=""):
    print(msg, flush=True)


def sql_str(s):
    return "'" + s.replace("'", "''") + "'"


def copy_escape(s):
    return (s.replace("\\", "\\\\").replace("\t", "\\t")
            .replace("\n", "\\n").replace("\r", "\\r"))


def psql(script, timeout=120):
    """Run a script in one psql session; returns (rc, stdout, stderr)."""
    try:
        p = subprocess.run(
            ["psql", "-X", "-q", "-A", "-t", "-F", FS, "-v",
             "ON_ERROR_STOP=0", "-f", "-"],
            input=script, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        out = e.stdout or b""
        if isinstance(out, bytes):
            out = out.decode("utf-8", "replace")
        return 124, out, "psql timed out after %d s" % timeout
    return p.returncode, p.stdout, p.stderr


# ---------------------------------------------------------------------------
# The fleet
# ---------------------------------------------------------------------------

def build_fleet(d):
    """Create d/directory.db and d/shards/*.db, handed to the server."""
    if os.path.isdir(d):
        shutil.rmtree(d)
    os.makedirs(os.path.join(d, "shards"))
    con = sqlite3.connect(os.path.join(d, "directory.db"))
    con.executescript("PRAGMA journal_mode = WAL;")
    con.executescript(directory_schema())
    with con:
        for s in SHARDS:
            con.execute("INSERT INTO shards VALUES (?, ?)",
                        (s, "shards/%s.db" % s))
        for t, (status, s, tgt) in DIRECTORY.items():
            con.execute("INSERT INTO shard_map(tenant_id, shard_id, status, "
                        "target_shard_id, updated_at) VALUES (?, ?, ?, ?, "
                        "1735689600)", (t, s, status, tgt))
    con.close()
    for s in SHARDS:
        con = sqlite3.connect(os.path.join(d, "shards", s + ".db"))
        con.executescript(SCHEMAS[s])
        con.execute("PRAGMA journal_mode = %s" % ("WAL" if WAL[s] else
                                                  "DELETE"))
        con.close()
    hand_over(d)


def hand_over(d):
    """Give the fleet to the server's OS user, as every fixture does
    (fx_done of test/fixtures/common.sh): the server writes the files and
    their journals."""
    subprocess.run(["bash", "-c", 'source "$1"; fx_done "$2"', "hand_over",
                    os.path.join(REPO_TEST_DIR, "fixtures", "common.sh"), d],
                   check=True)


def parent_sql(mode):
    """The parents of wd_ft and wd_nt in the seed's mode (PARENT names
    them), with rows of their own that the foreign and native sides share."""
    cols = ", ".join("%s %s" % (n, t) for n, t in COLUMNS)
    rows = ("(tenant_id, id, qty, label) VALUES ('local', 1, 5, 'loc one'), "
            "('local', 2, NULL, 'loc two'), ('local', 3, 0, 'o')")
    out = []
    for side, table in (("f", FT), ("n", NT)):
        if mode == "plain":
            PARENT[table] = table
            continue
        if mode == "partition":
            parent = "wd_pt_" + side
            out.append("DROP TABLE IF EXISTS %s;" % parent)
            out.append("CREATE TABLE %s (%s) PARTITION BY LIST (tenant_id);"
                       % (parent, cols))
            out.append("CREATE TABLE %s_local PARTITION OF %s FOR VALUES IN "
                       "('local');" % (parent, parent))
            out.append("ALTER TABLE %s ATTACH PARTITION %s DEFAULT;" % (
                parent, table))
            out.append("INSERT INTO %s_local %s;" % (parent, rows))
        else:
            parent = "wd_ih_" + side
            out.append("DROP TABLE IF EXISTS %s;" % parent)
            out.append("CREATE TABLE %s (%s);" % (parent, cols))
            out.append("ALTER %s %s INHERIT %s;" % (
                "FOREIGN TABLE" if table == FT else "TABLE", table, parent))
            out.append("INSERT INTO %s %s;" % (parent, rows))
            out.append("INSERT INTO %s (tenant_id, id, qty, label) VALUES "
                       "('acme', 900000000000001, 3, 'parent acme'), "
                       "('globex', 900000000000002, NULL, 'parent globex');"
                       % parent)
        PARENT[table] = parent
    return "\n".join(out)


def setup_sql(d, stage_rows, batch_size, mode="plain"):
    ft_cols = []
    nt_cols = []
    for name, typ in COLUMNS:
        ft = "%s %s" % (name, typ)
        nt = "%s %s" % (name, typ)
        if name == "flag":
            ft += " DEFAULT true"
            nt += " DEFAULT true"
        if name == "qty":
            nt += " DEFAULT 0 CHECK (qty >= 0)"
        if name in ("tenant_id", "id"):
            nt += " NOT NULL"
        if name == "tenant_id":
            nt += " REFERENCES wd_tenants"
        if name == "label":
            nt += " NOT NULL CHECK (length(label) <= 20)"
        ft_cols.append(ft)
        nt_cols.append(nt)
    opts = ""
    if batch_size is not None:
        opts = ", batch_size '%d'" % batch_size
    stage_cols = ", ".join("%s %s" % (n, t) for n, t in COLUMNS if n != "id")
    return f"""
\\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;
DROP TABLE IF EXISTS wd_pt_f, wd_pt_n, wd_ih_f, wd_ih_n CASCADE;
DROP SERVER IF EXISTS {SERVER} CASCADE;
DROP TABLE IF EXISTS {NT}, {STAGE}, wd_tenants;
CREATE SERVER {SERVER} FOREIGN DATA WRAPPER sqlite_shard_fdw
  OPTIONS (directory {sql_str(os.path.join(d, "directory.db"))});
CREATE FOREIGN TABLE {FT} (
  {", ".join(ft_cols)}
) SERVER {SERVER} OPTIONS (table 'items'{opts});
CREATE TABLE wd_tenants (tenant_id text PRIMARY KEY);
INSERT INTO wd_tenants VALUES {", ".join("(%s)" % sql_str(t) for t in TENANTS)};
CREATE TABLE {NT} (
  {", ".join(nt_cols)},
  PRIMARY KEY (tenant_id, id),
  UNIQUE (tenant_id, code)
);
CREATE TABLE {STAGE} (sid int PRIMARY KEY, {stage_cols});
{stage_rows}
ANALYZE {STAGE};
{parent_sql(mode)}
"""


SESSION = """
\\pset null '%s'
\\set VERBOSITY sqlstate
SET TimeZone = '%s';
SET DateStyle = 'ISO, MDY';
SET bytea_output = 'hex';
SET statement_timeout = '20s';
SET client_min_messages = error;
"""


# ---------------------------------------------------------------------------
# Values and rows
# ---------------------------------------------------------------------------

class Gen:
    """The random sequence of one seed."""

    def __init__(self, rng):
        self.rng = rng
        self.next_id = 1
        self.keys = []              # (tenant, id) ever written
        self.codes = []             # (tenant, code) ever written
        self.next_code = 1
        self.self_copies = 0
        self.savepoints = []
        self.sp_counter = 0
        self.stage_tenants = {}
        self.batch_set = False      # wd_ft has a batch_size option
        self.prepared = 0
        self.ctes = 0
        self.rekeys = 0

    def pick(self, seq):
        return self.rng.choice(seq)

    def chance(self, p):
        return self.rng.random() < p

    # --- values: raw text (what the type's input function reads) or None

    def v_tenant(self):
        return self.pick(TENANTS)

    def v_qty(self):
        if self.chance(0.1):
            return None
        return str(self.pick([0, 1, 7, 42, 9223372036854775807,
                              self.rng.randrange(0, 10**6),
                              self.rng.randrange(0, 2**62)]))

    def v_label(self):
        return self.pick(LABELS + ["label %d" % self.rng.randrange(1000)])

    def v_code(self, tenant):
        if self.chance(0.4):
            return None
        c = self.pick(["c", "ç", "C"]) + str(self.next_code)
        self.next_code += 1
        self.codes.append((tenant, c))
        return c

    def v_price(self):
        if self.chance(0.1):
            return None
        if self.chance(0.5):
            return self.pick(NUMERICS)
        scale = self.rng.randrange(0, 9)
        n = self.rng.randrange(-10**12, 10**12)
        s = str(abs(n)).rjust(scale + 1, "0")
        if scale:
            s = s[:-scale] + "." + s[-scale:]
        return ("-" if n < 0 else "") + s

    def v_score(self, tenant):
        if self.chance(0.1):
            return None
        while True:
            if self.chance(0.4):
                v = self.pick(FLOATS)
            else:
                v = repr(self.rng.uniform(-1, 1) *
                         10 ** self.rng.randrange(-30, 30))
            if v == "-0" and OWNER.get(tenant) in REAL_SCORE:
                continue
            return v

    def v_flag(self):
        return self.pick([None, "t", "f", "true", "false"])

    def rand_dt(self, lo=1, hi=9999):
        r = self.rng.random()
        if r < 0.1:
            y = self.pick([lo, hi])
        elif r < 0.7:
            y = self.rng.randrange(1900, 2100)
        else:
            y = self.rng.randrange(lo, hi + 1)
        dt = datetime.datetime(y, 1, 1) + datetime.timedelta(
            days=self.rng.randrange(365), seconds=self.rng.randrange(86400))
        if dt.year > hi:
            dt = datetime.datetime(hi, 12, 31, 23, 59, 59)
        if self.chance(0.5):
            dt = dt.replace(microsecond=self.rng.randrange(10**6))
        return dt

    def v_date(self):
        if self.chance(0.1):
            return None
        return "%04d-%02d-%02d" % self.rand_dt().timetuple()[:3]

    def v_ts(self):
        if self.chance(0.1):
            return None
        if self.chance(0.05):
            return self.pick(["0001-01-01 00:00:00",
                              "9999-12-31 23:59:59.999999"])
        dt = self.rand_dt()
        s = "%04d-%02d-%02d %02d:%02d:%02d" % dt.timetuple()[:6]
        if dt.microsecond:
            s += ".%06d" % dt.microsecond
        return s

    def v_tz(self):
        if self.chance(0.1):
            return None
        dt = self.rand_dt(2, 9998)
        s = "%04d-%02d-%02d %02d:%02d:%02d" % dt.timetuple()[:6]
        if dt.microsecond:
            s += ".%06d" % dt.microsecond
        return s + self.pick(["", "", "+00", "-07:30", "+05:45", "Z",
                              " UTC", " Europe/Berlin"])

    def v_data(self):
        if self.chance(0.1):
            return None
        n = self.pick([0, 1, 2, 5, 16])
        b = bytes(self.rng.randrange(256) for _ in range(n))
        if n and self.chance(0.3):
            b = b"\x00" + b
        return "\\x" + b.hex()

    def v_uid(self):
        if self.chance(0.1):
            return None
        u = str(uuid.UUID(int=self.rng.getrandbits(128)))
        return self.pick([u, u.upper(), "{%s}" % u, u.replace("-", "")])

    def v_doc(self):
        if self.chance(0.1):
            return None
        if self.chance(0.7):
            return self.pick(JSONS)
        return '{"n": %d, "s": "%s"}' % (self.rng.randrange(-999, 999),
                                        self.pick(["a", "ü", "x y", ""]))

    def fresh_id(self):
        i = self.next_id
        self.next_id += self.pick([1, 1, 1, 2, 17])
        return i

    def row(self, tenant=None, bad=None):
        """A row (column -> raw text or None) of a known tenant with a fresh
        key; bad names the one constraint it violates."""
        t = tenant or self.v_tenant()
        r = {"tenant_id": t, "id": str(self.fresh_id()), "qty": self.v_qty(),
             "label": self.v_label(), "code": self.v_code(t),
             "price": self.v_price(), "score": self.v_score(t),
             "flag": self.v_flag(), "d": self.v_date(), "ts": self.v_ts(),
             "tz": self.v_tz(), "data": self.v_data(), "uid": self.v_uid(),
             "doc": self.v_doc()}
        self.keys.append((t, r["id"]))
        if bad == "null_tenant":
            r["tenant_id"] = None
        elif bad == "unknown_tenant":
            r["tenant_id"] = UNKNOWN_TENANT
        elif bad == "null_label":
            r["label"] = None
        elif bad == "null_id":
            r["id"] = None
        elif bad == "check_qty":
            r["qty"] = str(-self.rng.randrange(1, 10**6))
        elif bad == "check_label":
            r["label"] = self.pick(LONG_LABELS)
        elif bad == "dup_key":
            tk, ik = self.pick(self.keys)
            r["tenant_id"], r["id"] = tk, ik
        elif bad == "dup_code" and self.codes:
            tk, ck = self.pick(self.codes)
            r["tenant_id"], r["code"] = tk, ck
        return r

    def bad_kind(self):
        return self.pick(["null_tenant", "unknown_tenant", "null_label",
                          "null_id", "check_qty", "check_label", "dup_key",
                          "dup_key", "dup_code"])


def fit_score(rows):
    """-0 is not written to a REAL column (see above): a row moved to a
    tenant of such a shard gets 0 instead."""
    for r in rows:
        if r["score"] == "-0" and OWNER.get(r["tenant_id"]) in REAL_SCORE:
            r["score"] = "0"
    return rows


def literal(col, v):
    """The SQL literal of a raw value for column col."""
    if v is None:
        return "NULL"
    typ = COLTYPE[col]
    if typ == "bigint":
        return v if not v.startswith("-") else "(%s)" % v
    if typ == "text":
        return sql_str(v)
    return "%s::%s" % (sql_str(v), CAST[typ])


def copy_field(v):
    return "\\N" if v is None else copy_escape(v)


# ---------------------------------------------------------------------------
# Statements
# ---------------------------------------------------------------------------

RETURNINGS = ["*", "tenant_id, id", "id, qty, flag, code",
              "id, length(label), price * 2, score::text, tz, data, doc",
              "tenant_id || '/' || id, uid, d, ts", "qty"]


class Stmt:
    """One statement of a block: text with {T} for the table, and what is
    compared.  copy_data: the lines a \\copy ... FROM reads (written to a
    file of their own, so that a COPY that fails before it starts leaves
    nothing for psql to take for commands)."""

    def __init__(self, sql, copy_data=None, compare=True, ft_only=False):
        self.sql = sql
        self.copy_data = copy_data
        self.copy_file = None       # set when the script is written
        self.compare = compare
        self.ft_only = ft_only      # run on wd_ft only, not compared
        self.meta = not compare

    def text(self, table):
        s = self.sql.replace("{T}", table).replace(
            "{S}", "f" if table == FT else "n").replace("{P}", PARENT[table])
        if self.copy_data is not None:
            s += " FROM " + sql_str(self.copy_file or "FILE")
        return s

    def describe(self):
        s = self.text(FT)
        if self.copy_data is not None:
            s += "\n" + "".join(copy_line + "\n" for copy_line in
                                self.copy_data)
        return s


def values_insert(g, nrows, bad=None, on_conflict=False, returning=None,
                  with_cols=True):
    """INSERT ... VALUES of nrows rows, the bad one (if any) at a random
    place."""
    badpos = g.rng.randrange(nrows) if bad else -1
    rows = [g.row(bad=bad if i == badpos else None) for i in range(nrows)]
    if on_conflict:
        # duplicates of keys and codes written before, and of this
        # statement's own rows
        for i in range(len(rows)):
            if i == badpos:
                continue
            if g.chance(0.3) and g.keys:
                tk, ik = g.pick(g.keys)
                rows[i]["tenant_id"], rows[i]["id"] = tk, ik
            elif g.chance(0.2) and g.codes:
                tk, ck = g.pick(g.codes)
                rows[i]["tenant_id"], rows[i]["code"] = tk, ck
            elif g.chance(0.2) and i > 0:
                rows[i]["tenant_id"] = rows[i - 1]["tenant_id"]
                rows[i]["id"] = rows[i - 1]["id"]
    fit_score(rows)
    if with_cols:
        cols = ["tenant_id", "id", "label"]
        if bad == "null_label":
            # the label left out: NULL on both sides (no default anywhere)
            cols.remove("label")
        opt = [c for c in COLNAMES if c not in ("tenant_id", "id", "label")]
        cols += [c for c in opt if g.chance(0.6)]
        if bad == "check_qty" and "qty" not in cols:
            cols.append("qty")
        if bad == "dup_code" and "code" not in cols:
            cols.append("code")
        g.rng.shuffle(cols)
        head = "INSERT INTO {T} (%s) VALUES " % ", ".join(cols)
    else:
        cols = COLNAMES
        head = "INSERT INTO {T} VALUES "
    vals = []
    for r in rows:
        items = []
        for c in cols:
            if c == "flag" and g.chance(0.15):
                items.append("DEFAULT")
            else:
                items.append(literal(c, r[c]))
        vals.append("(" + ", ".join(items) + ")")
    sql = head + ",\n  ".join(vals)
    if on_conflict:
        sql += " ON CONFLICT DO NOTHING"
    if returning:
        sql += " RETURNING " + returning
    return Stmt(sql)


def copy_stmt(g, nrows, bad=None):
    badpos = g.rng.randrange(nrows) if bad else -1
    rows = fit_score([g.row(bad=bad if i == badpos else None)
                      for i in range(nrows)])
    # COPY writes every column of the foreign table: qty, whose default is
    # the shard's, is always listed; flag (the foreign table's default) may
    # be left out
    cols = [c for c in COLNAMES
            if c in ("tenant_id", "id", "label", "qty") or g.chance(0.7)]
    if bad == "dup_code" and "code" not in cols:
        cols.append("code")
    g.rng.shuffle(cols)
    data = ["\t".join(copy_field(r[c]) for c in cols) for r in rows]
    return Stmt("\\copy {T} (%s)" % ", ".join(cols), copy_data=data)


def stage_insert(g, nstage, bad=None):
    """INSERT ... SELECT from the native staging table, with fresh ids and
    codes; bad: one selected row made to fail."""
    a = g.rng.randrange(1, nstage)
    b = min(nstage, a + g.rng.randrange(0, 12))
    base = g.next_id
    g.next_id += nstage + 1
    for sid in range(a, b + 1):
        g.keys.append((g.stage_tenants[sid], str(base + sid)))
    suffix = "-%d" % base
    tenant = "tenant_id"
    qty = "qty"
    label = "label"
    if bad:
        x = g.rng.randrange(a, b + 1)
        if bad == "check_qty":
            qty = "CASE WHEN sid = %d THEN -1 ELSE qty END" % x
        elif bad == "unknown_tenant":
            tenant = "CASE WHEN sid = %d THEN %s ELSE tenant_id END" % (
                x, sql_str(UNKNOWN_TENANT))
        elif bad == "null_tenant":
            tenant = "CASE WHEN sid = %d THEN NULL ELSE tenant_id END" % x
        else:
            label = "CASE WHEN sid = %d THEN NULL ELSE label END" % x
    where = "sid BETWEEN %d AND %d" % (a, b)
    if g.chance(0.3):
        where += " AND tenant_id IN (%s, %s)" % (sql_str(g.v_tenant()),
                                                 sql_str(g.v_tenant()))
    sql = ("INSERT INTO {T} (tenant_id, id, qty, label, code, price, score, "
           "flag, d, ts, tz, data, uid, doc)\n  SELECT %s, sid + %d, %s, %s, "
           "code || %s, price, score, flag, d, ts, tz, data, uid, doc "
           "FROM %s WHERE %s ORDER BY sid" % (
               tenant, base, qty, label, sql_str(suffix), STAGE, where))
    if g.chance(0.3):
        sql += " RETURNING " + g.pick(RETURNINGS)
    return Stmt(sql)


def self_insert(g):
    """INSERT INTO t SELECT ... FROM t: copies of some tenants' rows under
    new ids (id + 10^7 * 2^k, so that copies of copies never collide),
    read from the shards the statement writes."""
    off = 10**7 * 2 ** g.self_copies
    g.self_copies += 1
    tenants = [g.v_tenant() for _ in range(g.rng.randrange(1, 3))]
    sql = ("INSERT INTO {T} (tenant_id, id, qty, label, price, score, flag, "
           "d, ts, tz, data, uid, doc)\n  SELECT tenant_id, id + %d, qty, "
           "label, price, score, flag, d, ts, tz, data, uid, doc FROM {T} "
           "WHERE tenant_id IN (%s)" % (
               off, ", ".join(sql_str(t) for t in tenants)))
    returning = g.chance(0.3)
    r = g.rng.random()
    if r < 0.3:
        sql += " ORDER BY tenant_id, id"
    elif r < 0.5:
        sql += " ORDER BY tenant_id, id LIMIT %d" % g.rng.randrange(1, 8)
    elif returning:
        # RETURNING shows the rows in the order they were read
        sql += " ORDER BY tenant_id, id"
    if returning:
        sql += " RETURNING tenant_id, id, label"
    return Stmt(sql)


def plpgsql_block(g):
    """A DO block whose inner block fails (or not) and catches the error:
    its writes go, the outer block's stay.  The SQLSTATE caught is read
    back by the next statement."""
    outer = g.row()
    inner = [g.row() for _ in range(g.rng.randrange(1, 3))]
    bad = g.row(bad=g.bad_kind()) if g.chance(0.7) else g.row()
    fit_score([bad])

    def ins(r):
        return "INSERT INTO {T} VALUES (%s);" % ", ".join(
            literal(c, r[c]) for c in COLNAMES)

    body = ("DO $wd$\nBEGIN\n  PERFORM set_config('wd.state', 'none', "
            "false);\n  %s\n  BEGIN\n    %s\n    %s\n  EXCEPTION WHEN OTHERS "
            "THEN\n    PERFORM set_config('wd.state', SQLSTATE, false);\n  "
            "END;\nEND\n$wd$" % (
                ins(outer),
                "\n    ".join(ins(r) for r in inner), ins(bad)))
    return [Stmt(body),
            Stmt("SELECT current_setting('wd.state', true)")]


def prepared_insert(g, allow_bad):
    """A prepared INSERT executed a few times (custom plans, then generic
    ones, or generic from the start), each EXECUTE a statement."""
    g.prepared += 1
    name = "wdp%d_{S}" % g.prepared
    cols = ["tenant_id", "id", "label", "qty", "price", "tz", "data"]
    sql = ("PREPARE %s (%s) AS INSERT INTO {T} (%s) VALUES (%s)" % (
        name, ", ".join(COLTYPE[c] for c in cols), ", ".join(cols),
        ", ".join("$%d" % (i + 1) for i in range(len(cols)))))
    if g.chance(0.5):
        sql += " RETURNING tenant_id, id, label, tz"
    stmts = []
    generic = g.chance(0.3)
    if generic:
        stmts.append(Stmt("SET plan_cache_mode = force_generic_plan"))
    stmts.append(Stmt(sql))
    for _ in range(g.rng.randrange(1, 9)):
        bad = None
        if allow_bad and g.chance(0.15):
            bad = g.pick(["null_tenant", "unknown_tenant", "null_label",
                          "null_id", "check_qty", "check_label", "dup_key"])
        r = g.row(bad=bad)
        stmts.append(Stmt("EXECUTE %s (%s)" % (name, ", ".join(
            literal(c, r[c]) for c in cols))))
    if generic:
        stmts.append(Stmt("RESET plan_cache_mode"))
    return stmts


def cte_insert(g):
    """Two INSERTs into the table in one statement: a data-modifying WITH
    whose rows the outer INSERT copies under new ids (and longer labels,
    which may break the CHECK: then neither insert stays)."""
    g.ctes += 1
    k = 10**9 + g.ctes * 10**6
    rows = fit_score([g.row() for _ in range(g.rng.randrange(1, 4))])
    sql = ("WITH a AS (INSERT INTO {T} VALUES %s\n  RETURNING tenant_id, "
           "id, label, qty)\nINSERT INTO {T} (tenant_id, id, label, qty) "
           "SELECT tenant_id, id + %d, label || '+', qty FROM a ORDER BY "
           "tenant_id, id" % (", ".join(
               "(%s)" % ", ".join(literal(c, r[c]) for c in COLNAMES)
               for r in rows), k))
    if g.chance(0.5):
        sql += " RETURNING tenant_id, id, label"
    return Stmt(sql)


def multi_query(g, allow_bad):
    """Two INSERTs sent as one query string (psql's \\;): outside a
    transaction block they form an implicit transaction, which the second
    one's failure rolls back whole."""
    a = values_insert(g, g.rng.randrange(1, 4))
    b = values_insert(g, g.rng.randrange(1, 4),
                      bad=g.bad_kind() if allow_bad and g.chance(0.5)
                      else None)
    return Stmt(a.sql + " \\;\n" + b.sql)


def change_stmt(g, allow_bad):
    """An UPDATE or DELETE, routed to a tenant or on every shard: row by
    row where a condition only PostgreSQL evaluates (a regular expression)
    or a new value it computes per row (left()) keeps it from running
    inside the shards, else one statement per shard.  On s3 (WITHOUT
    ROWID) row by row finds rows by primary key, on s1 and s2 by rowid.
    Some have a subquery that reads the table itself (the table as it
    was before the statement).
    Some change the key itself (id, to a fresh range); some break the
    CHECK on qty or NOT NULL on label.  RETURNING goes through a WITH, to
    be ordered.  Half of them are correlated_change's."""
    if g.chance(0.5):
        return correlated_change(g, allow_bad)
    conds = []
    if g.chance(0.6):
        conds.append("tenant_id = %s" % sql_str(g.v_tenant()))
    if g.chance(0.6):
        conds.append("label ~ %s" % sql_str(g.pick(["a", "e", "^.", "o",
                                                     "[0-9]", "^$"])))
    else:
        conds.append("qty %s %d" % (g.pick(["<", ">=", "="]),
                                    g.rng.randrange(0, 12)))
    if g.chance(0.3):
        conds.append("id %% %d = %d" % (g.rng.randrange(2, 5),
                                         g.rng.randrange(0, 2)))
    if g.chance(0.2):
        # a subquery that reads the table the statement changes
        conds.append("(tenant_id, id) IN (SELECT tenant_id, id FROM {T} "
                     "WHERE qty %s %d)" % (g.pick(["<", ">="]),
                                           g.rng.randrange(0, 12)))
    where = " AND ".join(conds)
    if g.chance(0.6):
        sets = g.pick(["qty = qty + 1", "label = left(label || 'u', 20)",
                       "qty = coalesce(qty, 0) * 2, code = NULL",
                       "score = 1.5, flag = NOT flag", "rekey",
                       "doc = '{\"changed\": true}', qty = 7"])
        if sets == "rekey":
            g.rekeys += 1
            sets = "id = id + %d" % (5 * 10**11 + g.rekeys * 10**9)
        if allow_bad and g.chance(0.15):
            sets = g.pick(["qty = -1", "label = NULL"])
        sql = "UPDATE {T} SET %s WHERE %s" % (sets, where)
    else:
        sql = "DELETE FROM {T} WHERE %s" % where
    if g.chance(0.4):
        sql = ("WITH x AS (%s RETURNING tenant_id, id, qty, label)\n"
               "  SELECT * FROM x ORDER BY tenant_id, id" % sql)
    return Stmt(sql)


def correlated_change(g, allow_bad):
    """An UPDATE or DELETE of the table or of its parent ({P}: the
    partitioned table it is a partition of, or the table it inherits
    from, by the seed's mode), of one of these kinds:
      corr_set    a SET whose subquery (of the staging table) refers to the
                  row being changed
      corr_multi  SET (a, b) = (SELECT ...) of such a subquery
      corr_where  a condition with such a subquery (EXISTS, a comparison)
      dup_from    UPDATE ... FROM a source where each row matches several
                  source rows (changed and counted once)
      dup_using   DELETE ... USING such a source
      self_set    a correlated SET whose subquery reads the table itself
      self_multi  SET (a, b) = (SELECT ...) reading the table itself
      self_where  a correlated condition reading the table itself
    Kinds listed in KNOWN_BROKEN are not generated."""
    kinds = [k for k in ("corr_set", "corr_multi", "corr_where", "dup_from",
                         "dup_using", "self_set", "self_multi", "self_where")
             if k not in KNOWN_BROKEN or ALL_KINDS]
    kind = g.pick(kinds)
    target = "{P}" if g.chance(0.5) else "{T}"
    conds = []
    if g.chance(0.5):
        conds.append("tg.tenant_id IN (%s, %s)" % (sql_str(g.v_tenant()),
                                                   sql_str(g.v_tenant())))
    if g.chance(0.4):
        conds.append("tg.id %% %d = %d" % (g.rng.randrange(2, 4),
                                            g.rng.randrange(0, 2)))
    if g.chance(0.3):
        conds.append("tg.label ~ %s" % sql_str(g.pick(["a", "e", "^.", "o"])))
    dup = ("(SELECT tenant_id FROM %s UNION ALL SELECT tenant_id FROM %s "
           "WHERE sid %% 2 = 0) s" % (STAGE, STAGE))
    delete = False
    if kind == "corr_set":
        sets = g.pick([
            "qty = (SELECT count(*) FROM %s s WHERE s.tenant_id = "
            "tg.tenant_id AND s.qty <= tg.qty)" % STAGE,
            "label = coalesce((SELECT max(s.label) FROM %s s WHERE "
            "s.tenant_id = tg.tenant_id AND s.label < tg.label), tg.label)"
            % STAGE])
        sql = "UPDATE %s AS tg SET %s" % (target, sets)
    elif kind == "corr_multi":
        sql = ("UPDATE %s AS tg SET (qty, code) = (SELECT count(*), "
               "min(s.code) || '-' || tg.id FROM %s s WHERE s.tenant_id = "
               "tg.tenant_id)" % (target, STAGE))
    elif kind == "corr_where":
        delete = g.chance(0.4)
        conds.append(g.pick([
            "EXISTS (SELECT 1 FROM %s s WHERE s.tenant_id = tg.tenant_id "
            "AND s.qty > tg.qty)" % STAGE,
            "tg.qty > (SELECT avg(s.qty) FROM %s s WHERE s.tenant_id = "
            "tg.tenant_id)" % STAGE]))
        sql = ("DELETE FROM %s AS tg" % target if delete else
               "UPDATE %s AS tg SET qty = coalesce(tg.qty, 0) + 1" % target)
    elif kind == "dup_from":
        conds.append("s.tenant_id = tg.tenant_id")
        sql = ("UPDATE %s AS tg SET qty = coalesce(tg.qty, 0) + 1, label = "
               "left(tg.label || '+', 20) FROM %s" % (target, dup))
    elif kind == "dup_using":
        delete = True
        conds.append("s.tenant_id = tg.tenant_id")
        sql = "DELETE FROM %s AS tg USING %s" % (target, dup)
    elif kind == "self_set":
        sql = ("UPDATE %s AS tg SET qty = (SELECT s.qty + 1 FROM {T} AS s "
               "WHERE s.tenant_id = tg.tenant_id AND s.id = tg.id)" % target)
    elif kind == "self_multi":
        sql = ("UPDATE %s AS tg SET (qty, label) = (SELECT s.qty / 2, "
               "left(s.label || '*', 20) FROM {T} AS s WHERE s.tenant_id = "
               "tg.tenant_id AND s.id = tg.id)" % target)
    else:
        delete = g.chance(0.5)
        conds.append("tg.qty >= (SELECT max(s.qty) FROM {T} AS s WHERE "
                     "s.tenant_id = tg.tenant_id)")
        sql = ("DELETE FROM %s AS tg" % target if delete else
               "UPDATE %s AS tg SET label = left('max ' || tg.label, 20)"
               % target)
    if conds:
        sql += " WHERE " + " AND ".join(conds)
    if g.chance(0.4):
        sql = ("WITH x AS (%s RETURNING tg.tenant_id, tg.id, tg.qty, "
               "tg.label, tg.code)\n  SELECT * FROM x ORDER BY tenant_id, id"
               % sql)
    return Stmt(sql)


def check_all():
    return Stmt("SELECT * FROM {T} ORDER BY tenant_id, id")


def check_parent():
    """The rows of the parent ({P}) that are not the table's (its own, or
    its local partition's); none in the plain mode."""
    return Stmt("SELECT * FROM {P} WHERE tableoid <> '{T}'::regclass "
                "ORDER BY tenant_id, id")


def check_some(g):
    t = g.v_tenant()
    return g.pick([
        Stmt("SELECT id, label, qty, price, score FROM {T} WHERE tenant_id = "
             "%s ORDER BY id" % sql_str(t)),
        Stmt("SELECT tenant_id, count(*), sum(qty), max(id) FROM {T} GROUP BY "
             "tenant_id ORDER BY tenant_id"),
        Stmt("SELECT count(*), sum(qty) FROM {T} WHERE tenant_id = %s" %
             sql_str(t)),
    ])


def write_stmt(g, nstage, allow_bad=True):
    """A random write statement (a list: a PL/pgSQL block brings its
    read-back)."""
    if g.chance(0.2):
        return [change_stmt(g, allow_bad)]
    bad = g.bad_kind() if allow_bad and g.chance(0.25) else None
    r = g.rng.random()
    if r < 0.25:
        return [values_insert(g, 1, bad=bad,
                              returning=g.pick(RETURNINGS)
                              if g.chance(0.4) else None,
                              with_cols=g.chance(0.7))]
    if r < 0.45:
        return [values_insert(g, g.rng.randrange(2, 9), bad=bad,
                              returning=g.pick(RETURNINGS)
                              if g.chance(0.3) else None,
                              with_cols=g.chance(0.8))]
    if r < 0.55:
        ob = g.pick([None, None, None, "check_qty", "null_label"])
        return [values_insert(g, g.rng.randrange(1, 7), bad=ob,
                              on_conflict=True,
                              returning=g.pick(RETURNINGS)
                              if g.chance(0.5) else None)]
    if r < 0.7:
        return [copy_stmt(g, g.rng.randrange(1, 12), bad=bad)]
    if r < 0.82:
        return [stage_insert(g, nstage, bad=bad if bad in (
            None, "check_qty", "unknown_tenant", "null_tenant",
            "null_label") else None)]
    if r < 0.86 and g.self_copies < 3:
        return [self_insert(g)]
    if r < 0.9:
        return prepared_insert(g, allow_bad)
    if r < 0.93:
        return [cte_insert(g)]
    if r < 0.96:
        return [multi_query(g, allow_bad)]
    return plpgsql_block(g)


def gen_block(g, nstage):
    """A block: autocommit statements, or a transaction."""
    stmts = []
    if g.chance(0.08):
        stmts.append(Stmt("ALTER FOREIGN TABLE {T} OPTIONS (%s batch_size "
                          "'%d')" % ("SET" if g.batch_set else "ADD",
                                     g.pick([1, 2, 3, 10, 100])),
                          ft_only=True))
        g.batch_set = True
    if g.chance(0.25):
        for _ in range(g.rng.randrange(1, 4)):
            stmts += write_stmt(g, nstage)
        stmts.append(check_all())
        stmts.append(check_parent())
        return stmts

    onerr = g.chance(0.2)
    if onerr:
        stmts.append(Stmt("\\set ON_ERROR_ROLLBACK on", compare=False))
    iso = g.pick(["", "", " ISOLATION LEVEL REPEATABLE READ",
                  " ISOLATION LEVEL SERIALIZABLE", " ISOLATION LEVEL READ "
                  "COMMITTED"])
    stmts.append(Stmt("BEGIN" + iso))
    if g.chance(0.3):
        stmts.append(check_some(g))
    sps = []
    for _ in range(g.rng.randrange(2, 11)):
        r = g.rng.random()
        if r < 0.15:
            g.sp_counter += 1
            name = "sp%d" % g.sp_counter if g.chance(0.8) or not sps \
                else g.pick(sps)
            sps.append(name)
            stmts.append(Stmt("SAVEPOINT " + name))
        elif r < 0.25 and sps:
            i = g.rng.randrange(len(sps))
            stmts.append(Stmt("ROLLBACK TO SAVEPOINT " + sps[i]))
            del sps[i + 1:]
        elif r < 0.32 and sps:
            i = g.rng.randrange(len(sps))
            stmts.append(Stmt("RELEASE SAVEPOINT " + sps[i]))
            del sps[i:]
        elif r < 0.42:
            stmts.append(check_some(g) if g.chance(0.5) else check_all())
        elif r < 0.55:
            # a failing statement, inside a savepoint rolled back after it
            g.sp_counter += 1
            name = "bad%d" % g.sp_counter
            stmts.append(Stmt("SAVEPOINT " + name))
            bad = g.bad_kind()
            stmts.append(values_insert(g, g.rng.randrange(1, 5), bad=bad))
            stmts.append(Stmt("ROLLBACK TO SAVEPOINT " + name))
            if g.chance(0.5):
                stmts.append(Stmt("RELEASE SAVEPOINT " + name))
        else:
            stmts += write_stmt(g, nstage, allow_bad=onerr or g.chance(0.3))
    if g.chance(0.5):
        stmts.append(check_all())
    stmts.append(Stmt(g.pick(["COMMIT", "COMMIT", "COMMIT", "ROLLBACK",
                              "ROLLBACK", "END"])))
    if onerr:
        stmts.append(Stmt("\\set ON_ERROR_ROLLBACK off", compare=False))
    stmts.append(check_all())
    stmts.append(check_parent())
    return stmts


def fixed_block(g):
    """Statements every seed runs first: cases that once went wrong."""
    def row(tenant, **vals):
        r = g.row(tenant=tenant)
        r.update(vals)
        return "(%s)" % ", ".join(literal(c, r[c]) for c in COLNAMES)

    return [
        # RETURNING of a BLOB that holds zero bytes (it came back cut at
        # the first one)
        Stmt("INSERT INTO {T} VALUES %s RETURNING id, data, length(data)" %
             ", ".join([row("acme", data="\\x00d3"),
                        row("globex", data="\\x00"),
                        row("initech", data="\\x610062000063"),
                        row("zürich", data="\\x")])),
        check_all(),
    ]


def stage_rows_sql(g, n):
    """INSERTs filling the staging table with n valid rows."""
    out = []
    for sid in range(1, n + 1):
        t = g.v_tenant()
        g.stage_tenants[sid] = t
        r = g.row(tenant=t)
        r["code"] = None if g.chance(0.4) else "st%d" % sid
        out.append("(%d, %s)" % (sid, ", ".join(
            literal(c, r[c]) for c in COLNAMES if c != "id")))
    g.keys = []
    g.codes = []
    return "INSERT INTO %s VALUES\n  %s;" % (STAGE, ",\n  ".join(out))


# ---------------------------------------------------------------------------
# Running and comparing
# ---------------------------------------------------------------------------

def block_script(bi, block):
    """psql lines running a block on the foreign, then the native table."""
    out = []
    for side, table in (("F", FT), ("N", NT)):
        for si, st in enumerate(block):
            if st.ft_only and side == "N":
                continue
            if st.meta:
                out.append(st.text(table))
                continue
            out.append("\\echo @@Q %d %d %s" % (bi, si, side))
            out.append("\\warn @@Q %d %d %s" % (bi, si, side))
            if st.copy_data is not None:
                # psql sets neither ERROR nor ROW_COUNT when a COPY fails
                # once it started: its error is read from stderr, and a
                # ROW_COUNT left at 0 says it failed
                out.append("\\set ROW_COUNT 0")
                out.append(st.text(table))
            else:
                out.append(st.text(table) + ";")
            out.append("\\echo @@E %d %d %s :ERROR :SQLSTATE :ROW_COUNT" % (
                bi, si, side))
    return out


ERROR_LINE = re.compile(r"^psql:[^:]*:\d+: (.*)$")


def parse_errors(text):
    """{(block, stmt, side): [error lines]} from psql's stderr, where each
    statement starts with a marker and errors show only their SQLSTATE
    (VERBOSITY sqlstate): "ERROR:  23505"."""
    errors = {}
    cur = None
    for line in text.split("\n"):
        if line.startswith("@@Q "):
            _, b, s, side = line.split(" ")
            cur = (int(b), int(s), side)
            errors[cur] = []
        elif cur is not None:
            m = ERROR_LINE.match(line)
            if m:
                errors[cur].append(m.group(1))
    return errors


def parse_output(text, errtext):
    """{(block, stmt, side): (output lines, "ERROR SQLSTATE ROW_COUNT",
    error lines)} and the last statement started."""
    errors = parse_errors(errtext)
    results = {}
    cur = None
    last = None
    rows = []
    for line in text.split("\n"):
        if line.startswith("@@Q "):
            _, b, s, side = line.split(" ")
            cur = (int(b), int(s), side)
            last = cur
            rows = []
        elif line.startswith("@@E ") and cur is not None:
            parts = line.split(" ")
            results[cur] = (rows, " ".join(parts[4:]), errors.get(cur, []))
            cur = None
        elif cur is not None:
            rows.append(line)
    return results, last


def describe_block(block, upto=None):
    lines = []
    for si, st in enumerate(block):
        if upto is not None and si > upto:
            break
        mark = ">>" if si == upto else "  "
        txt = st.describe()
        if st.ft_only:
            txt += "   (foreign table only)"
        lines.append("%s %s" % (mark, txt.replace("\n", "\n     ")))
    return "\n".join(lines)


def outcome_text(res):
    rows, status, errors = res
    err, state, count = (status.split(" ") + ["", "", ""])[:3]
    s = "error=%s sqlstate=%s row_count=%s" % (err, state, count)
    for e in errors:
        s += "\n        " + e
    for r in rows[:12]:
        s += "\n        | " + r.replace(FS, " | ")
    if len(rows) > 12:
        s += "\n        | ... (%d lines)" % len(rows)
    return s


def first_difference(blocks, results):
    """(block, statement, message) of the first difference, or None."""
    for bi, block in enumerate(blocks):
        for si, st in enumerate(block):
            if st.meta or st.ft_only:
                continue
            f = results.get((bi, si, "F"))
            n = results.get((bi, si, "N"))
            if f is None or n is None:
                return bi, si, "no result on the %s side (psql stopped?)" % (
                    "foreign" if f is None else "native")
            if f != n:
                return bi, si, "foreign: %s\n  native:  %s" % (
                    outcome_text(f), outcome_text(n))
    return None


def shard_check(d, native_counts):
    """Problems found reading the shard files directly: rows on the wrong
    shard, counts other than the native table's, values not in SQLite's
    forms."""
    problems = []
    seen = {}
    forms = {
        "qty": "qty IS NOT NULL AND typeof(qty) <> 'integer'",
        "id": "typeof(id) <> 'integer'",
        "flag": "flag IS NOT NULL AND flag NOT IN (0, 1)",
        "data": "data IS NOT NULL AND typeof(data) <> 'blob'",
        "d": "d IS NOT NULL AND d IS NOT date(d)",
        # the seconds as datetime() gives them back, then at most a
        # fraction (SQLite's datetime() itself rounds to milliseconds, and
        # finds nothing after 9999-12-31 23:59:59.9995)
        "ts": "ts IS NOT NULL AND (substr(ts, 1, 19) IS NOT "
              "datetime(substr(ts, 1, 19)) OR (length(ts) > 19 AND "
              "substr(ts, 20) NOT GLOB '.[0-9]*'))",
        "tz": "tz IS NOT NULL AND (substr(tz, 1, 19) IS NOT "
              "datetime(substr(tz, 1, 19)) OR (length(tz) > 19 AND "
              "substr(tz, 20) NOT GLOB '.[0-9]*'))",
        "price": "price IS NOT NULL AND typeof(price) <> 'text'",
        "score": "score IS NOT NULL AND typeof(score) <> 'real' AND "
                 "score NOT IN ('NaN', '-0')",
        "uid": "uid IS NOT NULL AND uid NOT GLOB '" +
               "-".join("[0-9a-f]" * n for n in (8, 4, 4, 4, 12)) + "'",
    }
    for s in SHARDS:
        con = sqlite3.connect("file:%s?mode=ro" % os.path.join(
            d, "shards", s + ".db"), uri=True)
        try:
            for t, n in con.execute(
                    "SELECT tenant_id, count(*) FROM items GROUP BY 1"):
                seen[t] = seen.get(t, 0) + n
                if OWNER.get(t) != s:
                    problems.append("shard %s holds %d rows of tenant %r, "
                                    "whose rows belong on %s" % (
                                        s, n, t, OWNER.get(t)))
            for col, cond in forms.items():
                n, example = con.execute(
                    "SELECT count(*), quote(max(%s)) FROM items WHERE %s" % (
                        col, cond)).fetchone()
                if n:
                    problems.append("shard %s: %d values of column %s not in "
                                    "the documented form (e.g. %s)" % (
                                        s, n, col, example))
            ok = con.execute("PRAGMA integrity_check").fetchone()[0]
            if ok != "ok":
                problems.append("shard %s: integrity_check: %s" % (s, ok))
        finally:
            con.close()
    for t in set(seen) | set(native_counts):
        if seen.get(t, 0) != native_counts.get(t, 0):
            problems.append("tenant %r: %d rows in the shards, %d in the "
                            "native table" % (t, seen.get(t, 0),
                                              native_counts.get(t, 0)))
    return problems


def run_seed(seed):
    """Returns the number of failed checks of this seed (0, 1 or 2)."""
    rng = random.Random(seed)
    g = Gen(rng)
    d = os.path.join(DIR, "seed%d" % seed)
    build_fleet(d)
    nstage = 40
    stage = stage_rows_sql(g, nstage)
    batch = g.pick([None, 1, 3, 50])
    g.batch_set = batch is not None
    zone = g.pick(["Asia/Kathmandu", "America/St_Johns",
                   "Pacific/Chatham", "America/Los_Angeles"])
    mode = MODES[seed % len(MODES)]
    rc, out, err = psql(setup_sql(d, stage, batch, mode))
    if rc != 0:
        failures.append("seed %d: setup failed:\n%s" % (seed, err))
        return 2
    blocks = [fixed_block(g)] + [gen_block(g, nstage)
                                 for _ in range(NBLOCKS)]
    ncopy = 0
    for block in blocks:
        for st in block:
            if st.copy_data is not None:
                ncopy += 1
                st.copy_file = os.path.join(d, "copy_%d.tsv" % ncopy)
                with open(st.copy_file, "w", encoding="utf-8") as fh:
                    fh.write("".join(l + "\n" for l in st.copy_data))
    lines = [SESSION % (NULL_TEXT, zone)]
    for bi, block in enumerate(blocks):
        lines += block_script(bi, block)
    lines.append("\\echo @@DONE")
    t0 = time.time()
    rc, out, err = psql("\n".join(lines) + "\n", timeout=45)
    results, last = parse_output(out, err)
    outcomes = {}
    for (bi, si, side), (rows, status, errors) in results.items():
        if side == "F":
            state = "00000"
            for e in errors:
                state = e.split()[-1]
            outcomes[state] = outcomes.get(state, 0) + 1
    log("seed %d: %d blocks, %d statements, batch_size %s, TimeZone %s, "
        "target %s, %.1f s; outcomes on %s: %s" % (
            seed, len(blocks), len(results) // 2, batch, zone, mode,
            time.time() - t0, FT, ", ".join(
                "%s %d" % (k, v) for k, v in sorted(outcomes.items()))))
    if VERBOSE:
        for bi, block in enumerate(blocks):
            log("block %d:\n%s" % (bi, describe_block(block)))

    nfail = 0
    if "@@DONE" not in out:
        where = ""
        if last:
            where = "\n  block %d, statement %d (%s):\n%s" % (
                last[0], last[1], "foreign" if last[2] == "F" else "native",
                describe_block(blocks[last[0]], last[1]))
        failures.append("seed %d: psql stopped early (exit %d); the server "
                        "may have crashed%s\n  %s" % (
                            seed, rc, where, "\n  ".join(
                                err.strip().splitlines()[-8:])))
        server_ready(time.time() + 30)
        return 2
    diff = first_difference(blocks, results)
    if diff:
        bi, si, msg = diff
        failures.append(
            "seed %d (WDIFF_SEEDS=%d): block %d, statement %d differs\n"
            "  statement: %s\n  %s\n  the block (>> marks the statement; "
            "batch_size %s, TimeZone %s):\n%s" % (
                seed, seed, bi, si, blocks[bi][si].describe(), msg, batch,
                zone, describe_block(blocks[bi], si)))
        nfail += 1

    # the shard files themselves
    rc, out, err = psql("SELECT tenant_id, count(*) FROM %s GROUP BY 1;\n"
                        % NT)
    counts = {}
    for line in out.splitlines():
        if FS in line:
            t, n = line.split(FS)
            counts[t] = int(n)
    problems = shard_check(d, counts)
    if problems and not diff:
        failures.append("seed %d: the shard files:\n  %s" % (
            seed, "\n  ".join(problems)))
        nfail += 1
    elif problems:
        nfail += 1
    return nfail


def main():
    global DIR
    DIR = os.environ.get("WDIFF_DIR") or tempfile.mkdtemp(
        prefix="ssfdw_wdiff.", dir="/tmp")
    os.chmod(DIR, 0o777)
    try:
        t0 = time.time()
        passed = failed = 0
        for seed in SEEDS:
            n = run_seed(seed)
            passed += 2 - n
            failed += n
        for msg in failures:
            log(msg)
            log()
        log("%d seeds (%s), %.1f s" % (len(SEEDS), ",".join(map(str, SEEDS)),
                                        time.time() - t0))
        log("%d passed, %d failed" % (passed, failed))
        return 0 if failed == 0 else 1
    finally:
        if os.environ.get("WDIFF_KEEP") == "1":
            log("fixture kept in %s" % DIR)
        elif not os.environ.get("WDIFF_DIR"):
            shutil.rmtree(DIR, ignore_errors=True)


if __name__ == "__main__":
    def on_signal(signo, frame):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        sys.exit(128 + signo)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    sys.exit(main())
