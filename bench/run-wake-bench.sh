#!/usr/bin/env bash
# The wake-up benchmark in one command: how late an emulated GPU op ends on
# this machine, waited out on a plain Asio timer (the anchor) and through
# EmulatedGpu::compute (aimed early, spun), each with and without idle
# pollers in the CPUs' idle time (base::IdlePollers, as a real run), for op lengths
# of 6.5, 15 and 30 ms; prints the table and writes
# bench/results/harness/wake.md. No root, no network.
#
#   bench/run-wake-bench.sh [--op-ms 1,6.5,30] [--ops 300]
#
# Environment: WANLAB_BENCH_BUILD  build directory (default: build-bench)
# About a minute; run it on a machine otherwise idle, or say what else ran.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${WANLAB_BENCH_BUILD:-$repo/build-bench}"

# shellcheck source=bench/build-bench.sh
. "$repo/bench/build-bench.sh"
bench_configure "$repo" "$build"
bench_build run-wake-bench.sh "$build" wanlab_wake_bench
mkdir -p "$repo/bench/results/harness"
{
  echo "# Wake-up benchmark"
  echo
  echo "\`bench/run-wake-bench.sh${*:+ $*}\` on $(nproc) cores ($(uname -m)), $(date -u '+%Y-%m-%d %H:%M UTC'),"
  echo "commit $(git -C "$repo" rev-parse --short HEAD), load average $(cut -d' ' -f1-3 /proc/loadavg) at the start."
  echo
  "$build/bench/wanlab_wake_bench" "$@"
} | tee "$repo/bench/results/harness/wake.md"
