#!/usr/bin/env bash
# Runs one command inside Debian's stock kernel under QEMU and exits with the
# command's exit status. The guest sees this machine's / read-only over 9p
# under a tmpfs overlay (so the build tree's binaries run at the same absolute
# paths and nothing the guest writes reaches the host), has its own /run,
# /proc, /sys and bpffs, and the kernel package's modules, sch_fq among them.
#
#   scripts/vm/run-in-vm.sh [options] -- COMMAND [ARG...]
#   scripts/vm/run-in-vm.sh --fetch
#     --fetch            only bring the cache up to date with apt's kernel
#     --env NAME=VALUE   set in the command's environment (repeatable; the
#                        environment is otherwise only PATH, HOME and LANG)
#     --modprobe MODULE  load before the command (repeatable); sch_fq,
#                        sch_ingress, cls_bpf and veth always are
#     --cwd DIR          the command's directory (default: this one)
#     --share DIR        make DIR writable in the guest, at the same path, so
#                        what the command writes there reaches the host
#                        (repeatable; everything else the guest writes is lost)
#     --timeout SECONDS  wall-clock limit for the whole run (default 600)
#     --memory MIB       guest memory (default 2048)
#     --cpus N           guest CPUs (default 1; TCG runs one host thread each)
#     --tap NAME         a virtio NIC on the existing tap device NAME of this
#                        network namespace (run-machines.sh makes them); the
#                        guest names it eth0
#     --address A/LEN    eth0's IPv4 address (with --tap)
#     --hostname NAME    the guest's host name (default wanlab-vm)
#     --hosts-file FILE  the guest's /etc/hosts
#
# The kernel is `linux-image-amd64`'s dependency from apt, downloaded and
# unpacked (not installed) into $WANLAB_VM_CACHE (default /var/cache/wanlab-vm)
# and reused: apt is asked again only by --fetch (CTest's vm.kernel does it once
# per run) or while the cache is empty. No KVM is needed: QEMU runs TCG. The command's output
# is the guest's serial console. A guest that does not boot, or that ends
# without reporting the command's status, is a failure (exit 125) printed with
# the console's tail; a run past --timeout is one too (exit 124), and QEMU is
# killed on every way out, including this script being killed.
set -euo pipefail

me=run-in-vm.sh
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${WANLAB_VM_CACHE:-/var/cache/wanlab-vm}"
timeout=600
memory=2048
cpus=1
fetch_only=0
tap=""
address=""
guest_hostname=wanlab-vm
hosts_file=""
shares=()
cwd="$PWD"
environment=("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" "HOME=/root" "LANG=C.UTF-8")
modules=(sch_fq sch_ingress cls_bpf veth)
# What the root file system needs before it exists: virtio, 9p and overlay.
early_modules=(virtio_pci 9pnet_virtio 9p overlay)

die() {
  echo "$me: $*" >&2
  exit 125
}

usage() {
  echo "usage: $me --fetch | [--env NAME=VALUE] [--modprobe MODULE] [--cwd DIR] [--share DIR] [--timeout SECONDS] [--memory MIB] [--cpus N] [--tap NAME [--address A/LEN]] [--hostname NAME] [--hosts-file FILE] -- COMMAND [ARG...]" >&2
  exit 2
}

positive() {
  [[ $2 =~ ^[1-9][0-9]*$ ]] || { echo "$me: $1 $2: expected a positive whole number" >&2; usage; }
}

while [[ $# -gt 0 ]]; do
  case "$1" in
    --env) [[ $# -ge 2 && $2 =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || { echo "$me: --env needs NAME=VALUE" >&2; usage; }
           environment+=("$2"); shift 2 ;;
    --modprobe) [[ $# -ge 2 && $2 =~ ^[A-Za-z0-9_-]+$ ]] || { echo "$me: --modprobe needs a module name" >&2; usage; }
                modules+=("$2"); shift 2 ;;
    --cwd) [[ $# -ge 2 ]] || usage; cwd="$(realpath -- "$2")"; shift 2 ;;
    --share) [[ $# -ge 2 && -d $2 ]] || { echo "$me: --share needs an existing directory" >&2; usage; }
             shares+=("$(realpath -- "$2")"); shift 2 ;;
    --timeout) [[ $# -ge 2 ]] || usage; positive "$1" "$2"; timeout=$2; shift 2 ;;
    --memory) [[ $# -ge 2 ]] || usage; positive "$1" "$2"; memory=$2; shift 2 ;;
    --cpus) [[ $# -ge 2 ]] || usage; positive "$1" "$2"; cpus=$2; shift 2 ;;
    --tap) [[ $# -ge 2 && $2 =~ ^[A-Za-z0-9_-]{1,15}$ ]] || { echo "$me: --tap needs a tap device's name" >&2; usage; }
           tap=$2; modules+=(virtio_net); shift 2 ;;
    --address) [[ $# -ge 2 && $2 =~ ^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+/[0-9]+$ ]] || { echo "$me: --address needs A.B.C.D/LEN" >&2; usage; }
               address=$2; shift 2 ;;
    --hostname) [[ $# -ge 2 && $2 =~ ^[A-Za-z0-9][A-Za-z0-9.-]{0,62}$ ]] || { echo "$me: --hostname needs a host name" >&2; usage; }
                guest_hostname=$2; shift 2 ;;
    --hosts-file) [[ $# -ge 2 && -f $2 ]] || { echo "$me: --hosts-file needs an existing file" >&2; usage; }
                  hosts_file="$(realpath -- "$2")"; shift 2 ;;
    --fetch) fetch_only=1; shift ;;
    --) shift; break ;;
    *) echo "$me: unknown option $1" >&2; usage ;;
  esac
done
[[ $# -ge 1 || $fetch_only -eq 1 ]] || usage
# The guest mounts its own /run, /proc, /sys and /dev: what lies there on the
# host is not what the guest sees.
[[ $fetch_only -eq 1 ]] || case "$cwd/" in /run/*|/proc/*|/sys/*|/dev/*) die "--cwd $cwd: the guest has its own $(cut -d/ -f2 <<<"$cwd"), so run from elsewhere" ;; esac
[[ $(id -u) -eq 0 ]] || die "needs root (QEMU must read all of / to share it with the guest)"
for tool in qemu-system-x86_64 apt-get dpkg-deb depmod modprobe setpriv xz; do
  command -v "$tool" >/dev/null || die "$tool is missing: run scripts/setup.sh build (it installs qemu-system-x86, busybox-static, kmod and xz-utils)"
done
busybox=/bin/busybox
[[ -x $busybox ]] || die "$busybox is missing: apt-get install busybox-static"
if ldd "$busybox" >/dev/null 2>&1; then die "$busybox is linked dynamically; the initramfs needs busybox-static (apt-get install busybox-static)"; fi

# ---- the kernel: linux-image-amd64's dependency, unpacked into the cache ----
# The uncompressed kernel inside a bzImage whose payload is xz (Debian 12's):
# QEMU boots it directly through its PVH entry, which under TCG saves the
# 8-10 s that the guest would spend decompressing itself. Nothing is written
# where the payload is not xz; the bzImage is booted then.
extract_vmlinux() {
  local offset
  offset="$(LC_ALL=C grep -abo -m 1 $'\xfd7zXZ' "$1" | LC_ALL=C sed -n '1s/:.*//p')"
  [[ -n $offset ]] || return 0
  # xz stops at the stream's end; what follows it in the bzImage is not xz.
  if ! xz -dc --single-stream <(tail -c "+$((offset + 1))" "$1") >"$2.tmp" 2>/dev/null; then
    rm -f "$2.tmp"
    return 0
  fi
  mv "$2.tmp" "$2"
}

# Asks apt which kernel linux-image-amd64 stands for, fetches and unpacks it
# unless the cache has it, and points $cache/current at it.
fetch_kernel() {
  local depends package version dir
  depends="$(apt-cache show --no-all-versions linux-image-amd64 2>/dev/null | sed -n 's/^Depends: //p')"
  if [[ ! $depends =~ ^(linux-image-[a-z0-9.+-]+)\ \(=\ ([A-Za-z0-9.+:~-]+)\)$ ]]; then
    die "apt knows no linux-image-amd64 (run apt-get update)"
  fi
  package=${BASH_REMATCH[1]}
  version=${BASH_REMATCH[2]}
  dir="$cache/${package}_$version"
  if [[ ! -e $dir/.ready ]]; then
    echo "$me: fetching $package $version into $dir" >&2
    rm -rf "$dir" "$dir.partial"
    mkdir -p "$dir.partial"
    (cd "$dir.partial" && apt-get download -q "$package=$version" >/dev/null 2>download.log) ||
      die "apt-get download $package=$version failed: $(tail -n 1 "$dir.partial/download.log")"
    dpkg-deb -x "$dir.partial/"*.deb "$dir.partial/root" || die "dpkg-deb -x of $package failed"
    rm -f "$dir.partial/"*.deb "$dir.partial/download.log"
    local release
    release="$(basename "$(find "$dir.partial/root/lib/modules" -mindepth 1 -maxdepth 1 -type d | head -n 1)")"
    depmod -b "$dir.partial/root" "$release" || die "depmod for $release failed"
    extract_vmlinux "$dir.partial/root/boot/vmlinuz-$release" "$dir.partial/vmlinux"
    mv "$dir.partial" "$dir"
    touch "$dir/.ready"
    # Kernels apt has moved past (about 400 MB each).
    find "$cache" -mindepth 1 -maxdepth 1 -type d -name 'linux-image-*' ! -name "$(basename "$dir")" -exec rm -rf {} +
  fi
  ln -sfn "$(basename "$dir")" "$cache/current"
}

mkdir -p "$cache"
exec {lock}>"$cache/.lock"
flock "$lock"
if [[ $fetch_only -eq 1 || ! -e $cache/current/.ready ]]; then fetch_kernel; fi
kernel_dir="$(realpath "$cache/current")"
flock -u "$lock"
if [[ $fetch_only -eq 1 ]]; then
  echo "$me: kernel $(basename "$kernel_dir") is in $kernel_dir"
  exit 0
fi
root="$kernel_dir/root"
release="$(basename "$(find "$root/lib/modules" -mindepth 1 -maxdepth 1 -type d | head -n 1)")"
vmlinuz="$root/boot/vmlinuz-$release"
[[ -r $kernel_dir/vmlinux ]] && vmlinuz="$kernel_dir/vmlinux"
[[ -n $release && -r $vmlinuz && -e $root/lib/modules/$release/modules.dep ]] ||
  die "$kernel_dir holds no kernel with its modules (remove it to fetch again)"

# ---- the run's directory: the initramfs and the writable share ----
# A run killed outright (SIGKILL) could not remove its directory: the next run
# does, once the pid written there is gone. Its QEMU died with it (pdeathsig).
tmp="${TMPDIR:-/tmp}"
for stale in "$tmp"/wanlab-vm.*; do
  [[ -f $stale/pid ]] || continue
  kill -0 "$(<"$stale/pid")" 2>/dev/null || rm -rf "$stale"
done
work="$(mktemp -d "$tmp/wanlab-vm.XXXXXX")"
echo "$$" >"$work/pid"
qemu_pid=""
cleanup() {
  if [[ -n $qemu_pid ]] && kill -0 "$qemu_pid" 2>/dev/null; then
    kill -KILL "$qemu_pid" 2>/dev/null || true
    wait "$qemu_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

initramfs="$work/initramfs"
share="$work/share"
mkdir -p "$initramfs/bin" "$initramfs/modules" "$initramfs/proc" "$initramfs/sys" "$initramfs/dev" "$share"
cp "$busybox" "$initramfs/bin/busybox"
cp "$here/init" "$initramfs/init"
chmod 0755 "$initramfs/init"
# Each early module and what it needs, in load order, once.
modprobe -d "$root" -S "$release" --show-depends -a "${early_modules[@]}" |
  awk '$1 == "insmod" && !seen[$2]++ { print $2 }' >"$work/early"
[[ -s $work/early ]] || die "no early modules found for $release"
while read -r path; do
  cp "$path" "$initramfs/modules/"
  basename "$path" >>"$initramfs/modules/order"
done <"$work/early"
(cd "$initramfs" && find . | "$busybox" cpio -o -H newc 2>/dev/null | gzip -1) >"$work/initramfs.img"

cp "$here/guest.sh" "$share/guest.sh"
cp "$busybox" "$share/busybox"
printf '%s' "$root/lib/modules/$release" >"$share/modules-dir"
printf '%s' "$cwd" >"$share/cwd"
printf '%s\0' "${modules[@]}" >"$share/modprobe"
printf '%s\0' "${environment[@]}" >"$share/env"
printf '%s\0' "$@" >"$share/argv"
: >"$share/writable"
printf '%s' "$address" >"$share/address"
printf '%s' "$guest_hostname" >"$share/hostname"
if [[ -n $hosts_file ]]; then cp "$hosts_file" "$share/hosts"; fi
# (printf with no arguments would still write one empty entry)
if [[ ${#shares[@]} -gt 0 ]]; then printf '%s\0' "${shares[@]}" >"$share/writable"; fi

# ---- the guest ----
# A comma in a QEMU option's value is written twice.
qemu_value() { printf '%s' "${1//,/,,}"; }
share_devices=()
nic=(-nic none)
if [[ -n $tap ]]; then
  # A locally administered MAC from the tap's name: each guest its own.
  mac="52:54:$(printf '%s' "$tap" | md5sum | sed 's/^\(..\)\(..\)\(..\)\(..\).*/\1:\2:\3:\4/')"
  nic=(-netdev "tap,id=net0,ifname=$tap,script=no,downscript=no" -device "virtio-net-pci,netdev=net0,mac=$mac")
fi
for i in "${!shares[@]}"; do
  share_devices+=(-fsdev "local,id=share$i,path=$(qemu_value "${shares[$i]}"),security_model=none"
                  -device "virtio-9p-pci,fsdev=share$i,mount_tag=share$i")
done
console="$work/console.log"
# Under TCG on a busy host the kernel calibrates the TSC against the PIT wrongly
# (by 5-10x here) and its clock runs fast until the watchdog notices: keep time
# with the HPET from the start. The crypto self-tests and the Spectre
# mitigations only cost boot and run time in a disposable test guest.
cmdline="console=ttyS0 quiet loglevel=3 panic=-1 rdinit=/init clocksource=hpet tsc=unstable cryptomgr.notests mitigations=off"
# setpriv --pdeathsig: QEMU dies with this script, however the script ends.
setpriv --pdeathsig KILL -- qemu-system-x86_64 \
  -accel tcg -cpu max -smp "$cpus" -m "$memory" \
  -display none -vga none -monitor none -no-reboot "${nic[@]}" \
  -chardev "stdio,id=console,signal=off,logfile=$(qemu_value "$console")" -serial chardev:console \
  -kernel "$(qemu_value "$vmlinuz")" -initrd "$work/initramfs.img" \
  -append "$cmdline" \
  -fsdev "local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap" \
  -device virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot \
  -fsdev "local,id=wanlabvm,path=$(qemu_value "$share"),security_model=none" \
  -device virtio-9p-pci,fsdev=wanlabvm,mount_tag=wanlabvm \
  "${share_devices[@]}" </dev/null &
qemu_pid=$!
deadline=$((SECONDS + timeout))
while kill -0 "$qemu_pid" 2>/dev/null; do
  if ((SECONDS >= deadline)); then
    kill -KILL "$qemu_pid" 2>/dev/null || true
    wait "$qemu_pid" 2>/dev/null || true
    qemu_pid=""
    echo "$me: the guest ran past --timeout $timeout s and was killed; console tail:" >&2
    tail -n 30 "$console" >&2 || true
    exit 124
  fi
  sleep 0.2
done
qemu_status=0
wait "$qemu_pid" || qemu_status=$?
qemu_pid=""
status="$(cat "$share/status" 2>/dev/null || true)"
if [[ ! $status =~ ^[0-9]+$ ]]; then
  echo "$me: the guest ended without reporting the command's status (QEMU exited $qemu_status; kernel $(basename "$kernel_dir")); console tail:" >&2
  tail -n 30 "$console" >&2 || true
  exit 125
fi
exit "$status"
