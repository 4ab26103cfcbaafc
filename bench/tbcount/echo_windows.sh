#!/bin/sh
# echo_windows.sh SHARE ROUNDS VARIANT...: examples/echo round trips of 64 B
# in a running `vmtest pair` whose guest a has tbcount.so (this folder's
# qemu-system-x86_64 stand-in, TBPLUG with trig=$TRIG), server in guest b.
# Each variant runs N0 and N operations per round, each client inside a
# window marked by replacing $TRIG ("VARIANT N rR"); `tbsum.py -pairs N0 N
# OUTDIR` then gives guest a's instructions per round trip. Guest b's QEMU
# (no plugin) has its host CPU time counted by perf stat per run.
# SHARE holds echo (Go) and echo-c (examples/c/echo.c); variants:
# c, thread, netpoll (Go's -wait), thread2 and netpoll2 (GOMAXPROCS=2);
# a Go variant@NAME runs SHARE/NAME instead of echo (an A/B of two builds:
# thread2 thread2@echo-old).
# Run from the repository root, after `go build -o bin/vmtest ./internal/vmtest/cmd/vmtest`.
set -e
P=$1; R=$2; shift 2
: "${TRIG:?set TRIG to the plugin's trig= file}" "${N0:=200}" "${N:=1200}"
V=./bin/vmtest
mark() { echo "$1" > "$TRIG.new"; mv "$TRIG.new" "$TRIG"; sleep 0.3; }
qb=""
for p in $(pgrep -f "qemu-system.*$P"); do
	tr '\0' ' ' < /proc/$p/cmdline | grep -q 'ip=192.0.2.2' && qb=$p
done
[ -n "$qb" ] || { echo "echo_windows: no guest b of $P" >&2; exit 1; }
for g in a b; do $V run "$P" $g 'cp /host/echo* /tmp/' > /dev/null; done
for r in $(seq 1 "$R"); do
	for v in "$@"; do
		g=/tmp/echo
		case $v in *@*) g=/tmp/${v#*@} ;; esac
		case ${v%@*} in
		c) bin=/tmp/echo-c; x="" ;;
		thread | netpoll) bin=$g; x="-wait ${v%@*}" ;;
		thread2 | netpoll2) bin="env GOMAXPROCS=2 $g"; x="-wait ${v%%2*}" ;;
		*) echo "echo_windows: unknown variant $v" >&2; exit 2 ;;
		esac
		for n in $N0 $N; do
			sleep 3 # the kernel CM's TimeWait of the previous connection
			$V start "$P" b "$bin -s -a 192.0.2.2 -n $n -size 64 $x" > /dev/null
			sleep 2
			perf stat -x, -e task-clock -p "$qb" -o "$P/qb.stat" &
			st=$!
			mark "start $v $n r$r"
			out=$($V run "$P" a "$bin -a 192.0.2.2 -t -n $n -size 64 $x" | grep '^time:')
			mark "$v $n r$r"
			kill -INT $st; wait $st || true
			echo "$v $n r$r | $out | guest b QEMU ms $(awk -F, '/task-clock/ {print $1}' "$P/qb.stat")"
		done
	done
done
