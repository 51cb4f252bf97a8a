#!/usr/bin/env bash
# The transport benchmark in one command: builds `wanlab`, brings up
# an emulated two-DC link and measures, for a grid of delay, rate, loss,
# per-flow cap, congestion control and stream count, the goodput of
# `wanlab perf -P N` against `iperf3 -P N` and against one big-buffer BBR
# stream, the time to deliver one 1 GiB message, and CPU per GB. Prints the
# tables and writes them to bench/results/transport/transport.md.
#
#   bench/transport/run-transport-bench.sh [--quick] [--repeats K]
#
# Environment: WANLAB_TBENCH_BUILD  build directory (default: build-tbench)
#              WANLAB_BIN           a built `wanlab` to use instead of building one
# Takes about 20 minutes (--quick: about 2). Needs root and iperf3. Its testbed
# is named tbench-run; it goes down when the script ends, however it ends.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${WANLAB_TBENCH_BUILD:-$repo/build-tbench}"
results="$repo/bench/results/transport/transport.md"
testbed=tbench-run

if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null; then exec sudo --preserve-env=WANLAB_TBENCH_BUILD,WANLAB_BIN "$0" "$@"; fi
  echo "run-transport-bench.sh: needs root (namespaces, tc, iptables)" >&2
  exit 1
fi
command -v iperf3 >/dev/null || { echo "run-transport-bench.sh: iperf3 is not installed (apt-get install iperf3)" >&2; exit 1; }

wanlab="${WANLAB_BIN:-$build/cli/wanlab}"
if [[ -z "${WANLAB_BIN:-}" ]]; then
  if [[ ! -f "$build/CMakeCache.txt" ]]; then
    generator=()
    command -v ninja >/dev/null && generator=(-G Ninja)
    cmake -S "$repo" -B "$build" "${generator[@]}" -DWANLAB_WERROR=ON >/dev/null
  fi
  log="$build/tbench-build.log"
  if ! cmake --build "$build" --target wanlab >"$log" 2>&1; then
    # Other parts of the tree may be mid-edit; an earlier wanlab from this
    # build directory measures the same transport.
    [[ -x "$wanlab" ]] || { tail -n 30 "$log" >&2; echo "run-transport-bench.sh: building wanlab failed (log: $log); set WANLAB_BIN=/path/to/wanlab" >&2; exit 1; }
    echo "warning: building wanlab failed (log: $log); using the one built $(date -r "$wanlab" '+%F %T')" >&2
  fi
fi
[[ -x "$wanlab" ]] || { echo "run-transport-bench.sh: $wanlab is not an executable" >&2; exit 1; }

# The Python driver downs its testbed itself; this covers it being killed outright.
down_leftover() {
  if [[ -d /run/wanlab/$testbed ]] || ls /run/netns 2>/dev/null | grep -q "^wanlab-$testbed\."; then
    "$wanlab" down "$testbed" >/dev/null 2>&1 || echo "warning: could not take $testbed down" >&2
  fi
}
trap down_leftover EXIT

raw="$build/transport-bench-raw.json"
for arg in "$@"; do
  # a smoke test must not replace the real results
  if [[ $arg == --quick ]]; then results="$build/transport-quick.md" raw="$build/transport-quick-raw.json"; fi
done
mkdir -p "$(dirname "$results")" "$(dirname "$raw")"
/usr/bin/python3 "$repo/bench/transport/transport_bench.py" --wanlab "$wanlab" --name "$testbed" \
  --markdown "$results" --raw "$raw" "$@"
echo "written: $results (raw runs: $raw)" >&2
