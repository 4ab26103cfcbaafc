#!/usr/bin/env python3
"""idle_spinner_steps.py DIR: per step, the kernel CM client's time over
cmtime's in each round of idle_spinner.sh's tables (DIR/R-MODE-C.txt),
plain and with the idle spinner: median ratio, both medians, all ratios."""
import collections
import glob
import os
import re
import statistics as st
import sys

STEPS = ['create id', 'create qp', 'connect', 'disconnect', 'destroy']
d = collections.defaultdict(dict)
for f in glob.glob(os.path.join(sys.argv[1], '*-*-*.txt')):
    r, mode, c = os.path.basename(f)[:-4].split('-')
    for line in open(f):
        m = re.match(r'^(%s)\s*:\s*([\d.]+)' % '|'.join(STEPS), line)
        if m:
            d[(int(r), mode)][(c, m.group(1))] = float(m.group(2))
for step in STEPS:
    for mode in ['plain', 'hog']:
        rounds = [v for (r, mo), v in d.items() if mo == mode and ('k', step) in v and ('c', step) in v]
        if not rounds:
            continue
        rs = [v[('k', step)] / v[('c', step)] for v in rounds]
        print("%-10s %-5s rounds %d  k/c median %.3f  cmtime %.1f ms  kernel CM %.1f ms  ratios %s" % (
            step, mode, len(rs), st.median(rs), st.median(v[('c', step)] for v in rounds),
            st.median(v[('k', step)] for v in rounds), sorted(round(x, 2) for x in rs)))
