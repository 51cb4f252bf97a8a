#!/usr/bin/env python3
"""Does a channel's share of a WAN link follow its window (a drop-tail FIFO) or not
(max-min)? Per 100 ms window and WAN direction of a tcp_probe CSV: each transport channel's
acked bytes and summed cwnd, where two channels send and a queue stands (srtt >
1.15 x the lowest seen). A drop-tail FIFO predicts the throughput ratio follows the
cwnd ratio; max-min sharing predicts 1 where both push more than half the link."""
import gzip, csv, sys, collections, math
W = 0.1
una = {}
acc = collections.defaultdict(lambda: collections.defaultdict(float))
cw = collections.defaultdict(lambda: collections.defaultdict(list))
rt = collections.defaultdict(list)
base = {}
t0 = None
for path in sys.argv[1:]:
  for r in csv.DictReader(gzip.open(path, 'rt')):
    t = float(r['time_s']); t0 = t0 or t
    sdc, ddc = r['src'].split('.')[2], r['dst'].split('.')[2]
    if sdc == ddc: continue
    link = (path, sdc, ddc)
    port = min(int(r['sport']), int(r['dport']))
    chan = (r['src'], r['dst'], port)
    stream = (chan, max(int(r['sport']), int(r['dport'])))
    w = (link, int((t - t0) / W))
    u = int(r['snd_una'], 16)
    if stream in una:
        d = (u - una[stream]) % (1 << 32)
        if d < 1 << 30: acc[w][chan] += d
    una[stream] = u
    cw[w][stream].append(int(r['snd_cwnd']))
    s = int(r['srtt_us']); rt[w].append(s)
    base[link] = min(base.get(link, s), s)
pairs = []
for w, a in acc.items():
    busy = [c for c, b in a.items() if b > 30000]
    if len(busy) != 2: continue
    srtt = sorted(rt[w])[len(rt[w]) // 2]
    if srtt < 1.15 * base[w[0]]: continue
    c = {ch: sum(sum(v) / len(v) for (cc, s), v in cw[w].items() if cc == ch) for ch in busy}
    x, y = busy
    pairs.append((c[x] / c[y], a[x] / a[y]))
print('windows with two channels sending behind a queue:', len(pairs))
q = lambda v, p: sorted(v)[int(p * (len(v) - 1))]
for lo, hi in ((1, 1.2), (1.2, 1.5), (1.5, 100)):
    sel = [(cr, tp) if cr >= 1 else (1 / cr, 1 / tp) for cr, tp in pairs if lo <= max(cr, 1 / cr) < hi]
    if not sel: continue
    print('cwnd ratio %.1f-%.1f: %3d windows, cwnd ratio p50 %.2f, throughput ratio p25/p50/p75 %.2f/%.2f/%.2f'
          % (lo, hi, len(sel), q([s[0] for s in sel], .5), q([s[1] for s in sel], .25), q([s[1] for s in sel], .5), q([s[1] for s in sel], .75)))
