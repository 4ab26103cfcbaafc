#!/bin/sh
# h5ftr.sh TAG: ftrace of c, k, e once each
T=$1
mkdir -p /tmp/bb; cp /host/rp-base /tmp/bb/
load() { for m in ib_cm iw_cm rdma_cm rdma_ucm; do insmod /mods/$m.ko 2>/dev/null; done; }
unload() { rmmod rdma_ucm rdma_cm iw_cm ib_cm 2>/dev/null; }
load; sleep 3; /host/ftrace_events.sh f$T-c.txt cmtime -s 192.0.2.2 -c 200 > /host/f$T-c.out 2>&1
sleep 3; /host/ftrace_events.sh f$T-k.txt /tmp/bb/rp-base -backend kernel -line-buffered -c -a 192.0.2.2 -cmtime 200 > /host/f$T-k.out 2>&1
unload; sleep 3; /host/ftrace_events.sh f$T-e.txt /tmp/bb/rp-base -backend user -line-buffered -c -a 192.0.2.2 -cmtime 200 > /host/f$T-e.out 2>&1
