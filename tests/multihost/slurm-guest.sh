#!/bin/bash
# One machine's part of the multihost Slurm test (multihost/slurm.cpp runs it
# in every guest): munge and slurmd on every guest, slurmctld on m1, which
# submits scripts/slurm/wan-job.sh four times over tests/data/multihost/two-dc.toml:
# to its end (a program pings across the WAN from every node), with
# `wanlab train --runtime slurm` across the nodes, cancelled with scancel
# while its program runs; then a training, cancelled after its first iteration. Each machine records its kernel's
# state before, after each job, and what the job's tasks saw, as KEY.MACHINE
# files in $WANLAB_MH_DIR; the test on the host asserts. This script only
# fails when a step cannot run.
set -uo pipefail
source_dir=$WANLAB_SOURCE_DIR
scenario=$source_dir/tests/data/multihost/two-dc.toml

fail() {
  echo "$me: $*" >&2
  echo "$*" >"$dir/failed.$me"
  [[ -r /tmp/slurmctld.log ]] && tail -n 20 /tmp/slurmctld.log >&2
  [[ -r /tmp/slurmd.log ]] && tail -n 20 /tmp/slurmd.log >&2
  exit 1
}
on_abort() { :; }
# scancel JOB, then wait until it has left the queue (its tasks and Epilog done).
cancel() {
  scancel "$1"
  for ((i = 0; i < 600; i++)); do
    [[ -z $(squeue -h -j "$1" 2>/dev/null) ]] && return 0
    sleep 0.2
  done
  fail "job $2 still in the queue 120 s after scancel"
}
# shellcheck source=guest-common.sh
source "$(dirname "$0")/guest-common.sh"

# wanlab installed as on a real node: on PATH, for the job and the Epilog.
ln -sf "$WANLAB_BIN" /usr/local/bin/wanlab

# munge: one key for the cluster (written by the test), its daemon as user munge.
mkdir -p /etc/munge /run/munge /var/lib/munge /var/log/munge
cp "$dir/munge.key" /etc/munge/munge.key
chown munge:munge /etc/munge /etc/munge/munge.key /run/munge /var/lib/munge /var/log/munge
chmod 0400 /etc/munge/munge.key
runuser -u munge -- /usr/sbin/munged || fail "munged did not start"

mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd
cp "$dir/slurm.conf" /etc/slurm/slurm.conf
# No systemd (or its D-Bus) in the guests: slurmd makes its cgroup scope itself.
printf 'CgroupPlugin=cgroup/v2\nIgnoreSystemd=yes\n' >/etc/slurm/cgroup.conf
mkdir -p /sys/fs/cgroup/system.slice
kernel_state >"$dir/before.$me"
barrier munge
if [[ $me == m1 ]]; then
  /usr/sbin/slurmctld || fail "slurmctld did not start"
fi
/usr/sbin/slurmd || fail "slurmd did not start"
barrier slurmd

if [[ $me == m1 ]]; then
  for ((i = 0; i < 300; i++)); do
    idle=$(sinfo -h -N -t idle -o %N 2>/dev/null | wc -l)
    [[ $idle -ge $count ]] && break
    sleep 0.5
  done
  [[ $idle -ge $count ]] || fail "only $idle of $count nodes idle: $(sinfo -N 2>&1 | tr '\n' ' ')"
  cd "$dir" || fail "no $dir"
  # Job 1, to its end: every node's task (through `wanlab launch --slurm`)
  # writes what it sees, m2 pings m3 across the WAN.
  sbatch --wait --nodes="$count" --ntasks-per-node=1 -o "$dir/job1.out" --export=ALL,WANLAB_TASK_TAG=job1 \
    "$source_dir/scripts/slurm/wan-job.sh" "$scenario" -- \
    wanlab launch --slurm -- "$source_dir/tests/multihost/slurm-task.sh" >"$dir/sbatch1.out" 2>&1
  echo "exit $?" >>"$dir/sbatch1.out"
  echo "== job 1's output"
  cat "$dir/job1.out"
  [[ ${WANLAB_MH_JOB1_ONLY:-0} == 1 ]] && fail "stopping after job 1 (WANLAB_MH_JOB1_ONLY)"
fi
barrier job1
kernel_state >"$dir/after-job1.$me"
barrier job1-checked

if [[ $me == m1 ]]; then
  # Job 3: the WAN verified (ping and iperf3 across it, TCG's bounds), then
  # wanlab's own training across the nodes (--here: the coordinator runs in
  # the batch script, each worker as a step on its node).
  sbatch --wait --nodes="$count" --ntasks-per-node=1 -o "$dir/job3.out" \
    --export="ALL,WANLAB_VERIFY_OPTIONS=--tolerance 70%" \
    "$source_dir/scripts/slurm/wan-job.sh" --here --verify "$scenario" -- \
    wanlab train "$source_dir/tests/data/multihost/train-3.toml" --runtime slurm --out "$dir/train3" \
    >"$dir/sbatch3.out" 2>&1
  echo "exit $?" >>"$dir/sbatch3.out"
  echo "== job 3's output"
  cat "$dir/job3.out"
fi
barrier job3
kernel_state >"$dir/after-job3.$me"
barrier job3-checked

if [[ $me == m1 ]]; then
  # Job 2, cancelled while its program runs on every node.
  job=$(sbatch --parsable --nodes="$count" --ntasks-per-node=1 -o "$dir/job2.out" \
    --export=ALL,WANLAB_TASK_HOLD=1,WANLAB_TASK_TAG=job2 "$source_dir/scripts/slurm/wan-job.sh" "$scenario" -- \
    "$source_dir/tests/multihost/slurm-task.sh") || fail "sbatch of job 2 failed"
  for ((i = 0; i < 600; i++)); do
    running=("$dir"/running.*)
    [[ -e ${running[0]} && ${#running[@]} -ge $count ]] && break
    sleep 0.2
  done
  [[ ${#running[@]} -ge $count ]] || { cat "$dir/job2.out"; fail "job 2's program did not start on every node"; }
  cancel "$job" 2
  echo "$job" >"$dir/job2.id"
fi
barrier job2
kernel_state >"$dir/after-job2.$me"
barrier job2-checked

if [[ $me == m1 ]]; then
  # Job 4: a training cancelled with scancel after its first iteration.
  job=$(sbatch --parsable --nodes="$count" --ntasks-per-node=1 -o "$dir/job4.out" \
    "$source_dir/scripts/slurm/wan-job.sh" --here "$scenario" -- \
    wanlab train "$source_dir/tests/data/multihost/train-3.toml" --runtime slurm --iterations 200) ||
    fail "sbatch of job 4 failed"
  for ((i = 0; i < 900; i++)); do
    grep -q "^iteration 1/200" "$dir/job4.out" 2>/dev/null && break
    sleep 0.2
  done
  grep -q "^iteration 1/200" "$dir/job4.out" 2>/dev/null || { cat "$dir/job4.out"; fail "job 4 did not train"; }
  cancel "$job" 4
  echo "== job 4's output"
  cat "$dir/job4.out"
fi
barrier job4
kernel_state >"$dir/after-job4.$me"
barrier done
exit 0
