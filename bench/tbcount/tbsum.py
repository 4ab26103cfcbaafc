#!/usr/bin/env python3
"""tbsum.py: summarize tbcount.so dumps (docs/benchmarks.md: create qp, echo round trips).

  tbsum.py [-n N] [-min M] OUTDIR                 every window: kernel and user
                                                  instructions, memory accesses and
                                                  block executions per N, and the
                                                  distinct blocks run at least M times
  tbsum.py [-n N] [-min M] -sym NMFILE DUMP       one window's user blocks by symbol
                                                  (NMFILE: `go tool nm -n -size BINARY`)

  tbsum.py -pairs N0 N OUTDIR                     per operation, each "LABEL N rR" window less
                                                  its "LABEL N0 rR": kernel and user
                                                  instructions and memory accesses
                                                  (echo_windows.sh's labels)
  tbsum.py -diff NMFILE DUMP0 DUMP1 OPS           user instructions per operation by symbol,
                                                  DUMP1 less DUMP0, over OPS operations

A block counts as distinct per iteration when it ran at least M times in
the window (default 150 of N = 200 iterations): the code every
iteration runs. Kernel addresses are those at or above 0xffff800000000000.
"""
import bisect
import collections
import glob
import os
import sys

KERNEL = 0xffff800000000000


def load(path):
    with open(path) as f:
        lines = f.read().split('\n')
    label = lines[0][2:] if lines[0].startswith('# ') else lines[0]
    blocks = []
    for line in lines[1:]:
        if not line:
            continue
        v, k, e, m = line.split()
        blocks.append((int(v, 16), int(k), int(e), int(m)))
    return label, blocks


def window(path, n, least):
    label, blocks = load(path)
    out = []
    for name, kernel in (('kernel', True), ('user', False)):
        sel = [b for b in blocks if (b[0] >= KERNEL) == kernel]
        per = collections.Counter()
        for v, _, e, _ in sel:
            per[v] += e
        out.append('%s insns %.0f mems %.0f execs %.0f distinct %d' % (
            name, sum(k * e for _, k, e, _ in sel) / n, sum(m for *_, m in sel) / n,
            sum(e for _, _, e, _ in sel) / n, sum(1 for e in per.values() if e >= least)))
    return '%s %-28s %s' % (os.path.basename(path), label, ' | '.join(out))


def symbols(nmfile):
    syms = []
    with open(nmfile) as f:
        for line in f:
            p = line.split()
            if len(p) >= 4 and p[2] in 'Tt':
                syms.append((int(p[0], 16), int(p[1]), p[3]))
    syms.sort()
    return syms


def namer(nmfile):
    """A user address's symbol in nmfile's binary, or its page outside it."""
    syms = symbols(nmfile)
    starts = [s[0] for s in syms]

    def name(v):
        i = bisect.bisect_right(starts, v) - 1
        if i >= 0 and v < syms[i][0] + max(syms[i][1], 1):
            return syms[i][2]
        return '?%x (not in the binary: vDSO or a library)' % (v >> 12 << 12)
    return name


def by_symbol(nmfile, path, n, least):
    name = namer(nmfile)
    per = collections.Counter()
    for v, _, e, _ in load(path)[1]:
        if v < KERNEL:
            per[v] += e
    blocks, execs = collections.Counter(), collections.Counter()
    for v, e in per.items():
        if e >= least:
            blocks[name(v)] += 1
            execs[name(v)] += e
    print('%d distinct user blocks run at least %d times' % (sum(blocks.values()), least))
    print('blocks  execs/iteration  symbol')
    for s, b in blocks.most_common():
        print('%6d %16.1f  %s' % (b, execs[s] / n, s))


def totals(path):
    """Kernel and user instructions and memory accesses of one window."""
    t = collections.Counter()
    for v, k, e, m in load(path)[1]:
        side = 'kernel' if v >= KERNEL else 'user'
        t[side] += k * e
        t[side + ' mems'] += m
    return t


def pairs(outdir, n0, n):
    """Each window labelled "LABEL n rR" less the one labelled "LABEL n0 rR"."""
    wins = {}
    for path in sorted(glob.glob(os.path.join(outdir, 'dump-*.txt'))):
        p = load(path)[0].split()
        if len(p) == 3 and p[1] in (str(n0), str(n)):
            wins[(p[0], p[2], p[1])] = totals(path)
    print('label round | per operation: kernel insns, user insns, total, kernel mems, user mems')
    for (label, rnd, size), t in sorted(wins.items()):
        base = wins.get((label, rnd, str(n0)))
        if size != str(n) or base is None:
            continue
        d = {k: (t[k] - base[k]) / (n - n0) for k in ('kernel', 'user', 'kernel mems', 'user mems')}
        print('%-10s %s | %7.0f %7.0f %7.0f %7.0f %6.0f' % (
            label, rnd, d['kernel'], d['user'], d['kernel'] + d['user'], d['kernel mems'], d['user mems']))


def diff(nmfile, path0, path1, ops):
    """User instructions per operation by symbol, path1's window less path0's."""
    name = namer(nmfile)

    def per(path):
        c = collections.Counter()
        for v, k, e, _ in load(path)[1]:
            c['[kernel]' if v >= KERNEL else name(v)] += k * e
        return c

    a, b = per(path0), per(path1)
    d = {k: (b[k] - a[k]) / ops for k in set(a) | set(b)}
    print('user insns/op %.0f, kernel %.0f' % (sum(v for k, v in d.items() if k != '[kernel]'), d.get('[kernel]', 0)))
    for k, v in sorted(d.items(), key=lambda x: -x[1]):
        if k != '[kernel]' and v >= 20:
            print('%8.1f  %s' % (v, k))


def main(argv):
    if argv[:1] == ['-pairs'] and len(argv) == 4:
        pairs(argv[3], int(argv[1]), int(argv[2]))
        return
    if argv[:1] == ['-diff'] and len(argv) == 5:
        diff(argv[1], argv[2], argv[3], float(argv[4]))
        return
    n, least, nm = 200, 150, None
    while argv and argv[0].startswith('-'):
        flag, val = argv[0], argv[1]
        argv = argv[2:]
        if flag == '-n':
            n = int(val)
        elif flag == '-min':
            least = int(val)
        elif flag == '-sym':
            nm = val
        else:
            sys.exit(__doc__)
    if len(argv) != 1:
        sys.exit(__doc__)
    if nm:
        by_symbol(nm, argv[0], n, least)
        return
    for path in sorted(glob.glob(os.path.join(argv[0], 'dump-*.txt'))):
        print(window(path, n, least))


if __name__ == '__main__':
    main(sys.argv[1:])
