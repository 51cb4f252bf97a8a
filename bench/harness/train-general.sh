#!/bin/bash
# The simulator against real runs on training experiments drawn at random:
# N testbeds and experiments (printed seeds) over the space train_general.py
# documents, each simulated and real, and how many real runs whose
# emulation kept up are within 5% and 10% of the simulator.
#
#   bench/harness/train-general.sh                       seeds 1-10 (real runs need root; about 1-2 minutes a seed on 2 cores)
#   N=20 SEED=101 bench/harness/train-general.sh         seeds 101-120
#   SIMULATE_ONLY=1 bench/harness/train-general.sh       the simulator only (seconds, no root)
#   SIMULATED=DIR bench/harness/train-general.sh         the simulator again, against DIR's real runs
#
# Environment: WANLAB (default build/cli/wanlab), OUT (default
# bench/results/harness/general-DATE), N (10), SEED (the first seed, 1),
# SEEDS (a list instead of N from SEED), TRAIN_OPTIONS (added to every real
# run's `wanlab train`), MAX_WORKERS (12: pp x dp at most).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
export WANLAB=${WANLAB:-$root/build/cli/wanlab}
export SIMULATE_ONLY=${SIMULATE_ONLY:-0}
export SIMULATED=${SIMULATED:-}
OUT=${OUT:-$root/bench/results/harness/general-$(date +%Y%m%d-%H%M%S)}
N=${N:-10}
SEED=${SEED:-1}
SEEDS=${SEEDS:-$(seq "$SEED" $((SEED + N - 1)))}

[ -x "$WANLAB" ] || { echo "train-general.sh: $WANLAB is not built (set WANLAB=...)" >&2; exit 2; }
if [ "$SIMULATE_ONLY" != 1 ] && [ -z "$SIMULATED" ] && [ "$(id -u)" != 0 ]; then
  echo "train-general.sh: real runs need root (or SIMULATE_ONLY=1, or SIMULATED=DIR)" >&2
  exit 2
fi
mkdir -p "$OUT"
echo "results in $OUT; seeds ${SEEDS//$'\n'/ }; $(uptime)"
# shellcheck disable=SC2086  # one argument per seed
python3 "$here/train_general.py" "$OUT" $SEEDS | tee "$OUT/general.md"
echo "done; $(uptime)"
