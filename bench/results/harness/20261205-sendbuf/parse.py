# The sender's samples of a sample.sh file: queue, skbs and window.
#   python3 parse.py FILE.ss [least Send-Q in bytes, 50000]
import gzip, re, sys
PAC = re.compile(r'pacing_rate (\d+)')
SK = re.compile(r'skmem:\(r\d+,rb\d+,t\d+,tb(\d+),f\d+,w(\d+)')
def g(line, k):
    m = re.search(r'\b' + k + r':([0-9.]+)', line)
    return float(m.group(1)) if m else 0
opener = gzip.open if sys.argv[1].endswith('.gz') else open
for line in opener(sys.argv[1], 'rt'):
    f = line.split()
    if 'd0-0' not in f[1]: continue
    sendq = int(f[3])
    if sendq < int(sys.argv[2] if len(sys.argv)>2 else 50000): continue
    sk = SK.search(line)
    tb, w = int(sk.group(1)), int(sk.group(2))
    un = g(line, 'unacked')
    pac = int(PAC.search(line).group(1))
    print("%7.2f sendq %8d w/tb %.2f q/w %.3f inflight/tb %.2f cwnd %4.0f unacked %4.0f notsent %6.0f snd_wnd %8.0f pacing %d rtt %.1f" % (
        float(f[0]) % 100, sendq, w / tb, sendq / w, un * 1448 / tb, g(line, 'cwnd'), un, g(line, 'notsent'), g(line, 'snd_wnd'), pac, g(line, 'rtt')))
