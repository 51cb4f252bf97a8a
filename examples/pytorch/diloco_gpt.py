#!/usr/bin/python3
"""The tiny GPT trained with DiLoCo or Streaming DiLoCo across DCs.

Run one rank per emulated host with `wanlab launch`:

    wanlab run examples/pytorch/wan-10ms.toml -- \
        wanlab launch -- /usr/bin/python3 examples/pytorch/diloco_gpt.py --inner-steps 5
    ... diloco_gpt.py --inner-steps 5 --fragments 3     # Streaming DiLoCo

Every rank (a DC) trains its own copy of the model (tiny_gpt.py) on its
share of each step's batch with an inner AdamW (3e-3), and talks to the others only
to sync: DiLoCo (Douillard et al., 2023) every H inner steps all-reduces the
pseudo-gradient (the global weights minus the rank's) and takes an outer
Nesterov step on the global weights, which every rank then starts from.
Streaming DiLoCo (Douillard et al., 2025) splits the weights into F fragments
synced in turn, fragment f at steps f H / F + k H, each all-reduce left to run
while the next --overlap inner steps compute; the fragment then mixes its
local weights with the new global ones (alpha 0.5). So the WAN carries the
model once per H steps instead of every step (DDP), and Streaming DiLoCo
spreads that over time and hides it behind compute.

Rank 0 prints every step's loss (the mean over ranks of their local loss) and
wall time, and with --json writes them with the bytes each sync moved.
"""
import argparse
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn

from tiny_gpt import add_model_args, batches, build_model, check_model_args, finish, loss_of, make_optimizer, mean_over_ranks

MIXING = 0.5  # Streaming DiLoCo's alpha: local and new global weights, half each


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_model_args(parser)
    parser.set_defaults(optimizer="adamw")  # DiLoCo's inner optimizer
    parser.add_argument("--inner-steps", type=int, default=5, help="H: inner steps between syncs (default 5)")
    parser.add_argument("--fragments", type=int, default=1,
                        help="F: fragments synced in turn (default 1: DiLoCo; more: Streaming DiLoCo)")
    parser.add_argument("--overlap", type=int, default=1,
                        help="inner steps a fragment's all-reduce overlaps (Streaming DiLoCo; default 1)")
    parser.add_argument("--outer-lr", type=float, default=0.7, help="outer Nesterov learning rate (default 0.7)")
    args = parser.parse_args()
    if args.inner_steps < 1 or args.fragments < 1 or args.overlap < 0:
        parser.error("--inner-steps and --fragments: at least 1; --overlap: at least 0")
    if args.fragments > 1 and args.overlap >= args.inner_steps:
        parser.error("--overlap must be below --inner-steps")
    if args.check:
        parser.error("--check: DiLoCo learns differently from one process by design; compare losses instead")
    return args


def fragments_of(model, count):
    """The parameters split into `count` fragments of consecutive layers, as even as they go."""
    params = list(model.parameters())
    per, extra = divmod(len(params), count)
    out, first = [], 0
    for f in range(count):
        size = per + (f < extra)
        out.append(params[first:first + size])
        first += size
    return [fragment for fragment in out if fragment]


class Fragment:
    """One fragment's global weights, outer optimizer and sync in flight."""

    def __init__(self, params, outer_lr):
        self.local = params
        self.global_ = [p.detach().clone() for p in params]
        for g in self.global_:
            g.grad = torch.zeros_like(g)
        self.outer = torch.optim.SGD(self.global_, lr=outer_lr, momentum=0.9, nesterov=True)
        self.pending = None  # (work, flat pseudo-gradient, step it applies at)

    def start_sync(self, apply_at):
        delta = torch.cat([(g - p.detach()).reshape(-1) for g, p in zip(self.global_, self.local)])
        self.pending = (dist.all_reduce(delta, async_op=True), delta, apply_at)
        return delta.numel() * delta.element_size()

    def finish_sync(self, world, mix):
        work, delta, _ = self.pending
        work.wait()
        delta /= world
        at = 0
        for g in self.global_:
            g.grad.copy_(delta[at:at + g.numel()].view_as(g))
            at += g.numel()
        self.outer.step()
        with torch.no_grad():
            for g, p in zip(self.global_, self.local):
                p.copy_(mix * p + (1 - mix) * g if mix else g)
        self.pending = None


def main():
    args = parse_args()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    args.microbatches = world
    check_model_args(argparse.ArgumentParser(), args)
    model = nn.Sequential(*build_model(args))
    inner = make_optimizer(model.parameters(), args)
    fragments = [Fragment(params, args.outer_lr) for params in fragments_of(model, args.fragments)]
    streaming = len(fragments) > 1
    losses, times = [], []
    start = time.monotonic()
    for step, (inputs, targets) in enumerate(batches(args), start=1):
        inner.zero_grad()
        loss = loss_of(model(inputs[rank]), targets[rank], 1)
        loss.backward()
        inner.step()
        sent = 0
        for f, fragment in enumerate(fragments):
            if fragment.pending and fragment.pending[2] == step:
                fragment.finish_sync(world, MIXING if streaming else 0)
            # Fragment f syncs at steps f H / F + k H (all at k H for DiLoCo).
            if (step - f * args.inner_steps // len(fragments)) % args.inner_steps == 0:
                sent += fragment.start_sync(step + (args.overlap if streaming else 0))
                if not streaming:
                    fragment.finish_sync(world, 0)
        # No barrier and no loss all-reduce per step: either would be a sync
        # over the WAN every step, which is what DiLoCo avoids.
        now = time.monotonic()
        times.append(now - start)
        start = now
        losses.append(loss.item())
        if rank == 0:
            print(f"step {step:3d}  local loss {losses[-1]:.5f}  {times[-1]:.3f} s"
                  + (f"  synced {sent / 1e6:.2f} MB" if sent else ""), flush=True)
    for fragment in fragments:
        if fragment.pending:
            fragment.pending[0].wait()
    losses = mean_over_ranks(losses, world)
    dist.destroy_process_group()
    if rank == 0:
        name = (f"Streaming DiLoCo, H={args.inner_steps}, {len(fragments)} fragments" if streaming
                else f"DiLoCo, H={args.inner_steps}")
        sys.exit(finish(args, f"{name}, {world} ranks", losses, times))


if __name__ == "__main__":
    main()
