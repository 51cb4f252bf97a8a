#!/usr/bin/env bash
# The schedule benchmark in one command: goodput against a
# square-wave rate trace per 100 ms window at 100 Mbit/s, 1 Gbit/s and
# 5 Gbit/s; prints the table, writes bench/results/trace/trace.md, and every
# window of each rate in bench/results/trace/trace-RATE.csv with its plot,
# trace-RATE.svg (configured payload rate against measured goodput).
#
#   bench/run-trace-bench.sh [--rates 100mbit,1gbit] [--seconds N]
#                            [--mahimahi DIR [--mahimahi-user USER]]
#
# --mahimahi: Mahimahi's own replay of the same square wave beside each rate
# (mm-delay and mm-link built in DIR; run as USER, default nobody), its
# windows in bench/results/trace/trace-mahimahi-RATE.csv and .svg.
# Environment: WANLAB_BENCH_BUILD  build directory (default: build-bench)
#              WANLAB_BIN          a built `wanlab` to use instead of building one
# Takes about 20 s a rate. Its testbed (bench-trace) goes down however it ends.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${WANLAB_BENCH_BUILD:-$repo/build-bench}"

# shellcheck source=bench/build-bench.sh
. "$repo/bench/build-bench.sh"
bench_prepare run-trace-bench.sh "$repo" "$build" wanlab_trace_bench
mkdir -p "$repo/bench/results/trace"
wanlab="${WANLAB_BIN:-$build/cli/wanlab}"
bench_down_leftover "$wanlab" bench-trace
results="$repo/bench/results/trace"
nice -n -10 "$build/bench/wanlab_trace_bench" --wanlab "$wanlab" --markdown "$results/trace.md" \
  --csv-dir "$results" --command "bench/run-trace-bench.sh${*:+ $*}" "$@"
for csv in "$results"/trace-*.csv; do
  rate=$(basename "$csv" .csv)
  rate=${rate#trace-}
  "$wanlab" plot "$csv" --x time_s --y configured_mbit,measured_mbit \
    --title "Square wave at $rate: configured and measured, per 100 ms" \
    --xlabel "seconds" --ylabel "Mbit/s" --ymin 0 --out "${csv%.csv}.svg"
done
