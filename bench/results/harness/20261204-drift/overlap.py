#!/usr/bin/env python3
"""How much the two replicas' copies of a message overlap (p50 over the messages of
iterations 1-3, as ../20261204-acks/replicas.py counts it), measured and simulated, for the
random draws with temporal sharing off and two or more replicas (traces stored here). The
simulations: train-general.sh's -sim directories under SIM_NEW and SIM_BEFORE (made with
SIMULATED=draw-N by the simulator after and before the change).

    python3 overlap.py SIM_NEW_1 SIM_BEFORE_1 SIM_NEW_2 SIM_BEFORE_2
"""
import glob
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "20261204-acks"))
sys.argv, args = sys.argv[:1], sys.argv[1:]
from replicas import messages  # noqa: E402


def overlap_p50(path):
    m = messages(path)
    overlaps = sorted(max(0.0, min(e0, m[("r1", rest, it)][1]) - max(s0, m[("r1", rest, it)][0])) / max(e0 - s0, 1e-9)
                      for (replica, rest, it), (s0, e0) in m.items()
                      if replica == "r0" and it > 0 and ("r1", rest, it) in m)
    return overlaps[len(overlaps) // 2]


print("| seed | measured | simulated | simulated before |")
print("|---:|---:|---:|---:|")
for draw, new, before in (("draw-1", args[0], args[1]), ("draw-2", args[2], args[3])):
    for trace in sorted(glob.glob(os.path.join(here, draw, "tg*", "trace.json.gz")),
                        key=lambda p: int(p.split("/tg")[-1].split("/")[0])):
        seed = os.path.basename(os.path.dirname(trace))
        print(f"| {seed[2:]} | {overlap_p50(trace):.2f} | {overlap_p50(os.path.join(new, seed + '-sim', 'trace.json')):.2f} "
              f"| {overlap_p50(os.path.join(before, seed + '-sim', 'trace.json')):.2f} |")
