#!/usr/bin/env python3
"""Pool bench-vm CSV rows (BENCH_CSV=FILE) (stamp,bench,round,order,client,step,ms) of
several runs: per step, each client's median and per-round ratio medians
with a 95% percentile-bootstrap interval (2,000 resamples)."""
import csv, sys, random, statistics, collections
rows = []
for p in sys.argv[1:]:
    rows += list(csv.reader(open(p)))
# a run is identified by the stamp's minute of its first row per bench... use (file, bench, round)
runs = collections.defaultdict(dict)  # (bench, runid, round) -> client -> step -> ms
runid = 0; prev = None
for r in rows:
    stamp, bench, rnd, order, client, step, ms = r
    rnd = int(rnd)
    if prev is not None and rnd < prev[1] and bench == prev[0]:
        runid += 1
    if prev is not None and bench != prev[0]:
        runid += 1
    prev = (bench, rnd)
    runs[(bench, runid, rnd)].setdefault(client, {})[step] = float(ms)
steps = ["create id", "resolve addr", "resolve route", "create qp", "connect", "disconnect", "destroy"]
def med(v):
    s = sorted(v); n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2
def ci(v):
    rng = random.Random(1); ms = []
    for _ in range(2000):
        ms.append(med([v[rng.randrange(len(v))] for _ in v]))
    ms.sort(); return ms[50], ms[1949]
pairs = [("engine", "librdmacm"), ("go-kernel", "librdmacm")]
nr = len(runs)
print("rounds:", nr)
print("| step | librdmacm ms | Go, kernel CM ms | Go, engine ms | kernel CM Go / C per round (95%; rounds faster) | engine / C per round (95%; rounds faster) |")
print("|---|---|---|---|---|---|")
for st in steps:
    cells = []
    for c in ["librdmacm", "go-kernel", "engine"]:
        v = [r[c][st] for r in runs.values() if c in r]
        cells.append("%.1f" % med(v) if v else "")
    for a, b in [("go-kernel", "librdmacm"), ("engine", "librdmacm")]:
        per = [r[a][st] / r[b][st] for r in runs.values() if a in r and b in r and r[b][st] > 0]
        if per:
            lo, hi = ci(per)
            cells.append("%s%.3f%s (%.3f–%.3f; %d of %d)" % ("**" if med(per) <= 1 else "", med(per), "**" if med(per) <= 1 else "", lo, hi, sum(1 for x in per if x < 1), len(per)))
        else:
            cells.append("")
    print("| %s | %s |" % (st, " | ".join(cells)))
