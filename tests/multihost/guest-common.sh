# Sourced by the multihost guest scripts (wan-guest.sh, slurm-guest.sh): the
# shared directory, meeting the other machines at barriers, and the kernel
# state each machine records before and after. The sourcing script defines
# fail MESSAGE (record the failure, clean up, exit 1) and on_abort (what to
# clean up when another machine failed) first.
dir=$WANLAB_MH_DIR
me=$WANLAB_MACHINE
count=$WANLAB_MH_COUNT

# Waits until every machine has reached `name`, or one has failed.
barrier() {
  touch "$dir/barrier.$1.$me"
  for ((i = 0; i < 2000; i++)); do
    if compgen -G "$dir/failed.*" >/dev/null; then
      echo "$me: another machine failed: $(cat "$dir"/failed.*)" >&2
      on_abort
      exit 1
    fi
    local reached=("$dir"/barrier."$1".*)
    [[ ${#reached[@]} -ge $count ]] && return 0
    sleep 0.2
  done
  fail "barrier $1: not every machine came within 400 s"
}

# What wanlab may change on a machine; the same text before join and after down.
kernel_state() {
  tc qdisc show dev eth0 | sed 's/ refcnt [0-9]*//'
  tc filter show dev eth0 egress
  tc filter show dev eth0 ingress
  ip -4 route show
  sysctl -n net.ipv4.ip_forward net.ipv4.conf.all.send_redirects net.ipv4.conf.eth0.send_redirects \
    net.ipv4.conf.eth0.accept_local
  ls /run/wanlab 2>/dev/null
  ip netns list
  bpftool prog show 2>/dev/null | grep -c wanlab_tc
  pgrep -c -x wanlab || true
}
