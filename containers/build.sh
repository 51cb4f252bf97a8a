#!/usr/bin/env bash
# Builds the worker image from a built wanlab binary:
#   containers/build.sh [WANLAB_BINARY] [TAG]
# defaults: build/cli/wanlab, localhost/wanlab-worker:latest.
# The binary and every shared object ldd lists (at the paths ldd shows, plus
# the program interpreter) go into a FROM scratch image (containers/Containerfile),
# labelled wanlab.build-id with the binary's GNU build ID: `wanlab train
# --image` refuses an image whose build ID is not its own. If TAG already
# holds this build, nothing is done; the image TAG held before is removed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
binary=${1:-build/cli/wanlab}
tag=${2:-localhost/wanlab-worker:latest}
[ -x "$binary" ] || { echo "build.sh: $binary is not an executable (build wanlab first)" >&2; exit 2; }
command -v podman >/dev/null || { echo "build.sh: podman is not installed (scripts/setup.sh installs it)" >&2; exit 2; }
build_id=$(LC_ALL=C readelf -n "$binary" | sed -n 's/^ *Build ID: *\([0-9a-f]*\)$/\1/p')
[ -n "$build_id" ] || { echo "build.sh: $binary has no GNU build ID (link it with --build-id)" >&2; exit 2; }

old=$(podman image inspect --format '{{.Id}} {{index .Labels "wanlab.build-id"}}' "$tag" 2>/dev/null || true)
if [ "${old#* }" = "$build_id" ]; then
  echo "build.sh: $tag already holds $binary (build ID $build_id)"
  exit 0
fi

context=$(mktemp -d)
trap 'rm -rf "$context"' EXIT
root=$context/rootfs
mkdir -p "$root/usr/bin" "$root/proc" "$root/dev" "$root/sys" "$root/etc" "$root/run" "$root/tmp"
cp "$binary" "$root/usr/bin/wanlab"
for library in $(ldd "$binary" | grep -o '/[^ )]*'); do
  mkdir -p "$root$(dirname "$library")"
  cp -L "$library" "$root$library"
done
podman build --quiet --pull=never --label "wanlab.build-id=$build_id" --file "$here/Containerfile" --tag "$tag" "$context" >/dev/null
podman run --rm --network none --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 "$tag"
# The image the tag held before, unless something else still uses it.
new=$(podman image inspect --format '{{.Id}}' "$tag")
[ -z "$old" ] || [ "${old%% *}" = "$new" ] || podman rmi "${old%% *}" >/dev/null 2>&1 || true
echo "build.sh: built $tag from $binary (build ID $build_id)"
