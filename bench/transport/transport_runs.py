"""The transport benchmark's measurements (transport_bench.py, linkbound.py):
`wanlab perf` and `iperf3` runs between the testbed's two hosts, each with
its goodput and CPU figures."""
import json

from transport_testbed import run_pair

PERF_PORT = 5301
IPERF_PORT = 5201
BIG_BUFFER = 256 << 20  # the fair competitor's tcp_wmem / tcp_rmem max
MESSAGE_BYTES = 1 << 30
MEASURE_S = 4  # goodput is counted over this long, after the warm-up (linkbound.py sets it)


def run_perf(testbed, c, streams, omit):
    seconds = omit + MEASURE_S
    argv = ["wanlab", "perf", "client", testbed.hosts["west-0"], "-P", str(streams), "-t", str(seconds),
            "--cc", c.cc, "--json"]
    argv[0] = testbed.wanlab
    output, cpu = run_pair(testbed, [testbed.wanlab, "perf", "server", "--one-off", "--json"], PERF_PORT, argv,
                           seconds + 30)
    r = json.loads(output)
    # Messages are counted when acknowledged. Counting from `omit` to the
    # stop (not to the last acknowledgement) keeps the bytes partly delivered
    # at either end in balance; counting the final drain too would credit
    # the window with messages whose bytes crossed the link before it began.
    steady = [i for i in r["intervals"] if i["start"] >= omit - 0.05 and i["end"] <= seconds + 0.05]
    span = steady[-1]["end"] - steady[0]["start"] if steady else 0
    return {
        "tool": "perf", "streams": streams,
        "goodput_bps": 8 * sum(i["bytes"] for i in steady) / span if span > 0 else 0.0,
        "intervals": r["intervals"],
        "retransmits": sum(i["retransmits"] for i in steady),
        "retransmits_total": r["retransmits"],
        "bytes_total": r["bytes"],
        "goodput_whole_bps": r["goodput_bps"],
        "p99_ms": r["message_completion_ms"]["p99"],
        **cpu,
    }


def run_iperf(testbed, streams, cc, omit, fair=False, size=None):
    """N streams for MEASURE_S after `omit`, or (size, e.g. "1G") until
    that many bytes are sent over all of them together."""
    seconds = MEASURE_S
    amount = ["-n", size] if size else ["-t", str(seconds), "-O", str(omit)]
    argv = ["iperf3", "-c", testbed.hosts["west-0"], "-p", str(IPERF_PORT), "-P", str(streams), *amount,
            "-C", cc, "-J"]
    output, cpu = run_pair(testbed, ["iperf3", "-s", "-1", "-p", str(IPERF_PORT)], IPERF_PORT, argv,
                           120 if size else seconds + omit + 30)
    r = json.loads(output)
    if "error" in r:
        raise RuntimeError(f"iperf3: {r['error']}")
    end = r["end"]
    moved = sum(i["sum"]["bytes"] for i in r["intervals"])  # omitted intervals too: for CPU per byte
    return {
        "tool": "fair" if fair else "iperf3", "streams": streams,
        "goodput_bps": end["sum_received"]["bits_per_second"],
        "seconds": end["sum_received"]["seconds"],  # the receiver's, from its start to the last byte
        "retransmits": end["sum_sent"].get("retransmits", 0),
        "bytes_total": moved,
        **cpu,
    }


def run_fair(testbed, c, omit):
    """One BBR stream with 256 MiB buffer maxima, set for this run only."""
    saved_wmem = testbed.sysctl("east-0", "net.ipv4.tcp_wmem")
    saved_rmem = testbed.sysctl("west-0", "net.ipv4.tcp_rmem")
    try:
        testbed.sysctl("east-0", "net.ipv4.tcp_wmem", f"4096 16384 {BIG_BUFFER}")
        testbed.sysctl("west-0", "net.ipv4.tcp_rmem", f"4096 131072 {BIG_BUFFER}")
        return run_iperf(testbed, 1, "bbr", omit, fair=True)
    finally:
        testbed.sysctl("east-0", "net.ipv4.tcp_wmem", " ".join(saved_wmem))
        testbed.sysctl("west-0", "net.ipv4.tcp_rmem", " ".join(saved_rmem))


def run_message(testbed, c, streams, count=1):
    """`count` 1 GiB messages on one channel, each sent once the one before
    is acknowledged (--window 1G); the first goes on new connections."""
    argv = [testbed.wanlab, "perf", "client", testbed.hosts["west-0"], "-P", str(streams), "-n", f"{count}G",
            "--message-size", "1G", *(["--window", "1G"] if count > 1 else []), "--cc", c.cc, "--json"]
    output, cpu = run_pair(testbed, [testbed.wanlab, "perf", "server", "--one-off", "--json"], PERF_PORT, argv, 120)
    r = json.loads(output)
    return {"tool": "message", "streams": streams, "seconds": r["seconds"],
            "completion_ms": r["message_completion_ms"]["max"],
            "completion_p50_ms": r["message_completion_ms"]["p50"], "retransmits": r["retransmits"],
            "bytes_total": r["bytes"], **cpu}
