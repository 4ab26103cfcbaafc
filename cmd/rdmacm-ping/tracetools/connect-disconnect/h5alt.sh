#!/bin/sh
# h5alt.sh ROUNDS OUTDIR CLIENT...: c = cmtime (kernel CM), k:BIN = BIN -backend kernel, e:BIN = BIN -backend user
R=$1; O=$2; shift 2
mkdir -p /tmp/bb "$O"
load() { for m in ib_cm iw_cm rdma_cm rdma_ucm; do insmod /mods/$m.ko 2>/dev/null; done; }
unload() { rmmod rdma_ucm rdma_cm iw_cm ib_cm 2>/dev/null; }
for c in "$@"; do case $c in c) ;; *) cp "/host/${c#*:}" /tmp/bb/ || exit 1 ;; esac; done
for r in $(seq 1 "$R"); do
  for c in "$@"; do
    case $c in c|k:*|K:*) load ;; e:*|E:*) unload ;; esac
    sleep 3
    n=$(echo $c | tr ':' '-')
    case $c in
      c) cmtime -s 192.0.2.2 -c 200 > "$O/$r-$n.txt" 2>&1 ;;
      k:*) "/tmp/bb/${c#*:}" -backend kernel -cmtime-usage -c -a 192.0.2.2 -cmtime 200 > "$O/$r-$n.txt" 2>&1 ;;
      K:*) GOMAXPROCS=2 "/tmp/bb/${c#*:}" -backend kernel -cmtime-usage -c -a 192.0.2.2 -cmtime 200 > "$O/$r-$n.txt" 2>&1 ;;
      E:*) GOMAXPROCS=2 "/tmp/bb/${c#*:}" -backend user -cmtime-usage -c -a 192.0.2.2 -cmtime 200 > "$O/$r-$n.txt" 2>&1 ;;
      e:*) "/tmp/bb/${c#*:}" -backend user -cmtime-usage -c -a 192.0.2.2 -cmtime 200 > "$O/$r-$n.txt" 2>&1 ;;
    esac
  done
done
