#!/usr/bin/env python3
"""Judge real runs' releaser again at the six counters of before the finer
bounds (10 us, 100 us, 300 us, 1 ms, 3 ms, 10 ms), beside the verdict they
printed: what the finer bounds changed, from the same runs.

    python3 bench/harness/old_bounds.py RESULTS_JSON...

A run's limit is the largest bound at most 2% of its smallest WAN delay
(emulation.releaser.limit_ns); the old one is the largest of the six at most
that. The releaser keeps up at a bound when at most 1% of its verdicts, and of
each pair's with at least 1000, were later (docs/RUNTIME.md#emulation-health).
Prints a Markdown table and the count of runs that kept up each way.
"""
import json
import sys

OLD_NS = [10_000, 100_000, 300_000, 1_000_000, 3_000_000, 10_000_000]
SHARE = 0.01
PAIR_VERDICTS = 1000


def key(ns):
    return f"over_{ns // 1_000_000}ms" if ns % 1_000_000 == 0 else f"over_{ns // 1000}us"


def text(ns):
    return f"{ns / 1e6:g} ms" if ns >= 1_000_000 else f"{ns // 1000} us"


def worst_share(releaser, bound):
    """The whole queue's share over `bound`, and the worst judged pair's."""
    share = lambda r: r[key(bound)] / r["verdicts"] if r["verdicts"] else 0.0
    pairs = [share(p) for p in releaser.get("pairs", []) if p["verdicts"] >= PAIR_VERDICTS]
    return share(releaser), max(pairs, default=0.0)


def main(paths):
    print("| run | limit | over it: all / worst pair | old bound | over it: all / worst pair | verdict | at the old bound |")
    print("|---|---:|---:|---:|---:|---|---|")
    kept_new = kept_old = runs = 0
    for path in paths:
        with open(path) as f:
            emulation = json.load(f).get("emulation")
        if not emulation or "releaser" not in emulation:
            continue
        releaser = emulation["releaser"]
        limit = releaser["limit_ns"]
        old = max([b for b in OLD_NS if b <= limit], default=OLD_NS[0])
        new_all, new_pair = worst_share(releaser, limit)
        old_all, old_pair = worst_share(releaser, old)
        releaser_old_ok = old_all <= SHARE and old_pair <= SHARE
        new_kept = emulation["kept_up"]
        old_kept = new_kept and releaser_old_ok  # the other limits are the same either way
        runs += 1
        kept_new += new_kept
        kept_old += old_kept
        name = path.rsplit("/", 2)[-2] if "/" in path else path
        print(f"| {name} | {text(limit)} | {100 * new_all:.2f}% / {100 * new_pair:.2f}% | {text(old)} | "
              f"{100 * old_all:.2f}% / {100 * old_pair:.2f}% | {'kept up' if new_kept else 'FELL BEHIND'} | "
              f"{'kept up' if old_kept else 'FELL BEHIND'} |")
    print(f"\nkept up: {kept_new} of {runs} runs; at the old bounds {kept_old} of {runs}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1:])
