#!/bin/bash
# One machine's part of the multihost WAN test (multihost/wan.cpp runs it in
# every guest of scripts/vm/run-machines.sh): m1 and m2 in DC east (m1 the
# gateway), m3 in DC west (tests/data/multihost/two-dc.toml). The machines
# meet at barriers in the shared directory $WANLAB_MH_DIR, and each writes
# what it measured there as KEY.MACHINE files; the test on the host asserts.
# It asserts nothing itself: it only fails when a step cannot run.
set -uo pipefail
wanlab=$WANLAB_BIN
scenario=$WANLAB_SOURCE_DIR/tests/data/multihost/two-dc.toml
seconds=6

fail() {
  echo "$me: $*" >&2
  echo "$*" >"$dir/failed.$me"
  "$wanlab" down mh >/dev/null 2>&1
  exit 1
}
on_abort() { "$wanlab" down mh >/dev/null 2>&1; }
# shellcheck source=guest-common.sh
source "$(dirname "$0")/guest-common.sh"

# iperf3 to m3 for $seconds s after a first second left out (slow start):
# the receiver's bits/s as iperf3's JSON says.
goodput() {
  local key=$1 port=$2
  shift 2
  iperf3 -c m3 -p "$port" -t "$seconds" -O 1 -J "$@" >"$dir/$key.$me.json" 2>"$dir/$key.$me.err" ||
    fail "iperf3 $key: $(tail -n 1 "$dir/$key.$me.err")"
}

kernel_state >"$dir/before.$me"
barrier base
[[ $me == m1 ]] && { ping -c 10 -i 0.2 -W 5 m3 >"$dir/ping-before.$me" || fail "ping m3 before join failed"; }
barrier pinged
if [[ $me == m3 ]]; then
  # A FORWARD policy of DROP (as Docker sets it) on a gateway: join warns,
  # and leaves the policy as it was.
  iptables-nft -P FORWARD DROP || fail "iptables-nft -P FORWARD DROP"
  "$wanlab" join --name fwd "$scenario" >"$dir/join-drop.$me" 2>&1 || fail "wanlab join with DROP failed"
  "$wanlab" down fwd >/dev/null 2>&1 || fail "wanlab down fwd failed"
  iptables-nft -S FORWARD >>"$dir/join-drop.$me"
  iptables-nft -P FORWARD ACCEPT
fi
"$wanlab" join "$scenario" >"$dir/join.$me" 2>&1 || fail "wanlab join failed: $(tail -n 1 "$dir/join.$me")"
if [[ $me == m3 ]]; then
  iperf3 -s -p 5201 -D -1 >/dev/null 2>&1 || fail "iperf3 server 5201"
  iperf3 -s -p 5202 -D >/dev/null 2>&1 || fail "iperf3 server 5202"
  iperf3 -s -p 5203 -D -1 >/dev/null 2>&1 || fail "iperf3 server 5203"
fi
barrier up
# A member holds no data plane: commands that need one say where it is.
[[ $me == m2 ]] && { "$wanlab" stats >"$dir/stats.$me" 2>&1; echo "exit $?" >>"$dir/stats.$me"; }
# The gateway's own traffic, then a member's through it, then both at once,
# then west -> east to the member (shaped at m3, west's gateway).
[[ $me == m1 ]] && { ping -c 20 -i 0.2 -W 5 m3 >"$dir/ping-after.$me" || fail "ping m3 after join failed"; }
[[ $me == m1 ]] && goodput alone 5202
barrier alone-m1
[[ $me == m2 ]] && goodput alone 5202
barrier alone-m2
[[ $me == m1 ]] && goodput together 5201
[[ $me == m2 ]] && goodput together 5202
barrier together
[[ $me == m2 ]] && goodput reverse 5203 -R
barrier reverse
[[ $me == m3 ]] && pkill -f "iperf3 -s"
"$wanlab" down mh >"$dir/down.$me" 2>&1 || fail "wanlab down failed: $(tail -n 1 "$dir/down.$me")"
kernel_state >"$dir/after.$me"
barrier done
exit 0
