#!/bin/bash
# capture.sh sched|sends SECONDS OUT: waits for the releaser daemon's SCHED_FIFO thread (a
# wanlab* process), WAIT seconds more (15), then records SECONDS of perf events system-wide:
#   sched  the releaser's timer and wake-ups (wakeups.py reads it)
#   sends  its verdict sends and what runs inside them (sends.py reads it)
mode=$1; secs=${2:-5}; out=${3:-/tmp/cap}
case $mode in
  sched) events=sched:sched_switch,sched:sched_wakeup,sched:sched_waking,timer:hrtimer_start,timer:hrtimer_expire_entry,irq:softirq_entry,irq:softirq_exit ;;
  sends) events=syscalls:sys_enter_sendto,syscalls:sys_exit_sendto,sched:sched_switch,sched:sched_waking,irq:softirq_entry,irq:softirq_exit,ipi:ipi_send_cpu,ipi:ipi_send_cpumask,irq_vectors:local_timer_entry,irq_vectors:reschedule_entry,irq_vectors:call_function_single_entry ;;
  *) echo "usage: capture.sh sched|sends SECONDS OUT" >&2; exit 2 ;;
esac
mkdir -p "$out"
for _ in $(seq 600); do
  tid=$(ps -eLo tid,cls,comm | awk '$2=="FF" && $3 ~ /^wanlab/{print $1; exit}')
  [ -n "$tid" ] && break; sleep 0.5
done
echo "fifo tid $tid" > "$out/tid"
sleep "${WAIT:-15}"
perf record -q -e "$events" -a -o "$out/perf.data" -- sleep "$secs" 2> "$out/perf.err"
echo done >> "$out/tid"
