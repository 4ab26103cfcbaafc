#!/bin/sh
# guest-ftrace.sh: run a command in a vmtest guest under the kernel's
# function_graph tracer and sum the time spent in the named kernel
# functions (calls, average, total), with every context switch and softirq
# in the raw trace. Run it inside a guest (copy it to the share first):
#
#   bin/vmtest run SHARE a '/host/guest-ftrace.sh /host/trace.txt \
#       "ib_uverbs_write rxe_requester rxe_xmit_packet ib_umad_read" \
#       /host/bin/rdmacm-ping -backend user -c -a 192.0.2.2 -cmtime 200'
#
# Functions called from other traced functions are counted in both.
set -eu
out=$1 funcs=$2
shift 2
T=/sys/kernel/tracing
[ -e $T/trace ] || mount -t tracefs nodev $T
echo 0 > $T/tracing_on
echo nop > $T/current_tracer
: > $T/set_ftrace_filter
for f in $funcs; do echo "$f" >> $T/set_ftrace_filter || echo "guest-ftrace: no function $f" >&2; done
echo 32768 > $T/buffer_size_kb
echo 1 > $T/events/sched/sched_switch/enable
echo 1 > $T/events/irq/softirq_entry/enable
echo 1 > $T/events/irq/softirq_exit/enable
echo function_graph > $T/current_tracer
for o in funcgraph-abstime funcgraph-tail funcgraph-proc funcgraph-irqs; do echo 1 > $T/options/$o; done
: > $T/trace
echo 1 > $T/tracing_on
rc=0
"$@" || rc=$?
echo 0 > $T/tracing_on
cat $T/trace > "$out"
for e in sched/sched_switch irq/softirq_entry irq/softirq_exit; do echo 0 > $T/events/$e/enable; done
echo nop > $T/current_tracer
# Leaf calls end in "();", others in "} /* name */"; both carry the duration.
awk -F'|' '/ us +[|]/ {
	d = $(NF-1); gsub(/[^0-9.]/, "", d); body = $NF
	if (body ~ /\(\);/) { f = body; sub(/\(\);.*/, "", f) }
	else if (body ~ /\/\*/) { f = body; sub(/.*\/\* */, "", f); sub(/ *\*\/.*/, "", f) }
	else next
	sub(/ *\[.*/, "", f); gsub(/ /, "", f)
	n[f]++; s[f] += d
} END { for (f in n) printf "%-28s %7d calls %9.1f us avg %9.1f ms total\n", f, n[f], s[f] / n[f], s[f] / 1000 }' "$out" | sort -k7 -nr
exit $rc
