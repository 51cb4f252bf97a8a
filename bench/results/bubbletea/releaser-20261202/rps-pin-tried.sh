#!/bin/bash
# Experiment: pin wanlab daemons to CPU0 and steer the receive work of every
# host namespace's interfaces to CPU1 (RPS), while a bench runs.
seen=""
while true; do
  for pid in $(pgrep -f "wanlab daemon"); do
    taskset -a -p 1 "$pid" >/dev/null 2>&1
  done
  for ns in $(ip netns list | awk '{print $1}' | grep '^wanlab-'); do
    case " $seen " in *" $ns "*) continue;; esac
    case "$ns" in *.core*|*core) continue;; esac
    ip netns exec "$ns" sh -c 'for q in /sys/class/net/*/queues/rx-*/rps_cpus; do case $q in */lo/*) continue;; esac; echo 2 > $q; done' 2>/dev/null && seen="$seen $ns"
  done
  sleep 0.2
done
