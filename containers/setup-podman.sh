#!/usr/bin/env bash
# Makes rootful podman run containers here, changing the host only where
# podman fails without the change. Run as root; scripts/setup.sh runs it.
#
# First it runs a throw-away container (a root file system of /bin/true and
# the shared objects it loads: no image, no registry). If that works, podman
# works here and nothing is changed.
#
# The one failure it repairs: a host with hybrid cgroups (cgroup v1
# controllers under /sys/fs/cgroup plus a cgroup v2 hierarchy at
# /sys/fs/cgroup/unified that still holds a controller, hugetlb on the
# development machines, which boot without systemd). crun refuses that
# ("cgroups in hybrid mode not supported, drop all controllers from
# cgroupv2"); binding each such controller to a v1 hierarchy of its own
# empties the v2 one. That lasts until reboot; running this again redoes it.
# Any other failure is reported with podman's reason, and nothing is changed.
set -euo pipefail

command -v podman >/dev/null || { echo "setup-podman.sh: podman is not installed (scripts/setup.sh installs it)" >&2; exit 1; }

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/bin"
cp /bin/true "$root/bin/true"
for library in $(ldd /bin/true | grep -o '/[^ )]*'); do
  mkdir -p "$root$(dirname "$library")"
  cp -L "$library" "$root$library"
done

# Prints podman's output and returns its status. The limits stay within our
# hard limits: podman's defaults can exceed them, and crun then fails.
probe() {
  timeout 120 podman run --rm --network none --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 \
    --rootfs "$root" /bin/true 2>&1
}

if out=$(probe); then
  echo "setup-podman.sh: podman runs containers here; nothing changed"
  exit 0
fi
why=$(printf '%s\n' "$out" | tail -n 1)

unified=/sys/fs/cgroup/unified
if [[ "$out" != *"hybrid mode not supported"* ]] || [ ! -f "$unified/cgroup.controllers" ]; then
  echo "setup-podman.sh: podman cannot run a container here, and it is not the hybrid-cgroup case this script repairs: $why" >&2
  exit 1
fi
controllers=$(cat "$unified/cgroup.controllers")
bound=()
for controller in $controllers; do
  mkdir -p "/sys/fs/cgroup/$controller"
  mountpoint -q "/sys/fs/cgroup/$controller" || mount -t cgroup -o "$controller" cgroup "/sys/fs/cgroup/$controller"
  bound+=("$controller")
done
echo "setup-podman.sh: changing the host's cgroup layout until reboot, because crun refuses hybrid cgroups: bound ${bound[*]:-nothing} from cgroup v2 ($unified) to cgroup v1 (/sys/fs/cgroup/<controller>)"

left=$(cat "$unified/cgroup.controllers")
[ -z "$left" ] || { echo "setup-podman.sh: cgroup v2 still holds $left after binding it to cgroup v1" >&2; exit 1; }
if ! out=$(probe); then
  echo "setup-podman.sh: podman still cannot run a container: $(printf '%s\n' "$out" | tail -n 1)" >&2
  exit 1
fi
echo "setup-podman.sh: podman runs containers here now"
