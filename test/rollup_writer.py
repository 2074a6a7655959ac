#!/usr/bin/env python3
#
# test/rollup_writer.py
#	An application writing a fleet's shards directly, behind the wrapper's
#	back, for the rollup test (test/rollup_test.sh): plain SQLite through
#	python3's sqlite3 module, each tenant's rows written in the shard the
#	directory names for it (DONE: the target, otherwise shard_id), as the
#	published reference router does.
#
# Usage: rollup_writer.py DIRECTORY SEED STOPFILE
#	Loops until STOPFILE exists: each transaction inserts, updates or
#	deletes a few orders of a random tenant, and one in six is rolled
#	back.  A write a move's fence refuses, or one that finds the shard
#	locked too long, is rolled back and forgotten.  Prints "N committed,
#	M rolled back" at the end.
#
# When run as root it becomes the user postgres, whose files the shards
# are (a WAL database's -wal and -shm files are shared with the server).

import os
import pwd
import random
import sqlite3
import sys

if os.geteuid() == 0:
    try:
        pw = pwd.getpwnam("postgres")
        os.setgid(pw.pw_gid)
        os.setuid(pw.pw_uid)
    except KeyError:
        pass

STATUSES = ["open", "paid", "void", None]


def owners(directory):
    """Every tenant with the file of the shard that answers for it."""
    con = sqlite3.connect(directory, timeout=10)
    try:
        return con.execute(
            "SELECT m.tenant_id, s.path FROM shard_map m JOIN shards s "
            "ON s.shard_id = CASE WHEN m.status = 'DONE' "
            "THEN m.target_shard_id ELSE m.shard_id END").fetchall()
    finally:
        con.close()


def one_transaction(path, tenant, rnd):
    """A few writes of tenant's orders in one transaction; True if it
    committed."""
    con = sqlite3.connect(path, timeout=5, isolation_level=None)
    try:
        con.execute("BEGIN IMMEDIATE")
        for _ in range(rnd.randint(1, 4)):
            op = rnd.random()
            if op < 0.5:
                con.execute(
                    "INSERT INTO orders VALUES (?, "
                    "(SELECT coalesce(max(order_id), 0) + 1 FROM orders "
                    "WHERE tenant_id = ?), ?, ?, ?)",
                    (tenant, tenant, rnd.choice(STATUSES),
                     rnd.choice([None, rnd.randint(0, 5000)]),
                     "2024-03-%02d %02d:00:00" % (rnd.randint(1, 9),
                                                  rnd.randint(0, 23))))
            elif op < 0.8:
                con.execute(
                    "UPDATE orders SET amount_cents = ?, status = ? "
                    "WHERE tenant_id = ? AND order_id % 5 = ?",
                    (rnd.randint(0, 5000), rnd.choice(STATUSES), tenant,
                     rnd.randint(0, 4)))
            else:
                con.execute(
                    "DELETE FROM orders WHERE tenant_id = ? AND order_id = "
                    "(SELECT min(order_id) + ? FROM orders WHERE tenant_id = ?)",
                    (tenant, rnd.randint(0, 3), tenant))
        if rnd.random() < 1 / 6:
            con.execute("ROLLBACK")
            return False
        con.execute("COMMIT")
        return True
    except sqlite3.Error:
        if con.in_transaction:
            con.execute("ROLLBACK")
        return False
    finally:
        con.close()


def main():
    directory, seed, stopfile = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    rnd = random.Random(seed)
    committed = rolled_back = 0
    while not os.path.exists(stopfile):
        tenant, path = rnd.choice(owners(directory))
        if not os.path.isabs(path):
            path = os.path.join(os.path.dirname(directory), path)
        if one_transaction(path, tenant, rnd):
            committed += 1
        else:
            rolled_back += 1
    print("%d committed, %d rolled back" % (committed, rolled_back))


if __name__ == "__main__":
    main()
