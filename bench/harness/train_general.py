#!/usr/bin/env python3
"""The simulator against real runs on training experiments drawn at random:
bench/harness/train-general.sh.

Each seed draws one testbed and one training experiment (no prefill) from the
space below, runs it simulated and (unless SIMULATE_ONLY) real, and prints a
row: the mean iteration (iteration 0 left out), measured / simulated. The end
counts the runs whose emulation kept up within 5% and 10%. Runs are read only
through `wanlab compare --csv`. With SIMULATED (a directory of an earlier
draw), the real runs are that directory's and only the simulations are made
again: a changed simulator against the same real runs.

The space (one draw per seed, random.Random(seed)):
  DCs 2-3, 1-2 hosts each; between every two DCs a WAN of 0.2-2 Gbit/s
  (log-uniform) and 5-80 ms one way, queue 1 BDP; inside a DC 40 Gbit/s,
  50 us, 8 MB queue (bubbletea_general.scenario_text). Schedule gpipe, 1f1b
  or atlas (atlas: its placement and 8 streams); for gpipe and 1f1b, 1 or 8
  streams and the placement pp-across-dc. Temporal sharing on or off. pp 2-6,
  dp 1-3 (pp x dp <= MAX_WORKERS), tp 1; forward 5-100 ms a microbatch
  (log-uniform), backward twice that, 8 microbatches; the messages those of
  hidden 4096, seq_len 2048. Scale 0.1 (the WAN 20-200 Mbit/s as emulated,
  1.6 MiB messages), 4 iterations. A draw the planner refuses is replaced by
  the seed's next draw, and the row says how many were.
"""
import math
import os
import random
import shlex
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bubbletea_general import compare, describe_testbed, draw_testbed, log_uniform, wanlab, write_draw  # noqa: E402

MAX_WORKERS = int(os.environ.get("MAX_WORKERS", "12"))
SIMULATE_ONLY = os.environ.get("SIMULATE_ONLY", "0") == "1"
SIMULATED = os.environ.get("SIMULATED", "")  # earlier draw whose real runs to compare with
TRAIN_OPTIONS = shlex.split(os.environ.get("TRAIN_OPTIONS", ""))


def draw(rng):
    names, hosts, links = draw_testbed(rng, 3, 2, 0.2e9, 2e9)
    schedule = rng.choice(["gpipe", "1f1b", "atlas"])
    streams = 8 if schedule == "atlas" else rng.choice([1, 8])
    sharing = rng.choice([True, False])
    while True:
        pp, dp = rng.randint(2, 6), rng.randint(1, 3)
        if pp * dp <= MAX_WORKERS:
            break
    forward_ms = log_uniform(rng, 5, 100)
    return dict(dcs=names, hosts=hosts, links=links, schedule=schedule, streams=streams, sharing=sharing, pp=pp,
                dp=dp, forward_ms=forward_ms)


def experiment_text(name, scenario_path, d):
    per_dc = d["dp"] * math.ceil(d["pp"] / len(d["dcs"]))
    lines = [f'name = "{name}"', f'testbed = "{scenario_path}"', f'schedule = "{d["schedule"]}"']
    if d["schedule"] != "atlas":
        lines += ['placement = "pp-across-dc"', f"streams = {d['streams']}"]
    lines += [f"temporal_sharing = {'true' if d['sharing'] else 'false'}", "iterations = 4", "seed = 1", "scale = 0.1",
              "[model]", f"layers = {4 * d['pp']}", "hidden = 4096", "seq_len = 2048", "microbatches = 8",
              "[parallel]", f"pp = {d['pp']}", f"dp = {d['dp']}", "tp = 1", "[compute]",
              f"forward_ms = {d['forward_ms']:.2f}", f"backward_ms = {2 * d['forward_ms']:.2f}", "[gpus]"]
    lines += [f"{dc} = {per_dc}" for dc in d["dcs"]]
    return "\n".join(lines) + "\n"


def describe(d):
    testbed, wan = describe_testbed(d)
    return (f"{testbed}, {d['schedule']}, {d['streams']} stream{'s' if d['streams'] > 1 else ''}, "
            f"sharing {'on' if d['sharing'] else 'off'}, pp{d['pp']} dp{d['dp']}, F {d['forward_ms']:.0f} ms; {wan}")


def prepare(seed, out):
    """The seed's first draw that plans, written under out/; (draw, experiment path, refused draws)."""
    rng = random.Random(seed)
    for refused in range(20):
        d = draw(rng)
        name = f"tg{seed}"
        _, experiment_path = write_draw(out, name, d, lambda path: experiment_text(name, path, d))
        sim = os.path.join(out, f"{name}-sim")
        if wanlab(["train", experiment_path, "--simulate", "--quiet", "--out", sim], sim + ".log") == 0:
            return d, experiment_path, refused
    raise SystemExit(f"seed {seed}: no draw of 20 plans")


def main():
    out, seeds = sys.argv[1], [int(s) for s in sys.argv[2:]]
    print("| seed | experiment | iteration real (s) | simulated (s) | real / simulated | emulation |")
    print("|---:|---|---:|---:|---:|---|")
    ratios = []
    for seed in seeds:
        d, experiment, refused = prepare(seed, out)
        base = os.path.join(out, f"tg{seed}")
        real = os.path.join(SIMULATED, f"tg{seed}") if SIMULATED else base
        if not SIMULATE_ONLY and not SIMULATED:
            print(f"  seed {seed}: real run", file=sys.stderr, flush=True)
            wanlab(["train", experiment] + TRAIN_OPTIONS + ["--out", base], base + ".log")
        dirs = [base + "-sim"] + ([real] if os.path.exists(os.path.join(real, "results.json")) else [])
        runs = compare(dirs)
        sim, run = runs[os.path.basename(base + "-sim")], runs.get(os.path.basename(real))
        kept_up = run is not None and run["emulation_kept_up"] == "true"
        ratio = float(run["iteration_s"]) / float(sim["iteration_s"]) if run else None
        if kept_up:
            ratios.append(ratio)
        emulation = "-" if run is None else ("kept up" if kept_up else "FELL BEHIND")
        print(f"| {seed} | {describe(d)}{f' ({refused} draws refused)' if refused else ''} "
              f"| {float(run['iteration_s']):.3f} | {float(sim['iteration_s']):.3f} | {ratio:.3f} | {emulation} |"
              if run else f"| {seed} | {describe(d)} | - | {float(sim['iteration_s']):.3f} | - | - |", flush=True)
    if ratios:
        within = lambda bound: sum(abs(r - 1) <= bound for r in ratios)
        print()
        print(f"Of the {len(ratios)} runs whose emulation kept up: {within(0.05)} within 5% of the simulator, "
              f"{within(0.10)} within 10%; real / simulated {min(ratios):.3f}-{max(ratios):.3f}.")


if __name__ == "__main__":
    main()
