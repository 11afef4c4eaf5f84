# SPDX-License-Identifier: LGPL-2.1-or-later
"""Maildir deliveries from several processes for a fixed time: each message
is written to tmp/, fsynced, renamed into new/, and new/ is fsynced (what a
careful MDA does).  Prints "delivered=N secs=S".  With --check, verifies that
new/ holds exactly --expect messages, each with the content its name implies,
and prints "ok"."""
import argparse
import hashlib
import os
import sys
import time


def body(name):
    h = hashlib.sha256(name.encode()).hexdigest()
    return ("From: sender@example.org\nTo: rcpt@example.org\nSubject: %s\n\n" % name
            + (h + "\n") * 30).encode()


def deliver_loop(md, w, deadline, most):
    new_fd = os.open(os.path.join(md, "new"), os.O_RDONLY | os.O_DIRECTORY)
    n = 0
    while time.monotonic() < deadline and (most <= 0 or n < most):
        name = "%d.w%d.%d.local" % (os.getpid(), w, n)
        tmp = os.path.join(md, "tmp", name)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, body(name))
        os.fsync(fd)
        os.close(fd)
        os.rename(tmp, os.path.join(md, "new", name))
        os.fsync(new_fd)
        n += 1
    os.close(new_fd)
    return n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--maildir", required=True)
    ap.add_argument("--procs", type=int, default=8)
    ap.add_argument("--secs", type=float, default=3)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--expect", type=int, default=-1)
    ap.add_argument("--max", type=int, default=0,
                    help="messages per deliverer at most (0: no limit); "
                         "a run without syncs would otherwise use up the inodes")
    a = ap.parse_args()
    md = a.maildir
    if a.check:
        names = os.listdir(os.path.join(md, "new"))
        for name in names:
            with open(os.path.join(md, "new", name), "rb") as f:
                if f.read() != body(name):
                    print("message %s damaged" % name)
                    return 1
        if a.expect >= 0 and len(names) != a.expect:
            print("%d messages in new/, %d delivered" % (len(names), a.expect))
            return 1
        print("ok")
        return 0
    for sub in ("tmp", "new", "cur"):
        os.makedirs(os.path.join(md, sub), exist_ok=True)
    t0 = time.monotonic()
    deadline = t0 + a.secs
    kids = []
    for w in range(a.procs):
        r, wr = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            try:
                os.write(wr, b"%d\n" % deliver_loop(md, w, deadline, a.max))
            except Exception as e:  # noqa: BLE001 - report and fail
                sys.stderr.write("deliverer %d: %s\n" % (w, e))
                sys.exit(1)
            sys.exit(0)   # a normal exit: the preload's exit report runs
        os.close(wr)
        kids.append((pid, r))
    total = 0
    for pid, r in kids:
        data = os.read(r, 64)
        os.close(r)
        _, st = os.waitpid(pid, 0)
        if st != 0 or not data:
            sys.stderr.write("a deliverer failed\n")
            return 1
        total += int(data)
    print("delivered=%d secs=%.3f" % (total, time.monotonic() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
