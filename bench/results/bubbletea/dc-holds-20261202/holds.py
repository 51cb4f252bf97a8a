"""Training's holds of a DC's own link, and the KV caches on it, in one run of the demo
(bubbletea-3dc-busy: workers 0,1,4,5 in east, 2,3,6,7 in west; the odd workers' caches cross
their DC's link).

  python3 holds.py RUN_DIR [GATE_LOG]

RUN_DIR: a `wanlab train --out` directory (trace.json, ranks/). GATE_LOG: the coordinator's
stderr with gate-log-instrumentation.patch and WANLAB_GATE_LOG=1 (lines "GATE req|rel WORKER
ITERATION OP NS"); without it the holds are taken as the simulator takes them, from 5 ms before
a send between the DC's hosts starts to its arrival. Iterations 1 on (the first is cold)."""
import json, re, sys

def dc(worker): return 'east' if worker in (0, 1, 4, 5) else 'west'

def merged(spans):
    out = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]: out[-1][1] = max(out[-1][1], b)
        else: out.append([a, b])
    return out

def sends(d):  # per rank: (start ms, end ms, peer), in order
    out = {}
    for rank in range(8):
        ev = json.load(open(f'{d}/ranks/rank-{rank}.json'))['traceEvents']
        out[rank] = sorted((e['ts'] / 1e3, (e['ts'] + e['dur']) / 1e3, int(re.search(r'to rank (\d+)', e['name']).group(1)))
                           for e in ev if 'SendRecv (send' in e.get('name', ''))
    return out

def model_holds(d, lead_ms=5.0):
    holds = {'east': [], 'west': []}
    for rank, ss in sends(d).items():
        for s, t, peer in ss:
            if dc(peer) == dc(rank): holds[dc(rank)].append((s - lead_ms, t))
    return holds

def gate_holds(d, log):
    peers = {r: [p for _, _, p in ss[:len(ss) // 3]] for r, ss in sends(d).items()}  # one iteration's sends, in op order
    lines = [l.split() for l in open(log) if l.startswith('GATE req') or l.startswith('GATE rel')]
    ops = {}
    for f in lines: ops.setdefault(int(f[2]), set()).add(int(f[4]))
    index = {w: {op: i for i, op in enumerate(sorted(s))} for w, s in ops.items()}
    req, holds = {}, {'east': [], 'west': []}
    for f in lines:
        w, it, op, t = int(f[2]), int(f[3]), int(f[4]), int(f[5]) / 1e6
        if dc(peers[w][index[w][op]]) != dc(w): continue  # a gated WAN send
        if f[1] == 'req': req[(w, it, op)] = t
        else: holds[dc(w)].append((req[(w, it, op)], t))
    return holds

d = sys.argv[1]
ev = json.load(open(d + '/trace.json'))['traceEvents']
its = sorted((e['ts'] / 1e3, (e['ts'] + e['dur']) / 1e3) for e in ev if e.get('cat') == 'iteration')
lo, hi = its[1][0], its[-1][1]
holds = gate_holds(d, sys.argv[2]) if len(sys.argv) > 2 else model_holds(d)
for link, spans in holds.items():
    m = merged([(max(a, lo), min(b, hi)) for a, b in spans if b > lo and a < hi])
    held = sum(b - a for a, b in m)
    print(f'{link}: {len(spans)} holds, {held:.0f} ms of {hi - lo:.0f} ms held ({held / (hi - lo) * 100:.1f}%)')
kv = [e for e in ev if e.get('cat') == 'kv' and e['args']['worker'] % 2 == 1]
dur = held = wire = 0
for e in kv:
    s = e['ts'] / 1e3; t = s + e['dur'] / 1e3
    m = merged([(max(a, s), min(b, t)) for a, b in holds[dc(e['args']['worker'])] if b > s and a < t])
    dur += t - s; held += sum(b - a for a, b in m); wire += e['args']['bytes'] * 8 / 95.6e6 * 1e3
print(f'KV caches on DC links: {len(kv)}, {dur / 1e3:.2f} s, {held / 1e3:.2f} s of it held by training, '
      f'wire time {wire / 1e3:.2f} s; outside the holds {(dur - held) / wire:.3f} x wire, in all {dur / wire:.3f} x')
