#!/usr/bin/env python3
"""How full each DC's own link is, from its second host to the decode host, in a run of
bubbletea-3dc-local-10g.toml (workers 1, 3, 5, 7 on the DCs' second hosts; decode on the
first): KV bytes against the link's payload rate, training's sends on it (the gradients to
stage 0 or 2), and the share of the time either had something on it. Iterations 1 on.

    python3 dc-link.py bt10g.trace.json.gz bt10g-ranks
"""
import gzip
import json
import re
import sys

trace, ranks = sys.argv[1], sys.argv[2]
events = json.load(gzip.open(trace, "rt"))["traceEvents"]
iterations = sorted((e["ts"], e["ts"] + e["dur"]) for e in events if e.get("cat") == "iteration")
lo, hi = iterations[1][0], iterations[-1][1]
seconds = (hi - lo) / 1e6
link_payload_bps = 10e9 * 0.01 * 1448 / 1514  # 10 Gbit/s at scale 0.01, payload share
first_host = {"east": (0, 4), "west": (2, 6)}


def merged(spans):
    out = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


for dc, second_host in (("east", (1, 5)), ("west", (3, 7))):
    kv = [e for e in events if e.get("cat") == "kv" and e["args"]["worker"] in second_host and lo < e["ts"] < hi]
    kv_bytes = sum(e["args"]["bytes"] for e in kv)
    spans = [(e["ts"], min(e["ts"] + e["dur"], hi)) for e in kv]
    send_bytes = 0
    for rank in second_host:
        for e in json.load(gzip.open(f"{ranks}/rank-{rank}.json.gz", "rt"))["traceEvents"]:
            m = re.search(r"SendRecv \(send .* to rank (\d+), (\d+) B\)", e.get("name", ""))
            if m and int(m.group(1)) in first_host[dc] and lo <= e["ts"] <= hi:
                spans.append((e["ts"], e["ts"] + e["dur"]))
                send_bytes += int(m.group(2))
    busy = sum(b - a for a, b in merged(spans)) / 1e6
    print(f"{dc}: {len(kv)} KV caches, {kv_bytes * 8 / seconds / link_payload_bps:.1%} of the link's payload rate; "
          f"training's sends {send_bytes * 8 / seconds / link_payload_bps:.1%}; something on the link {busy / seconds:.1%} of {seconds:.2f} s")
