#!/bin/bash
# The program multihost/slurm-guest.sh's jobs run across the WAN, one task
# per node: it writes what this node sees into $WANLAB_MH_DIR (its part of the
# WAN; from m2, ping to m3 in the other DC), and with WANLAB_TASK_HOLD=1 then
# waits to be cancelled.
set -u
node=$(hostname)
{
  echo "rank ${SLURM_PROCID:-?} of ${SLURM_NTASKS:-?} on $node"
  # What `wanlab launch --slurm` gave (job 1 runs this through it).
  echo "env RANK=${RANK:-} WORLD_SIZE=${WORLD_SIZE:-} LOCAL_RANK=${LOCAL_RANK:-} GROUP_RANK=${GROUP_RANK:-}" \
    "MASTER_ADDR=${MASTER_ADDR:-} WANLAB_DC=${WANLAB_DC:-} WANLAB_TESTBED=${WANLAB_TESTBED:-}"
  wanlab status
  if [[ $node == m2 ]]; then ping -c 10 -i 0.2 m3; fi
} >"$WANLAB_MH_DIR/${WANLAB_TASK_TAG:-task}.task.$node" 2>&1
if [[ ${WANLAB_TASK_HOLD:-0} == 1 ]]; then
  touch "$WANLAB_MH_DIR/running.$node"
  sleep 600
fi
