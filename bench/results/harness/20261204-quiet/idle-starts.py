#!/usr/bin/env python3
"""Per message of one replica's stage-1 channel in Atlas with temporal sharing off,
measured beside simulated: when it was queued, and how long after the previous
message's end (or its own queueing, on an idle channel) its last byte arrived.

    python3 idle-starts.py run-a/3dc-atlas+no-sharing.trace.json run-a/3dc-atlas+no-sharing-sim.trace.json

'idle': the channel had nothing in flight when the message was queued;
'queued': it waited behind the previous message.
"""
import json
import sys


def messages(path, prefix="r0 s1 send"):
    trace = json.load(open(path))
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    wan = [e for e in events if e.get("cat") == "wan" and e["name"].startswith(prefix)]
    return sorted(wan, key=lambda e: e["ts"])


def rows(path):
    out, previous_end = {}, None
    for e in messages(path):
        a = e["args"]
        queued, end = a["queued_us"] / 1e6, a["last_received_us"] / 1e6
        idle = previous_end is None or queued >= previous_end
        took = end - (queued if idle else previous_end)
        out[(a["iteration"], a["microbatch"])] = ("idle" if idle else "queued", took)
        previous_end = end
    return out


real, simulated = rows(sys.argv[1]), rows(sys.argv[2])
print("| iteration | microbatch | start | measured (s) | simulated (s) |")
print("|---:|---:|---|---:|---:|")
for key in sorted(real):
    if key[0] == 0 or key not in simulated:
        continue  # the first iteration slow-starts from nothing in both
    kind, took = real[key]
    print(f"| {key[0]} | {key[1]} | {kind} | {took:.3f} | {simulated[key][1]:.3f} |")
