#!/usr/bin/python3
"""Point-to-point and all-reduce times of torch.distributed (gloo) across DCs.

Run one process per emulated host with `wanlab launch` (which sets RANK,
WORLD_SIZE, MASTER_ADDR and MASTER_PORT), for example:

    wanlab run examples/pytorch/wan-10ms.toml -- \
        wanlab launch -- /usr/bin/python3 examples/pytorch/p2p_allreduce.py

Rank 0 sends a tensor of each size to rank 1 (in another DC); the time is from
just before rank 0's send to the end of rank 1's receive, on the one clock all
emulated hosts share. Then every rank all-reduces a tensor of the same size.
Each is repeated and the median reported (after one warm-up round, which pays
for TCP's slow start on gloo's fresh connections). Rank 0 prints a table and,
with --json, writes every measured time to a file.
"""
import argparse
import json
import os
import socket
import statistics
import sys
import time

import torch
import torch.distributed as dist

MIB = 1 << 20


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1,16,64",
                        help="tensor sizes in MiB, comma-separated (default 1,16,64)")
    parser.add_argument("--repeats", type=int, default=5, help="timed rounds per size (default 5)")
    parser.add_argument("--json", help="rank 0 writes the measured times here")
    args = parser.parse_args()
    try:
        args.sizes = [float(size) for size in args.sizes.split(",")]
    except ValueError:
        parser.error(f"--sizes: expected MiB values separated by commas, got {args.sizes!r}")
    if any(size <= 0 or size > 4096 for size in args.sizes):
        parser.error("--sizes: each size must be above 0 and at most 4096 MiB")
    if args.repeats < 1:
        parser.error("--repeats: at least 1")
    return args


def point_to_point_seconds(rank, tensor):
    """Rank 0's (seconds from its send to rank 1's received tensor, how long after
    rank 0 rank 1 left the barrier before it); None elsewhere. The ranks share
    the machine's monotonic clock."""
    dist.barrier()
    left = time.monotonic()
    stamps = torch.zeros(2, dtype=torch.float64)
    if rank == 0:
        dist.send(tensor, dst=1)
        dist.recv(stamps, src=1)  # when rank 1 had it all, when it left the barrier
        return stamps[0].item() - left, stamps[1].item() - left
    if rank == 1:
        dist.recv(tensor, src=0)
        stamps[0] = time.monotonic()
        stamps[1] = left
        dist.send(stamps, dst=0)
    return None


def all_reduce_seconds(tensor):
    """The slowest rank's time for one all-reduce, known to every rank."""
    dist.barrier()
    start = time.monotonic()
    dist.all_reduce(tensor)
    took = torch.tensor([time.monotonic() - start], dtype=torch.float64)
    dist.all_reduce(took, op=dist.ReduceOp.MAX)
    return took.item()


def main():
    args = parse_args()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    if world < 2:
        sys.exit("p2p_allreduce.py: needs at least 2 ranks (wanlab launch starts one per host)")
    hosts = [None] * world
    dist.all_gather_object(hosts, (socket.gethostname(), os.environ.get("WANLAB_DC", "?")))
    rows = []
    for size in args.sizes:
        tensor = torch.ones(int(size * MIB) // 4, dtype=torch.float32)
        p2p, skew, reduce = [], [], []
        for round_ in range(args.repeats + 1):
            timed = point_to_point_seconds(rank, tensor)
            reduced = all_reduce_seconds(tensor)
            if round_ == 0:
                continue  # warm-up
            if timed is not None:
                p2p.append(timed[0])
                skew.append(timed[1])
            reduce.append(reduced)
        rows.append({"mib": size, "p2p_s": p2p, "p2p_skew_s": skew, "allreduce_s": reduce})
    if rank == 0:
        print(f"gloo across {world} ranks: " + ", ".join(f"{name} ({dc})" for name, dc in hosts))
        print(f"{'MiB':>6} {'p2p 0->1 median s':>18} {'p2p MB/s':>9} {'all-reduce median s':>20}")
        for row in rows:
            median = statistics.median(row["p2p_s"])
            print(f"{row['mib']:>6g} {median:>18.3f} {row['mib'] * MIB / 1e6 / median:>9.0f} "
                  f"{statistics.median(row['allreduce_s']):>20.3f}")
        if args.json:
            with open(args.json, "w") as out:
                json.dump({"world": world, "hosts": hosts, "rows": rows}, out, indent=1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
