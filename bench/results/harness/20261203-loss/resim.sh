#!/usr/bin/env bash
# Simulates the eleven three-DC runs of bench/harness/run-experiments.sh (ONLY=threedc)
# with the given binary into OUTDIR; compare.py OUTDIR [links] sets them beside the
# stored real runs of 2026-11-28 and 2026-12-02 (ratio measured / simulated).
# resim.sh WANLAB OUTDIR: simulate the eleven three-DC runs
set -u
W=$1; OUT=$2; mkdir -p "$OUT/files"
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../../.." && pwd)
atlas=$root/scenarios/experiments/atlas-3dc.toml
common=(--scale 0.1 --iterations 4)
sim() { local name=$1 exp=$2; shift 2; "$W" train "$exp" "$@" --simulate --out "$OUT/$name" > "$OUT/$name.log" 2>&1 || echo "FAIL $name"; }
sim 3dc-1f1b "$atlas" "${common[@]}" --pipeline 1f1b
sim 3dc-gpipe "$atlas" "${common[@]}" --pipeline gpipe
sim 3dc-1f1b+streams "$atlas" "${common[@]}" --pipeline 1f1b --streams 8
sim 3dc-1f1b+sharing "$atlas" "${common[@]}" --pipeline 1f1b --temporal-sharing on
sim 3dc-1f1b+placement "$atlas" "${common[@]}" --pipeline 1f1b --placement atlas
sim 3dc-1f1b+streams+sharing "$atlas" "${common[@]}" --pipeline 1f1b --streams 8 --temporal-sharing on
sim 3dc-atlas+no-sharing "$atlas" "${common[@]}" --temporal-sharing off
sim 3dc-atlas "$atlas" "${common[@]}"
sed 's/^tcp_rmem_max = .*/&\ntcp_slow_start_after_idle = false/' "$root/scenarios/three-dc.toml" > "$OUT/files/three-dc-tuned.toml"
sed "s#^testbed = .*#testbed = \"$OUT/files/three-dc-tuned.toml\"#" "$atlas" > "$OUT/files/atlas-3dc-tuned.toml"
sim 3dc-atlas-tuned "$OUT/files/atlas-3dc-tuned.toml" "${common[@]}"
sim 3dc-atlas+no-sharing-tuned "$OUT/files/atlas-3dc-tuned.toml" "${common[@]}" --temporal-sharing off
sim 3dc-dp-across-dc "$atlas" --scale 0.1 --iterations 2 --pipeline 1f1b --placement dp-across-dc
