#!/bin/bash
# A WAN across the job's nodes for the job's life, and a program run across it:
#
#   sbatch --nodes=3 --ntasks-per-node=1 scripts/slurm/wan-job.sh SCENARIO -- PROGRAM [ARG...]
#
# A PyTorch program gets torchrun's variables (RANK, WORLD_SIZE, LOCAL_RANK,
# MASTER_ADDR, ...) from Slurm's placement through `wanlab launch --slurm`:
#
#   sbatch ... scripts/slurm/wan-job.sh SCENARIO -- wanlab launch --slurm -- python train.py
#
# With --here, PROGRAM runs once, in this script on the allocation's first
# node, rather than as a step on every node: for a program that starts its
# own steps, as wanlab's harness does (each worker on its node through srun):
#
#   sbatch ... scripts/slurm/wan-job.sh --here SCENARIO -- wanlab train EXPERIMENT --runtime slurm --out DIR
#
# Every node of the allocation must be one of the scenario's machines
# ([[dc]] machines, docs/SCALE-OUT.md); wanlab must be on each node's PATH
# (or in $WANLAB) and the scenario at the same path on each. The job:
#  1. runs `wanlab join --hold` on every node as one step in the background:
#     each node finds its DC and role and does its part, then holds it;
#  2. waits until every node's part is up (`wanlab status --wait`);
#  3. with --verify, measures each DC pair's RTT and goodput against the
#     scenario (`wanlab verify`: ping and iperf3 through srun on each DC's
#     first node; options in $WANLAB_VERIFY_OPTIONS), and ends the job if one
#     is off;
#  4. runs PROGRAM as a step, one task per node (srun's defaults), or with
#     --here once, here;
#  5. ends the hold step (SIGTERM), whose tasks take their parts down.
# Cancelled (scancel, time limit), Slurm sends the hold step SIGTERM, and each
# node takes its part down the same way; the Epilog (scripts/slurm/epilog.sh)
# removes what a node killed harder left. The testbed is named j<job id>.
set -euo pipefail

wanlab=${WANLAB:-wanlab}
usage() {
  echo "usage: sbatch ... $0 [--here] [--verify] SCENARIO -- PROGRAM [ARG...]" >&2
  exit 2
}
here=0
verify=0
while [[ ${1:-} == --* && ${1:-} != -- ]]; do
  case $1 in
    --here) here=1 ;;
    --verify) verify=1 ;;
    *) usage ;;
  esac
  shift
done
[[ $# -ge 3 && $2 == -- ]] || usage
scenario=$1
shift 2
[[ -n ${SLURM_JOB_ID:-} ]] || { echo "$0: run me with sbatch (SLURM_JOB_ID is not set)" >&2; exit 2; }
wan="j${SLURM_JOB_ID}"

# --overlap: the steps share the allocation's CPUs with the hold step.
srun --overlap --ntasks-per-node=1 --kill-on-bad-exit=1 "$wanlab" join --hold --quiet --name "$wan" "$scenario" &
hold=$!
# However the script ends, the hold step ends with it, and with it the WAN:
# SIGTERM to the job's steps (not to srun, which would answer with SIGKILL
# to its tasks, leaving them no time to take the WAN down).
trap 'scancel --signal=TERM "$SLURM_JOB_ID" 2>/dev/null || true; wait "$hold" || true' EXIT

srun --overlap --ntasks-per-node=1 "$wanlab" status --wait "$wan" --timeout 120
export WANLAB_TESTBED=$wan
if [[ $verify == 1 ]]; then
  # Options for verify (--tolerance 20%, --slack 5ms) from the environment, split into words.
  read -ra verify_options <<<"${WANLAB_VERIFY_OPTIONS:-}"
  "$wanlab" verify "$scenario" --testbed "$wan" --rate "${verify_options[@]}"
fi
if [[ $here == 1 ]]; then
  "$@"
else
  srun --overlap "$@"
fi
