#!/bin/sh
# altmark.sh ROUNDS CLIENT...: in guest a of a `vmtest pair -nocm-a` pair
# (`cmtime -b 192.0.2.2` in guest b), run the CLIENTs in turn ROUNDS
# times, 3 s apart: c (cmtime, stdout line-buffered by linebuf.so), k and e
# (/host/rp-base on the kernel CM and on the engine, -line-buffered; the
# CM modules are loaded for c and k and unloaded for e). Each client's
# stdout goes to /host/m/CLIENT-ROUND.out, where poll_lines.py on the host
# times each step line as it arrives; /host/m/done ends it. A digit after
# a client's letter names a second run of it (e2: the engine again, with
# no module change before it). s unloads the CM modules and runs scrub
# (scrub.c, built by hostrun.sh) instead of a client.
R=$1; shift
mkdir -p /tmp/bb /host/m; cp /host/rp-base /host/linebuf.so /host/scrub /tmp/bb/ || exit 1
load() { for m in ib_cm iw_cm rdma_cm rdma_ucm; do insmod /mods/$m.ko 2>/dev/null; done; }
unload() { rmmod rdma_ucm rdma_cm iw_cm ib_cm 2>/dev/null; }
sleep 2
for r in $(seq 1 "$R"); do
  for c in "$@"; do
    case $c in e*|s*) unload ;; *) load ;; esac
    case $c in s*) /tmp/bb/scrub 64; continue ;; esac
    sleep 3
    case $c in
      c*) LD_PRELOAD=/tmp/bb/linebuf.so cmtime -s 192.0.2.2 -c 200 > /host/m/$c-$r.out 2>&1 ;;
      k*) /tmp/bb/rp-base -backend kernel -line-buffered -c -a 192.0.2.2 -cmtime 200 > /host/m/$c-$r.out 2>&1 ;;
      e*) /tmp/bb/rp-base -backend user -line-buffered -c -a 192.0.2.2 -cmtime 200 > /host/m/$c-$r.out 2>&1 ;;
    esac
  done
done
sleep 1; touch /host/m/done
