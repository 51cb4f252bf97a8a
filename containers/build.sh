#!/bin/sh
# Builds the worker image from a built wanlab binary:
#   containers/build.sh [WANLAB_BINARY] [TAG]
# defaults: build/cli/wanlab, localhost/wanlab-worker:latest.
# The binary and every shared object ldd lists (at the paths ldd shows, plus
# the program interpreter) go into a FROM scratch image (containers/Containerfile).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
binary=${1:-build/cli/wanlab}
tag=${2:-localhost/wanlab-worker:latest}
[ -x "$binary" ] || { echo "build.sh: $binary is not an executable (build wanlab first)" >&2; exit 2; }
command -v podman >/dev/null || { echo "build.sh: podman is not installed" >&2; exit 2; }

context=$(mktemp -d)
trap 'rm -rf "$context"' EXIT
root=$context/rootfs
mkdir -p "$root/usr/bin" "$root/proc" "$root/dev" "$root/sys" "$root/etc" "$root/run" "$root/tmp"
cp "$binary" "$root/usr/bin/wanlab"
for library in $(ldd "$binary" | grep -o '/[^ )]*'); do
  mkdir -p "$root$(dirname "$library")"
  cp -L "$library" "$root$library"
done
podman build --pull=never --file "$here/Containerfile" --tag "$tag" "$context"
podman run --rm --network none --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 "$tag"
