#!/bin/bash
# samples the KV connections' TCP state on the east DC link every 20 ms
out=$1; : > $out
for i in $(seq 1 400); do
  for ns in $(ip netns list | awk '{print $1}' | grep -E 'east-1$|west-1$'); do
    ip netns exec $ns ss -tinH dport = :31000 2>/dev/null | tr '\n' ' ' | sed "s/^/$(date +%s.%N) $ns /" >> $out; echo >> $out
  done
  sleep 0.1
done
