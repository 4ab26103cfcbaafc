#!/bin/sh
# alt_clients.sh ROUNDS OUTDIR CLIENT...: in guest a of a hand-run pair
# (`cmtime -b 192.0.2.2` in guest b), run the CLIENTs one after another,
# ROUNDS times, 3 s apart (past the CM's TimeWait), 200 connections each,
# each table into OUTDIR/ROUND-CLIENT.txt. CLIENT is c (cmtime) or the
# name of an rdmacm-ping build in the share (/host/NAME, copied to guest
# RAM first), run with -backend kernel -cmtime-usage; NAME:GODEBUG runs it
# with that GODEBUG. Summarize with alt_steps.py.
R=$1; O=$2; shift 2
mkdir -p /tmp/bb "$O"
for c in "$@"; do
  case $c in c) ;; *) cp "/host/${c%%:*}" /tmp/bb/ || exit 1 ;; esac
done
for r in $(seq 1 "$R"); do
  for c in "$@"; do
    sleep 3
    case $c in
      c) cmtime -s 192.0.2.2 -c 200 > "$O/$r-$c.txt" 2>&1 ;;
      *:*) env GODEBUG="${c#*:}" "/tmp/bb/${c%%:*}" -backend kernel -cmtime-usage -c -a 192.0.2.2 -cmtime 200 > "$O/$r-$c.txt" 2>&1 ;;
      *) "/tmp/bb/$c" -backend kernel -cmtime-usage -c -a 192.0.2.2 -cmtime 200 > "$O/$r-$c.txt" 2>&1 ;;
    esac
  done
done
