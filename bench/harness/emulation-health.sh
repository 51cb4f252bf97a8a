#!/bin/bash
# Whether a run's emulation verdict tells the truth: one real training run on
# an idle machine, then the same run beside 1, 2, ... busy-looping processes
# (CPU hogs), each against the idle run. A run whose iteration is more than 2%
# slower than idle had an emulation that fell behind; the verdict should say
# so, and should not say so of the runs that kept their time. About 30-40 s a
# run on 2 cores.
#
#   bench/harness/emulation-health.sh
#
# Environment: WANLAB (the binary, default build/cli/wanlab), OUT (default
# bench/results/harness/health-DATE), EXPERIMENT (default
# scenarios/experiments/atlas-3dc.toml), ITERATIONS (3), HOGS (the loads, "0 1 2 4"; a load
# given again runs again, as hogs-N.2, hogs-N.3, ...: HOGS="0 0 0" is three idle runs).
# It reads the runs with `wanlab compare --csv` (docs/REPORTS.md), all of them:
# the verdict is what it measures, so it does not leave out runs that fell behind.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
WANLAB=${WANLAB:-$root/build/cli/wanlab}
OUT=${OUT:-$root/bench/results/harness/health-$(date +%Y%m%d-%H%M%S)}
EXPERIMENT=${EXPERIMENT:-$root/scenarios/experiments/atlas-3dc.toml}
ITERATIONS=${ITERATIONS:-3}
HOGS=${HOGS:-0 1 2 4}

[ -x "$WANLAB" ] || { echo "emulation-health.sh: $WANLAB is not built (set WANLAB=...)" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "emulation-health.sh: real runs need root" >&2; exit 2; }
mkdir -p "$OUT"
echo "results in $OUT; $(nproc) CPUs; load before: $(cut -d' ' -f1-3 /proc/loadavg)"

hogs=()
stop_hogs() {
  [ ${#hogs[@]} -eq 0 ] || kill "${hogs[@]}" 2> /dev/null || true
  [ ${#hogs[@]} -eq 0 ] || wait "${hogs[@]}" 2> /dev/null || true
  hogs=()
}
trap stop_hogs EXIT

runs=()
declare -A times_run=()
for count in $HOGS; do
  times_run[$count]=$((${times_run[$count]:-0} + 1))
  name="hogs-$count"
  [ "${times_run[$count]}" -eq 1 ] || name="$name.${times_run[$count]}"
  for ((i = 0; i < count; i++)); do
    (while :; do :; done) &
    hogs+=($!)
  done
  started=$SECONDS
  if "$WANLAB" train "$EXPERIMENT" --iterations "$ITERATIONS" --quiet --out "$OUT/$name" > "$OUT/$name.log" 2>&1; then
    echo "  $name: $(tail -n 1 "$OUT/$name.log") ($((SECONDS - started)) s)"
    runs+=("$OUT/$name")
  else
    echo "  $name: FAILED, see $OUT/$name.log" >&2
  fi
  stop_hogs
done
[ ${#runs[@]} -gt 0 ] || exit 1

"$WANLAB" compare --csv "${runs[@]}" > "$OUT/runs.csv"
python3 - "$OUT/runs.csv" > "$OUT/health.md" <<'EOF'
import csv, os, sys
rows = list(csv.DictReader(open(sys.argv[1])))
idle = next((r for r in rows if os.path.basename(r["label"]) == "hogs-0"), rows[0])
base = float(idle["iteration_s"])
def pct(x): return f"{100 * float(x):.1f}%" if x != "" else "-"
print("| run | iteration (s) | vs idle | wake-ups late, share of compute | wake-up p99 (ms) | CPU mean | CPU >= 95% | releaser verdicts over its limit | verdict |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
slow = flagged = slow_flagged = 0
for r in rows:
    it = float(r["iteration_s"])
    change = it / base - 1
    kept = r["emulation_kept_up"] == "true"
    slow += change > 0.02
    flagged += not kept
    slow_flagged += change > 0.02 and not kept
    print(f"| {os.path.basename(r['label'])} | {it:.3f} | {100 * change:+.1f}% | {pct(r['wake_late_share'])} "
          f"| {float(r['wake_late_p99_ms']):.2f} | {pct(r['cpu_busy_mean'])} | {pct(r['cpu_saturated_share'])} "
          f"| {pct(r['releaser_late_share'])} | {'kept up' if kept else '**fell behind**'} |")
print(f"\nRuns more than 2% slower than idle: {slow}, of which the verdict flagged {slow_flagged}; "
      f"runs flagged: {flagged} (of {len(rows)}).")
EOF
cat "$OUT/health.md"
