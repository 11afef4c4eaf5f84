# SPDX-License-Identifier: LGPL-2.1-or-later
"""SQLite commits from several threads (a database each) or several processes
(one shared database), one autocommitted INSERT per transaction, for a fixed
time.  Prints "commits=N secs=S".  With --check, verifies every database
(integrity_check, and the row count against --expect) and prints "ok"."""
import argparse
import os
import sqlite3
import sys
import threading
import time


def connect(path, journal):
    db = sqlite3.connect(path, timeout=60, isolation_level=None)
    db.execute("PRAGMA journal_mode=%s" % journal).fetchone()
    db.execute("PRAGMA synchronous=FULL")
    return db


def setup(path, journal):
    db = connect(path, journal)
    db.execute("CREATE TABLE IF NOT EXISTS t(id INTEGER PRIMARY KEY, w INTEGER, v TEXT)")
    db.close()


def work(path, journal, w, deadline):
    db = connect(path, journal)
    n = 0
    payload = "x" * 200
    while time.monotonic() < deadline:
        db.execute("INSERT INTO t(w, v) VALUES (?, ?)", (w, payload))
        n += 1
    db.close()
    return n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--mode", choices=["threads", "procs"], required=True)
    ap.add_argument("--journal", choices=["wal", "delete"], required=True)
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--secs", type=float, default=3)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--expect", type=int, default=-1)
    a = ap.parse_args()
    paths = ([os.path.join(a.dir, "t%d.db" % i) for i in range(a.workers)]
             if a.mode == "threads" else [os.path.join(a.dir, "shared.db")])

    if a.check:
        rows = 0
        for p in paths:
            db = sqlite3.connect(p)
            r = db.execute("PRAGMA integrity_check").fetchone()[0]
            if r != "ok":
                print("integrity_check %s: %s" % (os.path.basename(p), r))
                return 1
            rows += db.execute("SELECT count(*) FROM t").fetchone()[0]
            db.close()
        if a.expect >= 0 and rows != a.expect:
            print("rows=%d, %d commits reported" % (rows, a.expect))
            return 1
        print("ok")
        return 0

    for p in paths:
        setup(p, a.journal)
    t0 = time.monotonic()
    deadline = t0 + a.secs
    total = 0
    if a.mode == "threads":
        counts = [0] * a.workers

        def run(i):
            counts[i] = work(paths[i], a.journal, i, deadline)

        ts = [threading.Thread(target=run, args=(i,)) for i in range(a.workers)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        total = sum(counts)
    else:
        pipes = []
        for i in range(a.workers):
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(r)
                # A normal exit, not os._exit: preloaded libraries (libgc's
                # exit report) run their exit handlers.
                try:
                    n = work(paths[0], a.journal, i, deadline)
                    os.write(w, b"%d\n" % n)
                except Exception as e:  # noqa: BLE001 - report and fail
                    sys.stderr.write("worker %d: %s\n" % (i, e))
                    sys.exit(1)
                sys.exit(0)
            os.close(w)
            pipes.append((pid, r))
        for pid, r in pipes:
            data = os.read(r, 64)
            os.close(r)
            _, st = os.waitpid(pid, 0)
            if st != 0 or not data:
                sys.stderr.write("a worker failed\n")
                return 1
            total += int(data)
    print("commits=%d secs=%.3f" % (total, time.monotonic() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
