#!/usr/bin/env python3
#
# test/pgfdw_writes.py
#	The write statements of PostgreSQL's own postgres_fdw regression suite
#	(contrib/postgres_fdw/sql/postgres_fdw.sql, PostgreSQL 15), run on
#	foreign tables of this wrapper and on native tables holding the same
#	rows, side by side; their outcomes and the tables' contents must be the
#	same after every statement.
#
# Usage: python3 test/pgfdw_writes.py   (normally through
#	test/pgfdw_writes_test.sh, which picks the database)
#
# Environment:
#	PGFDW_DIR		fixture folder (default: a new /tmp/ssfdw_pgfdw.XXXXXX)
#	PGFDW_KEEP		1: keep the fixture folder (it is removed otherwise)
#	PGFDW_SECTIONS	comma-separated section names to run (default: all)
#	PGFDW_VERBOSE	1: print every statement and its outcome
#	PGFDW_RUN_CRASHERS	1: also run the statements listed in CRASHERS
#	PGHOST, PGPORT, PGUSER, PGDATABASE ...: where to connect (psql)
#
# The statements are those of the suite's sections on writes ("test
# writable foreign table stuff", WITH CHECK OPTION, generated columns,
# local triggers, inheritance, tuple routing, COPY FROM), in its order;
# forms that only later versions of the suite have (RETURNING old/new) are
# left out, and statements not in the suite that exercise the same paths
# are marked "added".
#
# The fleet: two shards, s1 (WAL, rowid tables) holding tenant "a" and s2
# (rollback journal, the tables with a primary key WITHOUT ROWID) holding
# tenant "b"; each of postgres_fdw's remote tables is an SQLite table in
# both shards, with a tenant column.  Each section of the suite gets two
# schemas: f_NAME, whose tables are foreign tables of the fleet (the
# suite's ft1, ft2, rem1, remp1, ...) next to the suite's local tables,
# and n_NAME, where the foreign tables are native tables with the same
# columns and the constraints the suite's remote tables declare.  Two psql
# sessions (one with search_path f_NAME, one with n_NAME) run the same
# statement text, each in its own transaction; compared after every
# statement: the rows it prints (RETURNING, SELECT; sorted unless the
# statement orders them), command tags, notices (the suite's trigger
# functions print OLD and NEW), psql's ERROR and SQLSTATE, then every
# table's contents (all rows, or for big tables their count and an md5 of
# the sorted rows).
#
# The suite's tables get a tenant column (tenant_id, default 'a' in both
# schemas, so that the suite's INSERTs keep their text) at different
# places; their rows belong to tenants "a" and "b".  Where a statement's
# text had to change to keep its meaning (an ORDER BY before a LIMIT that
# picks rows, a tenant where a key is no longer unique, a trigger on the
# remote table the statement itself now does), the step says so
# ("adapted: ...").  Statements not run are listed with their reason
# (X(...) steps, printed with PGFDW_VERBOSE=1 and counted at the end):
# EXPLAIN (plans differ by design), reads of postgres_fdw's remote tables
# through the loopback server, postgres_fdw's own options, triggers on the
# remote table (SQLite's triggers cannot change NEW, and its RETURNING
# shows the values before AFTER triggers ran).  A statement that
# postgres_fdw refuses while native tables accept it may be refused here
# with the same SQLSTATE (refuse=...): then the native side does not run
# it.
#
# EXPECTED_FAIL lists the statements known to differ today (by case id,
# SECTION.N, the Nth statement of the section), with the reason; they are
# run and reported, but do not fail the test, unless they pass (then the
# entry must go).  CRASHERS lists statements that crash the server: they
# are not run (PGFDW_RUN_CRASHERS=1 runs them).  After a difference the
# section's foreign tables are loaded again with the native rows (once no
# transaction is open), so that one difference does not fail every later
# statement; differences inside a transaction after a first one are
# reported as follow-ons, not counted.
#
# Prints the failures, then "N passed, M failed" (one check per statement
# run); exits 1 if anything failed.

import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

REPO_TEST_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, REPO_TEST_DIR)
from differential import directory_schema, server_ready  # noqa: E402
from write_differential import hand_over, sql_str  # noqa: E402
from pgfdw_session import Session, SessionLost  # noqa: E402

VERBOSE = os.environ.get("PGFDW_VERBOSE", "") == "1"
RUN_CRASHERS = os.environ.get("PGFDW_RUN_CRASHERS", "") == "1"
ONLY = [s for s in os.environ.get("PGFDW_SECTIONS", "").split(",") if s]
SERVER = "pgfdw_fleet"
SHARDS = ["s1", "s2"]
WAL = {"s1": True, "s2": False}
TENANTS = {"a": "s1", "b": "s2"}

# Statements known to give another result than on native tables today:
# case id -> what differs.  Remove an entry once its statement passes.
EXPECTED_FAIL = {
}

# Statements that crash the server today: not run (a crash ends every
# session and the rest of its section).  Case id -> reason.
CRASHERS = {
}


# ---------------------------------------------------------------------------
# Steps of a section
# ---------------------------------------------------------------------------

class S:
    """A statement run on both sides and compared.  f, n: the text for
    the foreign (native) side where it differs (DDL); ordered: the output's
    order is compared; refuse: a SQLSTATE the foreign side may give
    instead, as postgres_fdw does (the native side then skips it); note:
    how the statement was adapted."""

    def __init__(self, sql=None, f=None, n=None, ordered=False, refuse=None,
                 note=None):
        self.f = f if f is not None else sql
        self.n = n if n is not None else sql
        self.ordered = ordered
        self.refuse = refuse
        self.note = note


class X:
    """A statement of the suite that is not run, and why."""

    def __init__(self, sql, reason):
        self.sql = sql
        self.reason = reason


class Shard:
    """SQL run by the sqlite3 library on every shard (the suite's DDL on
    its remote tables), with the native side's equivalent."""

    def __init__(self, sqlite, n):
        self.sqlite = sqlite
        self.n = n


class OnlyF:
    """A statement run on the foreign side only, not compared (options of
    the foreign tables that have no native counterpart)."""

    def __init__(self, sql):
        self.sql = sql


class Section:
    """sqlite: CREATE statements for every shard ({WR}: WITHOUT ROWID on
    s2); foreign / native: the two schemas' objects; load: INSERTs into the
    native tables, copied into the foreign ones; tables: the tables holding
    rows (compared after every statement, loaded again after a
    difference), in both schemas under the same names."""

    def __init__(self, name, sqlite, foreign, native, load, tables, steps):
        self.name = name
        self.sqlite = sqlite
        self.foreign = foreign
        self.native = native
        self.load = load
        self.tables = tables
        self.steps = steps


def FT(name, cols, table=None, extra=""):
    """CREATE FOREIGN TABLE name (cols) on the fleet."""
    return ("CREATE FOREIGN TABLE %s (%s) %s SERVER %s OPTIONS (table %s)"
            % (name, cols, extra, SERVER, sql_str(table or name)))


TRIG_FUNCS = """
CREATE TYPE user_enum AS ENUM ('foo', 'bar', 'buz');
CREATE FUNCTION postgres_fdw_abs(int) RETURNS int AS $$
BEGIN
RETURN abs($1);
END
$$ LANGUAGE plpgsql IMMUTABLE;
CREATE OPERATOR === (
    LEFTARG = int,
    RIGHTARG = int,
    PROCEDURE = int4eq,
    COMMUTATOR = ===
);
CREATE FUNCTION trigger_func() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	RAISE NOTICE 'trigger_func(%) called: action = %, when = %, level = %',
		TG_ARGV[0], TG_OP, TG_WHEN, TG_LEVEL;
	RETURN NULL;
END;$$;
CREATE OR REPLACE FUNCTION trigger_data()  RETURNS trigger
LANGUAGE plpgsql AS $$
declare
	oldnew text[];
	relid text;
    argstr text;
begin
	relid := TG_relid::regclass;
	argstr := '';
	for i in 0 .. TG_nargs - 1 loop
		if i > 0 then
			argstr := argstr || ', ';
		end if;
		argstr := argstr || TG_argv[i];
	end loop;
    RAISE NOTICE '%(%) % % % ON %',
		tg_name, argstr, TG_when, TG_level, TG_OP, relid;
    oldnew := '{}'::text[];
	if TG_OP != 'INSERT' then
		oldnew := array_append(oldnew, format('OLD: %s', OLD));
	end if;
	if TG_OP != 'DELETE' then
		oldnew := array_append(oldnew, format('NEW: %s', NEW));
	end if;
    RAISE NOTICE '%', array_to_string(oldnew, ',');
	if TG_OP = 'DELETE' then
		return OLD;
	else
		return NEW;
	end if;
end;
$$;
CREATE FUNCTION trig_row_before_insupdate() RETURNS TRIGGER AS $$
  BEGIN
    NEW.f2 := NEW.f2 || ' triggered !';
    RETURN NEW;
  END
$$ language plpgsql;
CREATE FUNCTION trig_null() RETURNS TRIGGER AS $$
  BEGIN
    RETURN NULL;
  END
$$ language plpgsql;
"""

REMOTE_TRIGGER = ("a trigger on the remote table that changes NEW: SQLite's "
                  "BEFORE triggers cannot change NEW, and its RETURNING "
                  "shows the values before AFTER triggers ran")
EXPLAIN = "EXPLAIN: plans differ by design"
LOOPBACK = ("reads postgres_fdw's remote table through the loopback "
            "connection; here the tables' contents are compared after every "
            "statement")

# ---------------------------------------------------------------------------
# The sections
# ---------------------------------------------------------------------------

SECTIONS = []

# -- test writable foreign table stuff (ft1, ft2 on "T 1"; ft4, ft5) --------
# ft1 and ft2 name one remote table: natively ft2 is the table and ft1 a
# view of it with ft1's default for c7.
FT2_COLS = ("tenant_id text NOT NULL DEFAULT 'a', c1 int%s NOT NULL, "
            "c2 int NOT NULL%s, cx int, c3 text, c4 timestamptz, "
            "c5 timestamp, c6 varchar(10), c7 char(10) default 'ft2', "
            "c8 user_enum")
SECTIONS.append(Section(
    "writable",
    sqlite="""
        CREATE TABLE "T 1"(tenant_id TEXT NOT NULL, "C 1" INTEGER NOT NULL,
            c2 INTEGER NOT NULL CHECK (c2 >= 0), c3 TEXT, c4 TEXT, c5 TEXT,
            c6 TEXT, c7 TEXT, c8 TEXT, PRIMARY KEY (tenant_id, "C 1")) {WR};
        CREATE TABLE "T 3"(tenant_id TEXT NOT NULL, c1 INTEGER NOT NULL,
            c2 INTEGER NOT NULL, c3 TEXT, PRIMARY KEY (tenant_id, c1)) {WR};
        CREATE TABLE "T 4"(c1 INTEGER NOT NULL, c2 INTEGER NOT NULL, c3 TEXT,
            tenant_id TEXT NOT NULL, PRIMARY KEY (tenant_id, c1));
    """,
    foreign="""
        %s;
        ALTER FOREIGN TABLE ft2 DROP COLUMN cx;
        CREATE FOREIGN TABLE ft1 (tenant_id text NOT NULL DEFAULT 'a', c0 int,
            c1 int OPTIONS (column 'C 1') NOT NULL, c2 int NOT NULL, c3 text,
            c4 timestamptz, c5 timestamp, c6 varchar(10),
            c7 char(10) default 'ft1', c8 user_enum)
            SERVER %s OPTIONS (table 'T 1');
        ALTER FOREIGN TABLE ft1 DROP COLUMN c0;
        %s;
        %s;
    """ % (FT("ft2", FT2_COLS % (" OPTIONS (column 'C 1')", ""), "T 1"),
           SERVER,
           FT("ft4", "tenant_id text NOT NULL DEFAULT 'a', c1 int NOT NULL, "
              "c2 int NOT NULL, c3 text", "T 3"),
           FT("ft5", "c1 int NOT NULL, c2 int NOT NULL, c3 text, "
              "tenant_id text NOT NULL DEFAULT 'a'", "T 4")),
    native="""
        CREATE TABLE ft2 (%s, PRIMARY KEY (tenant_id, c1));
        ALTER TABLE ft2 DROP COLUMN cx;
        CREATE VIEW ft1 AS SELECT * FROM ft2;
        ALTER VIEW ft1 ALTER COLUMN c7 SET DEFAULT 'ft1';
        CREATE TABLE ft4 (tenant_id text NOT NULL DEFAULT 'a',
            c1 int NOT NULL, c2 int NOT NULL, c3 text,
            PRIMARY KEY (tenant_id, c1));
        CREATE TABLE ft5 (c1 int NOT NULL, c2 int NOT NULL, c3 text,
            tenant_id text NOT NULL DEFAULT 'a', PRIMARY KEY (tenant_id, c1));
    """ % (FT2_COLS % ("", " CHECK (c2 >= 0)")),
    load="""
        INSERT INTO ft2
            SELECT CASE WHEN id % 2 = 0 THEN 'a' ELSE 'b' END, id, id % 10,
                   to_char(id, 'FM00000'),
                   '1970-01-01'::timestamptz + ((id % 100) || ' days')::interval,
                   '1970-01-01'::timestamp + ((id % 100) || ' days')::interval,
                   id % 10, id % 10, 'foo'::user_enum
            FROM generate_series(1, 1000) id;
        INSERT INTO ft4
            SELECT CASE WHEN id % 3 = 0 THEN 'b' ELSE 'a' END, id, id + 1,
                   'AAA' || to_char(id, 'FM000')
            FROM generate_series(2, 100, 2) id;
        INSERT INTO ft5
            SELECT id, id + 1, 'AAA' || to_char(id, 'FM000'),
                   CASE WHEN id % 2 = 0 THEN 'a' ELSE 'b' END
            FROM generate_series(3, 100, 3) id;
    """,
    tables=["ft2", "ft4", "ft5"],
    steps=[
        X("EXPLAIN (verbose, costs off) INSERT/UPDATE/DELETE ...", EXPLAIN),
        S("INSERT INTO ft2 (c1,c2,c3) SELECT c1+1000,c2+100, c3 || c3 "
          "FROM ft2 ORDER BY c1 LIMIT 20",
          note="adapted: ORDER BY c1 before LIMIT (the suite takes the "
               "first 20 rows the remote scan returns)"),
        S("INSERT INTO ft2 (c1,c2,c3)\n  VALUES (1101,201,'aaa'), "
          "(1102,202,'bbb'), (1103,203,'ccc') RETURNING *"),
        S("INSERT INTO ft2 (c1,c2,c3) VALUES (1104,204,'ddd'), "
          "(1105,205,'eee')"),
        S("UPDATE ft2 SET c2 = c2 + 300, c3 = c3 || '_update3' "
          "WHERE c1 % 10 = 3"),
        S("UPDATE ft2 SET c2 = c2 + 400, c3 = c3 || '_update7' "
          "WHERE c1 % 10 = 7 RETURNING *"),
        S("UPDATE ft2 SET c2 = ft2.c2 + 500, c3 = ft2.c3 || '_update9', "
          "c7 = DEFAULT\n  FROM ft1 WHERE ft1.c1 = ft2.c2 "
          "AND ft1.c1 % 10 = 9"),
        S("DELETE FROM ft2 WHERE c1 % 10 = 5 RETURNING c1, c4"),
        S("DELETE FROM ft2 USING ft1 WHERE ft1.c1 = ft2.c2 "
          "AND ft1.c1 % 10 = 2"),
        S("SELECT c1,c2,c3,c4 FROM ft2 ORDER BY c1", ordered=True),
        S("INSERT INTO ft2 (c1,c2,c3) VALUES (1200,999,'foo') "
          "RETURNING tableoid::regclass"),
        S("UPDATE ft2 SET c3 = 'bar' WHERE c1 = 1200 "
          "RETURNING tableoid::regclass"),
        S("DELETE FROM ft2 WHERE c1 = 1200 RETURNING tableoid::regclass"),
        S("INSERT INTO ft2 (c1,c2,c3)\n  SELECT id, id - 1200, "
          "to_char(id, 'FM00000') FROM generate_series(1201, 1300) id"),
        S("UPDATE ft2 SET c3 = 'foo'\n  FROM ft4 INNER JOIN ft5 ON "
          "(ft4.c1 = ft5.c1)\n  WHERE ft2.c1 > 1200 AND ft2.c2 = ft4.c1\n"
          "  RETURNING ft2, ft2.*, ft4, ft4.*"),
        S("DELETE FROM ft2\n  USING ft4 LEFT JOIN ft5 ON (ft4.c1 = ft5.c1)\n"
          "  WHERE ft2.c1 > 1200 AND ft2.c1 % 10 = 0 AND ft2.c2 = ft4.c1\n"
          "  RETURNING 100"),
        S("DELETE FROM ft2 WHERE ft2.c1 > 1200"),
        S("UPDATE ft2 AS target SET (c2, c7) = (\n    SELECT c2 * 10, c7\n"
          "        FROM ft2 AS src\n        WHERE target.c1 = src.c1\n"
          ") WHERE c1 > 1100"),
        S("UPDATE ft2 AS target SET (c2) = (\n    SELECT c2 / 10\n"
          "        FROM ft2 AS src\n        WHERE target.c1 = src.c1\n"
          ") WHERE c1 > 1100"),
        # not in the suite: the same with the tenant in the correlation,
        # a correlated SET of one column reading another table, and a
        # correlated condition
        S("UPDATE ft2 AS tg SET (c2) = (SELECT c2 + 7 FROM ft2 AS src "
          "WHERE tg.c1 = src.c1 AND src.tenant_id = tg.tenant_id) "
          "WHERE c1 > 1100",
          note="added: the correlation names the tenant too"),
        S("UPDATE ft2 AS tg SET c3 = (SELECT ft4.c3 FROM ft4 "
          "WHERE ft4.c1 = tg.c2) WHERE tg.c1 BETWEEN 1001 AND 1020 "
          "RETURNING c1, c2, c3",
          note="added: a correlated SET reading another foreign table"),
        S("UPDATE ft2 AS tg SET c3 = c3 || '_x' WHERE EXISTS (SELECT 1 FROM "
          "ft5 WHERE ft5.c1 = tg.c2 AND ft5.tenant_id = tg.tenant_id) "
          "AND tg.c1 < 100",
          note="added: a correlated EXISTS in WHERE"),
        S("UPDATE ft2 d SET c2 = CASE WHEN random() >= 0 THEN d.c2 ELSE 0 END"
          "\n  FROM ft2 AS t WHERE d.c1 = t.c1 AND d.c1 > 1000"),
        X("ALTER SERVER loopback OPTIONS (DROP extensions)",
          "postgres_fdw's option: here user-defined functions are never "
          "shipped"),
        S("INSERT INTO ft2 (c1,c2,c3)\n  SELECT id, id % 10, "
          "to_char(id, 'FM00000') FROM generate_series(2001, 2010) id"),
        S("UPDATE ft2 SET c3 = 'bar' WHERE postgres_fdw_abs(c1) > 2000 "
          "RETURNING *"),
        S("UPDATE ft2 SET c3 = 'baz'\n  FROM ft4 INNER JOIN ft5 ON "
          "(ft4.c1 = ft5.c1)\n  WHERE ft2.c1 > 2000 AND ft2.c2 === ft4.c1\n"
          "  RETURNING ft2.*, ft4.*, ft5.*"),
        S("DELETE FROM ft2\n  USING ft4 INNER JOIN ft5 ON "
          "(ft4.c1 === ft5.c1)\n  WHERE ft2.c1 > 2000 AND ft2.c2 = ft4.c1\n"
          "  RETURNING ft2.c1, ft2.c2, ft2.c3"),
        S("DELETE FROM ft2 WHERE ft2.c1 > 2000"),
        X("CREATE TRIGGER t1_br_insert BEFORE INSERT OR UPDATE ON "
          "\"S 1\".\"T 1\" ... F_BRTRIG()", REMOTE_TRIGGER),
        S("INSERT INTO ft2 (c1,c2,c3) VALUES (1208, 818, 'fff') RETURNING *",
          note="adapted: without the remote trigger"),
        S("INSERT INTO ft2 (c1,c2,c3,c6) VALUES (1218, 818, 'ggg', '(--;') "
          "RETURNING *", note="adapted: without the remote trigger"),
        S("UPDATE ft2 SET c2 = c2 + 600 WHERE c1 % 10 = 8 AND c1 < 1200 "
          "RETURNING *", note="adapted: without the remote trigger"),
        X("ALTER TABLE \"S 1\".\"T 1\" ADD CONSTRAINT c2positive CHECK "
          "(c2 >= 0)", "the shards declare the CHECK from the start (no "
          "earlier statement makes c2 negative)"),
        S("INSERT INTO ft1(tenant_id, c1, c2) VALUES('b', 11, 12)",
          note="adapted: the key is (tenant, c1); row 11 is tenant b's"),
        S("INSERT INTO ft1(tenant_id, c1, c2) VALUES('b', 11, 12) "
          "ON CONFLICT DO NOTHING", note="adapted: tenant b"),
        S("INSERT INTO ft1(c1, c2) VALUES(11, 12) ON CONFLICT (c1, c2) "
          "DO NOTHING"),
        S("INSERT INTO ft1(c1, c2) VALUES(11, 12) ON CONFLICT (c1, c2) "
          "DO UPDATE SET c3 = 'ffg'"),
        S("INSERT INTO ft1(c1, c2) VALUES(1111, -2)"),
        S("UPDATE ft1 SET c2 = -c2 WHERE c1 = 1"),
        # savepoints
        S("select c2, count(*) from ft2 where c2 < 500 group by 1 "
          "order by 1", ordered=True),
        X("select c2, count(*) from \"S 1\".\"T 1\" where c2 < 500 ...",
          LOOPBACK),
        S("begin"),
        S("update ft2 set c2 = 42 where c2 = 0"),
        S("select c2, count(*) from ft2 where c2 < 500 group by 1 "
          "order by 1", ordered=True),
        S("savepoint s1"),
        S("update ft2 set c2 = 44 where c2 = 4"),
        S("select c2, count(*) from ft2 where c2 < 500 group by 1 "
          "order by 1", ordered=True),
        S("release savepoint s1"),
        S("savepoint s2"),
        S("update ft2 set c2 = 46 where c2 = 6"),
        S("select c2, count(*) from ft2 where c2 < 500 group by 1 "
          "order by 1", ordered=True),
        S("rollback to savepoint s2"),
        S("select c2, count(*) from ft2 where c2 < 500 group by 1 "
          "order by 1", ordered=True),
        S("release savepoint s2"),
        S("savepoint s3"),
        S("update ft2 set c2 = -2 where c2 = 42 and c1 = 10"),
        S("rollback to savepoint s3"),
        S("select c2, count(*) from ft2 where c2 < 500 group by 1 "
          "order by 1", ordered=True),
        S("release savepoint s3"),
        S("commit"),
        S("select c2, count(*) from ft2 where c2 < 500 group by 1 "
          "order by 1", ordered=True),
        X("VACUUM ANALYZE \"S 1\".\"T 1\"", LOOPBACK),
        S("SELECT * FROM ft1 ORDER BY c6 DESC NULLS LAST, c1 OFFSET 795 "
          "LIMIT 10", ordered=True),
        S("SELECT * FROM ft1 ORDER BY c6 DESC NULLS FIRST, c1 OFFSET 15 "
          "LIMIT 10", ordered=True),
        S("SELECT * FROM ft1 ORDER BY c6 ASC NULLS FIRST, c1 OFFSET 15 "
          "LIMIT 10", ordered=True),
        X("ALTER FOREIGN TABLE ft1 ADD CONSTRAINT ft1_c2negative CHECK "
          "(c2 < 0); INSERT INTO ft1(c1, c2) VALUES(1111, 2); ...",
          "a foreign table's CHECK is not enforced, a native table's is "
          "(the suite shows the inconsistency on purpose)"),
        # not in the suite: the statements above that went wrong once, in
        # other forms
        S("UPDATE ft2 AS target SET (c2, c3) = (SELECT src.c2 + 1, "
          "src.c3 || '_m' FROM ft2 AS src WHERE target.c1 = src.c1 AND "
          "target.tenant_id = src.tenant_id) WHERE c1 % 50 = 1 RETURNING *",
          note="added: a multi-column SET with RETURNING"),
        S("begin", note="added"),
        S("savepoint m1", note="added"),
        S("UPDATE ft2 AS target SET (c2, c7) = (SELECT ft4.c2, ft4.c3 FROM "
          "ft4 WHERE ft4.c1 = target.c1) WHERE c1 < 20",
          note="added: a multi-column SET from another foreign table, "
               "NULLs where no row matches"),
        S("rollback to savepoint m1", note="added"),
        S("UPDATE ft2 SET c3 = c3 || '_d' FROM (SELECT c1 FROM ft4 UNION ALL "
          "SELECT c1 FROM ft4) ss WHERE ft2.c1 = ss.c1 RETURNING ft2.c1, "
          "ft2.c3", note="added: each row matched twice"),
        S("DELETE FROM ft2 USING (SELECT c1 FROM ft5 UNION ALL SELECT c1 "
          "FROM ft5) ss WHERE ft2.c1 = ss.c1 AND ft2.c1 < 30 RETURNING "
          "ft2.c1", note="added: each row matched twice"),
        S("commit", note="added"),
        S("UPDATE ft2 SET c2 = c2 + 1 WHERE c1 IN (SELECT c2 FROM ft2 "
          "WHERE c1 < 10) RETURNING c1, c2",
          note="added: a subquery reading the target table"),
    ]))

# -- ReScan of a cursor in an UPDATE ... FROM (bug #17889) ------------------
SECTIONS.append(Section(
    "rescan",
    sqlite="""CREATE TABLE loct2(c1 INTEGER, c2 TEXT, tenant_id TEXT);""",
    foreign="CREATE TABLE loct1 (c1 int);\n%s;" % FT(
        "remt2", "c1 int, c2 text, tenant_id text DEFAULT 'a'", "loct2"),
    native="""CREATE TABLE loct1 (c1 int);
        CREATE TABLE remt2 (c1 int, c2 text, tenant_id text DEFAULT 'a');""",
    load="""
        INSERT INTO remt2 SELECT id, to_char(id, 'FM0000'),
            CASE WHEN id % 2 = 0 THEN 'a' ELSE 'b' END
            FROM generate_series(1, 1000) id;
        INSERT INTO remt2 VALUES (1001, 'foo', 'a');
        INSERT INTO remt2 VALUES (1002, 'bar', 'b');
        INSERT INTO loct1 VALUES (1001);
        INSERT INTO loct1 VALUES (1002);
    """,
    tables=["remt2", "loct1"],
    steps=[
        S("SET enable_mergejoin TO false"),
        S("SET enable_hashjoin TO false"),
        S("SET enable_material TO false"),
        S("UPDATE remt2 SET c2 = remt2.c2 || remt2.c2 FROM loct1 "
          "WHERE loct1.c1 = remt2.c1 RETURNING remt2.*"),
        S("RESET enable_mergejoin"),
        S("RESET enable_hashjoin"),
        S("RESET enable_material"),
    ]))

# -- WITH CHECK OPTION constraints -----------------------------------------
WCO_TRIGGER = ("adapted: the remote table's BEFORE trigger adds 10 to a; "
               "the statement adds it itself")
SECTIONS.append(Section(
    "wco",
    sqlite="""
        CREATE TABLE base_tbl(a INTEGER, b INTEGER, tenant_id TEXT);
        CREATE TABLE child_tbl(tenant_id TEXT, a INTEGER, b INTEGER);
        CREATE TABLE child_local(b TEXT, c NUMERIC, a INTEGER,
                                 tenant_id TEXT);
    """,
    foreign="""
        %s;
        CREATE VIEW rw_view AS SELECT * FROM foreign_tbl
          WHERE a < b WITH CHECK OPTION;
        CREATE TABLE parent_tbl (a int, b int, tenant_id text DEFAULT 'a')
          PARTITION BY RANGE(a);
        %s;
        ALTER TABLE parent_tbl ATTACH PARTITION foreign_tbl2
          FOR VALUES FROM (0) TO (100);
        CREATE VIEW rw_view2 AS SELECT * FROM parent_tbl
          WHERE a < b WITH CHECK OPTION;
        CREATE TABLE parent3 (a int, b text, c numeric,
          tenant_id text DEFAULT 'a') PARTITION BY RANGE(a);
        CREATE TABLE sub_parent (c numeric, tenant_id text DEFAULT 'a', a int,
          b text) PARTITION BY RANGE(a);
        ALTER TABLE parent3 ATTACH PARTITION sub_parent
          FOR VALUES FROM (1) TO (10);
        %s;
        ALTER TABLE sub_parent ATTACH PARTITION child_foreign
          FOR VALUES FROM (1) TO (10);
        CREATE VIEW rw_view3 AS SELECT * FROM parent3 WHERE a < 5
          WITH CHECK OPTION;
    """ % (FT("foreign_tbl", "a int, b int, tenant_id text DEFAULT 'a'",
              "base_tbl"),
           FT("foreign_tbl2", "tenant_id text DEFAULT 'a', a int, b int",
              "child_tbl"),
           FT("child_foreign", "b text, c numeric, tenant_id text, a int",
              "child_local")),
    native="""
        CREATE TABLE foreign_tbl (a int, b int, tenant_id text DEFAULT 'a');
        CREATE VIEW rw_view AS SELECT * FROM foreign_tbl
          WHERE a < b WITH CHECK OPTION;
        CREATE TABLE parent_tbl (a int, b int, tenant_id text DEFAULT 'a')
          PARTITION BY RANGE(a);
        CREATE TABLE foreign_tbl2 (tenant_id text DEFAULT 'a', a int, b int);
        ALTER TABLE parent_tbl ATTACH PARTITION foreign_tbl2
          FOR VALUES FROM (0) TO (100);
        CREATE VIEW rw_view2 AS SELECT * FROM parent_tbl
          WHERE a < b WITH CHECK OPTION;
        CREATE TABLE parent3 (a int, b text, c numeric,
          tenant_id text DEFAULT 'a') PARTITION BY RANGE(a);
        CREATE TABLE sub_parent (c numeric, tenant_id text DEFAULT 'a', a int,
          b text) PARTITION BY RANGE(a);
        ALTER TABLE parent3 ATTACH PARTITION sub_parent
          FOR VALUES FROM (1) TO (10);
        CREATE TABLE child_foreign (b text, c numeric, tenant_id text, a int);
        ALTER TABLE sub_parent ATTACH PARTITION child_foreign
          FOR VALUES FROM (1) TO (10);
        CREATE VIEW rw_view3 AS SELECT * FROM parent3 WHERE a < 5
          WITH CHECK OPTION;
    """,
    load="",
    tables=["foreign_tbl", "foreign_tbl2", "child_foreign"],
    steps=[
        X("CREATE TRIGGER row_before_insupd_trigger BEFORE INSERT OR UPDATE "
          "ON base_tbl ...", REMOTE_TRIGGER),
        S("INSERT INTO rw_view VALUES (0 + 10, 5)", note=WCO_TRIGGER),
        S("INSERT INTO rw_view VALUES (0 + 10, 15)", note=WCO_TRIGGER),
        S("SELECT * FROM foreign_tbl"),
        S("UPDATE rw_view SET a = a + 10, b = b + 5", note=WCO_TRIGGER),
        S("UPDATE rw_view SET a = a + 10, b = b + 15", note=WCO_TRIGGER),
        S("SELECT * FROM foreign_tbl"),
        OnlyF("ALTER FOREIGN TABLE foreign_tbl OPTIONS (ADD batch_size '10')"),
        S("INSERT INTO rw_view VALUES (0 + 10, 15), (0 + 10, 5)",
          note=WCO_TRIGGER),
        S("SELECT * FROM foreign_tbl"),
        # WCO for partitions
        S("INSERT INTO rw_view2 VALUES (0 + 10, 5)", note=WCO_TRIGGER),
        S("INSERT INTO rw_view2 VALUES (0 + 10, 15)", note=WCO_TRIGGER),
        S("SELECT * FROM foreign_tbl2"),
        S("UPDATE rw_view2 SET a = a + 10, b = b + 5", note=WCO_TRIGGER),
        S("UPDATE rw_view2 SET a = a + 10, b = b + 15", note=WCO_TRIGGER),
        S("SELECT * FROM foreign_tbl2"),
        OnlyF("ALTER FOREIGN TABLE foreign_tbl2 OPTIONS "
              "(ADD batch_size '10')"),
        S("INSERT INTO rw_view2 VALUES (0 + 10, 15), (0 + 10, 5)",
          note=WCO_TRIGGER),
        S("SELECT * FROM foreign_tbl2"),
        # several levels of partitions, columns (the tenant's too) in
        # different orders
        S("INSERT INTO parent3 (a) VALUES(1),(5)"),
        S("UPDATE rw_view3 SET b = 'text', c = 123.456"),
        S("SELECT * FROM parent3 ORDER BY a", ordered=True),
        S("UPDATE parent3 SET c = c + 1 WHERE a = 1 RETURNING *",
          note="added"),
        S("DELETE FROM parent3 WHERE a = 5 RETURNING *", note="added"),
    ]))

# -- generated columns, batch insert ---------------------------------------
SECTIONS.append(Section(
    "generated",
    sqlite="""
        CREATE TABLE gloc1(a INTEGER, b INTEGER, tenant_id TEXT);
        CREATE TABLE tab_batch_sharded_p1_remote(tenant_id TEXT, id INTEGER,
            data TEXT);
    """,
    foreign="""
        %s;
        CREATE TABLE tab_batch_sharded (tenant_id text DEFAULT 'a', id int,
            data text) PARTITION BY hash(id);
        CREATE TABLE tab_batch_sharded_p0 PARTITION OF tab_batch_sharded
            FOR VALUES WITH (modulus 2, remainder 0);
        CREATE FOREIGN TABLE tab_batch_sharded_p1 PARTITION OF
            tab_batch_sharded FOR VALUES WITH (modulus 2, remainder 1)
            SERVER %s OPTIONS (table 'tab_batch_sharded_p1_remote',
            batch_size '10');
        CREATE TABLE tab_batch_local (id int, data text);
    """ % (FT("grem1", "a int, b int generated always as (a * 2) stored, "
              "tenant_id text DEFAULT 'a'", "gloc1"), SERVER),
    native="""
        CREATE TABLE grem1 (a int, b int generated always as (a * 2) stored,
            tenant_id text DEFAULT 'a');
        CREATE TABLE tab_batch_sharded (tenant_id text DEFAULT 'a', id int,
            data text) PARTITION BY hash(id);
        CREATE TABLE tab_batch_sharded_p0 PARTITION OF tab_batch_sharded
            FOR VALUES WITH (modulus 2, remainder 0);
        CREATE TABLE tab_batch_sharded_p1 PARTITION OF tab_batch_sharded
            FOR VALUES WITH (modulus 2, remainder 1);
        CREATE TABLE tab_batch_local (id int, data text);
    """,
    load="""INSERT INTO tab_batch_local
        SELECT i, 'test'|| i FROM generate_series(1, 45) i;""",
    tables=["grem1", "tab_batch_sharded_p0", "tab_batch_sharded_p1",
            "tab_batch_local"],
    steps=[
        X("explain (verbose, costs off) insert into grem1 ...", EXPLAIN),
        S("insert into grem1 (a) values (1), (2)"),
        S("update grem1 set a = 22 where a = 2"),
        S("select * from grem1"),
        S("delete from grem1"),
        S("copy grem1 (a) from stdin;\n1\n2\n\\.",
          note="adapted: the column list (the tenant column is not in the "
               "data)"),
        S("select * from grem1"),
        S("delete from grem1"),
        OnlyF("ALTER FOREIGN TABLE grem1 OPTIONS (ADD batch_size '10')"),
        S("insert into grem1 (a) values (1), (2)"),
        S("select * from grem1"),
        S("delete from grem1"),
        S("insert into tab_batch_sharded (id, data) "
          "select * from tab_batch_local",
          note="adapted: the column list (the tenant gets its default)"),
        S("select count(*) from tab_batch_sharded"),
        S("update tab_batch_sharded set data = data || '!' where id % 3 = 0",
          note="added"),
        S("delete from tab_batch_sharded where id > 40 returning id",
          note="added"),
    ]))

# -- local triggers (rem1 over loc1) ----------------------------------------
ROW_TRIGGER_KINDS = [
    ("trig_stmt_before", "BEFORE DELETE OR INSERT OR UPDATE", "STATEMENT",
     "trigger_func()"),
    ("trig_stmt_after", "AFTER DELETE OR INSERT OR UPDATE", "STATEMENT",
     "trigger_func()"),
    ("trig_row_before_insert", "BEFORE INSERT", "ROW",
     "trigger_data(23,'skidoo')"),
    ("trig_row_after_insert", "AFTER INSERT", "ROW",
     "trigger_data(23,'skidoo')"),
    ("trig_row_before_update", "BEFORE UPDATE", "ROW",
     "trigger_data(23,'skidoo')"),
    ("trig_row_after_update", "AFTER UPDATE", "ROW",
     "trigger_data(23,'skidoo')"),
    ("trig_row_before_delete", "BEFORE DELETE", "ROW",
     "trigger_data(23,'skidoo')"),
    ("trig_row_after_delete", "AFTER DELETE", "ROW",
     "trigger_data(23,'skidoo')"),
]


def direct_modify_steps():
    """The suite's "direct foreign table modification" cases: each kind of
    trigger, with UPDATE and DELETE executed (the suite EXPLAINs them)."""
    out = []
    for name, when, level, func in ROW_TRIGGER_KINDS:
        out.append(S("CREATE TRIGGER %s %s ON rem1 FOR EACH %s EXECUTE "
                     "PROCEDURE %s" % (name, when, level, func)))
        out.append(S("INSERT INTO rem1(f2) VALUES ('x'), ('y')"))
        out.append(S("UPDATE rem1 set f2 = ''",
                     note="adapted: run (the suite EXPLAINs it)"))
        out.append(S("DELETE FROM rem1",
                     note="adapted: run (the suite EXPLAINs it)"))
        out.append(S("DROP TRIGGER %s ON rem1" % name))
    return out


SECTIONS.append(Section(
    "triggers",
    sqlite="""CREATE TABLE loc1(f1 INTEGER, f2 TEXT, tenant_id TEXT);""",
    foreign=FT("rem1", "f1 serial, f2 text, tenant_id text DEFAULT 'a'",
               "loc1") + ";",
    native="CREATE TABLE rem1 (f1 serial, f2 text, "
           "tenant_id text DEFAULT 'a');",
    load="",
    tables=["rem1"],
    steps=[
        S("select pg_catalog.setval('rem1_f1_seq', 10, false)"),
        X("insert into loc1(f2) values('hi')",
          "writes postgres_fdw's remote table directly"),
        S("insert into rem1(f2) values('hi remote')"),
        S("insert into rem1(f2) values('bye remote')"),
        S("select * from rem1 order by f1", ordered=True),
        S("delete from rem1", note="added: the suite's rows of loc1 go"),
        S("CREATE TRIGGER trig_stmt_before BEFORE DELETE OR INSERT OR UPDATE "
          "ON rem1\n\tFOR EACH STATEMENT EXECUTE PROCEDURE trigger_func()",
          note="adapted: without OR TRUNCATE (PostgreSQL 15 has no TRUNCATE "
               "triggers on foreign tables)"),
        S("CREATE TRIGGER trig_stmt_after AFTER DELETE OR INSERT OR UPDATE "
          "ON rem1\n\tFOR EACH STATEMENT EXECUTE PROCEDURE trigger_func()",
          note="adapted: without OR TRUNCATE (PostgreSQL 15 has no TRUNCATE "
               "triggers on foreign tables)"),
        S("CREATE TRIGGER trig_row_before\nBEFORE INSERT OR UPDATE OR DELETE "
          "ON rem1\nFOR EACH ROW EXECUTE PROCEDURE trigger_data(23,'skidoo')"),
        S("CREATE TRIGGER trig_row_after\nAFTER INSERT OR UPDATE OR DELETE "
          "ON rem1\nFOR EACH ROW EXECUTE PROCEDURE trigger_data(23,'skidoo')"),
        S("delete from rem1"),
        S("insert into rem1 values(1,'insert')"),
        S("update rem1 set f2  = 'update' where f1 = 1"),
        S("update rem1 set f2 = f2 || f2"),
        S("truncate rem1"),
        S("DROP TRIGGER trig_row_before ON rem1"),
        S("DROP TRIGGER trig_row_after ON rem1"),
        S("DROP TRIGGER trig_stmt_before ON rem1"),
        S("DROP TRIGGER trig_stmt_after ON rem1"),
        S("DELETE from rem1"),
        S("CREATE TRIGGER trig_row_after1\nAFTER INSERT OR UPDATE OR DELETE "
          "ON rem1\nFOR EACH ROW EXECUTE PROCEDURE trigger_data(23,'skidoo')"),
        S("CREATE TRIGGER trig_row_after2\nAFTER INSERT OR UPDATE OR DELETE "
          "ON rem1\nFOR EACH ROW EXECUTE PROCEDURE trigger_data(23,'skidoo')"),
        S("insert into rem1 values(1,'insert')"),
        S("update rem1 set f2  = 'update' where f1 = 1"),
        S("update rem1 set f2 = f2 || f2"),
        S("delete from rem1"),
        S("DROP TRIGGER trig_row_after1 ON rem1"),
        S("DROP TRIGGER trig_row_after2 ON rem1"),
        S("CREATE TRIGGER trig_row_before_insupd\nBEFORE INSERT OR UPDATE ON "
          "rem1\nFOR EACH ROW\nWHEN (NEW.f2 like '%update%')\nEXECUTE "
          "PROCEDURE trigger_data(23,'skidoo')"),
        S("CREATE TRIGGER trig_row_after_insupd\nAFTER INSERT OR UPDATE ON "
          "rem1\nFOR EACH ROW\nWHEN (NEW.f2 like '%update%')\nEXECUTE "
          "PROCEDURE trigger_data(23,'skidoo')"),
        S("INSERT INTO rem1 values(1, 'insert')"),
        S("UPDATE rem1 set f2 = 'test'"),
        S("INSERT INTO rem1 values(2, 'update')"),
        S("UPDATE rem1 set f2 = 'update update' where f1 = '2'"),
        S("CREATE TRIGGER trig_row_before_delete\nBEFORE DELETE ON rem1\n"
          "FOR EACH ROW\nWHEN (OLD.f2 like '%update%')\nEXECUTE PROCEDURE "
          "trigger_data(23,'skidoo')"),
        S("CREATE TRIGGER trig_row_after_delete\nAFTER DELETE ON rem1\n"
          "FOR EACH ROW\nWHEN (OLD.f2 like '%update%')\nEXECUTE PROCEDURE "
          "trigger_data(23,'skidoo')"),
        S("DELETE FROM rem1"),
        S("DROP TRIGGER trig_row_before_insupd ON rem1"),
        S("DROP TRIGGER trig_row_after_insupd ON rem1"),
        S("DROP TRIGGER trig_row_before_delete ON rem1"),
        S("DROP TRIGGER trig_row_after_delete ON rem1"),
        S("CREATE TRIGGER trig_row_before_insupd\nBEFORE INSERT OR UPDATE ON "
          "rem1\nFOR EACH ROW EXECUTE PROCEDURE trig_row_before_insupdate()"),
        S("INSERT INTO rem1 values(1, 'insert')"),
        S("INSERT INTO rem1 values(2, 'insert') RETURNING f2"),
        S("UPDATE rem1 set f2 = ''"),
        S("UPDATE rem1 set f2 = 'skidoo' RETURNING f2"),
        S("UPDATE rem1 set f1 = 10"),
        S("DELETE FROM rem1"),
        S("CREATE TRIGGER trig_row_before_insupd2\nBEFORE INSERT OR UPDATE ON "
          "rem1\nFOR EACH ROW EXECUTE PROCEDURE trig_row_before_insupdate()"),
        S("INSERT INTO rem1 values(1, 'insert')"),
        S("INSERT INTO rem1 values(2, 'insert') RETURNING f2"),
        S("UPDATE rem1 set f2 = ''"),
        S("UPDATE rem1 set f2 = 'skidoo' RETURNING f2"),
        S("DROP TRIGGER trig_row_before_insupd ON rem1"),
        S("DROP TRIGGER trig_row_before_insupd2 ON rem1"),
        S("DELETE from rem1"),
        S("INSERT INTO rem1 VALUES (1, 'test')"),
        S("CREATE TRIGGER trig_null\nBEFORE INSERT OR UPDATE OR DELETE ON "
          "rem1\nFOR EACH ROW EXECUTE PROCEDURE trig_null()"),
        S("INSERT INTO rem1 VALUES (2, 'test2')"),
        S("UPDATE rem1 SET f2 = 'test2'"),
        S("DELETE from rem1"),
        S("DROP TRIGGER trig_null ON rem1"),
        S("DELETE from rem1"),
        S("CREATE TRIGGER trig_row_before\nBEFORE INSERT OR UPDATE OR DELETE "
          "ON rem1\nFOR EACH ROW EXECUTE PROCEDURE trigger_data(23,'skidoo')"),
        S("CREATE TRIGGER trig_row_after\nAFTER INSERT OR UPDATE OR DELETE "
          "ON rem1\nFOR EACH ROW EXECUTE PROCEDURE trigger_data(23,'skidoo')"),
        X("CREATE TRIGGER trig_local_before BEFORE INSERT OR UPDATE ON loc1 "
          "...", REMOTE_TRIGGER),
        S("INSERT INTO rem1(f2) VALUES ('test')",
          note="adapted: without the remote trigger"),
        S("UPDATE rem1 SET f2 = 'testo'",
          note="adapted: without the remote trigger"),
        X("INSERT INTO rem1(f2) VALUES ('test') RETURNING ctid",
          "a ctid names a row of the storage: the heap's natively, a "
          "shard's row here"),
        S("DROP TRIGGER trig_row_before ON rem1"),
        S("DROP TRIGGER trig_row_after ON rem1"),
        S("DELETE FROM rem1"),
    ] + direct_modify_steps()))

# -- inheritance: a foreign table as the child of a local one ---------------
SECTIONS.append(Section(
    "inherit_a",
    sqlite="""CREATE TABLE loct(aa TEXT, tenant_id TEXT, bb TEXT);""",
    foreign="""
        CREATE TABLE a (aa TEXT);
        CREATE FOREIGN TABLE b (tenant_id text DEFAULT 'a', bb TEXT)
          INHERITS (a) SERVER %s OPTIONS (table 'loct');
    """ % SERVER,
    native="""
        CREATE TABLE a (aa TEXT);
        CREATE TABLE b (tenant_id text DEFAULT 'a', bb TEXT) INHERITS (a);
    """,
    load="",
    tables=["a", "b"],
    steps=[
        S("INSERT INTO a(aa) VALUES('aaa')"),
        S("INSERT INTO a(aa) VALUES('aaaa')"),
        S("INSERT INTO a(aa) VALUES('aaaaa')"),
        S("INSERT INTO b(aa) VALUES('bbb')"),
        S("INSERT INTO b(aa) VALUES('bbbb')"),
        S("INSERT INTO b(aa, tenant_id) VALUES('bbbbb', 'b')",
          note="adapted: tenant b"),
        S("SELECT tableoid::regclass, * FROM a"),
        S("SELECT tableoid::regclass, * FROM b"),
        S("SELECT tableoid::regclass, * FROM ONLY a"),
        S("UPDATE a SET aa = 'zzzzzz' WHERE aa LIKE 'aaaa%'"),
        S("SELECT tableoid::regclass, * FROM a"),
        S("UPDATE b SET aa = 'new'"),
        S("SELECT tableoid::regclass, * FROM a"),
        S("UPDATE a SET aa = 'newtoo'"),
        S("SELECT tableoid::regclass, * FROM a"),
        S("UPDATE a SET aa = aa || '!' WHERE aa ~ 'new' RETURNING "
          "tableoid::regclass, *", note="added: row by row"),
        S("DELETE FROM a"),
        S("SELECT tableoid::regclass, * FROM a"),
    ]))

# -- inheritance: foo/bar with foreign children ------------------------------
SECTIONS.append(Section(
    "inherit_foobar",
    sqlite="""
        CREATE TABLE loct1(f1 INTEGER, f2 INTEGER, f3 INTEGER, tenant_id TEXT);
        CREATE TABLE loct2(tenant_id TEXT, f1 INTEGER, f2 INTEGER,
                           f3 INTEGER);
        CREATE TABLE loct4(f1 INTEGER, f2 INTEGER, f3 INTEGER, tenant_id TEXT);
    """,
    foreign="""
        create table foo (f1 int, f2 int);
        create foreign table foo2 (f3 int, tenant_id text default 'a')
          inherits (foo) server %s options (table 'loct1');
        create table bar (f1 int, f2 int);
        create foreign table bar2 (tenant_id text default 'a', f3 int)
          inherits (bar) server %s options (table 'loct2');
    """ % (SERVER, SERVER),
    native="""
        create table foo (f1 int, f2 int);
        create table foo2 (f3 int, tenant_id text default 'a') inherits (foo);
        create table bar (f1 int, f2 int);
        create table bar2 (tenant_id text default 'a', f3 int) inherits (bar);
    """,
    load="",
    tables=["foo", "foo2", "bar", "bar2"],
    steps=[
        S("insert into foo values(1,1)"),
        S("insert into foo values(3,3)"),
        S("insert into foo2 values(2,2,2)"),
        S("insert into foo2 values(4,4,4,'b')", note="adapted: tenant b"),
        S("insert into bar values(1,11)"),
        S("insert into bar values(2,22)"),
        S("insert into bar values(6,66)"),
        S("insert into bar2 values(3,33,'b',33)", note="adapted: tenant b"),
        S("insert into bar2 values(4,44,'a',44)"),
        S("insert into bar2 values(7,77,'b',77)", note="adapted: tenant b"),
        S("select * from bar where f1 in (select f1 from foo) for update"),
        S("select * from bar where f1 in (select f1 from foo) for share"),
        S(f="create foreign table foo2child (f3 int, tenant_id text) "
            "inherits (foo2) server %s options (table 'loct4')" % SERVER,
          n="create table foo2child (f3 int, tenant_id text) inherits (foo2)"),
        S("select * from bar where f1 in (select f1 from foo2) for share"),
        S(f="drop foreign table foo2child", n="drop table foo2child"),
        S("create table foo2child (f3 int, tenant_id text) inherits (foo2)"),
        S("select * from bar where f1 in (select f1 from foo2) for share"),
        S("drop table foo2child"),
        S("update bar set f2 = f2 + 100 where f1 in (select f1 from foo)"),
        S("select tableoid::regclass, * from bar order by 1,2", ordered=True),
        S("update bar set f2 = f2 + 100\nfrom\n  ( select f1 from foo union "
          "all select f1+3 from foo ) ss\nwhere bar.f1 = ss.f1"),
        S("select tableoid::regclass, * from bar order by 1,2", ordered=True),
        # not in the suite: the same with RETURNING, and DELETE ... USING
        # with duplicate matches
        S("update bar set f2 = f2 + 1\nfrom\n  ( select f1 from foo union "
          "all select f1+3 from foo ) ss\nwhere bar.f1 = ss.f1 "
          "returning bar.*", note="added: RETURNING"),
        S("update bar2 set f2 = f2 + 1\nfrom\n  ( select f1 from foo union "
          "all select f1 from foo ) ss\nwhere bar2.f1 = ss.f1 "
          "returning bar2.*",
          note="added: the foreign table as the target, each row matched "
               "twice"),
        S("begin", note="added"),
        S("delete from bar2 using (select f1 from foo union all select f1 "
          "from foo) ss where bar2.f1 = ss.f1 returning bar2.*",
          note="added: DELETE ... USING, each row matched twice"),
        S("rollback", note="added"),
        S("delete from foo2"),
        S("insert into foo2 select generate_series(0, 2000, 2), "
          "generate_series(0, 2000, 2), generate_series(0, 2000, 2)",
          note="adapted: the suite fills loct1 (the remote table) directly"),
        S("truncate table only foo"),
        S("insert into foo select generate_series(1, 2000, 2), "
          "generate_series(1, 2000, 2)"),
        S("SET enable_hashjoin to false"),
        S("SET enable_nestloop to false"),
        S("select foo.f1, foo2.f1 from foo join foo2 on (foo.f1 = foo2.f1) "
          "order by foo.f2 offset 10 limit 10",
          note="adapted: foo2 for loct1 (the remote table)"),
        S("select foo.f1, foo2.f1 from foo left join foo2 on "
          "(foo.f1 = foo2.f1) order by foo.f2 offset 10 limit 10",
          ordered=True, note="adapted: foo2 for loct1 (the remote table)"),
        S("RESET enable_hashjoin"),
        S("RESET enable_nestloop"),
        S("begin"),
        S("declare c cursor for select * from bar where f1 = 7"),
        S("fetch from c"),
        S("update bar set f2 = null where current of c", refuse="0A000"),
        S("rollback"),
        S("delete from foo where f1 < 5 returning *"),
        S("update bar set f2 = f2 + 100 returning *"),
        S("CREATE TRIGGER trig_row_before\nBEFORE UPDATE OR DELETE ON bar2\n"
          "FOR EACH ROW EXECUTE PROCEDURE trigger_data(23,'skidoo')"),
        S("CREATE TRIGGER trig_row_after\nAFTER UPDATE OR DELETE ON bar2\n"
          "FOR EACH ROW EXECUTE PROCEDURE trigger_data(23,'skidoo')"),
        S("update bar set f2 = f2 + 100"),
        S("delete from bar where f2 < 400"),
    ]))

# -- inheritance: UPDATE/DELETE joins of a parent with a foreign child ------
SECTIONS.append(Section(
    "inherit_parent",
    sqlite="""
        CREATE TABLE loct1(a INTEGER, b TEXT, tenant_id TEXT);
        CREATE TABLE loct2(tenant_id TEXT, a INTEGER, b TEXT);
    """,
    foreign="""
        create table parent (a int, b text);
        %s;
        %s;
        alter foreign table remt1 inherit parent;
    """ % (FT("remt1", "a int, b text, tenant_id text default 'a'", "loct1"),
           FT("remt2", "tenant_id text default 'a', a int, b text", "loct2")),
    native="""
        create table parent (a int, b text);
        create table remt1 (a int, b text, tenant_id text default 'a');
        create table remt2 (tenant_id text default 'a', a int, b text);
        alter table remt1 inherit parent;
    """,
    load="",
    tables=["parent", "remt1", "remt2"],
    steps=[
        S("insert into remt1 values (1, 'foo')"),
        S("insert into remt1 values (2, 'bar', 'b')",
          note="adapted: tenant b"),
        S("insert into remt2 values ('b', 1, 'foo')",
          note="adapted: tenant b"),
        S("insert into remt2 values ('a', 2, 'bar')"),
        S("insert into parent values (1, 'local')", note="added: a row of "
          "the parent itself"),
        S("update parent set b = parent.b || remt2.b from remt2 where "
          "parent.a = remt2.a returning *"),
        S("delete from parent using remt2 where parent.a = remt2.a "
          "returning parent"),
    ]))

# -- tuple routing: foreign tables as partitions -----------------------------
SECTIONS.append(Section(
    "itr",
    sqlite="""
        CREATE TABLE loct1(a INTEGER CHECK (a IN (1)), b TEXT, tenant_id TEXT);
        CREATE TABLE loct2(b TEXT, tenant_id TEXT, a INTEGER CHECK (a IN (2)));
    """,
    foreign="""
        create table itrtest (a int, b text, tenant_id text default 'a')
          partition by list (a);
        %s;
        %s;
        alter table itrtest attach partition remp1 for values in (1);
        alter table itrtest attach partition remp2 for values in (2);
    """ % (FT("remp1", "a int check (a in (1)), b text, tenant_id text "
              "default 'a'", "loct1"),
           FT("remp2", "b text, tenant_id text default 'a', "
              "a int check (a in (2))", "loct2")),
    native="""
        create table itrtest (a int, b text, tenant_id text default 'a')
          partition by list (a);
        create table remp1 (a int check (a in (1)), b text,
          tenant_id text default 'a');
        create table remp2 (b text, tenant_id text default 'a',
          a int check (a in (2)));
        alter table itrtest attach partition remp1 for values in (1);
        alter table itrtest attach partition remp2 for values in (2);
    """,
    load="",
    tables=["remp1", "remp2"],
    steps=[
        S("insert into itrtest values (1, 'foo')"),
        S("insert into itrtest values (1, 'bar') returning *"),
        S("insert into itrtest values (2, 'baz')"),
        S("insert into itrtest values (2, 'qux', 'b') returning *",
          note="adapted: tenant b"),
        S("insert into itrtest values (1, 'test1'), (2, 'test2') returning *"),
        S("select tableoid::regclass, * FROM itrtest"),
        S("select tableoid::regclass, * FROM remp1"),
        S("select tableoid::regclass, * FROM remp2"),
        # not in the suite: changes through the partitioned table, whose
        # partitions have the tenant column at different places
        S("update itrtest set b = b || '!' where b ~ 'a' returning *",
          note="added: row by row"),
        S("update itrtest set b = upper(b) returning tableoid::regclass, *",
          note="added"),
        S("delete from itrtest where b ~ 'QUX' returning *",
          note="added: row by row"),
        S("delete from itrtest"),
        S("merge into itrtest using (select 1, 'foo') as source on (true)\n"
          "  when matched then do nothing", refuse="0A000"),
        Shard("CREATE UNIQUE INDEX loct1_idx ON loct1 (a)",
              "create unique index loct1_idx on remp1 (a)"),
        S("insert into itrtest values (1, 'foo') on conflict do nothing "
          "returning *"),
        S("insert into itrtest values (1, 'foo') on conflict do nothing "
          "returning *"),
        S("insert into itrtest values (1, 'bar') on conflict (a) do nothing"),
        S("insert into itrtest values (1, 'bar') on conflict (a) do update "
          "set b = excluded.b"),
        S("select tableoid::regclass, * FROM itrtest"),
        S("delete from itrtest"),
        Shard("DROP INDEX loct1_idx", "drop index loct1_idx"),
        X("create trigger loct1_br_insert_trigger before insert on loct1 ...",
          REMOTE_TRIGGER),
        S("insert into itrtest values (1, 'foo') returning *",
          note="adapted: without the remote trigger"),
        S("insert into itrtest values (2, 'qux') returning *",
          note="adapted: without the remote trigger"),
        S("insert into itrtest values (1, 'test1'), (2, 'test2') returning *",
          note="adapted: without the remote trigger"),
        S("with result as (insert into itrtest values (1, 'test1'), "
          "(2, 'test2') returning *) select * from result",
          note="adapted: without the remote trigger"),
        S("update itrtest set a = 3 - a where b = 'foo' returning *",
          refuse="0A000",
          note="added: a row would move between two foreign partitions, "
               "which is refused as postgres_fdw refuses it"),
    ]))

SECTIONS.append(Section(
    "utr",
    sqlite="""
        CREATE TABLE loct(a INTEGER CHECK (a IN (1)), b TEXT, tenant_id TEXT);
        CREATE TABLE loct3(a INTEGER CHECK (a IN (3)), b TEXT,
                           tenant_id TEXT);
    """,
    foreign="""
        create table utrtest (a int, b text, tenant_id text default 'a')
          partition by list (a);
        %s;
        create table locp (a int check (a in (2)), b text,
          tenant_id text default 'a');
        alter table utrtest attach partition remp for values in (1);
        alter table utrtest attach partition locp for values in (2);
    """ % FT("remp", "a int check (a in (1)), b text, tenant_id text "
             "default 'a'", "loct"),
    native="""
        create table utrtest (a int, b text, tenant_id text default 'a')
          partition by list (a);
        create table remp (a int check (a in (1)), b text,
          tenant_id text default 'a');
        create table locp (a int check (a in (2)), b text,
          tenant_id text default 'a');
        alter table utrtest attach partition remp for values in (1);
        alter table utrtest attach partition locp for values in (2);
    """,
    load="",
    tables=["remp", "locp"],
    steps=[
        S("insert into utrtest values (1, 'foo')"),
        S("insert into utrtest values (2, 'qux')"),
        S("select tableoid::regclass, * FROM utrtest"),
        S("update utrtest set a = 2 where b = 'foo' returning *",
          refuse="0A000",
          note="natively the row moves; postgres_fdw fails by the remote "
               "CHECK (the row would stay in the foreign partition), here "
               "the move out of a foreign partition is refused"),
        S("update utrtest set a = 1 where b = 'qux' returning *"),
        S("select tableoid::regclass, * FROM utrtest"),
        S("update utrtest set a = 1 where b = 'foo'"),
        X("create trigger loct_br_insert_trigger before insert on loct ...",
          REMOTE_TRIGGER),
        S("delete from utrtest"),
        S("insert into utrtest values (2, 'qux')"),
        S("update utrtest set a = 1 where a = 1 or a = 2 returning *",
          note="adapted: without the remote trigger"),
        S("delete from utrtest"),
        S("insert into utrtest values (2, 'qux')"),
        S("update utrtest set a = 1 where a = 2 returning *",
          note="adapted: without the remote trigger"),
        S("delete from utrtest"),
        S("insert into utrtest values (1, 'foo')"),
        S("insert into utrtest values (2, 'qux')"),
        S("update utrtest set a = 1 returning *"),
        S("delete from utrtest"),
        S("insert into utrtest values (1, 'foo')"),
        S("insert into utrtest values (2, 'qux')"),
        S("update utrtest set a = 1 from (values (1), (2)) s(x) where a = s.x "
          "returning *"),
        S("delete from utrtest"),
        S("alter table utrtest detach partition remp"),
        S(f="drop foreign table remp", n="drop table remp"),
        S(f=FT("remp", "a int check (a in (3)), b text, tenant_id text "
               "default 'a'", "loct3"),
          n="create table remp (a int check (a in (3)), b text, "
            "tenant_id text default 'a')",
          note="adapted: loct3 is loct with the CHECK changed"),
        S("alter table utrtest attach partition remp for values in (3)"),
        S("insert into utrtest values (2, 'qux')"),
        S("insert into utrtest values (3, 'xyzzy')"),
        S("update utrtest set a = 3 returning *", refuse="0A000"),
        S("update utrtest set a = 3 from (values (2), (3)) s(x) where a = s.x "
          "returning *", refuse="0A000"),
        S("select tableoid::regclass, * FROM utrtest"),
    ]))

SECTIONS.append(Section(
    "ctr",
    sqlite="""
        CREATE TABLE loct1(a INTEGER CHECK (a IN (1)), b TEXT, tenant_id TEXT);
        CREATE TABLE loct2(b TEXT, tenant_id TEXT, a INTEGER CHECK (a IN (2)));
    """,
    foreign="""
        create table ctrtest (a int, b text, tenant_id text default 'a')
          partition by list (a);
        %s;
        %s;
        alter table ctrtest attach partition remp1 for values in (1);
        alter table ctrtest attach partition remp2 for values in (2);
    """ % (FT("remp1", "a int check (a in (1)), b text, tenant_id text "
              "default 'a'", "loct1"),
           FT("remp2", "b text, tenant_id text default 'a', "
              "a int check (a in (2))", "loct2")),
    native="""
        create table ctrtest (a int, b text, tenant_id text default 'a')
          partition by list (a);
        create table remp1 (a int check (a in (1)), b text,
          tenant_id text default 'a');
        create table remp2 (b text, tenant_id text default 'a',
          a int check (a in (2)));
        alter table ctrtest attach partition remp1 for values in (1);
        alter table ctrtest attach partition remp2 for values in (2);
    """,
    load="",
    tables=["remp1", "remp2"],
    steps=[
        S("copy ctrtest from stdin;\n1\tfoo\ta\n2\tqux\tb\n\\.",
          note="adapted: the tenant in the data"),
        S("select tableoid::regclass, * FROM ctrtest"),
        S("copy remp1 from stdin;\n1\tbar\tb\n\\.",
          note="adapted: the tenant in the data"),
        S("select tableoid::regclass, * FROM remp1"),
        S("delete from ctrtest"),
        OnlyF("ALTER FOREIGN TABLE remp1 OPTIONS (ADD batch_size '2')"),
        OnlyF("ALTER FOREIGN TABLE remp2 OPTIONS (ADD batch_size '2')"),
        S("copy ctrtest (a, b) from stdin;\n1\tfoo\n1\tbar\n2\tbaz\n2\tqux\n"
          "1\ttest1\n2\ttest2\n\\.",
          note="adapted: the column list (the tenant gets its default)"),
        S("select tableoid::regclass, * FROM ctrtest"),
        S("delete from ctrtest"),
    ]))

# -- COPY FROM (rem2 over loc2) --------------------------------------------
SECTIONS.append(Section(
    "copy",
    sqlite="""
        CREATE TABLE loc2(f1 INTEGER, f2 TEXT, tenant_id TEXT);
        CREATE TABLE loc3(f1 INTEGER, f2 TEXT, tenant_id TEXT);
    """,
    foreign=FT("rem2", "f1 int, f2 text, tenant_id text default 'a'",
               "loc2") + ";",
    native="create table rem2 (f1 int, f2 text, tenant_id text default 'a');",
    load="",
    tables=["rem2"],
    steps=[
        S("copy rem2 (f1, f2) from stdin;\n1\tfoo\n2\tbar\n\\.",
          note="adapted: the column list"),
        S("select * from rem2"),
        S("delete from rem2"),
        Shard("DROP TABLE loc2; CREATE TABLE loc2(f1 INTEGER CHECK "
              "(f1 >= 0), f2 TEXT, tenant_id TEXT)",
              "alter table rem2 add constraint loc2_f1positive "
              "check (f1 >= 0)"),
        OnlyF("alter foreign table rem2 add constraint rem2_f1positive "
              "check (f1 >= 0)"),
        S("copy rem2 (f1, f2) from stdin;\n1\tfoo\n2\tbar\n\\."),
        S("copy rem2 (f1, f2) from stdin;\n-1\txyzzy\n\\."),
        S("select * from rem2"),
        S("delete from rem2",
          note="adapted: before the CHECK goes (SQLite cannot drop it)"),
        OnlyF("alter foreign table rem2 drop constraint rem2_f1positive"),
        Shard("DROP TABLE loc2; CREATE TABLE loc2(f1 INTEGER, f2 TEXT, "
              "tenant_id TEXT)",
              "alter table rem2 drop constraint loc2_f1positive"),
        S("create trigger trig_stmt_before before insert on rem2\n\tfor each "
          "statement execute procedure trigger_func()"),
        S("create trigger trig_stmt_after after insert on rem2\n\tfor each "
          "statement execute procedure trigger_func()"),
        S("create trigger trig_row_before before insert on rem2\n\tfor each "
          "row execute procedure trigger_data(23,'skidoo')"),
        S("create trigger trig_row_after after insert on rem2\n\tfor each "
          "row execute procedure trigger_data(23,'skidoo')"),
        S("copy rem2 (f1, f2) from stdin;\n1\tfoo\n2\tbar\n\\."),
        S("select * from rem2"),
        S("drop trigger trig_row_before on rem2"),
        S("drop trigger trig_row_after on rem2"),
        S("drop trigger trig_stmt_before on rem2"),
        S("drop trigger trig_stmt_after on rem2"),
        S("delete from rem2"),
        S("create trigger trig_row_before_insert before insert on rem2\n\t"
          "for each row execute procedure trig_row_before_insupdate()"),
        S("copy rem2 (f1, f2) from stdin;\n1\tfoo\n2\tbar\n\\."),
        S("select * from rem2"),
        S("drop trigger trig_row_before_insert on rem2"),
        S("delete from rem2"),
        S("create trigger trig_null before insert on rem2\n\tfor each row "
          "execute procedure trig_null()"),
        S("copy rem2 (f1, f2) from stdin;\n1\tfoo\n2\tbar\n\\."),
        S("select * from rem2"),
        S("drop trigger trig_null on rem2"),
        S("delete from rem2"),
        X("create trigger trig_row_before_insert before insert on loc2 ...",
          REMOTE_TRIGGER),
        S("begin"),
        S(f=FT("rem3", "f1 int, f2 text, tenant_id text default 'a'", "loc3"),
          n="create table rem3 (f1 int, f2 text, tenant_id text default 'a')"),
        S("copy rem3 (f1, f2) from stdin;\n1\tfoo\n2\tbar\n\\."),
        S("commit"),
        S("select * from rem3"),
        S("delete from rem3", note="added: the table is dropped next"),
        S(f="drop foreign table rem3", n="drop table rem3"),
        OnlyF("ALTER FOREIGN TABLE rem2 OPTIONS (ADD batch_size '2')"),
        S("copy rem2 (f1, f2) from stdin;\n1\tfoo\n2\tbar\n3\tbaz\n\\."),
        S("select * from rem2"),
        S("delete from rem2"),
    ]))


# -- TRUNCATE --------------------------------------------------------------
SECTIONS.append(Section(
    "truncate",
    sqlite="""
        CREATE TABLE tru_rtable0(id INTEGER, tenant_id TEXT,
                                 PRIMARY KEY (tenant_id, id)) {WR};
        CREATE TABLE tru_rtable1(tenant_id TEXT, id INTEGER,
                                 PRIMARY KEY (tenant_id, id));
        CREATE TABLE tru_pk_table(id INTEGER, tenant_id TEXT,
                                  PRIMARY KEY (tenant_id, id));
        CREATE TABLE tru_rtable_parent(id INTEGER, tenant_id TEXT);
        CREATE TABLE tru_rtable_child(id INTEGER, tenant_id TEXT);
    """,
    foreign="""
        %s;
        CREATE TABLE tru_ptable (id int, tenant_id text DEFAULT 'a')
          PARTITION BY HASH(id);
        CREATE TABLE tru_ptable__p0 PARTITION OF tru_ptable
          FOR VALUES WITH (MODULUS 2, REMAINDER 0);
        CREATE FOREIGN TABLE tru_ftable__p1 PARTITION OF tru_ptable
          FOR VALUES WITH (MODULUS 2, REMAINDER 1)
          SERVER %s OPTIONS (table 'tru_rtable1');
        %s;
        %s;
        CREATE FOREIGN TABLE tru_ftable_child () INHERITS (tru_ftable_parent)
          SERVER %s OPTIONS (table 'tru_rtable_child');
    """ % (FT("tru_ftable", "id int, tenant_id text DEFAULT 'a'",
              "tru_rtable0"), SERVER,
           FT("tru_pk_ftable", "id int, tenant_id text DEFAULT 'a'",
              "tru_pk_table"),
           FT("tru_ftable_parent", "id int, tenant_id text DEFAULT 'a'",
              "tru_rtable_parent"), SERVER),
    native="""
        CREATE TABLE tru_ftable (id int, tenant_id text DEFAULT 'a',
          PRIMARY KEY (tenant_id, id));
        CREATE TABLE tru_ptable (id int, tenant_id text DEFAULT 'a')
          PARTITION BY HASH(id);
        CREATE TABLE tru_ptable__p0 PARTITION OF tru_ptable
          FOR VALUES WITH (MODULUS 2, REMAINDER 0);
        CREATE TABLE tru_ftable__p1 PARTITION OF tru_ptable
          FOR VALUES WITH (MODULUS 2, REMAINDER 1);
        CREATE TABLE tru_pk_ftable (id int, tenant_id text DEFAULT 'a',
          PRIMARY KEY (tenant_id, id));
        CREATE TABLE tru_ftable_parent (id int, tenant_id text DEFAULT 'a');
        CREATE TABLE tru_ftable_child () INHERITS (tru_ftable_parent);
    """,
    load="""
        INSERT INTO tru_ftable SELECT x, CASE WHEN x % 2 = 0 THEN 'a'
          ELSE 'b' END FROM generate_series(1,10) x;
        INSERT INTO tru_ptable SELECT x, CASE WHEN x % 3 = 0 THEN 'a'
          ELSE 'b' END FROM generate_series(11,20) x;
        INSERT INTO tru_pk_ftable SELECT x, 'b' FROM generate_series(1,10) x;
        INSERT INTO tru_ftable_parent SELECT x, CASE WHEN x % 2 = 0 THEN 'a'
          ELSE 'b' END FROM generate_series(1,8) x;
        INSERT INTO tru_ftable_child SELECT x, CASE WHEN x % 2 = 0 THEN 'a'
          ELSE 'b' END FROM generate_series(10,18) x;
    """,
    tables=["tru_ftable", "tru_ptable__p0", "tru_ftable__p1",
            "tru_pk_ftable", "tru_ftable_parent", "tru_ftable_child"],
    steps=[
        S("SELECT sum(id) FROM tru_ftable"),
        S("TRUNCATE tru_ftable"),
        S("SELECT count(*) FROM tru_ftable"),
        X("ALTER SERVER loopback OPTIONS (ADD truncatable 'false'); "
          "TRUNCATE tru_ftable; ...", "postgres_fdw's truncatable option"),
        S("SELECT sum(id) FROM tru_ptable"),
        S("TRUNCATE tru_ptable"),
        S("SELECT count(*) FROM tru_ptable"),
        S("SELECT count(*) FROM tru_ptable__p0"),
        S("SELECT count(*) FROM tru_ftable__p1"),
        X("TRUNCATE tru_pk_ftable; -- failed by FK reference",
          "a foreign key of postgres_fdw's remote tables (tru_fk_table "
          "references tru_pk_table) that CASCADE follows on the remote "
          "server"),
        S("INSERT INTO tru_ftable (SELECT x FROM generate_series(1,8) x)"),
        S("INSERT INTO tru_pk_ftable (SELECT x FROM generate_series(3,10) x)"),
        S("SELECT count(*) from tru_ftable"),
        S("SELECT count(*) from tru_pk_ftable"),
        S("TRUNCATE tru_ftable, tru_pk_ftable CASCADE"),
        S("SELECT count(*) from tru_ftable"),
        S("SELECT count(*) from tru_pk_ftable"),
        S("INSERT INTO tru_ftable (SELECT x FROM generate_series(1,8) x)",
          note="added: again, for the same without CASCADE"),
        S("INSERT INTO tru_pk_ftable (SELECT x FROM generate_series(3,10) x)",
          note="added"),
        S("TRUNCATE tru_ftable, tru_pk_ftable",
          note="added: the statement above without CASCADE"),
        S("SELECT count(*) from tru_ftable", note="added"),
        S("SELECT count(*) from tru_pk_ftable", note="added"),
        S("TRUNCATE ONLY tru_ftable_parent"),
        S("SELECT sum(id) FROM tru_ftable_parent"),
        S("TRUNCATE tru_ftable_parent"),
        S("SELECT count(*) FROM tru_ftable_parent"),
        X("CREATE TABLE tru_rtable0_child () INHERITS (tru_rtable0); ...",
          "inheritance children of postgres_fdw's remote table"),
        # not in the suite: TRUNCATE in transactions and savepoints
        S("INSERT INTO tru_ftable VALUES (1, 'a'), (2, 'b'), (3, 'a')",
          note="added"),
        S("BEGIN", note="added"),
        S("TRUNCATE tru_ftable", note="added"),
        S("SELECT count(*) FROM tru_ftable", note="added"),
        S("ROLLBACK", note="added"),
        S("BEGIN", note="added"),
        S("SAVEPOINT s1", note="added"),
        S("TRUNCATE tru_ftable", note="added"),
        S("INSERT INTO tru_ftable VALUES (7, 'b')", note="added"),
        S("ROLLBACK TO SAVEPOINT s1", note="added"),
        S("INSERT INTO tru_ftable VALUES (8, 'a')", note="added"),
        S("TRUNCATE tru_ftable, tru_ptable", note="added"),
        S("INSERT INTO tru_ftable VALUES (9, 'b')", note="added"),
        S("COMMIT", note="added"),
    ]))


# ---------------------------------------------------------------------------
# The fleet and the schemas
# ---------------------------------------------------------------------------

def build_fleet(d):
    """d/directory.db and d/shards/s1.db, s2.db with every section's SQLite
    tables, handed to the server."""
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
        for t, s in TENANTS.items():
            con.execute("INSERT INTO shard_map(tenant_id, shard_id, status, "
                        "target_shard_id, updated_at) VALUES (?, ?, "
                        "'ACTIVE', NULL, 1735689600)", (t, s))
    con.close()
    for s in SHARDS:
        con = sqlite3.connect(os.path.join(d, "shards", s + ".db"))
        con.execute("PRAGMA journal_mode = %s" % ("WAL" if WAL[s] else
                                                  "DELETE"))
        for sec in SECTIONS:
            script = sec.sqlite.replace(
                "{WR}", " WITHOUT ROWID" if s == "s2" else "")
            # every section's tables live in one file: prefix their names
            con.executescript(prefix_tables(script, sec.name))
        con.close()
    hand_over(d)


def sqlite_name(section, table):
    return "%s__%s" % (section, table)


def prefix_tables(script, section):
    """The section's SQLite DDL with its table (and index) names prefixed
    by the section's name (each section has its own SQLite tables)."""
    out = re.sub(r'(CREATE TABLE|DROP TABLE|CREATE UNIQUE INDEX|DROP INDEX|'
                 r'\bON)\s+("[^"]+"|\w+)',
                 lambda m: "%s \"%s\"" % (m.group(1), sqlite_name(
                     section, m.group(2).strip('"'))), script)
    return out


def map_tables(text, section):
    """Foreign DDL whose table options name the section's prefixed SQLite
    tables."""
    return re.sub(r"\(table '([^']*)'", lambda m: "(table %s" % sql_str(
        sqlite_name(section, m.group(1))), text)


def shard_sql(d, sql, section):
    for s in SHARDS:
        con = sqlite3.connect(os.path.join(d, "shards", s + ".db"))
        try:
            con.executescript(prefix_tables(sql, section))
        finally:
            con.close()
    hand_over(d)


def psql_script(script):
    p = subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-f",
                        "-"], input=script, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


SESSION_SETUP = [
    "SET client_min_messages = notice",
    "SET TimeZone = 'America/Los_Angeles'",
    "SET DateStyle = 'ISO, MDY'",
    "SET extra_float_digits = 0",
]


# ---------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------

class Tally:
    def __init__(self):
        self.passed = 0
        self.failed = 0
        self.xfail = 0
        self.excluded = 0
        self.followon = 0
        self.crash_skipped = 0
        self.failures = []
        self.known = []


def log(msg=""):
    print(msg, flush=True)


def snapshot_sql(tables):
    parts = []
    for t in tables:
        parts.append(
            "SELECT %s, CASE WHEN count(*) <= 40 THEN coalesce(string_agg("
            "x::text, ' ; ' ORDER BY x::text), '') ELSE count(*) || ' rows, "
            "md5 ' || md5(string_agg(x::text, E'\\n' ORDER BY x::text)) END "
            "FROM ONLY %s x" % (sql_str(t), t))
    return " UNION ALL ".join(parts)


def content_diff(fs, ns, tables, fsnap, nsnap):
    """The rows of each table that only one side holds (read again when
    the snapshots differ)."""
    if fsnap.error or nsnap.error:
        return "\n    foreign: %s\n    native:  %s" % (fsnap.describe(),
                                                      nsnap.describe())
    out = ""
    for t, fl, nl in zip(tables, fsnap.rows, nsnap.rows):
        if fl == nl:
            continue
        q = "SELECT x::text FROM ONLY %s x ORDER BY 1" % t
        frows = fs.run(q).rows
        nrows = ns.run(q).rows
        fonly = [r for r in frows if r not in nrows]
        nonly = [r for r in nrows if r not in frows]
        out += "\n    %s: %d rows on the foreign side, %d natively" % (
            t, len(frows), len(nrows))
        for label, rows in (("only foreign", fonly), ("only native", nonly)):
            for r in rows[:6]:
                out += "\n      %s: %s" % (label, r)
            if len(rows) > 6:
                out += "\n      %s: ... %d more" % (label, len(rows) - 6)
    return out


def resync(fs, sec, tables):
    """Load the foreign side's tables with the native rows (triggers off)."""
    stmts = ["SET session_replication_role = replica"]
    for t in tables:
        cols = ("(SELECT string_agg(quote_ident(attname), ', ' ORDER BY "
                "attnum) FROM pg_attribute WHERE attrelid = "
                "'n_%s.%s'::regclass AND attnum > 0 AND NOT attisdropped "
                "AND attgenerated = '')"
                % (sec.name, t))
        stmts.append(
            "DO $r$ DECLARE c text := %s; BEGIN "
            "EXECUTE 'DELETE FROM ONLY f_%s.%s'; "
            "EXECUTE format('INSERT INTO f_%s.%s (%%s) SELECT %%s FROM ONLY "
            "n_%s.%s', c, c); END $r$" % (cols, sec.name, t, sec.name, t,
                                         sec.name, t))
    stmts.append("RESET session_replication_role")
    bad = []
    for s in stmts:
        o = fs.run(s)
        if o.error:
            bad.append("%s: %s" % (s[:60], o.sqlstate))
    return bad


def txn_change(sql, in_txn):
    w = sql.strip().split(None, 2)
    if not w:
        return in_txn
    k = w[0].lower()
    if k in ("begin", "start"):
        return True
    if k in ("commit", "end", "abort"):
        return False
    if k == "rollback" and not (len(w) > 1 and w[1].lower() in ("to",)):
        return False
    return in_txn


def run_section(sec, d, tally):
    name = sec.name
    # the schemas, the native rows, the same rows in the foreign tables
    script = ("SET client_min_messages = warning;\n"
              "DROP SCHEMA IF EXISTS f_{0} CASCADE;\n"
              "DROP SCHEMA IF EXISTS n_{0} CASCADE;\n"
              "CREATE SCHEMA f_{0}; CREATE SCHEMA n_{0};\n"
              "SET search_path = n_{0}, public;\n{1}\n{2}\n"
              "SET search_path = f_{0}, public;\n{3}\n").format(
                  name, sec.native, sec.load, map_tables(sec.foreign, name))
    rc, out, err = psql_script(script)
    if rc != 0:
        tally.failed += 1
        tally.failures.append("section %s: setup failed:\n%s" % (name, err))
        return
    fs = Session(SESSION_SETUP + ["SET search_path = f_%s, public" % name])
    ns = Session(SESSION_SETUP + ["SET search_path = n_%s, public" % name])
    try:
        bad = resync(fs, sec, sec.tables)
        if bad:
            tally.failed += 1
            tally.failures.append("section %s: loading the foreign tables "
                                  "failed: %s" % (name, "; ".join(bad)))
            return
        run_steps(sec, d, fs, ns, tally)
    except SessionLost as e:
        tally.failed += 1
        tally.failures.append("section %s: a session was lost (%s); the "
                              "server may have crashed; the rest of the "
                              "section was not run" % (name, e))
        time.sleep(2)
        server_ready(time.time() + 60)
    finally:
        fs.close()
        ns.close()


def run_steps(sec, d, fs, ns, tally):
    name = sec.name
    snap = snapshot_sql(sec.tables)
    in_txn = False
    dirty = False           # the two sides differ since an earlier step
    n = 0
    for step in sec.steps:
        if isinstance(step, X):
            tally.excluded += 1
            if VERBOSE:
                log("  excluded: %s\n    (%s)" % (step.sql, step.reason))
            continue
        if isinstance(step, OnlyF):
            o = fs.run(step.sql)
            if o.error:
                tally.failed += 1
                tally.failures.append("section %s: %s failed: %s" % (
                    name, step.sql, o.sqlstate))
            continue
        if isinstance(step, Shard):
            shard_sql(d, step.sqlite, name)
            o = ns.run(step.n)
            if o.error:
                tally.failed += 1
                tally.failures.append("section %s: %s failed: %s" % (
                    name, step.n, o.sqlstate))
            continue
        n += 1
        cid = "%s.%d" % (name, n)
        if cid in CRASHERS and not RUN_CRASHERS:
            tally.crash_skipped += 1
            tally.known.append("%s: not run (crashes the server): %s\n    %s"
                               % (cid, CRASHERS[cid], step.f))
            continue
        fo = fs.run(map_tables(step.f, name))
        skip_native = (step.refuse is not None and fo.error and
                       fo.sqlstate == step.refuse)
        no = None if skip_native else ns.run(step.n)
        if skip_native and in_txn:
            # the refusal aborted the foreign side's transaction: abort
            # the native side's too
            ns.run("SELECT 1 / 0")
        if step.f != step.n and no is not None:
            fo.normalize_tags()
            no.normalize_tags()
        new_txn = txn_change(step.f, in_txn)
        fsnap = fs.run(snap)
        nsnap = ns.run(snap)
        problems = []
        if no is not None and fo.key(step.ordered) != no.key(step.ordered):
            problems.append("outcome differs\n    foreign: %s\n    native:  "
                            "%s" % (fo.describe(), no.describe()))
        if fsnap.key(True) != nsnap.key(True):
            problems.append("table contents differ afterwards" +
                            content_diff(fs, ns, sec.tables, fsnap, nsnap))
        if VERBOSE:
            log("%s%s: %s\n    -> %s" % (
                cid, " (refused as postgres_fdw does)" if skip_native else "",
                step.f, fo.describe(4)))
        text = step.f if step.f == step.n else "F: %s\n    N: %s" % (
            step.f, step.n)
        if step.note:
            text += "\n    (%s)" % step.note
        if problems:
            if dirty and in_txn:
                tally.followon += 1
            elif cid in EXPECTED_FAIL:
                tally.xfail += 1
                tally.known.append("%s: known to fail: %s\n    %s\n  %s" % (
                    cid, EXPECTED_FAIL[cid], text, "\n  ".join(problems)))
            else:
                tally.failed += 1
                tally.failures.append("%s differs:\n    %s\n  %s" % (
                    cid, text, "\n  ".join(problems)))
            dirty = True
        else:
            if cid in EXPECTED_FAIL:
                tally.failed += 1
                tally.failures.append(
                    "%s passes but is listed in EXPECTED_FAIL (%s): remove "
                    "the entry\n    %s" % (cid, EXPECTED_FAIL[cid], text))
            else:
                tally.passed += 1
        in_txn = new_txn
        if dirty and not in_txn:
            bad = resync(fs, sec, sec.tables)
            if bad:
                tally.failed += 1
                tally.failures.append(
                    "section %s: after %s, loading the foreign tables again "
                    "failed: %s; the rest of the section was not run" % (
                        name, cid, "; ".join(bad)))
                return
            dirty = False


def main():
    d = os.environ.get("PGFDW_DIR") or tempfile.mkdtemp(
        prefix="ssfdw_pgfdw.", dir="/tmp")
    os.chmod(d, 0o777)
    t0 = time.time()
    tally = Tally()
    try:
        build_fleet(os.path.join(d, "fleet"))
        rc, out, err = psql_script(
            "SET client_min_messages = warning;\n"
            "CREATE EXTENSION IF NOT EXISTS sqlite_shard_fdw;\n"
            "DROP SERVER IF EXISTS %s CASCADE;\n"
            "DROP TYPE IF EXISTS user_enum CASCADE;\n"
            "DROP FUNCTION IF EXISTS postgres_fdw_abs(int), trigger_func(), "
            "trigger_data(), trig_row_before_insupdate(), trig_null() "
            "CASCADE;\n"
            "DROP OPERATOR IF EXISTS === (int, int);\n"
            "CREATE SERVER %s FOREIGN DATA WRAPPER sqlite_shard_fdw "
            "OPTIONS (directory %s);\n%s" % (
                SERVER, SERVER,
                sql_str(os.path.join(d, "fleet", "directory.db")),
                TRIG_FUNCS))
        if rc != 0:
            log("setup failed:\n%s" % err)
            log("0 passed, 1 failed")
            return 1
        for sec in SECTIONS:
            if ONLY and sec.name not in ONLY:
                continue
            ts = time.time()
            before = (tally.passed, tally.failed, tally.xfail)
            run_section(sec, os.path.join(d, "fleet"), tally)
            log("section %-15s %3d passed, %2d failed, %2d known to fail "
                "(%.1f s)" % (sec.name, tally.passed - before[0],
                              tally.failed - before[1],
                              tally.xfail - before[2], time.time() - ts))
        for msg in tally.failures:
            log()
            log(msg)
        if tally.known:
            log()
            log("known failures (EXPECTED_FAIL, CRASHERS):")
            for msg in tally.known:
                log("  " + msg)
        log()
        log("%d statements of the suite not run (excluded, with reasons), "
            "%d known to fail, %d known crashers not run, %d follow-on "
            "differences not counted; %.1f s" % (
                tally.excluded, tally.xfail, tally.crash_skipped,
                tally.followon, time.time() - t0))
        log("%d passed, %d failed" % (tally.passed + tally.xfail,
                                      tally.failed))
        return 0 if tally.failed == 0 else 1
    finally:
        if os.environ.get("PGFDW_KEEP") == "1":
            log("fixture kept in %s" % d)
        elif not os.environ.get("PGFDW_DIR"):
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    def on_signal(signo, frame):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        sys.exit(128 + signo)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    sys.exit(main())
