#!/bin/bash
# BubbleTea on experiments it was not tuned on: N testbeds and experiments
# drawn at random (printed seeds) over the space bubbletea_general.py
# documents, each simulated and real, prefill off and on, and the targets of
# issue 31 counted over the runs whose emulation kept up.
#
#   bench/harness/bubbletea-general.sh                  seeds 1-10 (real runs need root; about 20-30 minutes on 2 cores)
#   N=20 SEED=101 bench/harness/bubbletea-general.sh    seeds 101-120
#   SEEDS="1 6 9" bench/harness/bubbletea-general.sh    these seeds
#   SIMULATE_ONLY=1 bench/harness/bubbletea-general.sh  the simulator only (seconds, no root)
#
# Environment: WANLAB (default build/cli/wanlab), OUT (default
# bench/results/bubbletea/general-DATE), N (10), SEED (the first seed, 1),
# SEEDS (a list instead of N from SEED), TRAIN_OPTIONS (added to every real
# run's `wanlab train`, e.g. "--idle-poll=on"),
# MAX_WORKERS (16: pp x dp at most, what two cores carry).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
export WANLAB=${WANLAB:-$root/build/cli/wanlab}
export SIMULATE_ONLY=${SIMULATE_ONLY:-0}
OUT=${OUT:-$root/bench/results/bubbletea/general-$(date +%Y%m%d-%H%M%S)}
N=${N:-10}
SEED=${SEED:-1}
SEEDS=${SEEDS:-$(seq "$SEED" $((SEED + N - 1)))}

[ -x "$WANLAB" ] || { echo "bubbletea-general.sh: $WANLAB is not built (set WANLAB=...)" >&2; exit 2; }
if [ "$SIMULATE_ONLY" != 1 ] && [ "$(id -u)" != 0 ]; then
  echo "bubbletea-general.sh: real runs need root (or SIMULATE_ONLY=1)" >&2
  exit 2
fi
mkdir -p "$OUT"
echo "results in $OUT; seeds ${SEEDS//$'\n'/ }; real runs with: ${TRAIN_OPTIONS:-defaults}; $(uptime)"
# shellcheck disable=SC2086  # one argument per seed
python3 "$here/bubbletea_general.py" "$OUT" $SEEDS | tee "$OUT/general.md"
echo "done; $(uptime)"
