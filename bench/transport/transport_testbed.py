"""The transport benchmark's testbed (transport_bench.py, linkbound.py): one
emulated two-DC link brought up and changed through `wanlab`, the processes
run on its hosts, and the CPU time they and the machine spent."""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import tomllib

HZ = os.sysconf("SC_CLK_TCK")
SEND_BUFFER_CAP = 4 << 20  # tcp_wmem max of every other run (the scenario's [host])


def log(text):
    print(text, file=sys.stderr, flush=True)


class Testbed:
    def __init__(self, wanlab, name):
        self.wanlab = wanlab
        self.name = name
        self.hosts = {}
        self.daemon_pid = None
        self.release = ""

    def run(self, *args, check=True):
        result = subprocess.run([self.wanlab, *args], capture_output=True, text=True)
        if check and result.returncode != 0:
            raise RuntimeError(f"wanlab {' '.join(args)}: {result.stderr.strip() or result.stdout.strip()}")
        return result.stdout

    def up(self):
        scenario = f"""name = "{self.name}"
[defaults]
rate = "1gbit"
delay = "50ms"
queue = "1bdp"
[host]
tcp_congestion = "cubic"
tcp_wmem_max = "{SEND_BUFFER_CAP}b"
tcp_rmem_max = "32mb"
[[dc]]
name = "east"
[[dc]]
name = "west"
"""
        with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as file:
            file.write(scenario)
        try:
            self.run("up", file.name, "--quiet")
        finally:
            os.unlink(file.name)
        self.hosts = {h["name"]: h["ipv4"] for h in json.loads(self.run("hosts", "--testbed", self.name, "--json"))}
        with open(f"/run/wanlab/{self.name}/state.toml", "rb") as state_file:
            state = tomllib.load(state_file)
        self.daemon_pid = state.get("daemon_pid") or None
        self.release = f"{state.get('release', '?')} ({state.get('release_reason', '')})"

    def down(self):
        if os.path.isdir(f"/run/wanlab/{self.name}") or any(
                n.startswith(f"wanlab-{self.name}.") for n in (os.listdir("/run/netns") if os.path.isdir("/run/netns") else [])):
            result = subprocess.run([self.wanlab, "down", self.name], capture_output=True, text=True)
            if result.returncode != 0:
                log(f"warning: wanlab down {self.name}: {result.stderr.strip()}")

    def exec_argv(self, host, argv):
        return [self.wanlab, "exec", host, "--testbed", self.name, "--", *argv]

    def set_link(self, c):
        args = ["set", "east", "west", "--testbed", self.name, "--rate", f"{c.rate_mbit}mbit",
                "--delay", f"{c.delay_ms}ms", "--loss", c.loss, "--queue", c.queue]
        if c.cap_mbit:
            args += ["--flow-rate", f"{c.cap_mbit}mbit"]
        self.run(*args)

    def sysctl(self, host, key, value=None):
        if value is None:
            return subprocess.run(self.exec_argv(host, ["sysctl", "-n", key]), capture_output=True, text=True,
                                  check=True).stdout.split()
        subprocess.run(self.exec_argv(host, ["sysctl", "-qw", f"{key}={value}"]), check=True)

    def pair_stats(self):
        stats = json.loads(self.run("stats", "--testbed", self.name, "--json", check=False) or "{}")
        pair = next((p for p in stats.get("pairs", []) if p["from"] == "east" and p["to"] == "west"), {})
        return {"drops_queue": pair.get("drops_queue", 0), "drops_loss": pair.get("drops_loss", 0)}


# ---- CPU accounting ---------------------------------------------------------------


def proc_ticks(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime stime (all threads)
    except (OSError, IndexError, ValueError):
        return 0


def machine_ticks():
    with open("/proc/stat") as f:
        values = [int(v) for v in f.readline().split()[1:]]
    user, nice, system, idle, iowait, irq, softirq, steal = values[:8]
    return {"busy": user + nice + system + irq + softirq + steal, "total": sum(values[:8]), "softirq": softirq}


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


class Child:
    """A process started under `wanlab exec` (which execs, so this pid is the
    program's), reaped with wait4 for its rusage."""

    def __init__(self, argv, stdout, stderr):
        self.popen = subprocess.Popen(argv, stdout=stdout, stderr=stderr, start_new_session=True)
        self.cpu_s = 0.0
        self.status = None
        self.started = time.monotonic()
        self.ended = None

    def poll(self):
        if self.status is not None:
            return True
        pid, status, usage = os.wait4(self.popen.pid, os.WNOHANG)
        if pid == 0:
            return False
        self.status = os.waitstatus_to_exitcode(status)
        self.popen.returncode = self.status
        self.cpu_s = usage.ru_utime + usage.ru_stime
        self.ended = time.monotonic()
        return True

    def wait(self, timeout):
        deadline = time.monotonic() + timeout
        while not self.poll():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)
        return True

    def stop(self):
        if self.poll():
            return
        for sig, grace in ((signal.SIGTERM, 2), (signal.SIGKILL, 2)):
            try:
                os.kill(self.popen.pid, sig)
            except ProcessLookupError:
                pass
            if self.wait(grace):
                return

    def listening(self, port):
        for name in ("tcp6", "tcp"):
            try:
                with open(f"/proc/{self.popen.pid}/net/{name}") as f:
                    next(f)
                    for line in f:
                        parts = line.split()
                        if parts[3] == "0A" and int(parts[1].rsplit(":", 1)[1], 16) == port:
                            return True
            except (OSError, StopIteration):
                pass
        return False


CHILDREN = []  # what a signal or a failure must stop


def run_pair(testbed, server_argv, server_port, client_argv, timeout):
    """Runs a server on west-0 and a client on east-0; returns the client's
    output and the CPU figures of the run."""
    stats_before = testbed.pair_stats()
    machine_before = machine_ticks()
    releaser_before = proc_ticks(testbed.daemon_pid) if testbed.daemon_pid else 0
    server_err = tempfile.TemporaryFile("w+")
    server = Child(testbed.exec_argv("west-0", server_argv), subprocess.DEVNULL, server_err)
    CHILDREN.append(server)
    try:
        deadline = time.monotonic() + 10
        while not server.listening(server_port):
            if server.poll() or time.monotonic() > deadline:
                server_err.seek(0)
                raise RuntimeError(f"{os.path.basename(server_argv[0])} server did not start listening on port "
                                   f"{server_port}: {server_err.read().strip()[-300:]}")
            time.sleep(0.02)
        with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
            client = Child(testbed.exec_argv("east-0", client_argv), out, err)
            CHILDREN.append(client)
            if not client.wait(timeout):
                client.stop()
                raise RuntimeError(f"{' '.join(client_argv)}: no result within {timeout:.0f} s")
            out.seek(0)
            err.seek(0)
            output, errors = out.read(), err.read()
        if client.status != 0:
            raise RuntimeError(f"{os.path.basename(client_argv[0])} {' '.join(client_argv[1:])}: exit {client.status}: "
                               f"{(errors.strip() or output.strip())[-400:]}")
        if not server.wait(5):
            server.stop()
        wall = client.ended - client.started
        machine_after = machine_ticks()
        busy = machine_after["busy"] - machine_before["busy"]
        total = max(1, machine_after["total"] - machine_before["total"])
        stats_after = testbed.pair_stats()
        cpu = {
            "wall_s": wall,
            "sender_cpu_s": client.cpu_s,
            "receiver_cpu_s": server.cpu_s,
            "releaser_cpu_s": ((proc_ticks(testbed.daemon_pid) - releaser_before) / HZ) if testbed.daemon_pid else 0.0,
            "machine_busy": busy / total,
            "machine_softirq": (machine_after["softirq"] - machine_before["softirq"]) / total,
            "load": loadavg(),
            "drops_queue": stats_after["drops_queue"] - stats_before["drops_queue"],
            "drops_loss": stats_after["drops_loss"] - stats_before["drops_loss"],
        }
        return output, cpu
    finally:
        for child in CHILDREN:
            child.stop()
        CHILDREN.clear()
        server_err.close()
