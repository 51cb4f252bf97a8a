#!/bin/bash
# Samples the KV connections' TCP state (ss -tin, to the decode sink's port 31000) in the host
# namespaces of each DC's second host during a run.
#   sample.sh OUT [INTERVAL_S] [COUNT]     (demo: 0.02 3000; bubbletea-3dc-local: 0.1 400)
out=$1; interval=${2:-0.02}; count=${3:-3000}; : > "$out"
for i in $(seq 1 "$count"); do
  for ns in $(ip netns list | awk '{print $1}' | grep -E 'east-1$|west-1$'); do
    ip netns exec "$ns" ss -tinH dport = :31000 2>/dev/null | tr '\n' ' ' | sed "s/^/$(date +%s.%N) $ns /" >> "$out"; echo >> "$out"
  done
  sleep "$interval"
done
