#!/usr/bin/python3
"""The transport benchmark, driven by bench/transport/run-transport-bench.sh.

On one emulated two-DC testbed (east-0 sends to west-0), for each link
condition of the grid and each stream count N, it runs alternately:

  * `wanlab perf client -P N` (the multi-stream transport),
  * `iperf3 -P N` (the anchor: N plain TCP streams, same 4 MiB send-buffer cap),

and once per condition and repeat the "fair competitor": `iperf3 -P 1 -C bbr`
with tcp_wmem / tcp_rmem max raised to 256 MiB (what a scenario's [host]
tcp_wmem_max / tcp_rmem_max write) for that run only. It also times one
1 GiB message per condition, and reads CPU time from the kernel: rusage of
the sender and receiver processes, /proc/PID/stat of the releaser daemon,
/proc/stat for the whole machine.

Goodput is measured after a warm-up (slow start) of `omit` seconds, the same
way for both tools: iperf3 -O, and for wanlab perf the sum of its 1 s
intervals from `omit` on.

Prints the tables and writes them as markdown (--markdown), and every raw run
as JSON (--raw).

Its parts: transport_grid.py (the conditions), transport_testbed.py (the
testbed, its processes and CPU accounting), transport_runs.py (the perf and
iperf3 runs), transport_tables.py (the tables and targets).
"""
import argparse
import datetime
import json
import os
import platform
import signal
import subprocess
import sys
import time

from transport_grid import Condition, grid, grid_table
from transport_runs import run_fair, run_iperf, run_message, run_perf
from transport_tables import pct, tables
from transport_testbed import CHILDREN, SEND_BUFFER_CAP, Testbed, loadavg, log


def measure(testbed, conditions, repeats):
    results = {c.label: [] for c in conditions}
    failures = []
    try:
        testbed.down()  # a leftover from a run that was killed outright
        testbed.up()
        log(f"testbed {testbed.name} up; release path {testbed.release}")
        for c in conditions:
            testbed.set_link(c)
            log(f"== {c.label}: {c.describe()} (load {loadavg()})")
            time.sleep(0.5)
            for rep in range(repeats):
                for n in c.streams:
                    order = ("perf", "iperf3") if rep % 2 == 0 else ("iperf3", "perf")
                    for tool in order:
                        try:
                            r = run_perf(testbed, c, n, c.omit_s) if tool == "perf" else run_iperf(
                                testbed, n, c.cc, c.omit_s)
                            results[c.label].append(r)
                            log(f"  {tool:6} N={n:<2} rep {rep}: {r['goodput_bps'] / 1e6:7.0f} Mbit/s, "
                                f"retr {r['retransmits']}, busy {pct(r['machine_busy'])}")
                        except RuntimeError as error:
                            failures.append(f"{c.label}, {tool} N={n}: {error}")
                            log(f"  {tool} N={n} FAILED: {error}")
                try:
                    r = run_fair(testbed, c, c.omit_s)
                    results[c.label].append(r)
                    log(f"  fair   N=1  rep {rep}: {r['goodput_bps'] / 1e6:7.0f} Mbit/s, retr {r['retransmits']}, "
                        f"busy {pct(r['machine_busy'])}")
                except (RuntimeError, subprocess.CalledProcessError) as error:
                    failures.append(f"{c.label}, fair competitor: {error}")
                    log(f"  fair FAILED: {error}")
            for n in c.message_streams:
                try:
                    r = run_message(testbed, c, n)
                    results[c.label].append(r)
                    log(f"  1 GiB message N={n}: {r['seconds']:.2f} s")
                except RuntimeError as error:
                    failures.append(f"{c.label}, 1 GiB message N={n}: {error}")
                    log(f"  1 GiB message N={n} FAILED: {error}")
    finally:
        for child in CHILDREN:
            child.stop()
        testbed.down()
    return results, failures


def report(conditions, results, failures, meta):
    body, targets = tables(conditions, results, meta["repeats"])
    met = sum(1 for _, v, _ in targets if v == "PASS")
    out = ["# wanlab transport benchmark", "",
           f"- Date: {meta['date']}",
           f"- Machine: {meta['machine']}",
           f"- Release path: {meta['release']}",
           f"- Load average (1/5/15 min) at start: {meta['load_start']}; at end: {meta['load_end']} (other "
           "people's builds and tests share this machine)",
           f"- Run time: {meta['elapsed_s'] / 60:.1f} min", f"- Command: `{meta['command']}`",
           f"- Testbed: two DCs, one host each; east-0 sends to west-0. Queue 1 BDP. tcp_wmem max "
           f"{SEND_BUFFER_CAP >> 20} MiB and tcp_rmem max 32 MiB in both hosts, except for the fair competitor.",
           "", "### Grid", "",
           "A full sweep of N at the base point (50 ms, 1 Gbit/s, no loss, no cap, cubic), then one axis at a time "
           "around it, each with N = 1, 8, 16. Every goodput run is short: a warm-up for slow start (not counted, "
           "longer at longer RTTs) and then 4 s measured.", "", *grid_table(conditions), ""]
    out += body
    out += ["### Targets", "", "| Target | Measured | Result |", "| --- | --- | --- |"]
    out += [f"| {name} | {value} | {verdict} |" for name, verdict, value in targets]
    out += ["", f"- {met} of {len(targets)} targets met."]
    if failures:
        out += ["", "### Runs that failed", ""] + [f"- {f}" for f in failures]
    out += ["", "Why the misses happen, with the numbers: docs/TRANSPORT.md, section Benchmark."]
    return "\n".join(out) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wanlab")
    parser.add_argument("--markdown")
    parser.add_argument("--raw", help="write every run as JSON here")
    parser.add_argument("--from-raw", help="measure nothing: print the tables of an earlier run's --raw file")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="one condition, two stream counts: a smoke test")
    parser.add_argument("--name", default="tbench-run")
    args = parser.parse_args()

    if args.from_raw:
        with open(args.from_raw) as f:
            raw = json.load(f)
        conditions = [Condition(**c) for c in raw["conditions"]]
        results, failures, meta = raw["results"], raw["failures"], raw["meta"]
    else:
        if not args.wanlab:
            parser.error("--wanlab is required unless --from-raw is given")
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
        conditions = grid(args.quick)
        print("\n".join(["Grid:"] + grid_table(conditions)), flush=True)
        testbed = Testbed(os.path.realpath(args.wanlab), args.name)
        started = time.monotonic()
        meta = {"date": f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M:%S} UTC",
                "machine": f"{platform.system()} {platform.release()} {platform.machine()}; {os.cpu_count()} CPUs",
                "load_start": loadavg(), "repeats": args.repeats,
                "command": "bench/transport/run-transport-bench.sh" + (" --quick" if args.quick else "")
                + (f" --repeats {args.repeats}" if args.repeats != 2 else "")}
        results, failures = measure(testbed, conditions, args.repeats)
        meta.update(release=testbed.release, load_end=loadavg(), elapsed_s=time.monotonic() - started)
        if args.raw:
            with open(args.raw, "w") as f:
                json.dump({"meta": meta, "conditions": [c.__dict__ for c in conditions], "results": results,
                           "failures": failures}, f, indent=1)
    text = report(conditions, results, failures, meta)
    print(text)
    if args.markdown:
        os.makedirs(os.path.dirname(os.path.abspath(args.markdown)), exist_ok=True)
        with open(args.markdown, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
