#!/usr/bin/env python3
"""sysmon_goroot.py KIND DIR: copy $(go env GOROOT) to DIR and patch its
runtime/proc.go `sysmon` for one experiment (docs/benchmarks.md,
create id). Experiments only: never ship a binary
built with it, never patch the real GOROOT.

KIND
  nosysmon  sysmon sleeps 10 ms between rounds from the start (no 20 us
            polling, at start-up or after a restart)
  noreset   sysmon polls every 20 us for its first 50 rounds after process
            start, but neither a retaken P nor a syscall's wake-up restarts
            that polling
  trace     unchanged timing; sysmon prints to stderr every restart of its
            polling (retake / syscallwake, ms since runtime start) and, for
            every P it retakes from a syscall, the goroutine's return PCs
            (frame pointers; symbolize with go tool addr2line)

Build with it:
  GOROOT=DIR CGO_ENABLED=0 DIR/bin/go build -o OUT ./cmd/rdmacm-ping
(trace builds also need -ldflags=-checklinkname=0 only if the program
links runtime symbols itself.)
"""
import os, shutil, subprocess, sys

def patch(s, old, new):
    if s.count(old) != 1:
        sys.exit("sysmon_goroot: runtime/proc.go does not have the expected text (another Go version?):\n" + old)
    return s.replace(old, new)

BURST = """		if idle == 0 { // start with 20us sleep...
			delay = 20
		} else if idle > 50 {"""
WAKE = """				if syscallWake {
					idle = 0
					delay = 20
				}"""
RETAKE = """		if retake(now) != 0 {
			idle = 0
		} else {"""
TAKE = """		thread.takeP()
		thread.resume()
		n++
"""

def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("nosysmon", "noreset", "trace"):
        sys.exit(__doc__)
    kind, dst = sys.argv[1], sys.argv[2]
    src = subprocess.check_output(["go", "env", "GOROOT"], text=True).strip()
    if os.path.realpath(dst) == os.path.realpath(src):
        sys.exit("sysmon_goroot: DIR is the real GOROOT")
    if os.path.exists(dst):
        shutil.rmtree(dst)
    shutil.copytree(src, dst, symlinks=True)
    p = os.path.join(dst, "src", "runtime", "proc.go")
    s = open(p).read()
    if kind == "nosysmon":
        s = patch(s, BURST, BURST.replace("delay = 20", "delay = 10 * 1000 // EXPERIMENT"))
        s = patch(s, WAKE, WAKE.replace("delay = 20", "delay = 10 * 1000 // EXPERIMENT"))
    elif kind == "noreset":
        s = patch(s, RETAKE, RETAKE.replace("idle = 0", "idle++ // EXPERIMENT: no restart"))
        s = patch(s, WAKE, "				_ = syscallWake // EXPERIMENT: no restart")
    else:
        s = patch(s, RETAKE, RETAKE.replace("idle = 0", 'print("SYSMON reset retake t=", (now-runtimeInitTime)/1000, "us idle=", idle, "\\n")\n\t\t\tidle = 0'))
        s = patch(s, WAKE, WAKE.replace("idle = 0", 'print("SYSMON reset syscallwake t=", (nanotime()-runtimeInitTime)/1000, "us idle=", idle, "\\n")\n\t\t\t\t\tidle = 0'))
        s = patch(s, TAKE, """		print("SYSMON take goid=", thread.gp.goid, " since=", (now-pd.syscallwhen)/1000, "us stack")
		for bp, i := thread.gp.syscallbp, 0; bp != 0 && i < 10; i++ {
			print(" ", hex(*(*uintptr)(unsafe.Pointer(bp + 8))))
			bp = *(*uintptr)(unsafe.Pointer(bp))
		}
		print("\\n")
""" + TAKE)
    open(p, "w").write(s)
    print(dst)

main()
