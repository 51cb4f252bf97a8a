#!/usr/bin/env python3
"""srtt and cwnd per WAN direction from a tcp_probe CSV (probe/*.tcp_probe.csv.gz, made from
probe-run.sh's trace), each ACK weighted by the bytes it acknowledged.

    python3 acks.py probe/atlas-nosharing.tcp_probe.csv.gz
"""
import collections
import csv
import gzip
import sys

DC = {"0": "east", "1": "west", "2": "europe"}  # 10.77.<dc>.<host>


def quantiles(points, qs=(0.1, 0.5, 0.9)):
    points.sort()
    total = sum(w for _, w in points)
    out, acc, i = [], 0, 0
    for q in qs:
        while acc + points[i][1] < q * total:
            acc += points[i][1]
            i += 1
        out.append(points[i][0])
    return out


last, srtt, cwnd = {}, collections.defaultdict(list), collections.defaultdict(list)
for row in csv.DictReader(gzip.open(sys.argv[1], "rt")):
    key = (row["src"], row["sport"], row["dst"], row["dport"])
    una = int(row["snd_una"], 16)
    if key in last:
        acked = (una - last[key]) & 0xFFFFFFFF
        if 0 < acked < 50_000_000:
            way = (DC[row["src"].split(".")[2]], DC[row["dst"].split(".")[2]])
            srtt[way].append((int(row["srtt_us"]) / 1000, acked))
            cwnd[way].append((int(row["snd_cwnd"]), acked))
    last[key] = una
print("| way | MB acknowledged | srtt min (ms) | p10 | p50 | p90 | cwnd p10 / p50 / p90 (segments) |")
print("|---|---:|---:|---:|---:|---:|---|")
for way in sorted(srtt):
    s = quantiles(srtt[way])
    c = quantiles(cwnd[way])
    mb = sum(w for _, w in srtt[way]) / 1e6
    print(f"| {way[0]} -> {way[1]} | {mb:.1f} | {min(x for x, _ in srtt[way]):.1f} | {s[0]:.1f} | {s[1]:.1f} | {s[2]:.1f} | {c[0]} / {c[1]} / {c[2]} |")
