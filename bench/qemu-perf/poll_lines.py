#!/usr/bin/env python3
"""poll_lines.py DIR: until DIR/m/done, note the CLOCK_MONOTONIC time at
which each new line of DIR/m/*.out appears, into DIR/lines.tsv."""
import os, sys, time, glob
d = sys.argv[1]; off = {}; out = open(os.path.join(d, "lines.tsv"), "w")
while not os.path.exists(os.path.join(d, "m", "done")):
    for f in glob.glob(os.path.join(d, "m", "*.out")):
        with open(f, "rb") as fh:
            fh.seek(off.get(f, 0)); data = fh.read()
        if not data: continue
        now = time.clock_gettime(time.CLOCK_MONOTONIC)
        nl = data.rfind(b"\n")
        if nl < 0: continue
        off[f] = off.get(f, 0) + nl + 1
        for ln in data[:nl].split(b"\n"):
            out.write("%s\t%.6f\t%s\n" % (os.path.basename(f)[:-4], now, ln.decode(errors="replace")))
        out.flush()
    time.sleep(0.002)
