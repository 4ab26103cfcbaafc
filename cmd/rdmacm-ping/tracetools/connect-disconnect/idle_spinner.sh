#!/bin/sh
# idle_spinner.sh ROUNDS: in guest a of a hand-run pair (`cmtime -b
# 192.0.2.2` in guest b), the share holding rp (an rdmacm-ping build) and
# idlehog (../idlehog): per round, cmtime and the kernel CM client
# (alternating order), once plain and once with idlehog spinning under
# SCHED_IDLE so that the vCPU never halts. Tables in /host/out/R-MODE-C.txt.
mkdir -p /tmp/bb /host/out; cp /host/rp /host/idlehog /tmp/bb/ || exit 1
sleep 2
for r in $(seq 1 "${1:-8}"); do
  for mode in plain hog; do
    H=
    if [ $mode = hog ]; then /tmp/bb/idlehog & H=$!; fi
    if [ $((r % 2)) = 0 ]; then order="c k"; else order="k c"; fi
    for c in $order; do
      sleep 3
      case $c in
        c) cmtime -s 192.0.2.2 -c 200 > /host/out/$r-$mode-$c.txt 2>&1 ;;
        k) /tmp/bb/rp -backend kernel -c -a 192.0.2.2 -cmtime 200 > /host/out/$r-$mode-$c.txt 2>&1 ;;
      esac
    done
    [ -n "$H" ] && kill $H
  done
done
