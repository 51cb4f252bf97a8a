import time, sys, os
os.sched_setaffinity(0, {int(sys.argv[1])})
dur = float(sys.argv[2]); t0 = time.monotonic_ns(); last = t0; gaps = []
while True:
    now = time.monotonic_ns()
    g = now - last
    if g > 1_000_000: gaps.append(g)
    last = now
    if now - t0 > dur * 1e9: break
gaps.sort()
print(f"cpu{sys.argv[1]}: gaps>1ms {len(gaps)}, >5ms {sum(g>5e6 for g in gaps)}, >20ms {sum(g>20e6 for g in gaps)}, max {gaps[-1]/1e6 if gaps else 0:.1f} ms, total {sum(gaps)/1e6:.0f} ms")
