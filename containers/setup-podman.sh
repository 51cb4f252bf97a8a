#!/bin/sh
# Makes rootful podman (crun) work on a host with hybrid cgroups, such as the
# development machines: cgroup v1 controllers under /sys/fs/cgroup plus a
# cgroup v2 hierarchy at /sys/fs/cgroup/unified that still holds a controller
# (hugetlb here). crun refuses that ("cgroups in hybrid mode not supported,
# drop all controllers from cgroupv2"); binding each such controller to a v1
# hierarchy of its own empties the v2 one. Lasts until reboot; run as root.
set -eu
unified=/sys/fs/cgroup/unified
if [ "$(stat -f -c %T /sys/fs/cgroup)" != tmpfs ] || [ ! -f "$unified/cgroup.controllers" ]; then
  echo "setup-podman.sh: not a hybrid cgroup host; nothing to do"
  exit 0
fi
for controller in $(cat "$unified/cgroup.controllers"); do
  mkdir -p "/sys/fs/cgroup/$controller"
  if ! mountpoint -q "/sys/fs/cgroup/$controller"; then
    mount -t cgroup -o "$controller" cgroup "/sys/fs/cgroup/$controller"
    echo "setup-podman.sh: bound the $controller controller to cgroup v1 (/sys/fs/cgroup/$controller)"
  fi
done
left=$(cat "$unified/cgroup.controllers")
[ -z "$left" ] || { echo "setup-podman.sh: cgroup v2 still holds: $left" >&2; exit 1; }
echo "setup-podman.sh: cgroup v2 holds no controllers; crun accepts this host"
