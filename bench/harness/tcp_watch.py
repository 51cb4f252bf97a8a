#!/usr/bin/env python3
# bench/harness/tcp_watch.py OUT HOST [HOST ...] [--interval S]: while a
# testbed runs, samples `ss -tinm` (every established TCP socket's cwnd,
# ssthresh, srtt, unacked, send queue, pacing rate, buffers) in the named
# hosts' namespaces, so a slow transfer in a `wanlab train` run can be read
# at the kernel's level. Start it beside the run: it waits for the
# namespaces (wanlab-<testbed>.<host>) to appear and ends when they are gone.
# OUT gets "@ <CLOCK_MONOTONIC s> <namespace>" lines, each followed by that
# namespace's `ss -tinmH` output. This is how the HyStart exit in
# bench/results/harness/hystart-20261126/README.md was caught:
#   python3 bench/harness/tcp_watch.py /tmp/ss.txt east-1 europe-0 &
#   wanlab train scenarios/experiments/atlas-3dc.toml --scale 0.1 --pipeline 1f1b ...
import argparse
import re
import subprocess
import sys
import time


def namespaces(hosts):
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    names = [line.split()[0] for line in listed.splitlines() if line.strip()]
    return [n for n in names if re.fullmatch(r"wanlab-[A-Za-z0-9_-]+\.(%s)" % "|".join(map(re.escape, hosts)), n)]


def main():
    parser = argparse.ArgumentParser(description="sample ss -tinm in a testbed's host namespaces while it runs")
    parser.add_argument("out", help="file to write the samples to")
    parser.add_argument("hosts", nargs="+", help="host names, e.g. east-1 europe-0")
    parser.add_argument("--interval", type=float, default=0.1, help="seconds between samples (default 0.1)")
    parser.add_argument("--wait", type=float, default=600, help="seconds to wait for the namespaces (default 600)")
    args = parser.parse_args()
    for host in args.hosts:
        if not re.fullmatch(r"[A-Za-z0-9_-]+", host):
            parser.error(f"argument hosts: {host!r} is not a host name")
    deadline = time.monotonic() + args.wait
    found = []
    while not found:
        if time.monotonic() > deadline:
            sys.exit(f"tcp_watch: no namespace for {', '.join(args.hosts)} within {args.wait:g} s")
        found = namespaces(args.hosts)
        time.sleep(0.2)
    samples = 0
    with open(args.out, "w") as out:
        while True:
            now = time.monotonic()
            for ns in found:
                result = subprocess.run(["ss", "-N", ns, "-tinmH", "state", "established"],
                                        capture_output=True, text=True)
                if result.returncode != 0:  # the testbed is gone
                    print(f"tcp_watch: {samples} samples of {', '.join(found)} in {args.out}")
                    return
                out.write(f"@ {now:.3f} {ns}\n{result.stdout}")
            samples += 1
            out.flush()
            time.sleep(max(0.0, args.interval - (time.monotonic() - now)))


if __name__ == "__main__":
    main()
