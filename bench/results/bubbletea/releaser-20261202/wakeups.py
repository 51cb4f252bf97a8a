import re,sys,collections
R=sys.argv[2]
lines=open(sys.argv[1]).read().splitlines()
ev=[]
pat=re.compile(r'^\s*(.+?)\s+(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(\S+):\s*(.*)$')
for l in lines:
    m=pat.match(l)
    if m: ev.append((m.group(1),m.group(2),int(m.group(3)),float(m.group(4)),m.group(5),m.group(6)))
timer=None; start={}
res=[]  # (irq_late_us, sched_late_us, prev, cpu, between)
pending=None
running={0:None,1:None}
for i,(comm,tid,cpu,t,e,tr) in enumerate(ev):
    if e.startswith('timer:hrtimer_start') and tid==R and 'timerfd_tmrproc' in tr:
        h=re.search(r'hrtimer=(\S+)',tr).group(1); ex=int(re.search(r'softexpires=(\d+)',tr).group(1))
        start[h]=(ex,t)
    elif e.startswith('timer:hrtimer_expire_entry'):
        h=re.search(r'hrtimer=(\S+)',tr).group(1)
        if h in start:
            now=int(re.search(r'now=(\d+)',tr).group(1)); ex,ts=start.pop(h)
            # skip timers armed already in the past
            armed_late = ts*1e9 - 1476000 - ex  # approx (different clocks?)
            pending=dict(irq=(now-ex)/1e3, t=t, cpu=cpu, interrupted=comm+tid, armed_past=armed_late>0, between=collections.Counter())
    elif e.startswith('sched:sched_switch'):
        nxt=re.search(r'next_pid=(\d+)',tr).group(1); prev=re.search(r'prev_comm=(.+?) prev_pid=(\d+)',tr).group(0)
        if pending and nxt==R:
            pending['sched']=(t-pending['t'])*1e6; pending['prev']=prev; pending['swcpu']=cpu
            res.append(pending); pending=None
    elif pending and cpu==pending['cpu']:
        pending['between'][e.split(':')[1]]+=1
print("timer expiries followed by a switch-in:",len(res))
real=[r for r in res if not r['armed_past']]
print("armed in the future:",len(real))
def pct(xs,p): xs=sorted(xs); return xs[min(len(xs)-1,int(p*len(xs)))] if xs else 0
for k in ('irq','sched'):
    xs=[r[k] for r in real]
    print(k, 'p50 %.1f p90 %.1f p99 %.1f max %.1f us; >100us: %d >300us: %d'%(pct(xs,.5),pct(xs,.9),pct(xs,.99),max(xs),sum(x>100 for x in xs),sum(x>300 for x in xs)))
tot=[r['irq']+r['sched'] for r in real]
print('total >300us:',sum(x>300 for x in tot), 'of',len(tot))
late=[r for r in real if r['irq']+r['sched']>300]
print('interrupted at irq (comm):',collections.Counter(r['interrupted'] for r in late).most_common(8))
print('prev at switch-in:',collections.Counter(r['prev'] for r in late).most_common(8))
print('late mostly irq:',sum(r['irq']>r['sched'] for r in late),'mostly sched:',sum(r['irq']<=r['sched'] for r in late))
for r in late[:15]: print('irq %.0f sched %.0f cpu %d swcpu %d interrupted %s prev %s between %s'%(r['irq'],r['sched'],r['cpu'],r['swcpu'],r['interrupted'],r['prev'],dict(r['between'])))
