# SPDX-License-Identifier: LGPL-2.1-or-later
# Used by bench/startup.sh: one durable write (open, write, fsync, close) to
# argv[1], then what this process holds in memory before it exits, on one
# line: VmRSS, and the resident KiB of the preloaded library's own mappings
# (its file, the zeroed data after it, its shared segments in /dev/shm).
import os
import sys

fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
os.write(fd, b"x" * 100)
os.fsync(fd)
os.close(fd)

rss = 0
with open("/proc/self/status") as f:
    for line in f:
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1])
own = {"text": 0, "ro": 0, "rw": 0, "bss": 0, "shm": 0}
# the preloaded objects, by the path the loader mapped
libs = {os.path.realpath(p) for p in os.environ.get("LD_PRELOAD", "").replace(":", " ").split()}
prev_lib = False
with open("/proc/self/smaps") as f:
    kind = None
    for line in f:
        w = line.split()
        if "-" in w[0] and not w[0].endswith(":"):
            path = w[5] if len(w) > 5 else ""
            lib = bool(path) and os.path.realpath(path) in libs
            if lib:
                kind = "text" if "x" in w[1] else "rw" if "w" in w[1] else "ro"
            elif prev_lib and not path:
                kind = "bss"
            elif path.startswith("/dev/shm/"):
                kind = "shm"
            else:
                kind = None
            prev_lib = lib
        elif w[0] == "Rss:" and kind:
            own[kind] += int(w[1])
print("rss %d own %d %s" % (rss, sum(own.values()),
                            " ".join("%s %d" % kv for kv in own.items())))
