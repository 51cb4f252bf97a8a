import json, sys
for d in sys.argv[1:]:
    ev = json.load(open(d + '/trace.json'))['traceEvents']
    kv = [e for e in ev if e.get('cat') == 'kv']
    for a, b in ((1, 5), (3, 7)):
        A = [(e['ts'], e['ts'] + e['dur']) for e in kv if e['args']['worker'] == a]
        B = [(e['ts'], e['ts'] + e['dur']) for e in kv if e['args']['worker'] == b]
        ov = sum(max(0, min(x1, y1) - max(x0, y0)) for x0, x1 in A for y0, y1 in B)
        ta = sum(x1 - x0 for x0, x1 in A); tb = sum(x1 - x0 for x0, x1 in B)
        wire = sum(e['args']['bytes'] * 8 / 95.6e6 * 1e6 for e in kv if e['args']['worker'] in (a, b))
        print(d, (a, b), 'caches', len(A), len(B), 'busy %.2f + %.2f s, overlap %.2f s, wire %.2f s' % (ta / 1e6, tb / 1e6, ov / 1e6, wire / 1e6))
