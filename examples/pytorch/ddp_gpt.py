#!/usr/bin/python3
"""The tiny GPT trained data-parallel across DCs with DistributedDataParallel.

Run one rank per emulated host with `wanlab launch`:

    wanlab run examples/pytorch/wan-10ms.toml -- \
        wanlab launch -- /usr/bin/python3 examples/pytorch/ddp_gpt.py --check

Every rank holds the whole model (tiny_gpt.py) and trains on its share of
each step's batch; DDP all-reduces the gradients across the DCs (gloo, over
the WAN) during the backward pass. Rank 0 prints the mean loss and the step's
wall time.

With --check, rank 0 then trains the model in one process on the whole batch,
split into as many microbatches as there are ranks, and compares the loss of
every step: DDP across DCs must not change what is learned. It exits 1 if any
step differs by more than --tolerance. (--microbatches is ignored here: the
ranks are the microbatches.)
"""
import argparse
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel

from tiny_gpt import add_model_args, batches, build_model, check_model_args, finish, loss_of, make_optimizer, mean_over_ranks


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_model_args(parser)
    args = parser.parse_args()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    args.microbatches = world
    check_model_args(parser, args)
    model = DistributedDataParallel(nn.Sequential(*build_model(args)))
    optimizer = make_optimizer(model.parameters(), args)
    losses, times = [], []
    start = time.monotonic()
    for inputs, targets in batches(args):
        optimizer.zero_grad()
        # The mean over my share; DDP averages the gradients over the ranks.
        loss = loss_of(model(inputs[rank]), targets[rank], 1)
        loss.backward()
        optimizer.step()
        # A step ends where the next begins: DDP's all-reduce keeps the ranks
        # in step, and a barrier or a loss all-reduce here would add a sync.
        now = time.monotonic()
        times.append(now - start)
        start = now
        losses.append(loss.item())
        if rank == 0:
            print(f"step {len(times):3d}  local loss {losses[-1]:.5f}  {times[-1]:.3f} s", flush=True)
    losses = mean_over_ranks(losses, world)
    # The DDP model goes before its process group: torch 1.13 deadlocked
    # here (~Reducer joining gloo's thread, which waited for the GIL) when
    # the group went first.
    del model, optimizer
    dist.destroy_process_group()
    if rank == 0:
        sys.exit(finish(args, f"DDP, {world} ranks", losses, times))


if __name__ == "__main__":
    main()
