#!/usr/bin/env bash
# The soak benchmark in one command: a three-DC testbed
# (scenarios/three-dc.toml, brought up as `soak`) under mixed load — perf
# streams on every directed DC pair, a `wanlab set` every second, host
# processes started and killed — then `wanlab down` and a search for
# leftovers. Prints a row every 10 s and the verdicts; writes
# bench/results/soak/soak.md and bench/results/soak/soak.csv.
#
#   bench/run-soak-bench.sh [--minutes N] [other options of wanlab_soak_bench]
#
# Environment: WANLAB_BENCH_BUILD  build directory (default: build-bench)
#              WANLAB_BIN          a built `wanlab` to use instead of building one
# Takes the minutes asked for (default 10) plus about a minute. Its testbed
# goes down however the benchmark ends. Exits 0 when every verdict passes,
# 3 when one fails.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${WANLAB_BENCH_BUILD:-$repo/build-bench}"

# shellcheck source=bench/build-bench.sh
. "$repo/bench/build-bench.sh"
bench_prepare run-soak-bench.sh "$repo" "$build" wanlab_soak_bench
mkdir -p "$repo/bench/results/soak"
wanlab="${WANLAB_BIN:-$build/cli/wanlab}"
bench_down_leftover "$wanlab" soak
exec "$build/bench/wanlab_soak_bench" --wanlab "$wanlab" --scenario "$repo/scenarios/three-dc.toml" --name soak \
  --markdown "$repo/bench/results/soak/soak.md" --csv "$repo/bench/results/soak/soak.csv" \
  --command "bench/run-soak-bench.sh${*:+ $*}" "$@"
