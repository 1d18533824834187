"""Issue 13 goals read from the records (kernel time)."""
import json, glob
for f in sorted(glob.glob('gallery/measurements/*.json')):
    d = json.load(open(f)); name = d['benchmark']
    if name == 'launch_overhead':
        continue
    s, x, w = d['series'], d['x'], d['work']
    tri = s['Triton']; bases = [k for k in s if k != 'Triton']
    ceil = d.get('same_size_copy')
    rows = []
    for i, xi in enumerate(x):
        best = max((s[b][i] for b in bases if s[b][i]), default=None)
        r = tri[i] / best if tri[i] and best else None
        bestname = max((b for b in bases if s[b][i]), key=lambda b: s[b][i], default='-')
        extra = ''
        if ceil and isinstance(ceil, dict) and 'series' in ceil:
            pass
        rows.append(f"{xi}:{r:.2f}({bestname[:5]},{w[i]/1e6:.0f}MB)" if r else f"{xi}:None")
    print(f"{name:32s}", ' '.join(rows))
