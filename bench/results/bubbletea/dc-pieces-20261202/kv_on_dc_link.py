import json, sys, statistics
for d in sys.argv[1:]:
    t = json.load(open(d + '/trace.json')); ev = t['traceEvents']
    kv = [e for e in ev if e.get('cat') == 'kv']
    r = [e['dur'] / (e['args']['bytes'] * 8 / 100e6 * 1e6) for e in kv if e['args']['worker'] % 2 == 1 and e['args']['bytes'] * 8 / 100e6 > 0.05]
    late = sum(1 for e in kv if e['ts'] + e['dur'] > e['args']['deadline_us'])
    r.sort()
    print(d, 'DC-link caches', len(r), 'dur/wire p50 %.2f p90 %.2f' % (r[len(r)//2], r[int(.9*len(r))]), 'late caches', late)
