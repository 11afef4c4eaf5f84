#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Where a disk sat idle: reads `perf script` output of the block layer's
block_rq_issue and block_rq_complete tracepoints and prints, for one device,
the share of the time some request was in flight, the share some cache
flush was, the requests issued by kind and issuer, and the idle gaps (no
request in flight) by what ended before and what began after them.

  perf record -a -e block:block_rq_issue -e block:block_rq_complete \\
      -o blk.data -- COMMAND...
  perf script -i blk.data | python3 bench/blkidle.py 7,0

The device is MAJOR,MINOR as the tracepoints print it (a loop device: 7,N).
A flush is a request whose kind (rwbs) begins with F. Exit 2 when no
request of the device was seen.
"""
import collections
import re
import sys

LINE = re.compile(r'^\s*(.+?)\s+\d+\s+\[\d+\]\s+([\d.]+):\s+block:block_rq_(issue|complete):'
                  r'\s+(\d+,\d+)\s+(\S+)')


def main():
    if len(sys.argv) != 2 or not re.fullmatch(r'\d+,\d+', sys.argv[1]):
        sys.exit('usage: perf script | blkidle.py MAJOR,MINOR')
    dev = sys.argv[1]
    ev = []
    for line in sys.stdin:
        m = LINE.match(line)
        if m and m.group(4) == dev:
            comm, t, kind, _, rwbs = m.groups()
            ev.append((float(t), kind, rwbs, re.sub(r'[/:-].*', '', comm)))
    if not ev:
        print('blkidle: no request of device %s' % dev, file=sys.stderr)
        sys.exit(2)
    ev.sort(key=lambda e: e[0])
    busy = fbusy = 0.0
    inflight = finflight = 0
    last = ev[0][0]
    issued = collections.Counter()
    gaps = collections.defaultdict(list)
    ended = None  # (time, kind) of the completion that left the device idle
    for t, kind, rwbs, comm in ev:
        if inflight > 0:
            busy += t - last
        if finflight > 0:
            fbusy += t - last
        last = t
        flush = rwbs.startswith('F')
        if kind == 'issue':
            issued[(rwbs, comm)] += 1
            if inflight == 0 and ended:
                gaps[(ended[1], rwbs, comm)].append(t - ended[0])
            inflight += 1
            finflight += flush
        else:
            inflight = max(0, inflight - 1)
            finflight = max(0, finflight - flush)
            if inflight == 0:
                ended = (t, rwbs)
    span = ev[-1][0] - ev[0][0]
    print('device %s: %.3f s traced, a request in flight %.1f%% of it, a flush %.1f%%'
          % (dev, span, 100 * busy / span if span else 0, 100 * fbusy / span if span else 0))
    print('issued (kind, issuer):')
    for (rwbs, comm), n in issued.most_common():
        print('  %6d  %-5s %s' % (n, rwbs, comm))
    idle = sum(sum(v) for v in gaps.values())
    print('idle %.1f ms in all: gaps by the kind that ended before, the kind and issuer after'
          % (1e3 * idle))
    for (before, rwbs, comm), v in sorted(gaps.items(), key=lambda kv: -sum(kv[1]))[:12]:
        v.sort()
        print('  %-5s -> %-5s %-10s %6d gaps  %8.1f ms  median %6.0f us'
              % (before, rwbs, comm, len(v), 1e3 * sum(v), 1e6 * v[len(v) // 2]))


if __name__ == '__main__':
    main()
