#!/bin/bash
# Do idle pollers in their idle cgroup make a fixed workload take more CPU, or
# does the CPU figure (/proc/stat busy less the pollers' own time) misread?
# Three periodic processes (every 10 ms: a fixed 4e6-step hash loop, about
# 5 ms here) in a cpu cgroup of their own for 5 s, without and with
# base::IdlePollers. Then bursts (burst.cpp): five processes, not pinned,
# waking together every 20 ms for a fixed ~3.5 ms of work each on 2 CPUs, to
# see whether a CPU that never idles leaves queued work waiting (it would not
# pull it at once). cgroup v1, as on the project's VM; as root, from a built
# tree. Run from this folder: bash run.sh
set -euo pipefail
root=$(git rev-parse --show-toplevel)
g++ -O2 periodic.cpp -o /tmp/periodic
g++ -O2 burst.cpp -o /tmp/burst
g++ -O2 -std=c++20 -I"$root/base/include" withpollers.cpp "$root/build/base/libwanlab_base.a" -lfmt -o /tmp/withpollers
cg=/sys/fs/cgroup/cpu/exp-w
mkdir -p $cg
for mode in none new none new; do
  echo "== pollers: $mode"
  /tmp/withpollers $mode /tmp/periodic 3 5 4000000 $cg
done
for mode in none new none new; do
  echo "== pollers: $mode"
  /tmp/withpollers $mode /tmp/burst 5 20 3000000 6 $cg
done
rmdir $cg
