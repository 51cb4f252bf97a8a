"""The longest sends between two hosts of one DC in a run, iterations 1 on.

python3 stalls.py RUN_DIR...  (a `wanlab train --out` directory with ranks/)
Prints the iteration times and, per run, the longest such send and how many
took over 50 ms (a 168 KB message between a DC's hosts takes ~4 ms at scale
0.01; one that loses its last segments waits out TCP's 200 ms minimum RTO).
"""
import glob
import json
import os
import re
import sys

for run in sys.argv[1:]:
    trace = json.load(open(os.path.join(run, "trace.json")))
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    iterations = sorted((e["ts"], e["dur"]) for e in events if e.get("cat") == "iteration")
    ranks = {}
    for path in glob.glob(os.path.join(run, "ranks", "rank-*.json")):
        r = json.load(open(path))
        name = [e["args"]["name"] for e in r["traceEvents"] if e["name"] == "process_name"][0]
        place = re.search(r"in (\S+) \((\S+)\)", name)
        ranks[int(re.search(r"rank-(\d+)", path).group(1))] = (place.group(1), place.group(2), r["traceEvents"])
    sends = []
    for rank, (dc, host, rank_events) in ranks.items():
        for e in rank_events:
            m = re.search(r"\(send mb (\d+) to rank (\d+)", e.get("name", ""))
            if e.get("ph") != "X" or not m:
                continue
            peer_dc, peer_host, _ = ranks[int(m.group(2))]
            if peer_dc != dc or peer_host == host:
                continue
            it = [i for i, (ts, dur) in enumerate(iterations) if ts <= e["ts"] < ts + dur]
            if it and it[0] >= 1:
                sends.append((e["dur"] / 1e3, it[0], f"{host} -> {peer_host} mb {m.group(1)}"))
    sends.sort(reverse=True)
    slow = sum(1 for s in sends if s[0] > 50)
    worst = f"{sends[0][0]:.1f} ms (iteration {sends[0][1]}, {sends[0][2]})" if sends else "-"
    print(f"{run}: iterations {[round(d / 1e6, 3) for _, d in iterations]}; "
          f"{len(sends)} sends between a DC's hosts, {slow} over 50 ms, longest {worst}")
