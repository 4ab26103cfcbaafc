#!/usr/bin/env python3
"""Count the syscalls of each cmtime step in `strace -f -ttt -T -xx -s 24 -o FILE`
of a cmtime client. C (cmtime): a step starts at the main thread's first
ucma command of the step (create qp and disconnect: at its first syscall
other than sched_yield after the last RESOLVE_ROUTE / CONNECT). Go
(rdmacm-ping -cmtime ... -line-buffered): at the step's line on stdout. Every thread's calls
count for the step under way. Usage: strace_steps.py c|go FILE [FILE...]"""
import re, sys, collections
kind, paths = sys.argv[1], sys.argv[2:]
steps = ["setup", "create id", "resolve addr", "resolve route", "create qp", "connect", "disconnect", "destroy", "exit"]
go_marks = {"creating id": "create id", "resolving address": "resolve addr", "resolving route": "resolve route",
            "creating qp": "create qp", "connecting": "connect", "disconnecting": "disconnect", "destroying id": "destroy"}
rx = re.compile(r'^(\d+)\s+([\d.]+)\s+(.*)$')
def unhex(s): return bytes.fromhex(s.replace("\\x", ""))
def parse(path):
    evs = []  # (pid, name, ucma_fd_cmd or None, text or None, dur)
    for ln in open(path, errors="replace"):
        m = rx.match(ln)
        if not m: continue
        pid, rest = int(m.group(1)), m.group(3)
        if rest.startswith("<...") or rest.startswith("+++") or rest.startswith("---"): continue
        n = re.match(r'(\w+)\(', rest)
        if not n: continue
        name = n.group(1)
        d = re.search(r'<([\d.]+)>\s*$', rest)
        dur = float(d.group(1)) if d else 0.0
        cmd = txt = None
        w = re.match(r'write\((\d+), "((?:\\x[0-9a-f]{2})+)"', rest)
        if w:
            b = unhex(w.group(2))
            if w.group(1) == "1": txt = b.decode(errors="replace").strip()
            elif len(b) >= 4: cmd = (w.group(1), int.from_bytes(b[:4], "little"))
        evs.append((pid, name, cmd, txt, dur))
    return evs
def split(evs):
    main = evs[0][0]
    st = [0] * len(evs)
    if kind == "go":
        cur = 0
        for i, (pid, name, cmd, txt, dur) in enumerate(evs):
            if txt is not None:
                if txt in go_marks: cur = steps.index(go_marks[txt])
                elif txt.startswith("step "): cur = steps.index("exit")
            st[i] = cur
        return st
    # C: the ucma fd is the one of the 200 CREATE_IDs in a row.
    mcmds = [(i, c) for i, (pid, name, c, t, d) in enumerate(evs) if pid == main and c]
    start = {}
    for k in range(len(mcmds) - 1):
        if mcmds[k][1][1] == 0 and mcmds[k + 1][1] == mcmds[k][1]:
            start["create id"] = mcmds[k][0]; fd = mcmds[k][1][0]; break
    def first(cmdset, after):
        for i, c in mcmds:
            if i > after and c[0] == fd and c[1] in cmdset: return i
    def last(cmdset, before):
        r = None
        for i, c in mcmds:
            if i < before and c[0] == fd and c[1] in cmdset: r = i
        return r
    def next_busy(after):
        for i in range(after + 1, len(evs)):
            if evs[i][0] == main and evs[i][1] != "sched_yield": return i
    start["resolve addr"] = first({21, 3}, start["create id"])
    start["resolve route"] = first({4}, start["resolve addr"])
    start["connect"] = first({6}, start["resolve route"])
    start["create qp"] = next_busy(last({4}, start["connect"]))
    start["destroy"] = first({1}, start["connect"])
    start["disconnect"] = next_busy(last({6}, start["destroy"]))
    start["exit"] = next(i for i, e in enumerate(evs) if e[3] is not None)
    cur = 0
    bounds = sorted((v, steps.index(k)) for k, v in start.items())
    b = 0
    for i in range(len(evs)):
        while b < len(bounds) and bounds[b][0] <= i: cur = bounds[b][1]; b += 1
        st[i] = cur
    return st
tot = {s: collections.Counter() for s in steps}
for p in paths:
    evs = parse(p)
    for (pid, name, cmd, txt, dur), s in zip(evs, split(evs)):
        tot[steps[s]][name] += 1
        tot[steps[s]]["_time"] += dur
n = len(paths)
print("| step | syscalls per run (per connection), sched_yield excluded | sched_yield | kernel time in syscalls, ms | calls |")
for s in steps:
    c = tot[s]
    t = c.pop("_time", 0)
    y = c.get("sched_yield", 0)
    calls = sum(c.values()) - y
    print("| %s | %.0f (%.1f) | %.0f | %.0f | %s |" % (s, calls / n, calls / n / 200, y / n, t * 1000 / n,
          ", ".join("%s %.0f" % (k, v / n) for k, v in c.most_common(14) if k != "sched_yield")))
