#!/usr/bin/env bash
# Cost of chunking, measured with `wanlab perf` over loopback for several
# chunk sizes and stream counts: the measurement behind kDefaultChunkSize
# (docs/TRANSPORT.md).
#
#   bench/transport/chunk_size.sh [WANLAB_BIN] [BYTES] [REPEATS]
#
# Each run sends BYTES (default 4G) in 4 MiB messages. Prints, per (streams,
# chunk size), medians over REPEATS runs of: goodput, p99 message completion
# time, and CPU seconds per GiB spent by client and server together (from
# /proc: steadier than goodput when client and server share two cores).
# Loopback is CPU-bound, so this shows per-chunk overhead; on a WAN the RTT
# dominates and any chunk size from 256 KiB up fills the pipe.
set -euo pipefail

bin=${1:-build/cli/wanlab}
bytes=${2:-4G}
repeats=${3:-3}
port=$((20000 + RANDOM % 20000))

"$bin" perf server --bind 127.0.0.1 --port "$port" --json >/dev/null &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null || true' EXIT
sleep 0.3

ticks() { awk '{ print $14 + $15 + $16 + $17 }' "/proc/$1/stat"; }  # utime stime cutime cstime
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
hz=$(getconf CLK_TCK)

printf "%-8s %-8s %13s %10s %14s\n" streams chunk "goodput Gb/s" "p99 ms" "CPU s per GiB"
for streams in 1 8; do
  for chunk in 64K 128K 256K 512K 1M 4M; do
    goodputs=() p99s=() cpus=()
    for _ in $(seq "$repeats"); do
      server_before=$(ticks "$server")
      client_before=$(ticks $$)  # cutime/cstime of this shell grow by the reaped client
      json=$("$bin" perf client 127.0.0.1 --port "$port" -P "$streams" -n "$bytes" \
               --message-size 4M --chunk-size "$chunk" --json)
      client_ticks=$(( $(ticks $$) - client_before ))
      server_ticks=$(( $(ticks "$server") - server_before ))
      read -r goodput p99 gib < <(python3 -c 'import json,sys; r = json.load(sys.stdin); print(r["goodput_bps"] / 1e9, r["message_completion_ms"]["p99"], r["bytes"] / 2**30)' <<<"$json")
      goodputs+=("$goodput") p99s+=("$p99")
      cpus+=("$(python3 -c "print(($server_ticks + $client_ticks) / $hz / $gib)")")
    done
    printf "%-8s %-8s %13.2f %10.2f %14.3f\n" "$streams" "$chunk" "$(printf '%s\n' "${goodputs[@]}" | median)" \
      "$(printf '%s\n' "${p99s[@]}" | median)" "$(printf '%s\n' "${cpus[@]}" | median)"
  done
done
