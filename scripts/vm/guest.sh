#!/bin/bash
# PID 1 of the guest after switch_root (see init): the host's / read-only under
# a tmpfs overlay, the writable share at /wanlab-vm. Loads the modules asked
# for, mounts the directories given with --share at their paths, runs the command that run-in-vm.sh wrote into the share (argv, cwd and
# environment as NUL-separated lists, never through a shell) and writes its
# exit status to the share, then powers the guest off.
set -uo pipefail
share=/wanlab-vm
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

# busybox's poweroff -f needs no init system (Debian's poweroff needs systemd).
power_off() {
  sync
  "$share/busybox" poweroff -f
  sleep 10
}

# A guest that cannot run the command reports no status: the host then fails
# with the console's tail, which holds this line.
fail() {
  echo "wanlab-vm: $*"
  power_off
}

# The kernel's modules: the unpacked package's tree, reached over 9p.
kernel_release=$(uname -r)
modules_dir=$(<"$share/modules-dir")
mkdir -p "/lib/modules/$kernel_release"
mount --bind "$modules_dir" "/lib/modules/$kernel_release" || fail "binding $modules_dir failed"
mapfile -d '' -t modules <"$share/modprobe"
for module in "${modules[@]}"; do
  modprobe "$module" || fail "modprobe $module failed on kernel $kernel_release"
done
mapfile -d '' -t writable <"$share/writable"
for i in "${!writable[@]}"; do
  mkdir -p "${writable[$i]}"
  mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 "share$i" "${writable[$i]}" || fail "mounting ${writable[$i]} writable failed"
done
# cgroup v2 (init mounts it) with the cpu controller for the cgroups below
# the root, as systemd leaves a Debian 12 host: the idle pollers' cgroup
# (base/idle_poll.hpp) is made there.
echo +cpu >/sys/fs/cgroup/cgroup.subtree_control || fail "enabling the cpu controller in /sys/fs/cgroup failed"
ip link set lo up
hostname "$(<"$share/hostname")" 2>/dev/null || true
if [[ -s $share/hosts ]]; then cp "$share/hosts" /etc/hosts; fi
# --tap: the one NIC, named eth0 whatever the kernel called it.
address=$(<"$share/address")
if [[ -n $address ]]; then
  nic=$(ls /sys/class/net | grep -v '^lo$' | head -n 1)
  [[ -n $nic ]] || fail "no network interface for --address $address"
  [[ $nic == eth0 ]] || ip link set "$nic" name eth0 || fail "renaming $nic to eth0 failed"
  ip addr add "$address" dev eth0 && ip link set eth0 up || fail "configuring eth0 with $address failed"
fi

mapfile -d '' -t environment <"$share/env"
mapfile -d '' -t command <"$share/argv"
cwd=$(<"$share/cwd")
cd "$cwd" || fail "no directory $cwd in the guest"
env -i "${environment[@]}" "${command[@]}" </dev/null
echo "$?" >"$share/status.tmp" && mv "$share/status.tmp" "$share/status"
power_off
