# Stored real runs (runA/runB of 2026-11-28) against a new simulation of each:
#   compare.py OUT   (OUT from SIMULATE_ONLY=1 ONLY=threedc ITERATIONS=4 bench/harness/run-experiments.sh)
import json, os, sys
base = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '20261128-threedc')
new = sys.argv[1]
names = ['3dc-gpipe','3dc-1f1b','3dc-dp-across-dc','3dc-1f1b+streams','3dc-1f1b+sharing','3dc-1f1b+placement',
         '3dc-1f1b+streams+sharing','3dc-atlas+no-sharing','3dc-atlas','3dc-atlas+no-sharing-tuned','3dc-atlas-tuned']
within5 = 0; total = 0
for n in names:
    reals = []
    for r in ('runA', 'runB'):
        p = f'{base}/{r}/{n}.results.json'
        if os.path.exists(p): reals.append(json.load(open(p))['mean_iteration_s'])
    old = json.load(open(f'{base}/runA/{n}-sim.results.json'))['mean_iteration_s']
    p = f'{new}/{n}-sim/results.json'
    if not os.path.exists(p): print(n, 'no new sim'); continue
    sim = json.load(open(p))['mean_iteration_s']
    ratios = [x / sim for x in reals]
    total += len(ratios); within5 += sum(abs(r - 1) <= 0.05 for r in ratios)
    print(f'{n:28s} real {" / ".join(f"{x:.3f}" for x in reals):15s} sim old {old:.3f} new {sim:.3f}  ratio old {" / ".join(f"{x/old:.3f}" for x in reals)}  new {" / ".join(f"{r:.3f}" for r in ratios)}')
print(f'within 5%: {within5} of {total}')
