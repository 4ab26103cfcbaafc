#!/bin/sh
# ftrace_events.sh OUT CMD...: run CMD with ftrace events (syscalls, context
# switches, user page faults, softirqs, TLB flushes) into /host/OUT.
out=$1; shift
T=/sys/kernel/tracing
[ -e $T/trace ] || mount -t tracefs nodev $T
echo 0 > $T/tracing_on
echo nop > $T/current_tracer
echo 65536 > $T/buffer_size_kb
: > $T/set_event
for e in raw_syscalls:sys_enter raw_syscalls:sys_exit sched:sched_switch exceptions:page_fault_user irq:softirq_entry irq:softirq_exit tlb:tlb_flush; do echo $e >> $T/set_event; done
: > $T/trace
echo 1 > $T/tracing_on
"$@"
rc=$?
echo 0 > $T/tracing_on
cat $T/trace > /host/$out
: > $T/set_event
exit $rc
