# countinsns.py: a gdb script (gdb -batch -x countinsns.py --args PROG...)
# that counts the instructions of one steady-state loop iteration of a
# benchmark (BenchmarkInstructions in ../bench_test.go runs it on both
# sides). It breaks at COUNT_BREAK (a source location in the loop body),
# lets COUNT_SKIP hits pass (warm-up), then single-steps until the same
# address comes round again, and prints
#
#   insns N
#   func NAME N        instructions per function (a library's file name
#                      where it has no symbols, e.g. libmlx5)
#   kind NAME N        locked instructions, fences, calls
#
# COUNT_PRELOAD, if set, is put in the program's environment as
# LD_PRELOAD (and not in gdb's own).
import collections
import os

import gdb

gdb.execute("set pagination off")
gdb.execute("set confirm off")
gdb.execute("set startup-with-shell off")
# The Go runtime preempts with SIGURG; the shim's socket may raise SIGPIPE.
gdb.execute("handle SIGURG nostop noprint pass")
gdb.execute("handle SIGPIPE nostop noprint pass")
if os.environ.get("COUNT_PRELOAD"):
    gdb.execute("set environment LD_PRELOAD=%s" % os.environ["COUNT_PRELOAD"])
gdb.execute("break %s" % os.environ["COUNT_BREAK"])
gdb.execute("run")
gdb.execute("ignore 1 %d" % int(os.environ.get("COUNT_SKIP", "3000")))
gdb.execute("continue")
gdb.execute("delete")

arch = gdb.selected_frame().architecture()
start = int(gdb.parse_and_eval("$pc"))
names = {}
funcs = collections.Counter()
kinds = collections.Counter()
n = 0
while True:
    pc = int(gdb.parse_and_eval("$pc"))
    if n > 0 and pc == start:
        break
    asm = arch.disassemble(pc)[0]["asm"]
    name = gdb.execute("info symbol 0x%x" % pc, to_string=True).split(" in section")[0].split(" + ")[0]
    if name.startswith("No symbol"):
        name = "[%s]" % os.path.basename(gdb.solib_name(pc) or "main")
    funcs[name] += 1
    op = asm.split()[0]
    if op == "lock" or (op == "xchg" and "(" in asm):
        kinds["locked"] += 1
    elif op in ("lfence", "sfence", "mfence", "call", "ret"):
        kinds[op] += 1
    n += 1
    gdb.execute("stepi", to_string=True)
print("insns %d" % n)
for name, c in funcs.most_common():
    print("func %s %d" % (name, c))
for name, c in sorted(kinds.items()):
    print("kind %s %d" % (name, c))
gdb.execute("kill")
