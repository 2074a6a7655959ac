#!/usr/bin/env python3
#
# test/move_bypass.py
#	Writes to a shard that fire no trigger, as an application may make
#	them, for test/move_bypass_test.sh: each opens the shard file with
#	SQLite itself (no extension, no PostgreSQL), makes one write and
#	commits.
#
#	replace FILE TENANT KEY	an INSERT OR REPLACE of a row of tenant
#							"other" whose unique email is that of account
#							KEY of TENANT: SQLite removes TENANT's row and
#							fires no delete trigger (recursive_triggers is
#							off, as it is by default)
#	blob FILE TENANT KEY	an incremental blob write (sqlite3_blob_write)
#							into the body of document KEY of TENANT
#	notrigger FILE TENANT KEY
#							an UPDATE of order KEY of TENANT on a connection
#							whose triggers are disabled
#							(SQLITE_DBCONFIG_ENABLE_TRIGGER, called through
#							ctypes: Python's sqlite3 module has no setconfig
#							before 3.12)
#
# Prints nothing; exits non-zero with a message when the write could not be
# made as described (the row missing, triggers still enabled).

import ctypes
import ctypes.util
import sqlite3
import sys

SQLITE_OPEN_READWRITE = 0x02
SQLITE_DBCONFIG_ENABLE_TRIGGER = 1003


def replace(path, tenant, key):
    con = sqlite3.connect(path, timeout=10, isolation_level=None)
    email = con.execute("SELECT email FROM accounts WHERE tenant_id = ? "
                        "AND account_id = ?", (tenant, key)).fetchone()
    if email is None:
        sys.exit("move_bypass.py: no account %s of tenant %s" % (key, tenant))
    con.execute("INSERT OR REPLACE INTO accounts VALUES ('other', ?, ?, ?)",
                (100000 + key, email[0], "taken by other"))
    con.close()


def blob(path, tenant, key):
    con = sqlite3.connect(path, timeout=10, isolation_level=None)
    row = con.execute("SELECT rowid, length(body) FROM docs "
                      "WHERE tenant_id = ? AND doc_id = ?",
                      (tenant, key)).fetchone()
    if row is None or row[1] < 4:
        sys.exit("move_bypass.py: no document %s of tenant %s" % (key, tenant))
    con.execute("BEGIN IMMEDIATE")
    with con.blobopen("docs", "body", row[0], readonly=False) as b:
        b.write(b"\xde\xad\xbe\xef")
    con.execute("COMMIT")
    con.close()


def notrigger(path, tenant, key):
    lib = ctypes.CDLL(ctypes.util.find_library("sqlite3"))
    lib.sqlite3_open_v2.argtypes = [ctypes.c_char_p,
                                    ctypes.POINTER(ctypes.c_void_p),
                                    ctypes.c_int, ctypes.c_char_p]
    lib.sqlite3_busy_timeout.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.sqlite3_exec.argtypes = [ctypes.c_void_p, ctypes.c_char_p,
                                 ctypes.c_void_p, ctypes.c_void_p,
                                 ctypes.c_void_p]
    lib.sqlite3_changes.argtypes = [ctypes.c_void_p]
    lib.sqlite3_errmsg.argtypes = [ctypes.c_void_p]
    lib.sqlite3_errmsg.restype = ctypes.c_char_p
    lib.sqlite3_close.argtypes = [ctypes.c_void_p]
    db = ctypes.c_void_p()
    if lib.sqlite3_open_v2(path.encode(), ctypes.byref(db),
                           SQLITE_OPEN_READWRITE, None) != 0:
        sys.exit("move_bypass.py: could not open %s" % path)
    lib.sqlite3_busy_timeout(db, 10000)
    enabled = ctypes.c_int(-1)
    # variadic: int, then int *
    if lib.sqlite3_db_config(db, ctypes.c_int(SQLITE_DBCONFIG_ENABLE_TRIGGER),
                             ctypes.c_int(0), ctypes.byref(enabled)) != 0 \
            or enabled.value != 0:
        sys.exit("move_bypass.py: could not disable triggers")
    sql = ("UPDATE orders SET amount_cents = amount_cents + 1 "
           "WHERE tenant_id = '%s' AND order_id = %d"
           % (tenant.replace("'", "''"), key))
    if lib.sqlite3_exec(db, sql.encode(), None, None, None) != 0:
        sys.exit("move_bypass.py: %s" % lib.sqlite3_errmsg(db).decode())
    if lib.sqlite3_changes(db) != 1:
        sys.exit("move_bypass.py: no order %s of tenant %s" % (key, tenant))
    lib.sqlite3_close(db)


if __name__ == "__main__":
    kind, path, tenant, key = sys.argv[1:5]
    {"replace": replace, "blob": blob, "notrigger": notrigger}[kind](
        path, tenant, int(key))
