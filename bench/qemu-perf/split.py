#!/usr/bin/env python3
"""split.py DIR [STEP]: host CPU of guest a's QEMU (perf record
--clockid=CLOCK_MONOTONIC into DIR/all.data) per client and cmtime step,
split at the times poll_lines.py saw each step line (DIR/lines.tsv), in
what QEMU was doing: looking up translated blocks (qht: the per-vCPU jump
cache missed), translating, filling its soft TLB, the host kernel, other
(mostly the generated code itself). With STEP: that step's symbols, ms
per run for each client, largest difference first."""
import bisect, collections, re, statistics, subprocess, sys

d = sys.argv[1]
only = sys.argv[2] if len(sys.argv) > 2 else None
names = {"creating id": "create id", "resolving address": "resolve addr", "resolving route": "resolve route",
         "creating qp": "create qp", "connecting": "connect", "disconnecting": "disconnect", "destroying id": "destroy"}
steps = list(names.values())

# (start, end, run, step) windows; a run's table header ends its last step.
marks = collections.defaultdict(list)
for ln in open(d + "/lines.tsv"):
    run, t, text = ln.rstrip("\n").split("\t", 2)
    text = text.strip()
    if text in names:
        marks[run].append((float(t), names[text]))
    elif text.startswith("step "):
        marks[run].append((float(t), None))
windows = sorted((t0, t1, run, s) for run, v in marks.items() for (t0, s), (t1, _) in zip(v, v[1:]) if s)
starts = [w[0] for w in windows]


def group(dso, sym):
    if "qht_lookup" in sym or "tb_htable" in sym or "lookup_tb" in sym:
        return "tb lookup"
    if sym.startswith("tcg_") or "tb_gen" in sym or "gen_intermediate" in sym or "translat" in sym:
        return "translate"
    if "tlb" in sym or "probe_access" in sym or "get_page_addr" in sym or "_mmu" in sym:
        return "soft TLB"
    if dso.startswith("[kernel"):
        return "host kernel"
    return "other"


out = subprocess.run(["perf", "script", "-i", d + "/all.data", "-F", "time,ip,sym,dso"],
                     capture_output=True, text=True).stdout
per_run = collections.Counter()                      # (run, step) -> samples
by_group = collections.defaultdict(collections.Counter)  # (client, step) -> group -> samples
by_sym = collections.defaultdict(collections.Counter)    # client -> (sym, dso) -> samples (STEP only)
for ln in out.splitlines():
    m = re.match(r'\s*([\d.]+):\s+[0-9a-f]+\s+(.*?)\s*\((.*)\)\s*$', ln)
    if not m:
        continue
    t = float(m.group(1))
    i = bisect.bisect_right(starts, t) - 1
    if i < 0 or t >= windows[i][1]:
        continue
    _, _, run, s = windows[i]
    client = run.split("-")[0]
    per_run[(run, s)] += 1
    by_group[(client, s)][group(m.group(3), m.group(2))] += 1
    if s == only:
        by_sym[client][(m.group(2), m.group(3).split("/")[-1])] += 1

ms = 1000.0 / 1000  # perf record -F 1000: one sample per ms of QEMU CPU
clients = sorted({w[2].split("-")[0] for w in windows})
runs_of = {c: sorted({w[2] for w in windows if w[2].split("-")[0] == c}) for c in clients}
if not only:
    print("QEMU CPU per run, ms (median over runs; mean per group); %.2f ms per sample" % ms)
    for s in steps:
        for c in clients:
            per = [per_run[(r, s)] * ms for r in runs_of[c]]
            n = len(runs_of[c]) or 1
            g = by_group[(c, s)]
            print("%-13s %s: %7.1f (runs %d) | %s" % (s, c, statistics.median(per) if per else 0, len(per),
                  ", ".join("%s %.1f" % (k, v * ms / n) for k, v in g.most_common())))
else:
    keys = set().union(*(by_sym[c] for c in clients))
    mean = {c: {k: by_sym[c][k] * ms / (len(runs_of[c]) or 1) for k in keys} for c in clients}
    spread = lambda k: max(mean[c][k] for c in clients) - min(mean[c][k] for c in clients)
    print("%s: ms per run by symbol (%s)" % (only, ", ".join("%s: %d runs" % (c, len(runs_of[c])) for c in clients)))
    for k in sorted(keys, key=spread, reverse=True)[:25]:
        print("  %-40s %-22s %s" % (k[0][:40], k[1][:22], " ".join("%s %6.1f" % (c, mean[c][k]) for c in clients)))
