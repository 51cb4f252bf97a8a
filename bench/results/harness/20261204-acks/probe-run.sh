#!/bin/bash
# probe-run.sh NAME [wanlab train options...]: one real run of atlas-3dc.toml (scale 0.1,
# 4 iterations) with the kernel's tcp_probe tracepoint on for segments without payload on
# the cross-DC ports (29000 + worker id), ACKs mostly: each carries the receiving socket's
# srtt, cwnd and ssthresh. Writes OUT/NAME/ (the run) and OUT/NAME.trace.gz. As root.
set -euo pipefail
name=$1
shift
out=${OUT:-/tmp/probe}
repo=$(cd "$(dirname "$0")/../../../.." && pwd)
tracing=/sys/kernel/tracing
mkdir -p "$out"
restore() {
  echo 0 > "$tracing/tracing_on"
  echo 0 > "$tracing/events/tcp/tcp_probe/enable"
  echo 0 > "$tracing/events/tcp/tcp_probe/filter"
  echo > "$tracing/trace"
  echo 1408 > "$tracing/buffer_size_kb"
}
trap restore EXIT
echo 0 > "$tracing/tracing_on"
echo > "$tracing/trace"
echo 60000 > "$tracing/buffer_size_kb"
echo 'data_len == 0 && ((dport >= 29000 && dport < 29100) || (sport >= 29000 && sport < 29100))' \
  > "$tracing/events/tcp/tcp_probe/filter"
echo 1 > "$tracing/events/tcp/tcp_probe/enable"
echo 1 > "$tracing/tracing_on"
"$repo/build/cli/wanlab" train "$repo/scenarios/experiments/atlas-3dc.toml" --scale 0.1 --iterations 4 "$@" \
  --out "$out/$name" > "$out/$name.log" 2>&1 || echo "probe-run.sh: the run failed, see $out/$name.log" >&2
echo 0 > "$tracing/tracing_on"
gzip -c "$tracing/trace" > "$out/$name.trace.gz"
grep -h overrun "$tracing"/per_cpu/cpu*/stats
