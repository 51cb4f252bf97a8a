# Sourced by the bench/run-*.sh scripts: configures a benchmark build
# directory once and builds targets into its log.
#   bench_build SCRIPT BUILD_DIR TARGET...   (exits 1 with the log's tail on failure)
#   bench_prepare SCRIPT REPO BUILD_DIR TARGET
#     checks for root, configures, builds TARGET and, unless $WANLAB_BIN names
#     one, the wanlab binary
#   bench_down_leftover WANLAB NAME
#     takes down testbed NAME if a benchmark killed outright (SIGKILL) left it

bench_configure() {
  local repo=$1 build=$2
  [[ -f "$build/CMakeCache.txt" ]] && return 0
  local generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  cmake -S "$repo" -B "$build" "${generator[@]}" -DWANLAB_WERROR=ON >/dev/null
}

bench_build() {
  local script=$1 build=$2
  shift 2
  local log="$build/bench-build.log"
  if ! cmake --build "$build" --target "$@" >"$log" 2>&1; then
    tail -n 30 "$log" >&2
    echo "$script: building $* failed (log: $log)" >&2
    exit 1
  fi
}

bench_prepare() {
  local script=$1 repo=$2 build=$3 target=$4
  if [[ $(id -u) -ne 0 ]]; then
    echo "$script: needs root (namespaces, tc, iptables)" >&2
    exit 1
  fi
  local targets=("$target")
  [[ -n "${WANLAB_BIN:-}" ]] || targets+=(wanlab)
  bench_configure "$repo" "$build"
  bench_build "$script" "$build" "${targets[@]}"
}

bench_down_leftover() {
  local wanlab=$1 name=$2
  if [[ -d /run/wanlab/$name ]] || ls /run/netns 2>/dev/null | grep -q "^wanlab-$name\."; then
    "$wanlab" down "$name" >/dev/null 2>&1 || echo "warning: could not take $name down" >&2
  fi
}
