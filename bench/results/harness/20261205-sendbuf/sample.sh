#!/bin/bash
# Appends `ss -tinm` of every established TCP socket in every network
# namespace to FILE every 50 ms, one line per socket, each prefixed with the
# time and the namespace, until killed.
#   sample.sh FILE
out=$1
while true; do
  now=$(date +%s.%N)
  for ns in $(ip netns list | awk '{print $1}'); do
    ip netns exec "$ns" ss -tinmH state established 2>/dev/null |
      awk -v ns="$ns" -v t="$now" 'BEGIN{ORS=""} {print t" "ns" "$0; if (NR%2==0) print "\n"; else print " "}'
  done >>"$out"
  sleep 0.05
done
