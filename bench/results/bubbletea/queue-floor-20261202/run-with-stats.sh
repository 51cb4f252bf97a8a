#!/bin/bash
# $1 experiment toml in /tmp/s14a, $2 out dir, $3 extra
out=$2; mkdir -p $out.stats
cd /tmp/s14a
${W:-/tmp/wanlab-c} train $1 --prefill off --out $out > $out.log 2>&1 &
pid=$!
i=0
while kill -0 $pid 2>/dev/null; do
  ${W:-/tmp/wanlab-c} stats --json > $out.stats/s$i.json 2>/dev/null && i=$((i+1))
  sleep 0.5
done
python3 - $out <<'P'
import json,glob,sys
out=sys.argv[1]
fs=sorted(glob.glob(out+'.stats/s*.json'),key=lambda f:int(f.split('/s')[-1][:-5]))
for f in reversed(fs):
  try: d=json.load(open(f)); break
  except Exception: pass
print(out, [(p['from']+'->'+p['to'], p['drops_queue'], round(p['qdelay_max_ms'],2)) for p in d['pairs']])
P
grep "^iteration\|^emulation" $out.log | awk '{print $1,$2,$3}' | tr '\n' ' '; echo
