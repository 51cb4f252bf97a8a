#!/usr/bin/env bash
# The emulator benchmark in one command: builds what it needs, runs as root,
# prints the tables and writes them as markdown to bench/results/emulator/emulator.md.
#
#   bench/run-emulator-bench.sh [--vm] [--only rtt,goodput,capacity,conformance,scale]
#
# --vm: the fq release path, which this project's machines' kernel lacks, in
# Debian's own kernel under QEMU (scripts/vm/run-in-vm.sh, TCG: no KVM), written
# to bench/results/emulator/emulator-fq-vm.md. Its figures include TCG's cost: every
# instruction of the guest's network stack is emulated on one emulated CPU.
#
# Environment: WANLAB_BENCH_BUILD  build directory (default: build-bench)
#              WANLAB_BIN          a built `wanlab` to use instead of building one
# Takes about 6 minutes. Every testbed it makes is named bench-*, and all of
# them go down when it ends, however it ends.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${WANLAB_BENCH_BUILD:-$repo/build-bench}"
results="$repo/bench/results/emulator/emulator.md"
vm=0
if [[ ${1:-} == --vm ]]; then
  vm=1
  shift
  results="$repo/bench/results/emulator/emulator-fq-vm.md"
fi
testbeds=(bench-rtt bench-gp bench-cap bench-conf bench-dc2 bench-dc16 bench-dc64)

if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null; then exec sudo --preserve-env=WANLAB_BENCH_BUILD,WANLAB_BIN "$0" "$@"; fi
  echo "run-emulator-bench.sh: needs root (namespaces, tc, iptables)" >&2
  exit 1
fi

# shellcheck source=bench/build-bench.sh
. "$repo/bench/build-bench.sh"
bench_configure "$repo" "$build"
bench_build run-emulator-bench.sh "$build" wanlab_emulator_bench
log="$build/bench-build.log"
wanlab="${WANLAB_BIN:-$build/cli/wanlab}"
if [[ -z "${WANLAB_BIN:-}" ]] && ! cmake --build "$build" --target wanlab >>"$log" 2>&1; then
  # Other parts of the tree may be mid-edit; an earlier wanlab from this build
  # directory still brings testbeds up the same way.
  [[ -x "$wanlab" ]] || { tail -n 30 "$log" >&2; echo "run-emulator-bench.sh: building wanlab failed (log: $log); set WANLAB_BIN=/path/to/wanlab" >&2; exit 1; }
  echo "warning: building wanlab failed (log: $log); using the one built $(date -r "$wanlab" '+%F %T')" >&2
fi

down_leftovers() {
  for name in "${testbeds[@]}"; do
    if [[ -d /run/wanlab/$name ]] || ls /run/netns 2>/dev/null | grep -q "^wanlab-$name\."; then
      "$wanlab" down "$name" >/dev/null 2>&1 || echo "warning: could not take $name down" >&2
    fi
  done
}
down_leftovers  # from a run that was killed outright
trap down_leftovers EXIT

mkdir -p "$(dirname "$results")"
# Nice -10: on a shared machine, other people's builds take less CPU from the
# emulated hosts' senders and receivers. The releaser runs SCHED_FIFO anyway.
bench=(nice -n -10 "$build/bench/wanlab_emulator_bench" --wanlab "$wanlab" --markdown "$results")
if [[ $vm -eq 1 ]]; then
  # The guest sees this machine's / read-only: only bench/results/emulator is written back.
  "$repo/scripts/vm/run-in-vm.sh" --timeout 3600 --share "$(dirname "$results")" -- "${bench[@]}" \
    --command "bench/run-emulator-bench.sh --vm${*:+ $*}" --note "fq release path in Debian's kernel under QEMU with TCG (no KVM), one emulated CPU on this machine: every instruction of the guest's network stack is emulated, so RTT errors and CPU-bound rates show TCG as much as the fq path; compare with bench/results/emulator/emulator.md (host kernel, nfqueue path) as ratios only" "$@"
else
  "${bench[@]}" "$@"
fi
