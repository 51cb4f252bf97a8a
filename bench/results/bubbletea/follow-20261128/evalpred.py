import json, sys
def load(path):
    t=json.load(open(path))['traceEvents']
    its={e['args']['iteration']:e['ts'] for e in t if e.get('cat')=='iteration'}
    c={}
    for e in t:
        if e.get('cat')=='compute':
            it=e['args']['iteration']
            c.setdefault((e['tid'],it),[]).append((e['args']['op'],e['ts']-its[it],e['ts']+e['dur']-its[it]))
    return c
real=load(sys.argv[1]); sim=load(sys.argv[2])
q=lambda v,p: round(sorted(v)[int(p*(len(v)-1))]) if v else None
for it in sorted({i for _,i in real}):
  res={k:[] for k in ('sim','lag','tempo','capped')}
  for (tid,i),ops in real.items():
    if i!=it: continue
    src = sim[(tid,0)] if it<=1 else real.get((tid,it-1),[])
    ops=sorted(ops,key=lambda x:x[1]); s=dict((o,(a,b)) for o,a,b in src)
    d0=None
    for k in range(len(ops)-1):
        op,a,b=ops[k]; nop,na,nb=ops[k+1]
        if op not in s or nop not in s: continue
        drift=b-s[op][1]
        if d0 is None: d0=(s[op][1],drift)
        if na-b < 20000: continue
        base=s[op][1]-d0[0]
        rate=(drift-d0[1])/base if base>0 else 0
        h=s[nop][0]-s[op][1]
        res['sim'].append(abs(na-s[nop][0])/1e3)
        res['lag'].append(abs(na-(s[nop][0]+drift))/1e3)
        res['tempo'].append(abs(na-(s[nop][0]+drift+rate*h))/1e3)
        res['capped'].append(abs(na-(s[nop][0]+drift+rate*min(h,base)))/1e3)
  print('it',it,' '.join(f"{k} p50/p90 {q(v,.5)}/{q(v,.9)}" for k,v in res.items()), 'n',len(res['sim']))
