#!/usr/bin/env bash
# Boots one QEMU guest per --machine (Debian's stock kernel, as run-in-vm.sh
# boots it), joined by a Linux bridge in a private network namespace made for
# this run, and runs the same command in each, with WANLAB_MACHINE set to the
# guest's name. Exits 0 when every guest's command did, else with the first
# failure's status; each guest's console is printed with its name in front.
# The namespace, its bridge and taps, and every QEMU go with this script,
# however it ends.
#
#   scripts/vm/run-machines.sh --machine NAME=A.B.C.D [--machine ...]
#                              [run-in-vm.sh options] -- COMMAND [ARG...]
#
# Every guest's /etc/hosts names all of them; their addresses share one /24.
# Options other than --machine go to every run-in-vm.sh (--share, --env,
# --modprobe, --timeout, --memory, ...).
set -euo pipefail

me=run-machines.sh
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
names=()
addresses=()
passed=()
while [[ $# -gt 0 && $1 != -- ]]; do
  case "$1" in
    --machine)
      [[ $# -ge 2 && $2 =~ ^([a-z][a-z0-9-]{0,14})=([0-9]+\.[0-9]+\.[0-9]+\.[0-9]+)$ ]] ||
        { echo "$me: --machine needs NAME=A.B.C.D (NAME: [a-z][a-z0-9-]{0,14})" >&2; exit 2; }
      names+=("${BASH_REMATCH[1]}"); addresses+=("${BASH_REMATCH[2]}"); shift 2 ;;
    --tap|--address|--hostname|--hosts-file)
      echo "$me: $1 is set per machine by $me" >&2; exit 2 ;;
    *) passed+=("$1"); shift ;;
  esac
done
[[ $# -ge 2 && $1 == -- && ${#names[@]} -ge 1 ]] ||
  { echo "usage: $me --machine NAME=A.B.C.D [...] [run-in-vm.sh options] -- COMMAND [ARG...]" >&2; exit 2; }
shift
[[ $(id -u) -eq 0 ]] || { echo "$me: needs root (namespaces, taps, QEMU)" >&2; exit 125; }

ns="wanlab-machines-$$"
work="$(mktemp -d "${TMPDIR:-/tmp}/wanlab-machines.XXXXXX")"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  ip netns del "$ns" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The machines' network: a bridge and a tap per guest, in a namespace of their own.
ip netns add "$ns"
ip -n "$ns" link add br0 type bridge
ip -n "$ns" link set br0 up
{
  echo "127.0.0.1 localhost"
  for i in "${!names[@]}"; do echo "${addresses[$i]} ${names[$i]}"; done
} >"$work/hosts"
for i in "${!names[@]}"; do
  ip -n "$ns" tuntap add dev "tap$i" mode tap
  ip -n "$ns" link set "tap$i" master br0 up
done

for i in "${!names[@]}"; do
  name=${names[$i]}
  # setsid: a guest's QEMU and its script are one group, ended together.
  ip netns exec "$ns" setsid "$here/run-in-vm.sh" "${passed[@]}" --tap "tap$i" --address "${addresses[$i]}/24" \
    --hostname "$name" --hosts-file "$work/hosts" --env "WANLAB_MACHINE=$name" -- "$@" \
    > >(sed -u "s/^/[$name] /") 2>&1 &
  pids+=($!)
done

status=0
for i in "${!pids[@]}"; do
  code=0
  wait "${pids[$i]}" || code=$?
  if [[ $code -ne 0 ]]; then
    echo "$me: ${names[$i]} exited with $code" >&2
    [[ $status -ne 0 ]] || status=$code
  fi
done
pids=()
exit "$status"
