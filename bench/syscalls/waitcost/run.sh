#!/bin/sh
# Syscalls per wait of a Go reader (waitcost) and of C's (reader), by the
# time each wait lasts, counted by perf's syscall tracepoints on the host:
#   INTERVALS='200 20000' bench/syscalls/waitcost/run.sh [COUNT]
# The ticker writes a byte every INTERVAL µs into a pipe; only the reader
# is counted, less what the same reader makes for no wait at all (its
# start and exit).
set -e
cd "$(dirname "$0")"
n=${1:-4000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
gcc -O2 -o "$tmp/ticker" c/ticker.c
gcc -O2 -o "$tmp/reader" c/reader.c
CGO_ENABLED=0 go build -o "$tmp/waitcost" .
ev=syscalls:sys_enter_read,syscalls:sys_enter_futex,syscalls:sys_enter_nanosleep,syscalls:sys_enter_epoll_pwait,syscalls:sys_enter_sched_yield,raw_syscalls:sys_enter
count() { # COUNT INTERVAL CMD...: the six counts, comma-separated
	c=$1 us=$2
	shift 2
	"$tmp/ticker" "$c" "$us" | perf stat -x, -e "$ev" -o "$tmp/out" "$@"
	awk -F, '/sys_enter_read/ {rd=$1} /futex/ {fu=$1} /nanosleep/ {ns=$1}
		/epoll_pwait/ {ep=$1} /sched_yield/ {sy=$1} /raw_syscalls/ {t=$1}
		END {printf "%d,%d,%d,%d,%d,%d\n", rd, fu, ns, ep, sy, t}' "$tmp/out"
}
printf '%-16s %9s %6s %6s %6s %6s %6s %6s\n' reader interval read futex nanosl epoll yield total
for us in ${INTERVALS:-2 10 50 200 1000 20000}; do
	for r in ${READERS:-"c" "go blocking 1" "go blocking 2" "go blocking-yield 1" "go blocking-yield 2" "go sliced 1" "go sliced 2" "go netpoll 1" "go netpoll 2"}; do
		set -- $r
		case $1 in
		c) cmd="$tmp/reader" ;;
		go) cmd="env GOMAXPROCS=$3 $tmp/waitcost $2" ;;
		esac
		base=$(count 0 "$us" $cmd 0)
		got=$(count "$n" "$us" $cmd "$n")
		echo "$base $got" | awk -v r="$r" -v us="$us" -v n="$n" '{
			split($1, b, ","); split($2, g, ",")
			printf "%-16s %6d µs", r, us
			for (i = 1; i <= 6; i++) printf " %6.2f", (g[i] - b[i]) / n
			printf "\n"}'
	done
done
