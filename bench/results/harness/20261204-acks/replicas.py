#!/usr/bin/env python3
"""How far apart a job's two data-parallel replicas run: for each cross-DC message of
replica r0 from iteration 1 on, how much later (s) replica r1's copy of it left, and the
share of r0's message time that r1's copy overlapped. The simulator runs them in lockstep.

    python3 replicas.py run-2/3dc-atlas+no-sharing.trace.json.gz run-2/3dc-atlas+no-sharing-sim.trace.json.gz
"""
import gzip
import json
import sys


def messages(path):
    opener = gzip.open if path.endswith(".gz") else open
    trace = json.load(opener(path, "rt"))
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    out = {}
    for e in events:
        if e.get("cat") != "wan":
            continue
        replica, rest = e["name"].split(" ", 1)
        a = e["args"]
        out[(replica, rest, a["iteration"])] = (a["first_sent_us"] / 1e6, a["last_received_us"] / 1e6)
    return out


if __name__ == "__main__":
    print("| trace | r1 - r0, p10 / p50 / p90 (s) | overlap, p10 / p50 / p90 |")
    print("|---|---|---|")
    for path in sys.argv[1:]:
        m = messages(path)
        offsets, overlaps = [], []
        for (replica, rest, iteration), (s0, e0) in m.items():
            if replica != "r0" or iteration == 0 or ("r1", rest, iteration) not in m:
                continue
            s1, e1 = m[("r1", rest, iteration)]
            offsets.append(s1 - s0)
            overlaps.append(max(0.0, min(e0, e1) - max(s0, s1)) / max(e0 - s0, 1e-9))
        offsets.sort()
        overlaps.sort()
        n = len(offsets)
        q = lambda v: " / ".join(f"{v[int(p * (n - 1))]:.2f}" for p in (0.1, 0.5, 0.9))
        print(f"| {path} | {q(offsets)} | {q(overlaps)} |")
