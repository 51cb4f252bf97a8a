#!/bin/bash
# Slurm Epilog (slurm.conf: Epilog=/path/to/epilog.sh): runs as root on every
# node of a job when it ends, however it ended. The job's WAN (named
# j<job id> by scripts/slurm/wan-job.sh) is normally down already, taken down
# by its `wanlab join --hold` step on SIGTERM; this removes what a node killed
# harder (SIGKILL after KillWait) left behind. Never fails the node.
wanlab=${WANLAB:-wanlab}
[[ ${SLURM_JOB_ID:-} =~ ^[0-9]+$ ]] || exit 0
[[ -e /run/wanlab/j$SLURM_JOB_ID ]] || exit 0
"$wanlab" down "j$SLURM_JOB_ID" >/dev/null 2>&1 || logger -t wanlab "epilog: wanlab down j$SLURM_JOB_ID failed"
exit 0
