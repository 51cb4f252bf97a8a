#!/usr/bin/env bash
# Data both ways at once, against one way: what each direction of an emulated
# WAN link carries when the other carries data too, beside the simulator's
# rule (docs/SIMULATOR.md, "ACKs": each way loses the other way's ACKs,
# kAckShareOfData of its data). iperf3 between two hosts of a two-DC testbed
# at 100 Mbit/s and 33 ms one way with three-dc.toml's buffers at scale 0.1
# (as a scale-0.1 run of its experiments has them), for each shape of
# streams the harness makes: one stream paced at the link's payload rate
# (1F1B, GPipe), four paced at a quarter (dp-across-dc's four rings), four at
# the whole rate, eight at an eighth (Atlas's channels). Both ways is two
# iperf3 clients at once, one on each host, so that both ways' senders are
# paced alike (iperf3 --bidir does not pace the server's way: it built a
# queue the client's way did not). The data plane's counters give the ACKs
# each way sends per data segment.
#
#   bench/run-bidir-bench.sh            about 3 minutes, as root
#
# Environment: WANLAB (default build/cli/wanlab), SECONDS_EACH (20).
# Its testbed is named bench-bidir and goes down however the benchmark ends.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
wanlab="${WANLAB:-$repo/build/cli/wanlab}"
seconds="${SECONDS_EACH:-20}"
[ -x "$wanlab" ] || { echo "run-bidir-bench.sh: $wanlab is not built (set WANLAB=...)" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "run-bidir-bench.sh: needs root" >&2; exit 2; }
command -v iperf3 > /dev/null || { echo "run-bidir-bench.sh: iperf3 is not installed (scripts/setup.sh installs it)" >&2; exit 2; }

work=$(mktemp -d)
servers=()
cleanup() {
  for server in "${servers[@]}"; do
    kill "$server" 2> /dev/null || true
    wait "$server" 2> /dev/null || true
  done
  "$wanlab" down bench-bidir > /dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cat > "$work/bidir.toml" << 'EOF'
name = "bidir"
[defaults]
rate = "100mbit"
queue = "1bdp"
[host]                      # three-dc.toml's 4 MB / 6 MB at scale 0.1
tcp_congestion = "cubic"
tcp_wmem_max = "400kb"
tcp_rmem_max = "600kb"
[[dc]]
name = "east"
hosts = 1
[[dc]]
name = "west"
hosts = 1
[[link]]
between = ["east", "west"]
delay = "33ms"
EOF
"$wanlab" up "$work/bidir.toml" --name bench-bidir --quiet > /dev/null
address() {
  "$wanlab" hosts --testbed bench-bidir --json | python3 -c 'import json,sys; print([h["ipv4"] for h in json.load(sys.stdin) if h["name"]==sys.argv[1]][0])' "$1"
}
east=$(address east-0)
west=$(address west-0)
"$wanlab" exec west-0 --testbed bench-bidir -- iperf3 -s -p 5201 > "$work/server-west.log" 2>&1 &
servers+=($!)
"$wanlab" exec east-0 --testbed bench-bidir -- iperf3 -s -p 5202 > "$work/server-east.log" 2>&1 &
servers+=($!)
sleep 1

# send FROM TO_ADDRESS PORT STREAMS PACING_MBIT OUT: one iperf3 client.
send() {
  "$wanlab" exec "$1" --testbed bench-bidir -- iperf3 -c "$2" -p "$3" -t "$seconds" -O 3 -P "$4" \
    --fq-rate "${5}M" -J > "$6"
}

# measure NAME STREAMS PACING_MBIT [both]: east to west, and west to east at
# the same time with `both`, with the data plane's counters around them.
measure() {
  local name=$1 streams=$2 pacing=$3 both=${4:-}
  "$wanlab" stats --testbed bench-bidir --json > "$work/$name.before.json"
  local back=""
  if [ -n "$both" ]; then
    send west-0 "$east" 5202 "$streams" "$pacing" "$work/$name.back.json" &
    back=$!
  fi
  send east-0 "$west" 5201 "$streams" "$pacing" "$work/$name.there.json"
  [ -z "$back" ] || wait "$back"
  "$wanlab" stats --testbed bench-bidir --json > "$work/$name.after.json"
}

echo "# both ways against one way: 100 Mbit/s, 33 ms one way, 400 KB / 600 KB buffers, ${seconds} s each; $(date -u '+%F %H:%M UTC'); $(uptime | sed 's/.*load/load/')"
for shape in "1 100" "4 24" "4 100" "8 12.5"; do
  read -r streams pacing <<< "$shape"
  measure "one-$streams-$pacing" "$streams" "$pacing"
  measure "both-$streams-$pacing" "$streams" "$pacing" both
done
python3 - "$work" << 'EOF'
import json, sys
work = sys.argv[1]
ACK_FRAME, FRAME, PAYLOAD = 66, 1514, 1448
ACK_SHARE = ACK_FRAME / (2 * FRAME)  # kAckShareOfData (tcp_model.hpp)

def counters(name):
    before = json.load(open(f'{work}/{name}.before.json'))['pairs']
    after = json.load(open(f'{work}/{name}.after.json'))['pairs']
    out = {}
    for b, a in zip(before, after):
        packets, octets = a['packets'] - b['packets'], a['bytes'] - b['bytes']
        # Every frame is a full data segment or a bare ACK: solve for both.
        data = max(0.0, (octets - packets * ACK_FRAME) / (FRAME - ACK_FRAME))
        out[(b['from'], b['to'])] = (data, packets - data, a['drops_queue'] - b['drops_queue'])
    return out

def mbit(name, way):
    return json.load(open(f'{work}/{name}.{way}.json'))['end']['sum_received']['bits_per_second'] / 1e6

print('| streams x pacing | one way (Mbit/s) | both ways, each (Mbit/s) | both / one | simulator: 1 / (1 + ACK share) | ACKs per data segment, one way / both | queue drops, both ways |')
print('|---|---:|---:|---:|---:|---:|---:|')
for shape in ('1-100', '4-24', '4-100', '8-12.5'):
    streams, pacing = shape.split('-')
    one = mbit(f'one-{shape}', 'there')
    there = mbit(f'both-{shape}', 'there')
    back = mbit(f'both-{shape}', 'back')
    c1, c2 = counters(f'one-{shape}'), counters(f'both-{shape}')
    acks_one = c1[('west', 'east')][1] / max(1.0, c1[('east', 'west')][0])
    acks_both = (c2[('west', 'east')][1] + c2[('east', 'west')][1]) / max(1.0, c2[('east', 'west')][0] + c2[('west', 'east')][0])
    drops = c2[('east', 'west')][2] + c2[('west', 'east')][2]
    # The simulator: each way's capacity less the other way's ACKs, where the link binds.
    model = 1 / (1 + ACK_SHARE) if one > 0.9 * 100 * PAYLOAD / FRAME else 1.0
    print(f'| {streams} x {pacing} Mbit/s | {one:.1f} | {there:.1f} / {back:.1f} | {(there + back) / 2 / one:.3f} | {model:.3f} '
          f'| {acks_one:.2f} / {acks_both:.2f} | {drops} |')
EOF
