#!/usr/bin/env bash
# Goodput of one wanlab transport channel against its number of TCP
# connections, on an emulated long-fat pipe (root; uses `wanlab up`).
#
#   bench/transport/wan_streams.sh [WANLAB_BIN] [DELAY_ONE_WAY] [RATE] [WMEM_MAX] [SECONDS]
#   defaults:                      build/cli/wanlab  50ms  1gbit  4mb  10
#
# Prints, per stream count, the goodput over the whole run, the goodput after
# slow start (intervals from 3 s on), retransmits and the p99 message
# completion time. A single stream is held to about WMEM_MAX per RTT.
set -euo pipefail

bin=$(realpath "${1:-build/cli/wanlab}")
delay=${2:-50ms}
rate=${3:-1gbit}
wmem=${4:-4mb}
seconds=${5:-10}
name=tbench-strm
scenario=$(mktemp --suffix=.toml)

cat >"$scenario" <<TOML
name = "$name"
[defaults]
rate = "$rate"
queue = "1bdp"
[host]
tcp_congestion = "cubic"
tcp_wmem_max = "$wmem"
tcp_rmem_max = "64mb"
[[dc]]
name = "east"
hosts = 1
[[dc]]
name = "west"
hosts = 1
[[link]]
between = ["east", "west"]
delay = "$delay"
TOML

cleanup() {
  "$bin" down "$name" >/dev/null 2>&1 || true
  rm -f "$scenario" "${report:-}"
}
trap cleanup EXIT
"$bin" up "$scenario" --quiet >/dev/null
west=$("$bin" hosts --testbed "$name" --json |
  python3 -c 'import json,sys; print(next(h["ipv4"] for h in json.load(sys.stdin) if h["name"] == "west-0"))')

report=$(mktemp --suffix=.py)
cat >"$report" <<'PY'
import json, sys
r = json.load(sys.stdin)
steady = [i for i in r["intervals"] if i["start"] >= 3.0]
seconds = sum(i["end"] - i["start"] for i in steady)
steady_bps = 8 * sum(i["bytes"] for i in steady) / seconds if seconds > 0 else 0
print(f'{sys.argv[1]:<8} {r["goodput_bps"] / 1e6:14.1f} {steady_bps / 1e6:16.1f} {r["retransmits"]:8} '
      f'{r["message_completion_ms"]["p99"]:10.1f}')
PY

printf "one way %s, %s, tcp_wmem max %s, %s s per run\n" "$delay" "$rate" "$wmem" "$seconds"
printf "%-8s %14s %16s %8s %10s\n" streams "goodput Mb/s" "steady Mb/s" retr "p99 ms"
for streams in 1 2 4 8 16; do
  "$bin" exec west-0 --testbed "$name" -- "$bin" perf server --one-off --json >/dev/null &
  server=$!
  sleep 0.5
  json=$("$bin" exec east-0 --testbed "$name" -- "$bin" perf client "$west" -P "$streams" -t "$seconds" --json)
  wait "$server"
  python3 "$report" "$streams" <<<"$json"
done
