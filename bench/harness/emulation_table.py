#!/usr/bin/env python3
"""Each real run's emulation figures of a bubbletea-general.sh draw, as a Markdown table:

    bench/harness/emulation_table.py OUT TITLE > OUT/emulation.md

OUT is the draw's folder; TITLE ends the heading ("idle polling on").
"""
import json, os, re, sys
out, title = sys.argv[1], sys.argv[2]
seeds = sorted({int(m.group(1)) for f in os.listdir(out) if (m := re.match(r"bg(\d+)-(off|on)$", f))})
print(f"# Each real run's emulation figures (results.json `emulation`), {title}\n")
print("| seed | prefill | verdict | CPU mean | idle time polled | wake-ups late, of compute | wake-up p99 / max | releaser verdicts | steal |")
print("|---:|---|---|---:|---:|---:|---:|---:|---:|")
for seed in seeds:
    for mode in ("off", "on"):
        path = os.path.join(out, f"bg{seed}-{mode}", "results.json")
        if not os.path.exists(path):
            print(f"| {seed} | {mode} | did not finish | | | | | | |")
            continue
        e = json.load(open(path))["emulation"]
        verdict = "kept up" if e["kept_up"] else "**fell behind**"
        releaser = e.get("releaser") or {}
        print(f"| {seed} | {mode} | {verdict} | {100 * e['cpu_busy']['mean']:.0f}% | "
              f"{100 * e.get('idle_polled_share', 0):.0f}% | {100 * e['wake_late_share']:.2f}% | "
              f"{e['wake_late_ms']['p99']:.2f} / {e['wake_late_ms']['max']:.1f} ms | {releaser.get('verdicts', '-')} | "
              f"{100 * e['cpu_busy'].get('stolen_mean', 0):.1f}% |")
