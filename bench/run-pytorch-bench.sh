#!/usr/bin/env bash
# The PyTorch gloo benchmark in one command: examples/pytorch/p2p_allreduce.py
# through `wanlab launch` on examples/pytorch/wan-10ms.toml (DTFM's 10 ms
# setting, Linux's default TCP buffers), then again with 16 MB buffers; each
# size's median beside the simulator's transfer model and DTFM's 64 MB
# figure. Writes bench/results/pytorch/pytorch.md.
#
#   bench/run-pytorch-bench.sh [options of wanlab_pytorch_bench]
#
# Environment: WANLAB_BENCH_BUILD  build directory (default: build-bench)
#              WANLAB_BIN          a built `wanlab` to use instead of building one
# Needs Debian's python3-torch (scripts/setup.sh installs it). About a minute.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${WANLAB_BENCH_BUILD:-$repo/build-bench}"

# shellcheck source=bench/build-bench.sh
. "$repo/bench/build-bench.sh"
bench_prepare run-pytorch-bench.sh "$repo" "$build" wanlab_pytorch_bench
mkdir -p "$repo/bench/results/pytorch"
wanlab="${WANLAB_BIN:-$build/cli/wanlab}"
bench_down_leftover "$wanlab" ptbench
exec "$build/bench/wanlab_pytorch_bench" --wanlab "$wanlab" --examples "$repo/examples/pytorch" \
  --markdown "$repo/bench/results/pytorch/pytorch.md" "$@"
