#!/usr/bin/python3
"""A tiny GPT trained with pipeline parallelism across DCs: a stage per rank.

Run one rank per emulated host with `wanlab launch`:

    wanlab run examples/pytorch/wan-10ms.toml -- \
        wanlab launch -- /usr/bin/python3 examples/pytorch/pipeline_gpt.py --check

The model (tiny_gpt.py: embedding, transformer blocks, head) is split into as
many stages as there are ranks, in order; rank r holds stage r. Each step
runs GPipe: every microbatch forward through the stages (activations go point
to point to the next rank, over the WAN), then every microbatch backward
(gradients go back), then each stage's optimizer step. The last rank prints
the loss and the step's wall time.

With --check, the last rank then trains the whole model in one process on
the same data, microbatches and initial weights, and compares the loss of
every step: a pipeline across DCs must not change what is learned. It exits
1 if any step differs by more than --tolerance.
"""
import argparse
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn

from tiny_gpt import add_model_args, batches, build_model, check_model_args, finish, loss_of, make_optimizer


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_model_args(parser)
    args = parser.parse_args()
    check_model_args(parser, args)
    return args


def stage_of(layers, stage, stages):
    """Layers [first, last) of `stage`: the blocks split as evenly as they go."""
    per, extra = divmod(len(layers), stages)
    first = stage * per + min(stage, extra)
    return nn.Sequential(*layers[first:first + per + (stage < extra)])


def train_pipeline(args, rank, stages):
    model = stage_of(build_model(args), rank, stages)
    optimizer = make_optimizer(model.parameters(), args)
    first, last = rank == 0, rank == stages - 1
    shape = (args.batch // args.microbatches, args.seq, args.dim)
    losses, times = [], []
    start = time.monotonic()
    for inputs, targets in batches(args):
        optimizer.zero_grad()
        kept = []  # per microbatch: (its input here, its output here)
        for micro in range(args.microbatches):
            if first:
                x = inputs[micro]
            else:
                x = torch.empty(shape)
                dist.recv(x, src=rank - 1)
                x.requires_grad_()
            y = model(x)
            if not last:
                dist.send(y.detach(), dst=rank + 1)
            kept.append((x, y))
        step_loss = 0.0
        for micro in reversed(range(args.microbatches)):
            x, y = kept[micro]
            if last:
                loss = loss_of(y, targets[micro], args.microbatches)
                step_loss += loss.item()
                loss.backward()
            else:
                grad = torch.empty(shape)
                dist.recv(grad, src=rank + 1)
                y.backward(grad)
            if not first:
                dist.send(x.grad, dst=rank - 1)
        optimizer.step()
        # A step ends where the next begins: the sends keep the stages in step.
        now = time.monotonic()
        times.append(now - start)
        start = now
        if last:
            losses.append(step_loss)
            print(f"step {len(times):3d}  loss {step_loss:.5f}  {times[-1]:.3f} s", flush=True)
    return losses, times


def main():
    args = parse_args()
    dist.init_process_group("gloo")
    rank, stages = dist.get_rank(), dist.get_world_size()
    if stages > args.layers + 2:
        sys.exit(f"pipeline_gpt.py: {stages} stages need at least {stages - 2} --layers")
    losses, times = train_pipeline(args, rank, stages)
    dist.destroy_process_group()
    if rank == stages - 1:
        sys.exit(finish(args, f"pipeline, {stages} stages, {args.microbatches} microbatches", losses, times))


if __name__ == "__main__":
    main()
