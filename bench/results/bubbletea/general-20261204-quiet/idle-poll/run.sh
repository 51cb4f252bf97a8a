#!/bin/bash
# The four prefill-off runs of this draw that fell behind, again, without and
# with --idle-poll (2026-12-04 01:42-01:56 UTC, main efb51df, steal 0%).
# Run from the repository's root: bash bench/results/bubbletea/general-20261204-quiet/idle-poll/run.sh OUT
set -euo pipefail
draw=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: run.sh OUT}
mkdir -p "$out"
for s in 5 7 8 9; do
  for mode in plain poll; do
    extra=(); [ "$mode" = poll ] && extra=(--idle-poll)
    (cd "$draw" && "$OLDPWD/build/cli/wanlab" train "bg$s.toml" --prefill off "${extra[@]}" --quiet --out "$out/bg$s-$mode") \
      > "$out/bg$s-$mode.log" 2>&1
    echo "seed $s $mode: $(grep -h '^emulation' "$out/bg$s-$mode.log")"
  done
done
