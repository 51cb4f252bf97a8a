#!/usr/bin/env python3
"""Idle restarts in `ss -tin` samples of a host's cross-DC streams (peer 10.77.1.*): a sample
whose cwnd fell under 0.7 of the one before, with nothing unacknowledged before and nothing
acknowledged since, and its pacing rate beside 1.2 and 2 x the new cwnd / the (unchanged)
srtt. Prints each restart, then how many were paced at 1.2 x (or 2 x under half of ssthresh),
how many kept the old rate, how many neither, apart for restarts to the initial window
(an iteration's first message, when nothing comes in from the peer).

    python3 restarts.py ../20261204-quiet/ss-east1-atlas-no-sharing.txt.gz
"""
import collections
import gzip
import re
import sys

samples = collections.defaultdict(list)
now = socket = None
for line in gzip.open(sys.argv[1], "rt"):
    if line.startswith("T "):
        now = float(line.split()[1])
        continue
    if not line.startswith((" ", "\t")):
        socket = tuple(p for p in line.split() if ":" in p)[:2]
        continue
    if len(socket) < 2 or "10.77.1." not in socket[1]:
        continue
    field = lambda k: (re.search(r"\b" + k + r"[: ]([\d.]+)", line) or [None, None])[1]
    samples[socket].append({
        "t": now, "sent": int(field("bytes_sent") or 0), "acked": int(field("bytes_acked") or 0),
        "unacked": int(field("unacked") or 0), "cwnd": int(field("cwnd")), "ssthresh": int(field("ssthresh") or 0),
        "srtt_ms": float(re.search(r"rtt:([\d.]+)", line).group(1)), "pacing": float(field("pacing_rate") or 0)})
counts = collections.Counter()
for socket, points in sorted(samples.items()):
    for a, b in zip(points, points[1:]):
        if not (b["cwnd"] < 0.7 * a["cwnd"] and b["sent"] > a["sent"] and a["unacked"] == 0 and b["acked"] == a["acked"]):
            continue
        ratio = 2.0 if b["cwnd"] < b["ssthresh"] / 2 else 1.2
        expected = ratio * b["cwnd"] * 1448 * 8 / (b["srtt_ms"] / 1000)
        kind = "set anew" if abs(b["pacing"] - expected) <= 0.15e6 else "kept" if abs(b["pacing"] - a["pacing"]) <= 0.15e6 else "neither"
        counts[("to the initial window" if b["cwnd"] <= 10 else "halved", kind)] += 1
        print(f"{socket[0]} t={b['t'] % 1000:.3f} cwnd {a['cwnd']}->{b['cwnd']} ssthresh {b['ssthresh']} srtt {b['srtt_ms']} ms "
              f"pacing {a['pacing'] / 1e6:.1f}->{b['pacing'] / 1e6:.1f} Mbit/s ({ratio} x cwnd / srtt: {expected / 1e6:.1f}): {kind}")
print(dict(counts))
