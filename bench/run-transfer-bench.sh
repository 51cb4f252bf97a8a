#!/usr/bin/env bash
# The transfer-model benchmark in one command: real transfer times
# of one message over the wanlab transport on an emulated two-DC link, beside
# the simulator's TCP model (harness/include/wanlab/harness/model/tcp_model.hpp), over a grid of rate,
# one-way delay, streams, message size and the channel's state. Builds what it
# needs, runs as root, prints the table and writes it to bench/results/transfer-model/transfer.md
# (and every cell to bench/results/transfer-model/transfer.csv).
#
#   bench/run-transfer-bench.sh [options of wanlab_transfer_bench]
#   e.g. --rates 100mbit,1gbit --delays 5,50,150 --streams 1,4,16 --sizes 1M,16M,256M
#
# Environment: WANLAB_BENCH_BUILD  build directory (default: build-bench)
#              WANLAB_BIN          a built `wanlab` to use instead of building one
# The grid below takes about 4 minutes. The grid's corners (5 Gbit/s, 1 GB;
# bench/results/transfer-model/transfer-corners-20261126.md) with --rates 5gbit --sizes
# 1M,16M,256M,1000M --max-seconds 12 and --rates 1gbit --sizes 1000M
# --max-seconds 12, and --markdown/--csv elsewhere, about 8 minutes more.
# Its one testbed is named bench-xfer and goes down however the benchmark ends.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${WANLAB_BENCH_BUILD:-$repo/build-bench}"

# shellcheck source=bench/build-bench.sh
. "$repo/bench/build-bench.sh"
bench_prepare run-transfer-bench.sh "$repo" "$build" wanlab_transfer_bench
exec "$build/bench/wanlab_transfer_bench" --wanlab "${WANLAB_BIN:-$build/cli/wanlab}" \
  --rates 100mbit,1gbit --delays 5,50,150 --streams 1,4,16 --sizes 1M,16M,256M --max-seconds 6 \
  --markdown "$repo/bench/results/transfer-model/transfer.md" --csv "$repo/bench/results/transfer-model/transfer.csv" "$@"
