#!/bin/bash
# hostrun.sh DIR ROUNDS CLIENT...: boot a `vmtest pair -nocm-a` with share
# DIR (rp-base, the rdmacm-ping under test, already in DIR), run
# altmark.sh in guest a against `cmtime -b` in guest b, and meanwhile
# record guest a's QEMU with perf (1 kHz, CLOCK_MONOTONIC) into
# DIR/all.data and the step lines' arrival times into DIR/lines.tsv.
# Then: split.py DIR [STEP]. Run from the repository root.
set -e
D=$1; R=$2; shift 2
here=$(dirname "$0")
gcc -O2 -shared -fPIC -o "$D/linebuf.so" "$here/linebuf.c"
gcc -O2 -static -o "$D/scrub" "$here/scrub.c"
cp "$here/altmark.sh" "$D/"
rm -rf "$D/m" "$D/lines.tsv" "$D/all.data"; mkdir -p "$D/m"
timeout 1800 ./bin/vmtest pair -share "$D" -nocm-a -timeout 28m -b 'timeout 1700 cmtime -b 192.0.2.2' \
  -a "sh /host/altmark.sh $R $*" > "$D/pair.log" 2>&1 &
pair=$!
qa=""
while [ -z "$qa" ]; do
  sleep 1
  for p in $(pgrep -f "qemu-system.*$D"); do
    tr '\0' ' ' < /proc/$p/cmdline | grep -q 'ip=192.0.2.1' && qa=$p
  done
done
python3 "$here/poll_lines.py" "$D" &
poll=$!
perf record -q -F 1000 -e cpu-clock --clockid=CLOCK_MONOTONIC -p "$qa" -o "$D/all.data" 2>/dev/null &
rec=$!
wait $poll
kill -INT $rec; wait $rec || true
kill $pair 2>/dev/null; wait $pair 2>/dev/null || true
echo "hostrun: $(ls "$D"/m/*.out | wc -l) runs; python3 $here/split.py $D [STEP]"
