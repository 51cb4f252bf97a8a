import json,sys,re,statistics as st
for d in sys.argv[1:]:
    t=json.load(open(d+'/trace.json')); ev=t['traceEvents'] if isinstance(t,dict) else t
    wan=[e for e in ev if e.get('cat')=='wan']
    kv=[(e['ts'],e['ts']+e['dur']) for e in ev if e.get('cat')=='kv']
    groups={}
    for e in wan:
        a=e['args']
        if a['iteration']==0: continue
        m=re.match(r'r\d+ s(\d+) send .* to stage (\d+)',e['name'])
        key=f"s{m.group(1)}->s{m.group(2)}"
        wire=a['last_received_us']-a['first_sent_us']; wait=a['first_sent_us']-a['queued_us']
        ov=any(k0<a['last_received_us'] and k1>a['first_sent_us'] for k0,k1 in kv)
        groups.setdefault(key,[]).append((wire,wait,ov))
    for k,v in sorted(groups.items()):
        s=[x[0] for x in v]; w=[x[1] for x in v]
        so=[x[0] for x in v if x[2]]; sn=[x[0] for x in v if not x[2]]
        print(d.split('/')[-1],k,'n',len(v),'wire mean %.1f ms'%(st.mean(s)/1e3),'wait mean %.2f ms'%(st.mean(w)/1e3),
              '| beside KV n %d mean %s | no KV n %d mean %s'%(len(so),'%.1f'%(st.mean(so)/1e3) if so else '-',len(sn),'%.1f'%(st.mean(sn)/1e3) if sn else '-'))
