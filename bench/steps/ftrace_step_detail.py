#!/usr/bin/env python3
"""One cmtime step of one ftrace run in detail: time
on the CPU per task (user, syscall, softirq), context switches by
(prev pid, prev state, next pid), syscalls per thread, softirq runs and
time per vector, and tlb_flush events by reason (ftrace_events.sh with
tlb:tlb_flush added). Steps are split as ftrace_steps.py splits them.
Usage: ftrace_step_detail.py c|go COMM FILE STEP"""
import collections, re, sys
from ftrace_steps import load, steps

kind, comm, path, step = sys.argv[1:5]
evs, cpids, starts = load(kind, comm, path)
order = [s for s in steps + ["exit"] if s in starts]
t0, t1 = starts[step], starts[order[order.index(step) + 1]]

oncpu = collections.Counter()     # (task, what) -> seconds
switches = collections.Counter()  # (prev pid, prev state, next pid)
calls = collections.Counter()     # (pid, syscall number)
sirq_n, sirq_t = collections.Counter(), collections.Counter()
flushes = collections.Counter()   # (reason, "all" or "pages")
cur, insys, in_sirq, sirq_start, last = None, {}, None, 0.0, None
for c, p, t, e, a in evs:
    if cur is None:
        cur = (c, p)
    if last is not None and t0 <= last and t <= t1:
        what = "softirq" if in_sirq else ("syscall" if insys.get(cur[1]) else "user")
        oncpu[("%s-%d" % cur, what)] += t - last
    last = t
    inside = t0 <= t <= t1
    if e == "sched_switch":
        m = re.search(r'prev_pid=(\d+) .*prev_state=(\S+) ==> next_comm=(.*?) next_pid=(\d+)', a)
        cur = (m.group(3), int(m.group(4)))
        if inside:
            switches[(int(m.group(1)), m.group(2), int(m.group(4)))] += 1
    elif e == "sys_enter":
        insys[p] = True
        if inside and p in cpids:
            calls[(p, int(a.split()[1]))] += 1
    elif e == "sys_exit":
        insys[p] = False
    elif e == "softirq_entry":
        in_sirq, sirq_start = re.search(r'action=(\w+)', a).group(1), t
    elif e == "softirq_exit" and in_sirq:
        if inside:
            sirq_n[in_sirq] += 1
            sirq_t[in_sirq] += t - sirq_start
        in_sirq = None
    elif e == "tlb_flush" and inside:
        m = re.search(r'pages:(-?\d+) reason:(.*?) \(', a)
        flushes[(m.group(2), "all" if m.group(1) == "-1" else "pages")] += 1

print("%s, %s: wall %.2f ms; client threads %s" % (path, step, (t1 - t0) * 1e3, sorted(cpids)))
for (task, what), v in oncpu.most_common(12):
    print("  on CPU  %-24s %-8s %7.2f ms" % (task, what, v * 1e3))
print("  switches (prev pid, prev state, next pid):", switches.most_common(8))
print("  syscalls (pid, nr):", calls.most_common(10))
print("  softirq:", ", ".join("%s %d runs %.2f ms" % (v, sirq_n[v], sirq_t[v] * 1e3) for v, _ in sirq_t.most_common()))
print("  tlb_flush:", dict(flushes) or "none traced")
