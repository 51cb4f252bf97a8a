#!/bin/bash
# BubbleTea's experiments: prefill of inference requests in the training
# bubbles, measured over the emulated WAN and simulated, with a CSV, a
# Markdown table and an SVG plot each.
#
#   bench/harness/bubbletea.sh                   everything (real runs need root; about 20 minutes on 2 cores)
#   ONLY=latency bench/harness/bubbletea.sh      one part: latency | threedc | load | saturate
#   ONLY=plots OUT=DIR bench/harness/bubbletea.sh  redraw DIR's plots from its CSVs (`wanlab plot`)
#   SIMULATE_ONLY=1 bench/harness/bubbletea.sh   the simulator only (seconds, no root)
#
# Environment: WANLAB (default build/cli/wanlab), OUT (default
# bench/results/bubbletea/bubbletea-DATE), ITERATIONS (4).
#
# 1. latency: utilization against the one-way delay between two DCs (0-80 ms),
#    a 1F1B job with its stages across the DCs, with and without BubbleTea.
# 2. threedc: scenarios/experiments/bubbletea-3dc.toml — Atlas + BubbleTea
#    against Atlas alone, 1F1B alone and with BubbleTea, and GPipe (larger
#    bubbles) with and without, for contrast.
# 3. load: bubbletea-3dc with Poisson arrivals at rising rates, up to
#    saturation: utilization, prefill tokens/s and TTFT against the rate.
# 4. saturate: scenarios/experiments/bubbletea-3dc-local.toml (decode in every
#    training DC, 40 requests/s) against Atlas alone: its targets
#    (utilization >= 90%, iteration time within 1% of prefill off, TTFT p99
#    within the SLO), measured and simulated, as ratios.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=results-csv.sh source-path=SCRIPTDIR
. "$here/results-csv.sh"
WANLAB=${WANLAB:-$root/build/cli/wanlab}
OUT=${OUT:-$root/bench/results/bubbletea/bubbletea-$(date +%Y%m%d-%H%M%S)}
ITERATIONS=${ITERATIONS:-4}
ONLY=${ONLY:-all}
SIMULATE_ONLY=${SIMULATE_ONLY:-0}

[ -x "$WANLAB" ] || { echo "bubbletea.sh: $WANLAB is not built (set WANLAB=...)" >&2; exit 2; }
if [ "$SIMULATE_ONLY" != 1 ] && [ "$ONLY" != plots ] && [ "$(id -u)" != 0 ]; then
  echo "bubbletea.sh: real runs need root (or SIMULATE_ONLY=1)" >&2
  exit 2
fi
mkdir -p "$OUT/files"
echo "results in $OUT"

# The plots, each from its CSV in $OUT (also ONLY=plots, for results already there).
latency_plot() {
  "$WANLAB" plot "$OUT/latency.csv" --x delay_ms --y training_only,with_bubbletea,training_only_sim,with_bubbletea_sim \
    --percent --ymin 0 --title "GPU utilization vs WAN latency (2 DCs, 1F1B)" --xlabel "one-way delay between the DCs (ms)" \
    --ylabel "mean GPU utilization" --out "$OUT/latency.svg"
}

ttft_plot() {
  local name=$1
  "$WANLAB" plot "$OUT/$name-ttft.csv" --x percentile --y ttft_s --ymin 0 --title "TTFT distribution ($name)" \
    --xlabel "share of served requests (%)" --ylabel "time to first token (s)" --out "$OUT/$name-ttft.svg" || true
}

load_plots() {
  "$WANLAB" plot "$OUT/load.csv" --x rate_per_s --y util_with_prefill,util_with_prefill_sim --percent --ymin 0 \
    --title "GPU utilization vs request rate (Atlas + BubbleTea, 3 DCs)" --xlabel "requests per second" \
    --ylabel "mean GPU utilization" --out "$OUT/load-utilization.svg"
  "$WANLAB" plot "$OUT/load.csv" --x rate_per_s --y ttft_p50_s,ttft_p99_s,ttft_p50_s_sim,ttft_p99_s_sim --ymin 0 \
    --title "TTFT vs request rate (Atlas + BubbleTea, 3 DCs)" --xlabel "requests per second" \
    --ylabel "time to first token (s)" --out "$OUT/load-ttft.svg"
}

plots() {
  [ -f "$OUT/latency.csv" ] && latency_plot
  [ -f "$OUT/load.csv" ] && load_plots
  for csv in "$OUT"/*-ttft.csv; do
    [ -f "$csv" ] && ttft_plot "$(basename "$csv" -ttft.csv)"
  done
  return 0
}

# run NAME EXPERIMENT [OPTIONS...]: the simulated run, then the real one (unless SIMULATE_ONLY).
run() {
  local name=$1 experiment=$2
  shift 2
  "$WANLAB" train "$experiment" --iterations "$ITERATIONS" "$@" --simulate --quiet --out "$OUT/$name-sim" \
    > "$OUT/$name-sim.log" 2>&1 || { echo "  $name: simulation failed, see $OUT/$name-sim.log" >&2; return 0; }
  [ "$SIMULATE_ONLY" = 1 ] && return 0
  local started=$SECONDS
  if "$WANLAB" train "$experiment" --iterations "$ITERATIONS" "$@" --out "$OUT/$name" > "$OUT/$name.log" 2>&1; then
    echo "  $name: done ($((SECONDS - started)) s)"
  else
    echo "  $name: FAILED, see $OUT/$name.log" >&2
  fi
}

# csv NAME... > FILE: one row per run (measured and simulated columns).
csv() {
  local runs
  # shellcheck disable=SC2046  # run names have no spaces
  runs=$(results_csv $(with_sims "$@"))
  python3 - "$runs" "$@" <<'EOF'
import csv, os, sys
names = sys.argv[2:]
rows = {os.path.basename(r["label"]): r for r in csv.DictReader(sys.argv[1].splitlines())}
def figures(r):
    if r is None:
        return ["-"] * 7
    p = r["served"] != ""  # ran with prefill
    served = p and int(r["served"]) > 0
    util = f"{float(r['utilization']):.4f}"
    return [f"{float(r['iteration_s']):.4f}", util,
            f"{float(r['utilization_with_prefill']):.4f}" if p else util,
            f"{float(r['prefill_tokens_per_s']):.1f}" if p else "0",
            f"{float(r['ttft_p50_s']):.3f}" if served else "-",
            f"{float(r['ttft_p99_s']):.3f}" if served else "-",
            f"{r['served']}/{r['rejected']}/{r['failed']}" if p else "-"]
cols = ["iteration_s", "training_util", "util_with_prefill", "prefill_tokens_per_s", "ttft_p50_s", "ttft_p99_s", "served_rejected_failed"]
print("run," + ",".join(cols) + "," + ",".join("sim_" + c for c in cols))
for name in names:
    print(name + "," + ",".join(figures(rows.get(name))) + "," + ",".join(figures(rows.get(name + "-sim"))))
EOF
}

# markdown CSV: the CSV as a Markdown table.
markdown() {
  python3 - "$1" <<'EOF'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
print("| " + " | ".join(rows[0]) + " |")
print("|" + "---|" * len(rows[0]))
for row in rows[1:]:
    print("| " + " | ".join(row) + " |")
EOF
}

latency_job() {  # DELAY PREFILL(true|false)
  local delay=$1 prefill=$2
  cat > "$OUT/files/latency-$delay.toml" <<EOF
# Two DCs, one-way delay ${delay} ms between them (generated by bubbletea.sh).
name = "bt-latency"
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
delay = "${delay}ms"
EOF
  cat > "$OUT/files/latency-job-$delay.toml" <<EOF
# 1F1B, pp 4 x dp 1 across two DCs; one worker = one 8-GPU server (tp 8), so
# that Llama-2-70B's weights (140 GB) fit beside training (generated by bubbletea.sh).
name = "bt-latency-$delay"
testbed = "latency-$delay.toml"
schedule = "1f1b"
scale = 0.1
[model]
layers = 32
hidden = 4096
seq_len = 2048
microbatches = 8
[parallel]
pp = 4
dp = 1
tp = 8
[compute]
forward_ms = 60
backward_ms = 120
[gpus]
east = 16
west = 16
[prefill]
enabled = $prefill
arrivals = { rate = "6/s", prompt_median = 1469, prompt_p90 = 5194, seed = 3 }
decode_dc = "west"
ttft_slo = "3s"
[prefill.time]    # Llama-2-70B on H100 (splitwise-sim perf_model.csv, REFERENCES.md)
tokens = [128, 1024, 2048, 4096, 8192]
ms = [48, 158, 308, 642, 1339]
EOF
}

latency() {
  echo "latency sweep: 2 DCs, 1F1B pp 4 across them, with and without BubbleTea"
  local names=()
  for delay in 0 10 20 40 80; do
    latency_job "$delay" true
    run "latency-$delay-bt" "$OUT/files/latency-job-$delay.toml"
    run "latency-$delay-off" "$OUT/files/latency-job-$delay.toml" --prefill off
    names+=("latency-$delay-off" "latency-$delay-bt")
  done
  csv "${names[@]}" > "$OUT/latency-runs.csv"
  python3 - "$OUT/latency-runs.csv" > "$OUT/latency.csv" <<'EOF'
import csv, sys
rows = {r["run"]: r for r in csv.DictReader(open(sys.argv[1]))}
print("delay_ms,training_only,with_bubbletea,training_only_sim,with_bubbletea_sim")
for d in (0, 10, 20, 40, 80):
    off, bt = rows[f"latency-{d}-off"], rows[f"latency-{d}-bt"]
    print(f"{d},{off['training_util']},{bt['util_with_prefill']},{off['sim_training_util']},{bt['sim_util_with_prefill']}")
EOF
  latency_plot
  markdown "$OUT/latency-runs.csv" | tee "$OUT/latency.md"
}

threedc() {
  local bt=$root/scenarios/experiments/bubbletea-3dc.toml
  echo "three DCs: Atlas + BubbleTea against Atlas, 1F1B and GPipe"
  run 3dc-1f1b "$bt" --pipeline 1f1b --prefill off
  run 3dc-1f1b+bt "$bt" --pipeline 1f1b
  run 3dc-gpipe "$bt" --pipeline gpipe --prefill off
  run 3dc-gpipe+bt "$bt" --pipeline gpipe
  run 3dc-atlas "$bt" --prefill off
  run 3dc-atlas+bt "$bt"
  csv 3dc-1f1b 3dc-1f1b+bt 3dc-gpipe 3dc-gpipe+bt 3dc-atlas 3dc-atlas+bt > "$OUT/threedc.csv"
  markdown "$OUT/threedc.csv" | tee "$OUT/threedc.md"
  # TTFT distribution of Atlas + BubbleTea: every served request's.
  for name in 3dc-atlas+bt 3dc-atlas+bt-sim; do
    [ -f "$OUT/$name/results.json" ] || continue
    "$WANLAB" compare --ttfts "$OUT/$name" > "$OUT/$name-ttft.csv"
    ttft_plot "$name"
  done
}

load() {
  local bt=$root/scenarios/experiments/bubbletea-3dc.toml
  echo "load sweep: bubbletea-3dc with Poisson arrivals at rising rates"
  local names=()
  for rate in 1 2 4 8 16 32; do
    sed -e '/^requests = /d' -e "s#^\[prefill\]\$#[prefill]\narrivals = { rate = \"$rate/s\", prompt_median = 1469, prompt_p90 = 5194, seed = 3 }#" \
        -e "s#^testbed = \"\\(.*\\)\"#testbed = \"$root/scenarios/experiments/\\1\"#" "$bt" > "$OUT/files/load-$rate.toml"
    run "load-$rate" "$OUT/files/load-$rate.toml"
    names+=("load-$rate")
  done
  csv "${names[@]}" > "$OUT/load-runs.csv"
  python3 - "$OUT/load-runs.csv" > "$OUT/load.csv" <<'EOF'
import csv, sys
print("rate_per_s,util_with_prefill,util_with_prefill_sim,ttft_p50_s,ttft_p99_s,ttft_p50_s_sim,ttft_p99_s_sim,prefill_tokens_per_s,prefill_tokens_per_s_sim")
for r in csv.DictReader(open(sys.argv[1])):
    rate = r["run"].split("-")[1]
    print(",".join([rate, r["util_with_prefill"], r["sim_util_with_prefill"], r["ttft_p50_s"], r["ttft_p99_s"],
                    r["sim_ttft_p50_s"], r["sim_ttft_p99_s"], r["prefill_tokens_per_s"], r["sim_prefill_tokens_per_s"]]))
EOF
  load_plots
  markdown "$OUT/load-runs.csv" | tee "$OUT/load.md"
}

saturate() {
  local bt=$root/scenarios/experiments/bubbletea-3dc-local.toml
  echo "saturating load: Atlas + BubbleTea with decode in every training DC, against Atlas alone"
  run sat-atlas "$bt" --prefill off
  run sat-atlas+bt "$bt"
  csv sat-atlas sat-atlas+bt > "$OUT/saturate.csv"
  markdown "$OUT/saturate.csv" | tee "$OUT/saturate.md"
  saturate_targets | tee "$OUT/saturate-targets.md"
}

# saturate_targets: saturate's targets, measured and simulated.
saturate_targets() {
  local runs
  # shellcheck disable=SC2046  # run names have no spaces
  runs=$(results_csv $(with_sims sat-atlas sat-atlas+bt))
  python3 - "$runs" <<'EOF'
import csv, os, sys
runs = {os.path.basename(r["label"]): r for r in csv.DictReader(sys.argv[1].splitlines())}
print("| target | measured | simulated |")
print("|---|---|---|")
rows = {"utilization with prefill (target >= 90%)": [], "iteration time / prefill off (target <= 1.01)": [],
        "TTFT p99 / SLO (target <= 1)": [], "served requests over the SLO (arrived in iteration 0)": [],
        "training held up by prefill (s)": []}
for suffix in ("", "-sim"):
    off, on = runs.get("sat-atlas" + suffix), runs.get("sat-atlas+bt" + suffix)
    if off is None or on is None:
        for v in rows.values(): v.append("-")
        continue
    slo = float(on["ttft_slo_s"])
    rows["utilization with prefill (target >= 90%)"].append(f"{100 * float(on['utilization_with_prefill']):.1f}%")
    rows["iteration time / prefill off (target <= 1.01)"].append(
        f"{float(on['iteration_s']) / float(off['iteration_s']):.3f}")
    rows["TTFT p99 / SLO (target <= 1)"].append(f"{float(on['ttft_p99_s']) / slo:.2f}" if int(on["served"]) else "-")
    rows["served requests over the SLO (arrived in iteration 0)"].append(
        f"{on['served_over_slo']} of {on['served']} ({on['served_over_slo_first_iteration']})")
    rows["training held up by prefill (s)"].append(f"{float(on['training_delay_s']):.3f}")
for name, values in rows.items():
    print(f"| {name} | " + " | ".join(values) + " |")
EOF
}

case "$ONLY" in
  all) latency; threedc; load; saturate ;;
  latency) latency ;;
  threedc) threedc ;;
  load) load ;;
  saturate) saturate ;;
  plots) plots ;;
  *) echo "bubbletea.sh: ONLY must be all, latency, threedc, load, saturate or plots" >&2; exit 2 ;;
esac
