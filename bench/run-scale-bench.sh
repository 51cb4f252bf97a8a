#!/usr/bin/env bash
# The simulator's scale benchmark in one command: make_plan and
# one simulated iteration against the GPU count (1k, 10k, 100k over 16 DCs)
# and the DC count (4, 16, 64 at 10k GPUs), with the growth from row to row;
# prints the tables and writes bench/results/scale/scale.md. No root, no network:
# the simulator only. One core (taskset), so the figures hold for one core.
#
#   bench/run-scale-bench.sh [--quick]     --quick: without the 100k point
#
# Environment: WANLAB_BENCH_BUILD  build directory (default: build-bench)
# Takes under a minute on an idle core (the 100k point most of it).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${WANLAB_BENCH_BUILD:-$repo/build-bench}"

# shellcheck source=bench/build-bench.sh
. "$repo/bench/build-bench.sh"
bench_configure "$repo" "$build"
bench_build run-scale-bench.sh "$build" wanlab_scale_bench
mkdir -p "$repo/bench/results/scale"
{
  echo "# Simulator scale benchmark"
  echo
  echo "\`bench/run-scale-bench.sh${*:+ $*}\` on $(nproc) cores ($(uname -m)), one core used, $(date -u +%Y-%m-%d)."
  taskset -c 0 "$build/bench/wanlab_scale_bench" "$@"
} | tee "$repo/bench/results/scale/scale.md"
