import json, sys, os
d0 = sys.argv[1]
print("| run | simulated (s) | real (s) | ratio | verdict | CPU mean | idle time polled | wake-ups late, of compute (p99) |")
print("|---|---:|---:|---:|---|---:|---:|---:|")
for r in ["gpipe","1f1b","dp-across-dc","1f1b+streams","1f1b+sharing","1f1b+placement","1f1b+streams+sharing","atlas+no-sharing","atlas","atlas+no-sharing-tuned","atlas-tuned"]:
    p=f"{d0}/3dc-{r}/results.json"
    if not os.path.exists(p): print(f"| {r} | missing |"); continue
    d=json.load(open(p)); s=json.load(open(f"{d0}/3dc-{r}-sim/results.json"))
    e=d['emulation']; it=d['mean_iteration_s']; si=s['mean_iteration_s']
    print(f"| {r} | {si:.3f} | {it:.3f} | {it/si:.3f} | {'kept up' if e['kept_up'] else '**fell behind**'} | {100*e['cpu_busy']['mean']:.0f}% | {100*e['idle_polled_share']:.0f}% | {100*e['wake_late_share']:.2f}% ({e['wake_late_ms']['p99']:.2f} ms) |")
