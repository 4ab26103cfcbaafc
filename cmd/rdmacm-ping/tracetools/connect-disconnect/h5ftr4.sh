#!/bin/sh
T=$1
mkdir -p /tmp/bb; cp /host/rp-base /tmp/bb/
for m in ib_cm iw_cm rdma_cm rdma_ucm; do insmod /mods/$m.ko 2>/dev/null; done
sleep 3; GOMAXPROCS=2 FTRACE_IRQ=1 /host/ftrace_events.sh f$T-K2.txt /tmp/bb/rp-base -backend kernel -line-buffered -c -a 192.0.2.2 -cmtime 200 > /host/f$T-K2.out 2>&1
sleep 3; FTRACE_IRQ=1 /host/ftrace_events.sh f$T-c.txt cmtime -s 192.0.2.2 -c 200 > /host/f$T-c.out 2>&1
sleep 3; FTRACE_IRQ=1 /host/ftrace_events.sh f$T-k.txt /tmp/bb/rp-base -backend kernel -line-buffered -c -a 192.0.2.2 -cmtime 200 > /host/f$T-k.out 2>&1
