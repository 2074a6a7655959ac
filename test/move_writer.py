#!/usr/bin/env python3
#
# test/move_writer.py
#	An application that knows nothing of sqlite_shard_fdw writing one
#	tenant's rows while the tenant moves (test/move_writers_test.sh, the
#	"move" part of test/bench.sh).  Plain SQLite through python3's sqlite3
#	module; it finds the tenant's shard the way the published reference
#	router does, in shard_map and shards of the directory (DONE: the
#	target, otherwise shard_id).
#
# Usage:
#	move_writer.py write DIRECTORY TENANT ROUTER BASE STOPFILE LOG [FORMS]
#		ROUTER is "fresh" (reads the directory before every write) or
#		"stale" (reads it once, and again only after a write failed).
#		Loops until STOPFILE exists: each transaction inserts an order
#		(order_id BASE + n) with an item, updates an order it inserted
#		earlier, or deletes one, chosen in turn.  A write refused by a
#		move's fence ("has moved to shard") is retried on the shard the
#		directory names then.  LOG gets one line per committed change
#		("I id amount", "U id amount", "D id"), then a last line
#		"DONE transactions fenced longest_wait_ms".  FORMS, SQL literals
#		separated by commas ("'07',7"), are the stored forms of the
#		tenant the inserts take in turn (a row is updated and deleted by
#		the form it was inserted with); by default the tenant's id as text.
#	move_writer.py check [--where ORDERS ITEMS] DIRECTORY TENANT INITIAL LOG...
#		Compare the tenant's orders and items on the shard the directory
#		names with INITIAL ("order_id amount" lines: the rows before the
#		writers started) changed by the LOGs; print "lost N duplicated N
#		changed N extra N" and exit non-zero unless all are 0.  The
#		tenant's rows are those stored as its id, or those the SQLite
#		conditions ORDERS and ITEMS keep.
#
# When run as root it becomes the user postgres, whose files the shards
# are (a WAL database's -wal and -shm files are shared with the server).

import os
import pwd
import sqlite3
import sys
import time

if os.geteuid() == 0:
    try:
        pw = pwd.getpwnam("postgres")
        os.setgid(pw.pw_gid)
        os.setuid(pw.pw_uid)
    except KeyError:
        pass


def locate(directory, tenant):
    """The file of the shard the directory names for tenant."""
    con = sqlite3.connect(directory, timeout=10)
    try:
        row = con.execute(
            "SELECT CASE WHEN m.status = 'DONE' THEN m.target_shard_id "
            "ELSE m.shard_id END FROM shard_map m WHERE m.tenant_id = ?",
            (tenant,)).fetchone()
        path = con.execute("SELECT path FROM shards WHERE shard_id = ?",
                           (row[0],)).fetchone()[0]
    finally:
        con.close()
    if not os.path.isabs(path):
        path = os.path.join(os.path.dirname(directory), path)
    return path


def write(directory, tenant, router, base, stopfile, logfile, forms=None):
    """The writer loop (see the head of the file)."""
    conns = {}
    form_of = {}

    def tenant_sql(oid):
        """The tenant as the row oid stores it: SQL text and parameters."""
        if forms:
            return form_of[oid], ()
        return "?", (tenant,)

    def conn(path):
        if path not in conns:
            c = sqlite3.connect(path, timeout=30, isolation_level=None)
            c.execute("PRAGMA busy_timeout = 30000")
            conns[path] = c
        return conns[path]

    log = open(logfile, "w")
    path = locate(directory, tenant)
    live = []
    n = txns = fenced = 0
    longest = 0.0
    step = 0
    while not os.path.exists(stopfile):
        kind = ("I", "I", "U", "I", "D")[step % 5] if live else "I"
        step += 1
        if kind == "I":
            n += 1
            oid = base + n
            amount = n % 1000
            if forms:
                form_of[oid] = forms[n % len(forms)]
        elif kind == "U":
            oid = live[(step * 7) % len(live)]
            amount = step % 1000 + 1000
        else:
            oid = live.pop((step * 13) % len(live))
        while True:
            if router == "fresh":
                path = locate(directory, tenant)
            c = conn(path)
            t, tp = tenant_sql(oid)
            start = time.monotonic()
            try:
                c.execute("BEGIN IMMEDIATE")
                if kind == "I":
                    c.execute("INSERT INTO orders(tenant_id, order_id, "
                              "amount_cents, status) VALUES (%s, ?, ?, 'new')"
                              % t, tp + (oid, amount))
                    c.execute("INSERT INTO items(tenant_id, order_id, sku) "
                              "VALUES (%s, ?, ?)" % t, tp + (oid, "w-%d" % oid))
                elif kind == "U":
                    c.execute("UPDATE orders SET amount_cents = ? "
                              "WHERE tenant_id = %s AND order_id = ?" % t,
                              (amount,) + tp + (oid,))
                else:
                    c.execute("DELETE FROM items WHERE tenant_id = %s "
                              "AND order_id = ?" % t, tp + (oid,))
                    c.execute("DELETE FROM orders WHERE tenant_id = %s "
                              "AND order_id = ?" % t, tp + (oid,))
                c.execute("COMMIT")
            except sqlite3.Error as e:
                if c.in_transaction:
                    c.execute("ROLLBACK")
                if "has moved to shard" not in str(e):
                    raise
                fenced += 1
                path = locate(directory, tenant)
                continue
            finally:
                longest = max(longest, time.monotonic() - start)
            break
        txns += 1
        if kind == "I":
            live.append(oid)
            log.write("I %d %d\n" % (oid, amount))
        elif kind == "U":
            log.write("U %d %d\n" % (oid, amount))
        else:
            log.write("D %d\n" % oid)
    log.write("DONE %d %d %.1f\n" % (txns, fenced, longest * 1000))
    log.close()


def check(directory, tenant, initial, logs, where=None):
    """Compare the owner's rows with the expected ones (see the head)."""
    if where:
        orders_where, items_where = where
        tp = ()
    else:
        orders_where = items_where = "tenant_id = ?"
        tp = (tenant,)
    expect = {}
    for line in open(initial):
        oid, amount = line.split()
        expect[int(oid)] = int(amount)
    for name in logs:
        for line in open(name):
            f = line.split()
            if f[0] in ("I", "U"):
                expect[int(f[1])] = int(f[2])
            elif f[0] == "D":
                expect.pop(int(f[1]), None)
    con = sqlite3.connect(locate(directory, tenant), timeout=30)
    rows = con.execute("SELECT order_id, amount_cents FROM orders "
                       "WHERE (%s)" % orders_where, tp).fetchall()
    items = con.execute("SELECT order_id, count(*) FROM items "
                        "WHERE (%s) AND sku LIKE 'w-%%' "
                        "GROUP BY order_id" % items_where, tp).fetchall()
    con.close()
    seen = {}
    dup = 0
    for oid, amount in rows:
        if oid in seen:
            dup += 1
        seen[oid] = amount
    lost = sum(1 for k in expect if k not in seen)
    changed = sum(1 for k in expect if k in seen and seen[k] != expect[k])
    extra = sum(1 for k in seen if k not in expect)
    written = {int(line.split()[1]) for name in logs for line in open(name)
               if line.startswith("I ")}
    item_of = dict(items)
    dup += sum(1 for k, c in item_of.items() if c > 1)
    lost += sum(1 for k in written if k in expect and k not in item_of)
    extra += sum(1 for k in item_of if k not in expect)
    print("lost %d duplicated %d changed %d extra %d" % (lost, dup, changed,
                                                         extra))
    return 0 if lost == dup == changed == extra == 0 else 1


if __name__ == "__main__":
    if sys.argv[1] == "write":
        write(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]),
              sys.argv[6], sys.argv[7],
              sys.argv[8].split(",") if len(sys.argv) > 8 else None)
    elif sys.argv[2] == "--where":
        sys.exit(check(sys.argv[5], sys.argv[6], sys.argv[7], sys.argv[8:],
                       (sys.argv[3], sys.argv[4])))
    else:
        sys.exit(check(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]))
