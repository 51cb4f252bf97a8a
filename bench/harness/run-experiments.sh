#!/bin/bash
# The harness experiments, real runs over the emulated WAN (root), each beside
# the simulator's figure for the same plan, and the tables they make.
#
#   bench/harness/run-experiments.sh                 everything (about 15-20 minutes on 2 cores)
#   ONLY=sweep bench/harness/run-experiments.sh      one part: sweep | threedc
#   ONLY=plots OUT=DIR bench/harness/run-experiments.sh  redraw DIR/slowdown.svg from DIR/slowdown.csv
#   SIMULATE_ONLY=1 bench/harness/run-experiments.sh the simulator only (seconds, no root)
#
# Environment: WANLAB (the binary, default build/cli/wanlab), OUT (where the
# runs go, default bench/results/harness/DATE), ITERATIONS (3), SCALE (0.1),
# SKIP (run names left out, e.g. SKIP="3dc-dp-across-dc": their rows read "-"),
# TRAIN_OPTIONS (added to every real run's `wanlab train`, e.g. "--idle-poll=on").
#
# 1. Latency sweep: a 2-DC job (pp 2 x dp 2, 1F1B, one TCP stream per
#    transfer) with its stages across the DCs (pp-across-dc) or its replicas
#    across them (dp-across-dc), as the one-way delay between the DCs grows
#    (0, 10, 20, 40, 80 ms at 1 Gbit/s), against the same job with no WAN
#    (the "WAN" as fast as the network inside a DC: 50 us, 10 Gbit/s).
# 2. Three DCs (scenarios/three-dc.toml, the model of
#    scenarios/experiments/atlas-3dc.toml): Atlas against GPipe, 1F1B and
#    DP-across-DC, and each Atlas element switched on alone on top of the 1F1B
#    baseline (multiple streams, temporal sharing, Atlas's DC placement).
#
# Every run keeps results.json, trace.json, timeline.svg and its log under
# $OUT/<run>/; the simulated twin under $OUT/<run>-sim/. The tables put the
# measured iteration beside the simulated one (ratio = measured / simulated);
# under the three-DC tables, the agreement targets: how many runs are within 10%
# of the simulator and the worst, and temporal sharing's measured gain against
# the simulated one.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=results-csv.sh source-path=SCRIPTDIR
. "$here/results-csv.sh"
WANLAB=${WANLAB:-$root/build/cli/wanlab}
OUT=${OUT:-$root/bench/results/harness/$(date +%Y%m%d-%H%M%S)}
ITERATIONS=${ITERATIONS:-3}
SCALE=${SCALE:-0.1}
ONLY=${ONLY:-all}
SIMULATE_ONLY=${SIMULATE_ONLY:-0}
SKIP=${SKIP:-}
read -ra train_options <<< "${TRAIN_OPTIONS:-}"

[ -x "$WANLAB" ] || { echo "run-experiments.sh: $WANLAB is not built (set WANLAB=...)" >&2; exit 2; }
if [ "$SIMULATE_ONLY" != 1 ] && [ "$ONLY" != plots ] && [ "$(id -u)" != 0 ]; then
  echo "run-experiments.sh: real runs need root (or SIMULATE_ONLY=1)" >&2
  exit 2
fi
mkdir -p "$OUT/files"
echo "results in $OUT; real runs with: ${TRAIN_OPTIONS:-defaults}"

# run NAME EXPERIMENT [OPTIONS...]: the real run (unless SIMULATE_ONLY) and the simulated one.
run() {
  local name=$1 experiment=$2
  shift 2
  case " $SKIP " in *" $name "*) echo "  $name: skipped (SKIP)"; return 0 ;; esac
  "$WANLAB" train "$experiment" "$@" --simulate --quiet --out "$OUT/$name-sim" > "$OUT/$name-sim.log" 2>&1 ||
    { echo "  $name: simulation failed, see $OUT/$name-sim.log" >&2; return 0; }
  [ "$SIMULATE_ONLY" = 1 ] && return 0
  local started=$SECONDS
  if "$WANLAB" train "$experiment" "$@" "${train_options[@]}" --out "$OUT/$name" > "$OUT/$name.log" 2>&1; then
    echo "  $name: $(iteration_s "$name") s per iteration ($((SECONDS - started)) s)"
  else
    echo "  $name: FAILED, see $OUT/$name.log" >&2
  fi
}

# iteration_s RUN: its mean iteration time in seconds, to the millisecond.
iteration_s() {
  local runs
  runs=$(results_csv "$1")
  python3 - "$runs" <<'EOF'
import csv, math, sys
r = next(csv.DictReader(sys.argv[1].splitlines()), None)
# compare left the run out (its emulation fell behind, and said so above).
print("-" if r is None else f"{math.floor(float(r['iteration_s']) * 1000 + 0.5) / 1000:.15g}")
EOF
}

# table TITLE BASELINE_RUN RUN...: measured and simulated side by side.
table() {
  local title=$1 baseline=$2 runs
  shift 2
  # shellcheck disable=SC2046  # run names have no spaces
  runs=$(results_csv $(with_sims "$baseline" "$@"))
  python3 - "$runs" "$title" "$baseline" "$@" <<'EOF'
import csv, os, sys
title, baseline, runs = sys.argv[2], sys.argv[3], sys.argv[4:]
rows = {os.path.basename(r["label"]): r for r in csv.DictReader(sys.argv[1].splitlines())}
def figure(r, column, scale=1):
    return scale * float(r[column]) if r else None
def fmt(value, spec, unit=""):
    return "-" if value is None else format(value, spec) + unit
base, base_sim = rows.get(baseline), rows.get(baseline + "-sim")
print(f"\n{title}\n")
print(f"| run | iteration (s) | simulated (s) | ratio | GPU util | simulated util | bubble | WAN MB/iter (as sent) | vs {baseline} | simulated vs {baseline} | runtime |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
for name in runs:
    r, s = rows.get(name), rows.get(name + "-sim")
    it, sit = figure(r, "iteration_s"), figure(s, "iteration_s")
    ratio = it / sit if r and s else None
    rel = figure(base, "iteration_s") / it if r and base else None
    srel = figure(base_sim, "iteration_s") / sit if s and base_sim else None
    util, sutil = figure(r, "utilization", 100), figure(s, "utilization", 100)
    bubble = figure(r, "bubble", 100)
    wan = figure(r or s, "wan_mb_per_iteration")
    print(f"| {name} | {fmt(it, '.3f')} | {fmt(sit, '.3f')} | {fmt(ratio, '.2f')} | {fmt(util, '.1f', '%')} | {fmt(sutil, '.1f', '%')} "
          f"| {fmt(bubble, '.1f', '%')} | {fmt(wan, '.1f')} | {fmt(rel, '.2f', 'x')} | {fmt(srel, '.2f', 'x')} "
          f"| {r['runtime'] if r else '-'} |")
EOF
}

# targets RUN...: the agreement targets over the three-DC runs: measured within
# 10% of the simulator in every run (the worst named), temporal sharing's real
# gain at least 70% of the simulated one on Atlas, and never slower than
# sharing off.
targets() {
  local runs
  # shellcheck disable=SC2046  # run names have no spaces
  runs=$(results_csv $(with_sims "$@"))
  python3 - "$runs" "$@" <<'EOF'
import csv, os, sys
runs = sys.argv[2:]
rows = {os.path.basename(r["label"]): r for r in csv.DictReader(sys.argv[1].splitlines())}
def mean(name):
    return float(rows[name]["iteration_s"]) if name in rows else None
ratios = {n: mean(n) / mean(n + "-sim") for n in runs if mean(n) and mean(n + "-sim")}
if not ratios:
    sys.exit(0)
within = [n for n, r in ratios.items() if abs(r - 1) <= 0.10]
worst = max(ratios, key=lambda n: abs(ratios[n] - 1))
print(f"\nAgreement: {len(within)} of {len(ratios)} runs within 10% of the simulator (target: all); "
      f"worst {worst} at {ratios[worst]:.2f}x.\n")
def gain(off, on):
    m_off, m_on, s_off, s_on = mean(off), mean(on), mean(off + "-sim"), mean(on + "-sim")
    if None in (m_off, m_on, s_off, s_on):
        return
    real, sim = m_off - m_on, s_off - s_on
    share = f"{100 * real / sim:.0f}% of the simulated gain" if sim > 0 else "no simulated gain"
    print(f"- temporal sharing, {off} -> {on}: {m_off:.3f} -> {m_on:.3f} s measured ({m_on / m_off:.3f}x), "
          f"{s_off:.3f} -> {s_on:.3f} s simulated: {share}")
gain("3dc-atlas+no-sharing", "3dc-atlas")
gain("3dc-atlas+no-sharing-tuned", "3dc-atlas-tuned")
gain("3dc-1f1b", "3dc-1f1b+sharing")
gain("3dc-1f1b+streams", "3dc-1f1b+streams+sharing")
print("\n(Targets: on Atlas the measured gain at least 70% of the simulated; sharing never slower, every x at most 1.)")
EOF
}

# slowdown_table: the sweep, as slowdown against the no-WAN job per placement;
# the ratios also into $OUT/slowdown.csv, which slowdown_plot draws.
slowdown_table() {
  local runs placement delay
  # shellcheck disable=SC2046  # run names have no spaces
  runs=$(results_csv $(for placement in pp dp; do for delay in "${sweep_delays[@]}"; do
    with_sims "sweep-$placement-$delay"; done; done))
  python3 - "$runs" "$OUT" "${sweep_delays[@]}" <<'EOF'
import csv, os, sys
out, delays = sys.argv[2], sys.argv[3:]
rows = {os.path.basename(r["label"]): r for r in csv.DictReader(sys.argv[1].splitlines())}
ratios = []
def it(name):
    return float(rows[name]["iteration_s"]) if name in rows else None
def cell(name, base):
    a, b = it(name), it(base)
    return "-" if a is None or b is None else f"{a:.3f} s ({a / b:.2f}x)"
print("\nSlowdown against the same job with no WAN: measured (simulated), iteration time and ratio\n")
print("| one-way delay | pp-across-dc | pp-across-dc simulated | dp-across-dc | dp-across-dc simulated |")
print("|---|---:|---:|---:|---:|")
for delay in delays:
    label = "no WAN" if delay == "nowan" else f"{delay} ms"
    row = [cell(f"sweep-{p}-{delay}{sim}", f"sweep-{p}-nowan{sim}") for p in ("pp", "dp") for sim in ("", "-sim")]
    print(f"| {label} | " + " | ".join(row) + " |")
    if delay != "nowan":
        ratios.append([delay] + [c.split("(")[1].rstrip("x)") if "(" in c else "-" for c in row])
with open(os.path.join(out, "slowdown.csv"), "w") as f:
    f.write("delay_ms,pp_across_dc,pp_across_dc_sim,dp_across_dc,dp_across_dc_sim\n")
    f.writelines(",".join(r) + "\n" for r in ratios)
EOF
}

slowdown_plot() {
  "$WANLAB" plot "$OUT/slowdown.csv" --x delay_ms --y pp_across_dc,pp_across_dc_sim,dp_across_dc,dp_across_dc_sim \
    --ymin 0 --title "Slowdown against the same job with no WAN (2 DCs, pp 2 x dp 2, 1F1B)" \
    --xlabel "one-way delay between the DCs (ms)" --ylabel "iteration time / no WAN" --out "$OUT/slowdown.svg"
}

# The sweep's one-way delays in ms; nowan: the job with no WAN.
sweep_delays=(nowan 0 10 20 40 80)

sweep() {
  echo "latency sweep (2 DCs, pp 2 x dp 2, 1F1B, 1 stream, scale $SCALE, $ITERATIONS iterations)"
  for delay in "${sweep_delays[@]}"; do
    local link
    if [ "$delay" = nowan ]; then link=$'delay = "50us"\nrate = "10gbit"'; else link="delay = \"${delay}ms\""; fi
    cat > "$OUT/files/sweep-$delay.toml" <<EOF
# Two DCs, one-way delay $delay between them (generated by run-experiments.sh).
name = "sweep"
[defaults]
rate = "1gbit"
queue = "1bdp"
[intra_dc]
delay = "50us"
rate = "10gbit"
[host]
tcp_congestion = "cubic"
tcp_wmem_max = "4mb"
tcp_rmem_max = "6mb"
[[dc]]
name = "east"
hosts = 2
[[dc]]
name = "west"
hosts = 2
[[link]]
between = ["east", "west"]
$link
EOF
    cat > "$OUT/files/sweep-job-$delay.toml" <<EOF
# 8 layers, hidden 1024: 2 MB activations, 200 MB of gradients per stage at
# full size; 20/40 ms forward/backward per microbatch (generated by run-experiments.sh).
name = "sweep-$delay"
testbed = "sweep-$delay.toml"
schedule = "1f1b"
iterations = $ITERATIONS
scale = $SCALE
[model]
layers = 8
hidden = 1024
seq_len = 1024
microbatches = 8
[parallel]
pp = 2
dp = 2
[compute]
forward_ms = 20
backward_ms = 40
[gpus]
east = 2
west = 2
EOF
    for placement in pp dp; do
      run "sweep-$placement-$delay" "$OUT/files/sweep-job-$delay.toml" --placement "$placement-across-dc"
    done
  done
  slowdown_table | tee "$OUT/sweep.md"
  slowdown_plot
}

threedc() {
  local atlas=$root/scenarios/experiments/atlas-3dc.toml
  local common=(--scale "$SCALE" --iterations "$ITERATIONS")
  echo "three DCs (atlas-3dc.toml's model, scale $SCALE, $ITERATIONS iterations)"
  run 3dc-1f1b "$atlas" "${common[@]}" --pipeline 1f1b
  run 3dc-gpipe "$atlas" "${common[@]}" --pipeline gpipe
  run 3dc-1f1b+streams "$atlas" "${common[@]}" --pipeline 1f1b --streams 8
  run 3dc-1f1b+sharing "$atlas" "${common[@]}" --pipeline 1f1b --temporal-sharing on
  run 3dc-1f1b+placement "$atlas" "${common[@]}" --pipeline 1f1b --placement atlas
  run 3dc-1f1b+streams+sharing "$atlas" "${common[@]}" --pipeline 1f1b --streams 8 --temporal-sharing on
  run 3dc-atlas+no-sharing "$atlas" "${common[@]}" --temporal-sharing off
  run 3dc-atlas "$atlas" "${common[@]}"
  # The same two Atlas runs on hosts that keep their congestion windows
  # across idle periods ([host] tcp_slow_start_after_idle = false).
  sed 's/^tcp_rmem_max = .*/&\ntcp_slow_start_after_idle = false/' "$root/scenarios/three-dc.toml" > "$OUT/files/three-dc-tuned.toml"
  sed "s#^testbed = .*#testbed = \"$OUT/files/three-dc-tuned.toml\"#" "$atlas" > "$OUT/files/atlas-3dc-tuned.toml"
  run 3dc-atlas-tuned "$OUT/files/atlas-3dc-tuned.toml" "${common[@]}"
  run 3dc-atlas+no-sharing-tuned "$OUT/files/atlas-3dc-tuned.toml" "${common[@]}" --temporal-sharing off
  # Its gradients cross the WAN: about 100 s per iteration; two iterations.
  run 3dc-dp-across-dc "$atlas" --scale "$SCALE" --iterations 2 --pipeline 1f1b --placement dp-across-dc
  {
    table "Atlas and baselines on three DCs (speedup against 1F1B)" 3dc-1f1b \
      3dc-gpipe 3dc-1f1b 3dc-dp-across-dc 3dc-atlas
    table "Atlas's elements, each alone on top of the 1F1B baseline (pp-across-dc, 1 stream, no sharing)" 3dc-1f1b \
      3dc-1f1b 3dc-1f1b+streams 3dc-1f1b+sharing 3dc-1f1b+placement 3dc-1f1b+streams+sharing 3dc-atlas+no-sharing 3dc-atlas
    table "Atlas with and without temporal sharing on hosts that keep their windows when idle" 3dc-1f1b \
      3dc-atlas+no-sharing-tuned 3dc-atlas-tuned
    targets 3dc-gpipe 3dc-1f1b 3dc-dp-across-dc 3dc-1f1b+streams 3dc-1f1b+sharing 3dc-1f1b+placement \
      3dc-1f1b+streams+sharing 3dc-atlas+no-sharing 3dc-atlas 3dc-atlas-tuned 3dc-atlas+no-sharing-tuned
  } | tee "$OUT/threedc.md"
}

case "$ONLY" in
  all) sweep; threedc ;;
  sweep) sweep ;;
  plots) slowdown_plot ;;
  threedc) threedc ;;
  *) echo "run-experiments.sh: ONLY must be all, sweep, threedc or plots" >&2; exit 2 ;;
esac
