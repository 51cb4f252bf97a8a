"""The tiny GPT of the examples: a byte-level model, its data and its loss,
the same on every rank (one seed), so that any split of the training can be
checked against one process's (pipeline_gpt.py, ddp_gpt.py)."""
import json
import time

import torch
import torch.distributed as dist
import torch.nn as nn

# What the model learns to continue: any text will do.
TEXT = (__doc__ * 40).encode()


def add_model_args(parser):
    parser.add_argument("--steps", type=int, default=20, help="training steps (default 20)")
    parser.add_argument("--batch", type=int, default=24, help="sequences per step (default 24)")
    parser.add_argument("--microbatches", type=int, default=4, help="microbatches per step (default 4)")
    parser.add_argument("--seq", type=int, default=64, help="sequence length in bytes (default 64)")
    parser.add_argument("--dim", type=int, default=64, help="model width (default 64)")
    parser.add_argument("--layers", type=int, default=6, help="transformer blocks (default 6)")
    parser.add_argument("--optimizer", choices=("sgd", "adamw"), default="sgd",
                        help="sgd (learning rate 0.1, the default) or adamw (3e-3)")
    parser.add_argument("--check", action="store_true", help="compare every step's loss with one process's")
    parser.add_argument("--tolerance", type=float, default=1e-5, help="largest loss difference allowed (1e-5)")
    parser.add_argument("--json", help="write losses and step times here (one rank)")


def check_model_args(parser, args):
    for name in ("steps", "batch", "microbatches", "seq", "dim", "layers"):
        if getattr(args, name) < 1:
            parser.error(f"--{name}: at least 1")
    if args.batch % args.microbatches:
        parser.error("--batch must be a multiple of --microbatches")
    if args.dim % 4:
        parser.error("--dim must be a multiple of 4 (4 attention heads)")


class Block(nn.Module):
    def __init__(self, dim, seq):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(dim, 4, 4 * dim, dropout=0.0, batch_first=True, norm_first=True)
        self.register_buffer("mask", torch.triu(torch.full((seq, seq), float("-inf")), diagonal=1))

    def forward(self, x):
        return self.layer(x, src_mask=self.mask)


def build_model(args):
    """The whole model as a list of layers, the same on every rank (one seed)."""
    torch.manual_seed(0)
    embed = nn.Embedding(256, args.dim)
    blocks = [Block(args.dim, args.seq) for _ in range(args.layers)]
    head = nn.Sequential(nn.LayerNorm(args.dim), nn.Linear(args.dim, 256))
    return [embed] + blocks + [head]


def batches(args):
    """Every step's (inputs, targets), the same on every rank."""
    data = torch.tensor(list(TEXT), dtype=torch.long)
    generator = torch.Generator().manual_seed(1)
    for _ in range(args.steps):
        starts = torch.randint(0, len(data) - args.seq - 1, (args.batch,), generator=generator)
        inputs = torch.stack([data[s:s + args.seq] for s in starts])
        targets = torch.stack([data[s + 1:s + args.seq + 1] for s in starts])
        yield inputs.chunk(args.microbatches), targets.chunk(args.microbatches)


def loss_of(logits, targets, microbatches):
    # Each microbatch's share of the step's mean loss.
    return nn.functional.cross_entropy(logits.reshape(-1, 256), targets.reshape(-1)) / microbatches


def make_optimizer(params, args):
    if args.optimizer == "adamw":
        return torch.optim.AdamW(params, lr=3e-3)
    return torch.optim.SGD(params, lr=0.1)


def train_alone(args):
    """The same training in one process: the reference of --check."""
    model = nn.Sequential(*build_model(args))
    optimizer = make_optimizer(model.parameters(), args)
    losses, times = [], []
    for inputs, targets in batches(args):
        start = time.monotonic()
        optimizer.zero_grad()
        step_loss = 0.0
        for micro in range(args.microbatches):
            loss = loss_of(model(inputs[micro]), targets[micro], args.microbatches)
            step_loss += loss.item()
            loss.backward()
        optimizer.step()
        losses.append(step_loss)
        times.append(time.monotonic() - start)
    return losses, times


def mean_over_ranks(values, world):
    """Each step's value averaged over the ranks, in one all-reduce at the end."""
    tensor = torch.tensor(values, dtype=torch.float64)
    dist.all_reduce(tensor)
    return (tensor / world).tolist()


def median(values):
    return sorted(values)[len(values) // 2]


def finish(args, name, losses, times, extra=None):
    """Prints the summary and, with --check, compares with one process; the exit code.

    `extra` (a dict) goes into the --json file beside the losses and times."""
    steady = median(times[1:] or times)
    print(f"{name}: median step {steady:.3f} s (first step {times[0]:.3f} s), "
          f"loss {losses[0]:.4f} -> {losses[-1]:.4f}", flush=True)
    result = {"losses": losses, "step_s": times, **(extra or {})}
    failed = False
    if args.check:
        alone, alone_times = train_alone(args)
        worst = max(abs(a - b) for a, b in zip(losses, alone))
        failed = worst > args.tolerance
        print(f"check: one process, median step {median(alone_times[1:] or alone_times):.3f} s, losses "
              f"{alone[0]:.4f} -> {alone[-1]:.4f}; largest difference {worst:.2e} over {len(alone)} steps: "
              f"{'FAILED' if failed else 'the same'} (tolerance {args.tolerance:g})")
        result.update({"alone_losses": alone, "alone_step_s": alone_times, "largest_difference": worst})
    if args.json:
        with open(args.json, "w") as out:
            json.dump(result, out, indent=1)
    return 1 if failed else 0
