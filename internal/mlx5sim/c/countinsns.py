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


def count_one():
    """Steps from the breakpoint's address round to it again. Stepping is
    slow, so the Go runtime asks the goroutine to yield at its next
    function prologue (runtime.morestack); the runtime then runs at full
    speed to the prologue's return address, and the count goes back to
    what it was when that function was entered (its prologue runs again).
    Returns None if the count runs away."""
    start = int(gdb.parse_and_eval("$pc"))
    funcs = collections.Counter()
    kinds = collections.Counter()
    entered = {}  # function name -> (n, funcs, kinds) at its first instruction
    n = 0
    prev = None
    while True:
        pc = int(gdb.parse_and_eval("$pc"))
        if n > 0 and pc == start:
            return n, funcs, kinds
        if n > 50000:
            return None
        name = gdb.execute("info symbol 0x%x" % pc, to_string=True).split(" in section")[0].split(" + ")[0]
        if name.startswith("No symbol"):
            name = "[%s]" % os.path.basename(gdb.solib_name(pc) or "main")
        if name.startswith("runtime.morestack"):
            sp = int(gdb.parse_and_eval("$sp"))
            ret = int.from_bytes(bytes(gdb.selected_inferior().read_memory(sp, 8)), "little")
            gdb.execute("tbreak *0x%x" % ret, to_string=True)
            gdb.execute("continue", to_string=True)
            n, funcs, kinds = entered[prev]
            funcs, kinds = collections.Counter(funcs), collections.Counter(kinds)
            continue
        if name != prev and name not in entered:
            entered[name] = (n, collections.Counter(funcs), collections.Counter(kinds))
        prev = name
        asm = arch.disassemble(pc)[0]["asm"]
        funcs[name] += 1
        op = asm.split()[0]
        if op == "lock" or (op == "xchg" and "(" in asm):
            kinds["locked"] += 1
        elif op in ("lfence", "sfence", "mfence", "call", "ret"):
            kinds[op] += 1
        n += 1
        gdb.execute("stepi", to_string=True)


result = None
for attempt in range(5):
    result = count_one()
    if result:
        break
    # Take the next iteration from its start.
    gdb.execute("break %s" % os.environ["COUNT_BREAK"])
    gdb.execute("continue")
    gdb.execute("delete")
if not result:
    raise gdb.GdbError("no clean iteration in 5 attempts")
n, funcs, kinds = result
print("insns %d" % n)
for name, c in funcs.most_common():
    print("func %s %d" % (name, c))
for name, c in sorted(kinds.items()):
    print("kind %s %d" % (name, c))
gdb.execute("kill")
