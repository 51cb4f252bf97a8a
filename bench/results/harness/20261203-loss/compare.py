# compare.py OUTDIR [links] [all]: the simulations that
#   SIMULATE_ONLY=1 ONLY=threedc ITERATIONS=4 OUT=OUTDIR bench/harness/run-experiments.sh
# wrote, beside the stored real
# three-DC runs (measured / simulated iteration; * more than 5% off; links: per WAN link
# transfer p50/p90 and retransmitted segments of the 2026-12-02 runs; all: also the runs
# whose emulation fell behind, left out by default).
import json, sys, os
import pathlib
H=str(pathlib.Path(__file__).resolve().parent.parent)+'/'
sets={'1128A':H+'20261128-threedc/runA','1128B':H+'20261128-threedc/runB','1202':H+'20261202-threedc/not-polled',
      'rel':H+'20261202-threedc/releaser-c266347','qf':H+'20261202-threedc/queue-floor-e28ab2d','1203':H+'20261203-loss',
      '1204A':H+'20261204-quiet/run-a','1204B':H+'20261204-quiet/run-b',
      '1204C':H+'20261204-acks/run-1','1204D':H+'20261204-acks/run-2',
      '1204E':H+'20261204-drift/run-1','1204F':H+'20261204-drift/run-2',
      '1205A':H+'20261205-sendbuf/threedc/run-1','1205B':H+'20261205-sendbuf/threedc/run-2'}
names=['3dc-gpipe','3dc-1f1b','3dc-dp-across-dc','3dc-1f1b+streams','3dc-1f1b+sharing','3dc-1f1b+placement','3dc-1f1b+streams+sharing','3dc-atlas+no-sharing','3dc-atlas','3dc-atlas+no-sharing-tuned','3dc-atlas-tuned']
new=sys.argv[1]; links='links' in sys.argv; every='all' in sys.argv  # all: also runs that fell behind
def real(s,n):
    p=f'{sets[s]}/{n}.results.json'
    if not os.path.exists(p): return None
    r=json.load(open(p))
    # Only runs whose emulation kept up (those of 2026-11-28 predate the verdict).
    return r if every or r.get('emulation', {}).get('kept_up', True) else None
tot={s:0 for s in sets}; cnt={s:0 for s in sets}
print('%-28s %7s '%('run','sim')+' '.join('%6s'%s for s in sets))
for n in names:
    sim=json.load(open(f'{new}/{n}-sim/results.json'))
    si=sim['mean_iteration_s']
    row=[]
    for s in sets:
        r=real(s,n)
        if r is None: row.append('  -   '); continue
        ratio=r['mean_iteration_s']/si; cnt[s]+=1; tot[s]+= abs(ratio-1)<=0.05
        row.append(('%6.3f'%ratio)+('*' if abs(ratio-1)>0.05 else ' '))
    print('%-28s %7.3f '%(n,si)+' '.join(row))
    if links:
        for l,v in sim['transfers'].items():
            sm=v['simulated']['transfer_s']
            rr=[real(s,n) for s in ('1202','rel','qf')]
            rs=['%.3f/%.3f(%s)'%(x['transfers'][l]['measured']['transfer_s']['p50'],x['transfers'][l]['measured']['transfer_s']['p90'],x['transfers'][l]['measured'].get('retransmitted_segments')) for x in rr if x and l in x['transfers']]
            print('    %-16s sim %.3f/%.3f  real %s'%(l,sm['p50'],sm['p90'],'  '.join(rs)))
print('within 5%:', ' '.join(f'{s} {tot[s]}/{cnt[s]}' for s in sets), 'total', sum(tot.values()),'/',sum(cnt.values()))
