import re,collections,sys
R=sys.argv[2]
inside=None; rows=[]; wakes=collections.Counter()
for l in open(sys.argv[1]):
    m=re.match(r'^\s*(.+?)\s+(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(\S+):\s*(.*)$',l)
    if not m: continue
    comm,tid,cpu,t,e,tr=m.groups(); t=float(t)
    if e.startswith('sched:sched_waking'): wakes[re.search(r'comm=(\S+)',tr).group(1)]+=1
    if tid==R and e.startswith('syscalls:sys_enter_sendto'):
        inside=dict(t=t,cpu=cpu,ipi=0,wake=0,rx=0)
    elif tid==R and e.startswith('syscalls:sys_exit_sendto') and inside:
        inside['d']=(t-inside['t'])*1e6; rows.append(inside); inside=None
    elif inside and cpu==inside['cpu']:
        if e.startswith('ipi:'): inside['ipi']+=1
        elif e.startswith('sched:sched_waking'): inside['wake']+=1
        elif e.startswith('irq:softirq_entry') and 'NET_RX' in tr: inside['rx']+=1
def st(xs):
    xs=sorted(xs); n=len(xs)
    return 'n %d p50 %.0f p90 %.0f p99 %.0f mean %.0f; >100us %d'%(n,xs[n//2],xs[int(.9*n)],xs[int(.99*n)],sum(xs)/n,sum(x>100 for x in xs)) if n else 'n 0'
print('all sends:',st([r['d'] for r in rows]))
print('no wake:',st([r['d'] for r in rows if r['wake']==0]))
print('wake, no IPI:',st([r['d'] for r in rows if r['wake'] and r['ipi']==0]))
print('wake, IPI:',st([r['d'] for r in rows if r['wake'] and r['ipi']]))
print('wakes in 6 s by comm:',wakes.most_common(6))
