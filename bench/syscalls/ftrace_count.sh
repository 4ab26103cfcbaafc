#!/bin/sh
# ftrace_count.sh COMM CMD...: run CMD in a vmtest guest and print how many
# syscalls of each kind the threads named COMM made, from an ftrace
# histogram on raw_syscalls:sys_enter (no ptrace: the timing is left as it is).
comm=$1; shift
T=/sys/kernel/tracing
[ -d $T/events ] || mount -t tracefs none $T
trig="hist:keys=id.syscall:sort=hitcount if comm == \"$comm\""
echo "$trig" > $T/events/raw_syscalls/sys_enter/trigger
"$@"
grep hitcount $T/events/raw_syscalls/sys_enter/hist |
	sed 's/.*id: sys_\([a-z_0-9]*\).*hitcount: *\([0-9]*\)/\2 \1/' | sort -n |
	awk '{t+=$1; if ($1>=20) printf "%s ", $0} END {print "| total", t}'
echo "!$trig" > $T/events/raw_syscalls/sys_enter/trigger
