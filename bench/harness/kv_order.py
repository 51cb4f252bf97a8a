#!/usr/bin/env python3
# bench/harness/kv_order.py RUN_DIR: whether KV caches left in the order admission
# placed them, from a BubbleTea run's trace.json and results.json (the KV spans'
# predicted_end_us and deadline_us). A route queue: a DC link per non-sink host,
# else the worker's own (decode_dc = "local", sinks on each DC's host -0).
import json, sys, collections
run = sys.argv[1]
events = json.load(open(run + "/trace.json"))["traceEvents"]
prefill_end = collections.defaultdict(float)
kv = {}
for e in events:
    if e.get('cat') == 'prefill':
        b = e['args']['batch']; prefill_end[b] = max(prefill_end[b], e['ts'] + e['dur'])
    elif e.get('cat') == 'kv':
        a = e['args']; kv[a['batch']] = dict(worker=a['worker'], start=e['ts'], end=e['ts'] + e['dur'],
                                             pred=a.get('predicted_end_us'), dl=a.get('deadline_us'))
res = json.load(open(run + '/results.json'))
p = res['prefill']
reasons = collections.Counter(o[5] for o in p['request_outcomes'] if o[3] == 'failed')
print('requests', p['requests'], 'failed reasons', dict(reasons))
# queue: a worker's own; DC-link workers of one DC share (host not in the trace: group by KV
# time per byte below; here per worker and per DC track name).
late = [b for b, k in kv.items() if k['end'] > k['dl']]
broken = [b for b, k in kv.items() if k['pred'] is not None and k['end'] > k['pred'] + 1e3]
print(f'caches {len(kv)}; past deadline {len(late)}; past admission estimate (+1 ms) {len(broken)}')
def overtakers(b, same):
    k = kv[b]; ready = prefill_end[b]
    return [c for c in kv if c > b and same(c) and ready <= kv[c]['start'] < k['start']]
hosts = {w['id']: w['host'] for w in res['plan']['workers']}
def qkey(b):
    w = kv[b]['worker']; h = hosts[w]
    return h if not h.endswith('-0') else f'w{w}'
for scope, same_of in (('worker', lambda b: (lambda c: kv[c]['worker'] == kv[b]['worker'])),
                       ('route queue (DC link per host, else worker)', lambda b: (lambda c: qkey(c) == qkey(b)))):
    over = {b: overtakers(b, same_of(b)) for b in kv}
    n_over = sum(1 for b in kv if over[b])
    late_over = [b for b in late if over[b]]
    print(f'{scope}: caches overtaken by a later-placed one after their prefill ended: {n_over} of {len(kv)};'
          f' late ones overtaken: {len(late_over)} of {len(late)}')
    waited = [sum(kv[c]['end'] - kv[c]['start'] for c in over[b]) / 1e3 for b in late_over]
    if waited: print('  late+overtaken: ms the overtakers took (sum)', sorted(round(w) for w in waited))
    # prefill-end order vs id order per worker
    inv = 0
    for b in kv:
        inv += sum(1 for c in kv if c > b and same_of(b)(c) and prefill_end[c] < prefill_end[b])
    print(f'  pairs on one queue whose prefill ended out of placement order: {inv}')
for b in sorted(late):
    k = kv[b]
    print(f'late b{b} w{k["worker"]}: ready {prefill_end[b]/1e6:.3f} kv {k["start"]/1e6:.3f}-{k["end"]/1e6:.3f}'
          f' pred {k["pred"]/1e6:.3f} deadline {k["dl"]/1e6:.3f} over by {(k["end"]-k["dl"])/1e3:.0f} ms;'
          f' wait before send {(k["start"]-prefill_end[b])/1e3:.0f} ms; queue {qkey(b)}, overtaken on it by {overtakers(b, lambda c: qkey(c)==qkey(b))}')

# all caches: waits behind earlier-placed vs later-placed on the route queue
tot_later = 0
for b in kv:
    for c in overtakers(b, lambda c: qkey(c) == qkey(b)):
        tot_later += 1
print('overtaking pairs on route queues (later-placed cache started while an earlier one was ready and waiting):', tot_later)
