#!/usr/bin/python3
"""Mininet hosts in three emulated datacenters, joined by a WAN from `wanlab attach`.

Builds a Mininet network with Debian's `mininet` package: hosts east1, west1 and
north1 on one Linux bridge (wlbr1; no Open vSwitch, no controller), north1's
access link a TCLink limited to 100 Mbit/s (an htb root qdisc on both of its
ends). Then, with the WAN of examples/mininet/wan.toml:

  1. plain links: attaches wanlab to east1-eth0 and west1-eth0 and pings
     east1 -> west1 (configured: 2 x 20 ms);
  2. the TCLink: attaches to north1-eth0, whose root qdisc is the TCLink's htb.
     On the nfqueue release path (a kernel without sch_fq) wanlab shapes what
     arrives at the interface and leaves the root qdisc alone, so the two
     compose. On the fq path wanlab needs its own root fq and refuses, saying
     what to do; the example then does what the message says (--release
     nfqueue). Either way it pings north1 -> east1 (configured: 2 x 10 ms) and
     checks that the TCLink's htb is still there, before and after `wanlab down`.

Every testbed is taken down and the Mininet network stopped on the way out,
also on errors and on SIGTERM. wanlab is run with an argv list, never through a
shell. Needs root and Debian's /usr/bin/python3 (where python3-mininet lives).

  sudo /usr/bin/python3 examples/mininet/wan_mininet.py [--wanlab PATH]
      [--release auto|fq|nfqueue] [--prefix NAME] [--pings N] [--json]
"""

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

# Hosts: name -> (DC in wan.toml, address in that DC's /24 of the pool).
HOSTS = {"east1": ("east", "10.98.0.1"), "west1": ("west", "10.98.1.1"), "north1": ("north", "10.98.2.1")}
BRIDGE = "wlbr1"
TCLINK_MBIT = 100
# One-way delays of wan.toml, to print beside what is measured.
DELAY_MS = {frozenset(("east", "west")): 20.0, frozenset(("east", "north")): 10.0}
REFUSAL = "has a root qdisc already"


class ExampleError(Exception):
    pass


class OneLineParser(argparse.ArgumentParser):
    """A bad command line is one line naming the option, exit 2 (argparse's own
    error prints the usage first)."""

    def error(self, message):
        print(f"wan_mininet: {message}", file=sys.stderr)
        sys.exit(2)


def parse_args():
    parser = OneLineParser(description="A Mininet network with an emulated WAN from `wanlab attach`.")
    parser.add_argument("--wanlab", help="the wanlab binary (default: wanlab on PATH, else build/cli/wanlab)")
    parser.add_argument("--scenario", default=os.path.join(HERE, "wan.toml"), help="scenario file (default: wan.toml here)")
    parser.add_argument("--release", choices=("auto", "fq", "nfqueue"), default="auto",
                        help="release path asked of `wanlab attach` (default auto)")
    parser.add_argument("--prefix", default="mn", help="testbed names are PREFIX-east, PREFIX-west, PREFIX-north (default mn)")
    parser.add_argument("--pings", type=int, default=20, help="echoes per measurement (default 20)")
    parser.add_argument("--json", action="store_true", help="also print each result as one JSON line")
    args = parser.parse_args()
    if not re.fullmatch(r"[a-z0-9][a-z0-9-]{0,5}", args.prefix):
        parser.error("--prefix: expected 1-6 of [a-z0-9-], not starting with '-'")
    if not 3 <= args.pings <= 1000:
        parser.error("--pings: expected 3 to 1000")
    if args.wanlab is None:
        args.wanlab = shutil.which("wanlab") or os.path.join(REPO, "build", "cli", "wanlab")
    args.wanlab = os.path.abspath(args.wanlab)
    # A directory passes os.access(X_OK) too.
    if not os.path.isfile(args.wanlab) or not os.access(args.wanlab, os.X_OK):
        parser.error(f"--wanlab {args.wanlab}: not an executable file (build wanlab, or give its path)")
    return args


def import_mininet():
    try:
        from mininet.link import Link, TCLink
        from mininet.log import setLogLevel
        from mininet.net import Mininet
        from mininet.nodelib import LinuxBridge
    except ImportError as error:
        raise ExampleError(f"cannot import mininet ({error}): apt-get install mininet bridge-utils "
                           f"(or scripts/setup.sh build), and run with /usr/bin/python3") from None
    if not shutil.which("brctl"):
        raise ExampleError("brctl is missing (Mininet's LinuxBridge needs it): apt-get install bridge-utils")
    setLogLevel("warning")
    return Mininet, LinuxBridge, Link, TCLink


class Wan:
    """The testbeds this run attached, so that each is taken down exactly once."""

    def __init__(self, wanlab, scenario, prefix):
        self.wanlab, self.scenario, self.prefix = wanlab, scenario, prefix
        self.up = []

    def run(self, argv):
        """`wanlab ARGS...`: (exit status, output). A binary that cannot be run
        (gone, or not executable) is an ExampleError, so that clean-up goes on."""
        try:
            result = subprocess.run([self.wanlab] + argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                    check=False)
        except OSError as error:
            raise ExampleError(f"cannot run {self.wanlab}: {error.strerror}") from None
        return result.returncode, result.stdout.strip()

    def attach(self, host, release):
        """`wanlab attach` on the host's eth0, in its namespace (by PID). Returns (ok, output)."""
        name = f"{self.prefix}-{HOSTS[host.name][0]}"
        argv = ["attach", f"{host.name}-eth0", self.scenario, "--pid", str(host.pid), "--name", name,
                "--release", release, "--quiet"]
        # Counted as up before it runs: attach cleans up after its own failures,
        # but not after being killed half-way (SIGTERM here kills it), and
        # `wanlab down` of a testbed that is not up does nothing.
        added = name not in self.up
        if added:
            self.up.append(name)
        try:
            code, output = self.run(argv)
        except ExampleError:
            if added:
                self.up.remove(name)  # never started: nothing to take down
            raise
        return code == 0, output

    def attach_or_fail(self, host, release):
        ok, output = self.attach(host, release)
        if not ok:
            raise ExampleError(f"wanlab attach on {host.name}-eth0 failed: {output}")
        match = re.search(r"release path (\w+)", output)
        if not match:
            raise ExampleError(f"wanlab attach on {host.name}-eth0 printed no release path: {output}")
        return match.group(1)

    def down(self):
        failures = []
        while self.up:
            name = self.up.pop()
            try:
                code, output = self.run(["down", name])
            except ExampleError as error:
                code, output = 1, str(error)
            if code != 0:
                failures.append(f"wanlab down {name}: {output}")
        if failures:
            raise ExampleError("; ".join(failures))


def median_rtt_ms(source, destination, pings):
    """Median of `pings` echoes, timed user to user (ping -U): on the nfqueue path
    an echo waits after the kernel's receive timestamp, which plain ping reports."""
    out, err, code = source.pexec(["ping", "-U", "-n", "-c", str(pings), "-i", "0.2", "-W", "2", HOSTS[destination.name][1]])
    times = [float(t) for t in re.findall(r"time=([0-9.]+) ms", out)]
    if len(times) < pings // 2:
        raise ExampleError(f"ping {source.name} -> {destination.name}: {len(times)} of {pings} echoes answered "
                           f"(exit {code}): {(err or out).strip()[-200:]}")
    return statistics.median(times), len(times)


def root_qdisc(host):
    """The interface's root qdisc as `tc` names it, e.g. "htb 5:"."""
    out, err, code = host.pexec(["tc", "qdisc", "show", "dev", f"{host.name}-eth0", "root"])
    match = re.search(r"qdisc (\S+ \S+) root", out)
    if code != 0 or not match:
        raise ExampleError(f"tc qdisc show dev {host.name}-eth0: {(err or out).strip()}")
    return match.group(1)


def report(args, result, text):
    print(text, flush=True)
    if args.json:
        print(json.dumps(result), flush=True)


def configured_rtt_ms(a, b):
    return 2 * DELAY_MS[frozenset((HOSTS[a][0], HOSTS[b][0]))]


def run(args, net, wan):
    east, west, north = net["east1"], net["west1"], net["north1"]

    # 1. Plain links: each end shapes one direction (what leaves it on the fq
    # path, what arrives on the nfqueue path), so attach on both.
    baseline, _ = median_rtt_ms(east, west, 5)
    release = wan.attach_or_fail(east, args.release)
    wan.attach_or_fail(west, args.release)
    rtt, answered = median_rtt_ms(east, west, args.pings)
    configured = configured_rtt_ms("east1", "west1")
    report(args, {"phase": "plain", "from": "east1", "to": "west1", "release": release, "configured_ms": configured,
                  "rtt_ms": round(rtt, 3), "baseline_ms": round(baseline, 3), "answered": answered},
           f"east1 -> west1 (plain links, release path {release}): median RTT {rtt:.2f} ms over {answered} pings, "
           f"configured {configured:.0f} ms (before attach: {baseline:.2f} ms)")
    wan.down()

    # 2. The TCLink: north1-eth0's root qdisc is Mininet's htb.
    before = root_qdisc(north)
    ok, output = wan.attach(north, args.release)
    if ok:
        fq_attach, message = "composed", ""
        release = re.search(r"release path (\w+)", output).group(1)
        if release == "fq":
            raise ExampleError(f"wanlab attached on the fq path over {before}: {output}")
    elif REFUSAL in output:
        # What the message says to do: the nfqueue path leaves the root qdisc alone.
        fq_attach, message = "refused", output
        print(f"north1-eth0 (TCLink, {before}): {output}", flush=True)
        release = wan.attach_or_fail(north, "nfqueue")
    else:
        raise ExampleError(f"wanlab attach on north1-eth0 failed: {output}")
    wan.attach_or_fail(east, release)
    during = root_qdisc(north)
    rtt, answered = median_rtt_ms(north, east, args.pings)
    wan.down()
    after = root_qdisc(north)
    configured = configured_rtt_ms("north1", "east1")
    report(args, {"phase": "tclink", "from": "north1", "to": "east1", "release": release, "fq_attach": fq_attach,
                  "message": message, "root_before": before, "root_during": during, "root_after": after,
                  "configured_ms": configured, "rtt_ms": round(rtt, 3), "answered": answered},
           f"north1 -> east1 (TCLink {TCLINK_MBIT} Mbit/s, {before}; attach {fq_attach}, release path {release}): "
           f"median RTT {rtt:.2f} ms over {answered} pings, configured {configured:.0f} ms; root qdisc after down: {after}")
    if not before == during == after:
        raise ExampleError(f"north1-eth0's root qdisc changed: {before} before attach, {during} attached, {after} after down")


def on_sigterm(*_):
    # Once: a second SIGTERM must not cut the clean-up short.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sys.exit(143)


def main():
    args = parse_args()
    if os.geteuid() != 0:
        raise ExampleError("needs root (Mininet and wanlab make namespaces and load BPF)")
    Mininet, LinuxBridge, Link, TCLink = import_mininet()
    # SIGTERM (a test's timeout, kill) tears down like an error does.
    signal.signal(signal.SIGTERM, on_sigterm)
    wan = Wan(args.wanlab, os.path.abspath(args.scenario), args.prefix)
    net = Mininet(topo=None, switch=LinuxBridge, controller=None, link=Link, build=False, waitConnected=False)
    try:
        bridge = net.addSwitch(BRIDGE)
        for name, (_, address) in HOSTS.items():
            net.addHost(name, ip=f"{address}/16")
        net.addLink("east1", bridge)
        net.addLink("west1", bridge)
        net.addLink("north1", bridge, cls=TCLink, bw=TCLINK_MBIT)
        net.build()
        net.start()
        run(args, net, wan)
    finally:
        # The network is stopped whatever taking the WAN down raised.
        try:
            wan.down()
        finally:
            net.stop()
    print("done: every testbed is down and the Mininet network stopped", flush=True)


if __name__ == "__main__":
    try:
        main()
    except ExampleError as error:
        print(f"wan_mininet: {error}", file=sys.stderr)
        sys.exit(1)
