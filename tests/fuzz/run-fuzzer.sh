#!/usr/bin/env bash
# One bounded fuzz run, as CTest's fuzz.* tests make it (tests/CMakeLists.txt):
# a fresh corpus in WORK seeded from the SEEDS (files, or directories whose
# files are taken), then SECONDS of fuzzing from it. The source tree is only
# read. A crash, a hang (5 s on one input), 2 GiB of memory, an uncaught
# exception or an error of more than one line fails it, naming the input kept
# in WORK/artifacts.
# Usage: run-fuzzer.sh FUZZER WORK SECONDS DICT|- SEED...
set -euo pipefail

if [ $# -lt 5 ]; then
  echo "usage: $0 FUZZER WORK SECONDS DICT|- SEED..." >&2
  exit 2
fi
fuzzer=$1 work=$2 seconds=$3 dict=$4
shift 4

rm -rf "$work"
mkdir -p "$work/corpus" "$work/artifacts"
for seed in "$@"; do
  if [ -d "$seed" ]; then
    find "$seed" -maxdepth 1 -type f -exec cp -t "$work/corpus" {} +
  else
    cp "$seed" "$work/corpus"
  fi
done
if [ -z "$(ls -A "$work/corpus")" ]; then
  echo "$0: no seeds in $*" >&2
  exit 1
fi

args=(-max_total_time="$seconds" -timeout=5 -rss_limit_mb=2048 -print_final_stats=1
      -artifact_prefix="$work/artifacts/")
if [ "$dict" != "-" ]; then args+=(-dict="$dict"); fi

echo "== $(basename "$fuzzer"): $(ls "$work/corpus" | wc -l) seeds, ${seconds}s"
status=0
"$fuzzer" "${args[@]}" "$work/corpus" || status=$?
if [ "$status" -ne 0 ]; then
  echo "== $(basename "$fuzzer") failed (exit $status); inputs kept (if any):" >&2
  ls -l "$work/artifacts" >&2
  echo "reproduce: $fuzzer $work/artifacts/<file>" >&2
  exit 1
fi
