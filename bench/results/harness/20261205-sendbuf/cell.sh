#!/bin/bash
# One stream's transfer-bench cells (cold, warm, idle; 8 MiB) at one rate,
# one-way delay and pair of buffers, with sample.sh recording the sockets.
#   cell.sh OUT NAME RATE DELAY_MS WMEM RMEM     (root; from the repository)
#   e.g. cell.sh /tmp/cells g1m-100 100mbit 80 1mb 1536kb
set -eu
out=$1 name=$2 rate=$3 delay=$4 wmem=$5 rmem=$6
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
bench/run-transfer-bench.sh --rates "$rate" --delays "$delay" --streams 1 --sizes 8M --wmem "$wmem" --rmem "$rmem" \
  --max-seconds 30 --markdown "$out/$name.md" --csv "$out/$name.csv" >"$out/$name.log" 2>&1 &
bench=$!
"$here/sample.sh" "$out/$name.ss" &
sampler=$!
wait $bench || true
kill $sampler
grep -E " (cold|warm|idle) " "$out/$name.log" | grep -v "^  "
