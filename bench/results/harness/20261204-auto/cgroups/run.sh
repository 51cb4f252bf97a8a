#!/bin/bash
# Three periodic processes (every 10 ms: wake on an absolute timer, then spin
# WORK us) in a cpu cgroup of their own, as podman's workers are, beside one
# process of SCHED_IDLE spinners (one per CPU) in the root cgroup, in an idle
# cgroup (cpu.idle = 1), or in the workers' cgroup. cgroup v1, as on the
# project's VM; as root. Prints each periodic process's wake-up lateness.
# Run from this folder: bash run.sh
set -euo pipefail
g++ -O2 -std=c++20 -pthread stack.cpp -o /tmp/stack
cpu=/sys/fs/cgroup/cpu
mkdir -p $cpu/exp-w $cpu/exp-p
echo 1 > $cpu/exp-p/cpu.idle
run() {  # WORK_US POLLERS_IN (none, root, exp-p, exp-w)
  for i in 1 2 3; do
    (echo $BASHPID > $cpu/exp-w/cgroup.procs; exec /tmp/stack 1 10000 "$1" 8 0) > /tmp/out$i.txt &
  done
  case $2 in
    none) ;;
    root) /tmp/stack 1 1000000 1 9 1 > /dev/null & ;;
    *) (echo $BASHPID > "$cpu/$2/cgroup.procs"; exec /tmp/stack 1 1000000 1 9 1 > /dev/null) & ;;
  esac
  wait
  echo "work $1 us, pollers $2:"; sed 's/^/  /' /tmp/out1.txt /tmp/out2.txt /tmp/out3.txt
}
for work in 5000 2000; do for where in none root exp-p exp-w; do run $work $where; done; done
rmdir $cpu/exp-w $cpu/exp-p
