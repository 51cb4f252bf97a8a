#!/usr/bin/env python3
"""The `ss -tin` samples of east-1 (stage 1 of both replicas) during a run of
atlas-3dc.toml with temporal sharing off: per cross-DC stream (peer 10.77.1.*),
from T0 to T1 (Unix seconds), each sample as seconds:KiB sent since T0/segments
unacknowledged/cwnd.

    python3 ss-streams.py <(zcat ss-east1-atlas-no-sharing.txt.gz) 1796346238.30 1796346238.95
"""
import collections
import re
import sys

samples, t0, t1 = open(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
series, now, socket = collections.defaultdict(list), None, None
for line in samples:
    if line.startswith("T "):
        now = float(line.split()[1])
        continue
    if not line.startswith((" ", "\t")):
        socket = tuple(p for p in line.split() if ":" in p)[:2]
        continue
    sent = re.search(r"bytes_sent:(\d+)", line)
    unacked = re.search(r"unacked:(\d+)", line)
    cwnd = re.search(r"cwnd:(\d+)", line)
    if sent and len(socket) == 2 and "10.77.1." in socket[1] and t0 <= now <= t1:
        series[socket].append((now, int(sent.group(1)), int(unacked.group(1)) if unacked else 0, int(cwnd.group(1))))
for (local, peer), points in sorted(series.items(), key=lambda item: item[0][1]):
    if points[-1][1] - points[0][1] < 1000:
        continue
    base = points[0][1]
    cells = " ".join(f"{t - t0:.2f}:{(b - base) // 1024}K/u{u}/c{c}" for t, b, u, c in points)
    print(local.split(":")[1], peer.split(":")[1], cells)
