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


def timed_allreduce_hook(world, steps):
    """DDP's own all-reduce of a bucket (the mean over the ranks), recorded in
    the step's list (steps[-1]) as [bytes, when the bucket was ready (since
    the step's start), this rank's time from then to the result]."""
    def hook(_state, bucket):
        ready = time.monotonic()
        tensor = bucket.buffer().div_(world)
        record = [tensor.numel() * tensor.element_size(), ready - steps[-1][0], 0.0]
        steps[-1][1].append(record)

        def done(future):
            record[2] = time.monotonic() - ready
            return future.value()[0]
        return dist.all_reduce(tensor, async_op=True).get_future().then(done)
    return hook


def least_over_ranks(values, op=dist.ReduceOp.MIN):
    tensor = torch.tensor(values, dtype=torch.float64)
    dist.all_reduce(tensor, op=op)
    return tensor.tolist()


def most_over_ranks(values):
    return least_over_ranks(values, dist.ReduceOp.MAX)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_model_args(parser)
    parser.add_argument("--broadcast-buffers", action="store_true",
                        help="let DDP broadcast the model's buffers from rank 0 every step (its default)")
    args = parser.parse_args()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    args.microbatches = world
    check_model_args(parser, args)
    # broadcast_buffers=False: DDP would otherwise broadcast every buffer
    # from rank 0 at each forward pass, a WAN round per step for the blocks'
    # attention masks, which never change (--broadcast-buffers measures it).
    model = DistributedDataParallel(nn.Sequential(*build_model(args)), broadcast_buffers=args.broadcast_buffers)
    # Per step: (its start, [[bytes, ready_s, all-reduce s] per bucket], [backward's end]).
    steps = []
    model.register_comm_hook(None, timed_allreduce_hook(world, steps))
    optimizer = make_optimizer(model.parameters(), args)
    losses, times, forward_s = [], [], []
    start = time.monotonic()
    for inputs, targets in batches(args):
        optimizer.zero_grad()
        steps.append((start, [], []))
        # The mean over my share; DDP averages the gradients over the ranks.
        logits = model(inputs[rank])
        forward_s.append(time.monotonic() - start)
        loss = loss_of(logits, targets[rank], 1)
        loss.backward()  # returns once DDP has every bucket's all-reduce
        steps[-1][2].append(time.monotonic() - start)
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
    # The rank that came last to an all-reduce waited for nobody: the least
    # over the ranks is the all-reduce's own time, from all ready to done.
    # The same for the communication left after the backward pass's last
    # bucket (DDP rebuilds its buckets after the first step, on every rank alike).
    durations = least_over_ranks([record[2] for _, records, _ in steps for record in records])
    exposed = [end[0] - records[-1][1] for _, records, end in steps]
    least_exposed = least_over_ranks(exposed)
    # How long after mine the last rank's last bucket was ready (the
    # ranks share the machine's monotonic clock): the wait that is not the WAN.
    last_ready = [start + records[-1][1] for start, records, _ in steps]
    skew = [latest - mine for latest, mine in zip(most_over_ranks(last_ready), last_ready)]
    buckets = [[dict(zip(("bytes", "ready_s", "allreduce_s"), record[:2] + [durations.pop(0)]))
                for record in records] for _, records, _ in steps]
    communication = {"buckets": buckets, "exposed_s": exposed, "least_exposed_s": least_exposed,
                     "skew_s": skew,
                     "forward_s": forward_s}
    # The DDP model goes before its process group: torch 1.13 deadlocked
    # here (~Reducer joining gloo's thread, which waited for the GIL) when
    # the group went first.
    del model, optimizer
    dist.destroy_process_group()
    if rank == 0:
        sys.exit(finish(args, f"DDP, {world} ranks", losses, times, communication))


if __name__ == "__main__":
    main()
