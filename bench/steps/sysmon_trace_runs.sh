#!/bin/sh
# sysmon_trace_runs.sh N: in guest a of a hand-run pair booted with -nocm-a
# (`cmtime -b 192.0.2.2` in guest b), run /host/rp-trace (an rdmacm-ping
# built with `sysmon_goroot.py trace`) N times on the kernel CM (modules
# loaded first), then N times on the engine (modules unloaded), 3 s apart,
# with -cmtime-usage; each run's stderr and table into /host/tr/kR.txt and
# /host/tr/eR.txt. Symbolize with sysmon_resets.py (bench/README.md).
mkdir -p /tmp/bb /host/tr && cp /host/rp-trace /tmp/bb/ || exit 1
grep -q "^rdma_ucm " /proc/modules || for m in ib_cm iw_cm rdma_cm rdma_ucm; do insmod /mods/$m.ko || exit 1; done
for r in $(seq 1 "$1"); do sleep 3; /tmp/bb/rp-trace -backend kernel -cmtime-usage -c -a 192.0.2.2 -cmtime 200 > /host/tr/k$r.txt 2>&1; done
rmmod rdma_ucm rdma_cm iw_cm ib_cm
for r in $(seq 1 "$1"); do sleep 3; /tmp/bb/rp-trace -backend user -cmtime-usage -c -a 192.0.2.2 -cmtime 200 > /host/tr/e$r.txt 2>&1; done
