import json, sys
def load(path, sender_stage, peer_stage):
    d = json.load(open(path + '/trace.json'))
    out = {}
    for e in d['traceEvents']:
        a = e.get('args', {})
        if 'first_sent_us' not in a: continue
        n = e['name']
        if f' s{sender_stage} send' not in n or f'stage {peer_stage}' not in n: continue
        rep = n.split()[0]
        out[(a['iteration'], a['microbatch'], rep)] = ((a['last_received_us'] - a['first_sent_us']) / 1e6, a['first_sent_us'] / 1e6)
    return out
s, p = int(sys.argv[1]), int(sys.argv[2])
runs = [load(x, s, p) for x in sys.argv[3:]]
for k in sorted(runs[0]):
    print(k, '  '.join('%.3f@%.2f' % r[k] if k in r else '-' for r in runs))
