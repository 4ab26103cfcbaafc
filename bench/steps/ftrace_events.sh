#!/bin/sh
# ftrace_events.sh OUT CMD...: run CMD with ftrace events (syscalls, context
# switches, user page faults, softirqs, TLB flushes) into /host/OUT;
# FTRACE_IRQ=1 adds hard interrupts and timers.
out=$1; shift
T=/sys/kernel/tracing
[ -e $T/trace ] || mount -t tracefs nodev $T
echo 0 > $T/tracing_on
echo nop > $T/current_tracer
echo 65536 > $T/buffer_size_kb
: > $T/set_event
events="raw_syscalls:sys_enter raw_syscalls:sys_exit sched:sched_switch exceptions:page_fault_user irq:softirq_entry irq:softirq_exit tlb:tlb_flush"
# FTRACE_IRQ=1: also hard interrupts and timers (per-call tables)
[ "$FTRACE_IRQ" = 1 ] && events="$events irq:irq_handler_entry irq:irq_handler_exit timer:hrtimer_expire_entry timer:local_timer_entry timer:local_timer_exit"
for e in $events; do echo $e >> $T/set_event; done
: > $T/trace
echo 1 > $T/tracing_on
"$@"
rc=$?
echo 0 > $T/tracing_on
cat $T/trace > /host/$out
: > $T/set_event
exit $rc
