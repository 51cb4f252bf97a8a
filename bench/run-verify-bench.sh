#!/usr/bin/env bash
# `wanlab verify --rate` on a correct testbed (scenarios/ci.toml: 20 ms RTT,
# 100 Mbit/s), N rounds, each round once with --attempts 1 (the anchor: one
# measurement a check, as verify did before attempts) and once with the
# default 3, one right after the other so both see the same host. Every
# failure on this correct testbed is a false one. Beside each: the share of
# the CPUs' time the hypervisor took meanwhile (/proc/stat steal).
#
#   bench/run-verify-bench.sh [N]          (default 10 rounds; about 30 s a round)
#
# Prints the table and writes bench/results/emulator/verify-attempts.md.
# Environment: WANLAB_BIN  a built `wanlab` (default: build/cli/wanlab).
# Its testbed (bench-verify) goes down however it ends.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
wanlab="${WANLAB_BIN:-$repo/build/cli/wanlab}"
rounds=${1:-10}
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "run-verify-bench.sh: N: expected a whole number of rounds, got \"$rounds\"" >&2; exit 2; }
name=bench-verify
out="$repo/bench/results/emulator/verify-attempts.md"

# shellcheck source=scripts/steal.sh
. "$repo/scripts/steal.sh"

"$wanlab" down "$name" >/dev/null 2>&1 || true
trap '"$wanlab" down "$name" >/dev/null 2>&1 || true' EXIT
trap 'exit 130' INT TERM HUP
"$wanlab" up "$repo/scenarios/ci.toml" --name "$name" --quiet >/dev/null

rows="" release=""
declare -A failed=([1]=0 [3]=0) checks_failed=([1]=0 [3]=0) steal_sum=([1]=0 [3]=0)
for round in $(seq 1 "$rounds"); do
  for attempts in 1 3; do
    before=$(cpu_ticks)
    status=0
    output=$("$wanlab" verify "$name" --rate --attempts "$attempts" 2>&1) || status=$?
    steal=$(stolen_percent "$before" "$(cpu_ticks)")
    release=${release:-$(sed -n 's/.*release path \([a-z]*\);.*/\1/p' <<<"$output")}
    bad=$(grep -c " FAIL " <<<"$output" || true)
    worst=$(awk '$4 == "goodput" && (min == "" || $6 + 0 < min) {min = $6 + 0} END {print min}' <<<"$output")
    [[ $status -ne 0 ]] && failed[$attempts]=$((failed[$attempts] + 1))
    checks_failed[$attempts]=$((checks_failed[$attempts] + bad))
    steal_sum[$attempts]=$(awk -v a="${steal_sum[$attempts]}" -v b="$steal" 'BEGIN{print a + b}')
    row="| $round | $attempts | $([[ $status -eq 0 ]] && echo pass || echo "FAIL ($bad of 3 checks)") | $worst | $steal% |"
    echo "$row"
    rows+="$row"$'\n'
  done
done

summary() {
  local a=$1
  echo "| $a | $rounds | ${failed[$a]} | ${checks_failed[$a]} of $((3 * rounds)) | $(awk -v s="${steal_sum[$a]}" -v n="$rounds" 'BEGIN{printf "%.1f%%", s / n}') |"
}
{
  echo "# wanlab verify --rate on a correct testbed: one measurement a check against the best of three"
  echo
  echo "$(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$repo" rev-parse --short HEAD), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg);"
  echo "\`bench/run-verify-bench.sh $rounds\`: scenarios/ci.toml (20 ms RTT, 100 Mbit/s), release path $release."
  echo "Every failure is a false one: the testbed is correct. Steal: the hypervisor's share of the CPUs' time during each verify."
  echo
  echo "| attempts | rounds | verify failed | checks failed | steal, mean |"
  echo "|---:|---:|---:|---:|---:|"
  summary 1
  summary 3
  echo
  echo "| round | attempts | result | lower goodput (Mbit/s) | steal |"
  echo "|---:|---:|---|---:|---:|"
  printf '%s' "$rows"
} >"$out"
echo
sed -n '/^| attempts/,/^$/p' "$out"
echo "written: $out"
