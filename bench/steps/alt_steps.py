#!/usr/bin/env python3
"""alt_steps.py DIR... [-s 'create id,destroy']: summarize alt_clients.sh
runs: per client, every step's median total, the median of the per-round
ratios to cmtime (c), the rounds faster than cmtime, the context switches
of the step (-cmtime-usage) and the per-connection minimum. Rounds in
which any client saw a REJECTED event (the server was gone) are left
out."""
import glob, re, statistics as st, sys, collections

def main():
    args, steps = sys.argv[1:], ["create id", "destroy"]
    if "-s" in args:
        i = args.index("-s")
        steps = args[i + 1].split(",")
        del args[i:i + 2]
    if not args:
        sys.exit(__doc__)
    rounds = collections.defaultdict(dict)
    for d in args:
        for f in glob.glob(d + "/*.txt"):
            r, c = f.rsplit("/", 1)[-1][:-4].split("-", 1)
            rounds[(d, r)][c] = open(f, errors="replace").read()
    agg = collections.defaultdict(lambda: collections.defaultdict(list))
    for key, cs in rounds.items():
        if "c" not in cs or any("REJECTED" in t for t in cs.values()):
            continue
        for s in steps:
            vals = {}
            for c, txt in cs.items():
                m = re.search(r"^%s\s*:\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)" % re.escape(s), txt, re.M)
                u = re.search(r"usage: %s: (\d+) context" % re.escape(s), txt)
                if m:
                    vals[c] = (float(m.group(1)), float(m.group(3)), int(u.group(1)) if u else None)
            if "c" not in vals:
                continue
            for c, (ms, mn, sw) in vals.items():
                agg[s][c].append((ms / vals["c"][0], ms, mn, sw))
    for s in steps:
        print("==", s)
        for c, v in sorted(agg[s].items()):
            sw = [x[3] for x in v if x[3] is not None]
            print("%-24s rounds %2d  median %6.2f ms  ratio to c %.2f (faster in %d)  switches %s  min us %.1f" % (
                c, len(v), st.median(x[1] for x in v), st.median(x[0] for x in v), sum(x[0] < 1 for x in v),
                "median %s (%d-%d)" % (st.median(sw), min(sw), max(sw)) if sw else "-", st.median(x[2] for x in v)))

main()
