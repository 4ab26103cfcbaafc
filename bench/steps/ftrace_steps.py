#!/usr/bin/env python3
"""Per cmtime step from an ftrace event trace (ftrace_events.sh: raw_syscalls,
sched_switch, page_fault_user, softirq) of one client run on a 1-vCPU guest:
wall time and who had the CPU (the client in user space or in syscalls,
softirq, other tasks, idle), the client's syscalls and page faults. With a
step name, the client's syscalls of that step by number instead: calls,
time from entry to exit, and how much of it the thread was switched out.
C (cmtime): steps split at the main thread's ucma writes (by size: CREATE_ID
32 bytes, RESOLVE_ADDR 280, RESOLVE_ROUTE 16, CONNECT 296, DESTROY_ID 24).
Go: rdmacm-ping -cmtime ... -line-buffered, split at its step lines.
Usage: ftrace_steps.py c|go COMM FILE [STEP]"""
import re, sys, collections
steps = ["create id", "resolve addr", "resolve route", "create qp", "connect", "disconnect", "destroy"]
rx = re.compile(r'^\s*(.+)-(\d+)\s+\[\d+\]\s+\S+\s+([\d.]+): (\w+): (.*)$')


def load(kind, comm, path):
    """Events (comm, pid, time, event, args), the client's pids, and each
    step's start time (and \"exit\") from one trace."""
    evs = []
    for ln in open(path, errors="replace"):
        m = rx.match(ln)
        if m: evs.append((m.group(1).strip(), int(m.group(2)), float(m.group(3)), m.group(4), m.group(5)))
    # client pids: tasks whose comm starts with comm
    cpids = {p for c, p, t, e, a in evs if c.startswith(comm[:15])}
    # step boundaries
    starts = {}
    if kind == "go":
        marks = [t for c, p, t, e, a in evs if p in cpids and e == "sys_enter" and re.match(r'NR 1 \(1,', a)]
        for s, t in zip(steps + ["exit"], marks):
            starts[s] = t
    else:
        main = min(cpids)
        mw = []  # main thread writes to fd 3: (t, count)
        for c, p, t, e, a in evs:
            if p == main and e == "sys_enter":
                m = re.match(r'NR 1 \((\w+), \w+, (\w+)', a)
                if m: mw.append((t, int(m.group(1), 16), int(m.group(2), 16)))
        w3 = [(t, n) for t, fd, n in mw if fd == 3]
        for i in range(len(w3) - 1):
            if w3[i][1] == 32 and w3[i + 1][1] == 32: starts["create id"] = w3[i][0]; break
        first = lambda n, after: next(t for t, k in w3 if k == n and t > after)
        last = lambda n, before: max(t for t, k in w3 if k == n and t < before)
        starts["resolve addr"] = first(280, starts["create id"])
        starts["resolve route"] = first(16, starts["resolve addr"])
        starts["connect"] = first(296, starts["resolve route"])
        busy = [t for c, p, t, e, a in evs if p == main and e == "sys_enter" and not a.startswith("NR 24 ")]  # 24 = sched_yield
        starts["create qp"] = next(t for t in busy if t > last(16, starts["connect"]))
        lastc = max(t for t, k in w3 if k == 296)
        starts["disconnect"] = next(t for t in busy if t > lastc)
        starts["destroy"] = first(24, starts["disconnect"])
        starts["exit"] = next(t for t, fd, n in mw if fd == 1)
    return evs, cpids, starts


if __name__ == "__main__":
    kind, comm, path = sys.argv[1], sys.argv[2], sys.argv[3]
    only = sys.argv[4] if len(sys.argv) > 4 else None
    evs, cpids, starts = load(kind, comm, path)
    order = sorted(starts.items(), key=lambda kv: kv[1])
    def step_of(t):
        s = None
        for name, st in order:
            if t >= st: s = name
        return s
    if only:
        order = sorted(starts.items(), key=lambda kv: kv[1])
        step = only
        names=[n for n,_ in order]
        i=names.index(step); t0=order[i][1]; t1=order[i+1][1]
        enter={}; tot=collections.Counter(); cnt=collections.Counter(); off=collections.Counter()
        running=None; offstart={}
        for c,p,t,e,a in evs:
            if not (t0<=t<t1): continue
            if e=="sched_switch":
                m=re.search(r'prev_pid=(\d+).*next_pid=(\d+)',a); pp,np_=int(m.group(1)),int(m.group(2))
                if pp in enter: offstart[pp]=t
                if np_ in offstart: off[enter[np_][0]]+=t-offstart.pop(np_)
            if p not in cpids: continue
            if e=="sys_enter":
                nr=int(a.split()[1]); enter[p]=(nr,t)
            elif e=="sys_exit" and p in enter:
                nr,ts=enter.pop(p); tot[nr]+=t-ts; cnt[nr]+=1
        for nr,v in tot.most_common(8):
            print("NR %3d: %4d calls, %7.2f ms in call (%.1f us each), of which off-CPU %.2f ms" % (nr,cnt[nr],v*1000,v*1e6/cnt[nr],off[nr]*1000))
        sys.exit(0)
    acc = {s: collections.Counter() for s in steps}
    cur = None; cur_t = None  # running task on the CPU
    insys = {}  # pid -> True while in a syscall
    irq = False
    def charge(t0, t1):
        if cur is None or t1 <= t0: return
        # split across steps
        pts = [t0] + [st for _, st in order if t0 < st < t1] + [t1]
        for a, b in zip(pts, pts[1:]):
            s = step_of(a)
            if s not in acc: continue
            c, p = cur
            if irq: k = "softirq"
            elif p == 0: k = "idle"
            elif p in cpids: k = "client syscalls" if insys.get(p) else "client user"
            else: k = "other: " + re.sub(r'[/:]\d+.*|-\d+$', '', c)
            acc[s][k] += b - a
    last_t = None
    for c, p, t, e, a in evs:
        if last_t is not None: charge(last_t, t)
        last_t = t
        if cur is None: cur = (c, p)
        if e == "sched_switch":
            m = re.search(r'next_comm=(.*?) next_pid=(\d+)', a)
            cur = (m.group(1), int(m.group(2)))
        elif e == "sys_enter": insys[p] = True
        elif e == "sys_exit": insys[p] = False
        elif e == "softirq_entry": irq = True
        elif e == "softirq_exit": irq = False
        elif e == "page_fault_user" and p in cpids:
            s = step_of(t)
            if s in acc: acc[s]["#page faults"] += 1
        if e == "sys_enter" and p in cpids:
            s = step_of(t)
            if s in acc: acc[s]["#syscalls"] += 1
    for s in steps:
        if s not in starts: continue
        i = [n for n, _ in order].index(s)
        wall = order[i + 1][1] - order[i][1]
        a = acc[s]
        parts = ", ".join("%s %.2f" % (k, v * 1000) for k, v in sorted(a.items(), key=lambda kv: -kv[1]) if not k.startswith("#") and v * 1000 >= 0.05)
        print("%-13s wall %7.2f ms | %s | syscalls %d, page faults %d" % (s, wall * 1000, parts, a["#syscalls"], a["#page faults"]))
