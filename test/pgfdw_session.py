#!/usr/bin/env python3
#
# test/pgfdw_session.py
#	A psql session that a differential test drives statement by statement:
#	each statement's output rows, command tag, notices, ERROR and SQLSTATE
#	come back as one outcome, so that two sessions (one on foreign tables,
#	one on native tables) can run the same statements side by side, each in
#	its own transaction, and be compared after every statement.
#
# Used by test/pgfdw_writes.py.  psql runs with -A -t (unaligned rows, no
# headers), VERBOSITY terse (a notice is its message alone), and without
# -q, so that it prints the command tag of every statement.  Errors are
# compared by SQLSTATE (psql's variable), not by their text: the wrapper's
# messages name shards where PostgreSQL's name tables.

import queue
import re
import subprocess
import threading

FS = "\x1f"                     # field separator of psql's output
NULL_TEXT = "<NULL>"
END_OUT = "@@END"
END_ERR = "@@ENDERR"
PSQL_PREFIX = re.compile(r"^psql:[^:]*:\d+: ")


class SessionLost(Exception):
    """psql ended (the server closed the connection: a backend crashed)."""


class Outcome:
    """What one statement gave: rows (output lines, command tags
    included), notices, and psql's ERROR and SQLSTATE."""

    def __init__(self, rows, notices, error, sqlstate, errors=()):
        self.rows = rows
        self.notices = notices
        self.error = error
        self.sqlstate = sqlstate
        self.errors = list(errors)  # the error's text: shown, not compared

    def normalize_tags(self):
        """FOREIGN TABLE out of command tags (DDL that creates or drops a
        foreign table on one side and a table on the other)."""
        self.rows = [r.replace(" FOREIGN TABLE", " TABLE") for r in self.rows]

    def key(self, ordered):
        rows = self.rows if ordered else sorted(self.rows)
        return (tuple(rows), tuple(sorted(self.notices)), self.error,
                self.sqlstate)

    def describe(self, limit=14):
        s = "sqlstate %s" % self.sqlstate
        for e in self.errors[:2]:
            s += "\n        " + e
        for n in self.notices[:limit]:
            s += "\n        " + n
        for r in self.rows[:limit]:
            s += "\n        | " + r.replace(FS, " | ")
        if len(self.rows) > limit:
            s += "\n        | ... (%d lines)" % len(self.rows)
        return s


def _reader(stream, q):
    for line in stream:
        q.put(line.rstrip("\n"))
    q.put(None)


class Session:
    """One psql process, fed a statement at a time."""

    def __init__(self, setup=(), timeout=30):
        self.timeout = timeout
        self.proc = subprocess.Popen(
            ["stdbuf", "-oL", "-eL", "psql", "-X", "-A", "-t", "-F", FS,
             "-v", "ON_ERROR_STOP=0", "-v", "VERBOSITY=terse", "-f", "-"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, bufsize=1,
            encoding="utf-8", errors="replace")
        self.out = queue.Queue()
        self.err = queue.Queue()
        for stream, q in ((self.proc.stdout, self.out),
                          (self.proc.stderr, self.err)):
            threading.Thread(target=_reader, args=(stream, q),
                             daemon=True).start()
        self.raw("\\pset null '%s'" % NULL_TEXT)
        for s in setup:
            self.run(s)

    def raw(self, text):
        try:
            self.proc.stdin.write(text + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise SessionLost("psql is gone")

    def _collect(self, q, marker):
        lines = []
        while True:
            try:
                line = q.get(timeout=self.timeout)
            except queue.Empty:
                raise SessionLost("no answer within %d s" % self.timeout)
            if line is None:
                raise SessionLost("psql ended")
            if line.startswith(marker):
                return lines, line
            lines.append(line)

    def run(self, sql):
        """Run one statement (COPY ... FROM stdin data may follow it on the
        next lines, ending with \\.); returns its Outcome."""
        text = sql.rstrip()
        if not text.endswith(";") and not text.endswith("\\."):
            text += ";"
        self.raw(text)
        self.raw("\\echo %s :ERROR :SQLSTATE" % END_OUT)
        self.raw("\\warn %s" % END_ERR)
        rows, end = self._collect(self.out, END_OUT)
        errs, _ = self._collect(self.err, END_ERR)
        parts = end.split(" ")
        error = parts[1] == "true"
        sqlstate = parts[2]
        notices = []
        errors = []
        for e in errs:
            e = PSQL_PREFIX.sub("", e)
            if e.startswith("ERROR:") or e.startswith("FATAL:"):
                errors.append(e)
                continue
            notices.append(e)
        return Outcome(rows, notices, error, sqlstate, errors)

    def close(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
