"""The transport benchmark's grid: the link conditions it measures
(transport_bench.py), and the table that lists them."""
from dataclasses import dataclass, field


@dataclass
class Condition:
    label: str
    delay_ms: int  # one way
    rate_mbit: int
    loss: str  # a percentage as `wanlab set --loss` takes it
    loss_text: str  # as a probability, as the table shows it
    cap_mbit: int | None
    cc: str
    streams: list[int]
    message_streams: list[int] = field(default_factory=lambda: [16])
    queue: str = "1bdp"  # as `wanlab set --queue` takes it

    @property
    def rtt_s(self):
        return 2 * self.delay_ms / 1000

    @property
    def rate_bps(self):
        return self.rate_mbit * 1e6

    @property
    def omit_s(self):
        # slow start to a full pipe takes roughly 10-12 RTTs
        return 1 if self.delay_ms <= 10 else 2 if self.delay_ms <= 50 else 3

    def describe(self):
        cap = f"{self.cap_mbit} Mbit/s" if self.cap_mbit else "none"
        return (f"{self.delay_ms} ms one way, {self.rate_mbit / 1000:g} Gbit/s, loss {self.loss_text}, "
                f"per-flow cap {cap}, {self.cc}")


def grid(quick):
    """A full sweep of streams at the base point, then one axis at a time
    around it. The per-flow cap comes last: `wanlab set` cannot remove one."""
    sweep = [1, 2, 4, 8, 16]
    few = [1, 8, 16]
    base = dict(delay_ms=50, rate_mbit=1000, loss="0%", loss_text="0", cap_mbit=None, cc="cubic")
    if quick:
        return [Condition("base", **base, streams=[1, 8], message_streams=[8])]
    rows = [
        Condition("base", **base, streams=sweep, message_streams=[8, 16]),
        Condition("delay 10 ms", **{**base, "delay_ms": 10}, streams=few),
        Condition("delay 100 ms", **{**base, "delay_ms": 100}, streams=few),
        Condition("rate 5 Gbit/s", **{**base, "rate_mbit": 5000}, streams=few),
        Condition("loss 1e-5", **{**base, "loss": "0.001%", "loss_text": "1e-5"}, streams=few),
        Condition("loss 1e-4", **{**base, "loss": "0.01%", "loss_text": "1e-4"}, streams=few),
        Condition("cc bbr", **{**base, "cc": "bbr"}, streams=few),
        Condition("cap 250 Mbit/s", **{**base, "cap_mbit": 250}, streams=few),
    ]
    return rows


def grid_table(conditions):
    lines = ["| Condition | one way | rate | loss | per-flow cap | cc | streams N | warm-up + measured | "
             "1 GiB message with N |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for c in conditions:
        lines.append(f"| {c.label} | {c.delay_ms} ms | {c.rate_mbit / 1000:g} Gbit/s | {c.loss_text} | "
                     f"{str(c.cap_mbit) + ' Mbit/s' if c.cap_mbit else 'none'} | {c.cc} | "
                     f"{', '.join(map(str, c.streams))} | {c.omit_s} + 4 s | "
                     f"{', '.join(map(str, c.message_streams))} |")
    return lines
