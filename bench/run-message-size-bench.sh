#!/usr/bin/env bash
# The message-size benchmark in one command: brings up the
# scenarios/gcp-cen-west.toml preset (GCP us-central1 <-> us-west1: one
# rate, one delay), times messages of 1 MiB to 1 GiB over the wanlab transport,
# fresh and warm, and prints them beside Sailor's profile of the same pair
# (GB/s against message size) with the ratios, and against an anchor measured
# in the same run (what the emulated link carries on this machine). Builds what
# it needs, runs as root, writes the table to bench/results/transport/message-size.md.
#
#   bench/run-message-size-bench.sh [options of wanlab_message_size_bench]
#   e.g. --sizes 1M,16M,256M --streams 4 --name i14msg
#
# Environment: WANLAB_BENCH_BUILD  build directory (default: build-bench)
#              WANLAB_BIN          a built `wanlab` to use instead of building one
# About 2 minutes. Its one testbed (bench-msize unless --name says otherwise)
# goes down however the benchmark ends.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${WANLAB_BENCH_BUILD:-$repo/build-bench}"

# shellcheck source=bench/build-bench.sh
. "$repo/bench/build-bench.sh"
bench_prepare run-message-size-bench.sh "$repo" "$build" wanlab_message_size_bench
wanlab="${WANLAB_BIN:-$build/cli/wanlab}"
name=bench-msize
args=("$@")
for ((i = 0; i + 1 < ${#args[@]}; i++)); do
  [[ ${args[i]} == --name ]] && name=${args[i + 1]}
done
bench_down_leftover "$wanlab" "$name"
mkdir -p "$repo/bench/results/transport"
cd "$repo"
exec "$build/bench/wanlab_message_size_bench" --wanlab "$wanlab" \
  --scenario scenarios/gcp-cen-west.toml --markdown bench/results/transport/message-size.md "$@"
