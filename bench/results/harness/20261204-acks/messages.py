#!/usr/bin/env python3
"""Per cross-DC channel of a real run beside its simulation: the p50 time of its messages from
iteration 1 on, from the message's queueing (or, queued behind the previous one, that one's
end) to its last byte's arrival, split by how each started: on an idle channel, or queued.

    python3 messages.py probe/atlas-nosharing.trace.json.gz run-1/3dc-atlas+no-sharing-sim.trace.json.gz
"""
import collections
import gzip
import json
import sys


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    trace = json.load(opener(path, "rt"))
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    channels = collections.defaultdict(list)
    for e in events:
        if e.get("cat") == "wan":
            channels[(e["name"].split(" mb ")[0], e["args"]["peer"])].append(e["args"])
    out = {}
    for channel, msgs in channels.items():
        msgs.sort(key=lambda a: a["queued_us"])
        previous_end = None
        for a in msgs:
            queued, end = a["queued_us"] / 1e6, a["last_received_us"] / 1e6
            idle = previous_end is None or queued >= previous_end
            out[(channel, a["iteration"], a["microbatch"], a["op"])] = ("idle" if idle else "queued", end - (queued if idle else previous_end))
            previous_end = end
    return out


real, sim = load(sys.argv[1]), load(sys.argv[2])
groups = collections.defaultdict(list)
for key, (kind, took) in real.items():
    if key in sim and key[1] > 0 and sim[key][0] == kind:
        groups[(key[0][0], kind)].append((took, sim[key][1]))
print("| channel | start | messages | measured p50 (s) | simulated p50 (s) |")
print("|---|---|---:|---:|---:|")
for (channel, kind), pairs in sorted(groups.items()):
    r = sorted(x for x, _ in pairs)
    s = sorted(y for _, y in pairs)
    print(f"| {channel} | {kind} | {len(pairs)} | {r[len(r) // 2]:.3f} | {s[len(s) // 2]:.3f} |")
