#!/usr/bin/python3
"""DDP, DiLoCo and Streaming DiLoCo on the same emulated WAN, side by side.

Runs the tiny GPT (tiny_gpt.py) three ways through `wanlab launch`, one rank
per host of the testbed, with the same steps, data and (inner) optimizer,
AdamW, and reads the
emulator's own counters (`wanlab stats --json`) before and after each run for
the bytes every DC pair carried. Prints a table (wall time per step, WAN
bytes per step, final loss) and writes, under --out, losses.csv (method,
step, loss), summary.md and loss.svg (`wanlab plot`): the trade-off between
syncing every step and syncing every H steps, shown end to end.

    wanlab run examples/pytorch/wan-10ms.toml --quiet -- \
        /usr/bin/python3 examples/pytorch/compare_diloco.py --out /tmp/diloco

The loss of each step is the mean over ranks of each rank's loss on its own
share of the batch (DiLoCo's ranks hold different weights between syncs).
"""
import argparse
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = "/usr/bin/python3"


def find_wanlab(given):
    if given:
        return given
    for candidate in (os.environ.get("WANLAB_BIN"), shutil.which("wanlab")):
        if candidate:
            return candidate
    # Started by `wanlab run`: our parent is the binary.
    parent = os.readlink(f"/proc/{os.getppid()}/exe")
    if os.path.basename(parent) == "wanlab":
        return parent
    sys.exit("compare_diloco.py: no wanlab binary: give --wanlab PATH or put it on PATH")


def pair_bytes(wanlab):
    out = subprocess.run([wanlab, "stats", "--json"], check=True, capture_output=True, text=True).stdout
    return {f"{p['from']}->{p['to']}": p["bytes"] for p in json.loads(out)["pairs"]}


def run(wanlab, name, script, extra, args, work):
    result = os.path.join(work, name.replace(" ", "-") + ".json")
    argv = [wanlab, "launch", "--", PYTHON, os.path.join(HERE, script), "--steps", str(args.steps),
            "--json", result] + extra
    print(f"== {name}: {' '.join(argv)}", flush=True)
    before = pair_bytes(wanlab)
    status = subprocess.run(argv).returncode
    after = pair_bytes(wanlab)
    if status != 0:
        sys.exit(f"compare_diloco.py: {name} failed (exit {status})")
    with open(result) as f:
        measured = json.load(f)
    moved = {pair: after[pair] - before.get(pair, 0) for pair in after}
    return {"name": name, "losses": measured["losses"], "step_s": measured["step_s"], "pair_bytes": moved}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=30, help="training steps of each (default 30)")
    parser.add_argument("--inner-steps", type=int, default=5, help="DiLoCo's H (default 5)")
    parser.add_argument("--fragments", type=int, default=3, help="Streaming DiLoCo's fragments (default 3)")
    parser.add_argument("--out", required=True, help="where losses.csv, summary.md and loss.svg go")
    parser.add_argument("--wanlab", help="the wanlab binary (default: $WANLAB_BIN, PATH, or the one running us)")
    args = parser.parse_args()
    if args.steps < 2 or args.inner_steps < 1 or args.fragments < 2:
        parser.error("--steps: at least 2; --inner-steps: at least 1; --fragments: at least 2")
    wanlab = find_wanlab(args.wanlab)
    os.makedirs(args.out, exist_ok=True)
    h = str(args.inner_steps)
    with tempfile.TemporaryDirectory() as work:
        runs = [
            run(wanlab, "DDP", "ddp_gpt.py", ["--optimizer", "adamw"], args, work),
            run(wanlab, f"DiLoCo H={h}", "diloco_gpt.py", ["--inner-steps", h], args, work),
            run(wanlab, f"Streaming DiLoCo H={h} F={args.fragments}", "diloco_gpt.py",
                ["--inner-steps", h, "--fragments", str(args.fragments)], args, work),
        ]
    with open(os.path.join(args.out, "losses.csv"), "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["method", "step", "loss"])
        for r in runs:
            for step, loss in enumerate(r["losses"], start=1):
                writer.writerow([r["name"], step, f"{loss:.6f}"])
    lines = ["| method | median step | WAN bytes per step | busiest pair per step | loss, first -> last |",
             "|---|---|---|---|---|"]
    for r in runs:
        total = sum(r["pair_bytes"].values())
        busiest = max(r["pair_bytes"].items(), key=lambda item: item[1])
        lines.append(f"| {r['name']} | {statistics.median(r['step_s'][1:]):.3f} s | "
                     f"{total / args.steps / 1e6:.2f} MB | {busiest[0]} {busiest[1] / args.steps / 1e6:.2f} MB | "
                     f"{r['losses'][0]:.4f} -> {r['losses'][-1]:.4f} |")
    table = "\n".join(lines)
    print(table)
    with open(os.path.join(args.out, "summary.md"), "w") as f:
        f.write(table + "\n\nBytes per directed DC pair (whole run):\n\n")
        for r in runs:
            f.write(f"- {r['name']}: " + ", ".join(f"{p} {b / 1e6:.1f} MB" for p, b in sorted(r["pair_bytes"].items()))
                    + "\n")
    subprocess.run([wanlab, "plot", os.path.join(args.out, "losses.csv"), "--x", "step", "--y", "loss", "--series",
                    "method", "--title", "tiny GPT across DCs: loss per step", "--out",
                    os.path.join(args.out, "loss.svg")], check=True)
    print(f"wrote {args.out}/losses.csv, summary.md, loss.svg")


if __name__ == "__main__":
    main()
