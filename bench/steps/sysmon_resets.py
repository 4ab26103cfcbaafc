#!/usr/bin/env python3
"""sysmon_resets.py BINARY STDERR...: list the restarts of Go's sysmon
20 us polling that a binary built with `sysmon_goroot.py trace` printed,
with the Go frames of the syscall whose P sysmon retook (go tool
addr2line on BINARY)."""
import re, subprocess, sys

def frames(binary, pcs):
    out = subprocess.run(["go", "tool", "addr2line", binary], input="\n".join(pcs),
                         capture_output=True, text=True).stdout.split("\n")[0::2]
    return [f.rsplit("/", 1)[-1] for f in out if f]

def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    for path in sys.argv[2:]:
        print("#", path)
        for line in open(path, errors="replace"):
            m = re.search(r"SYSMON take goid=(\d+) since=(\d+)us stack (.*)", line)
            if m:
                print("  retaken (goroutine %s, in the syscall %s us): %s" % (m.group(1), m.group(2), " < ".join(frames(sys.argv[1], m.group(3).split())[:8])))
                continue
            m = re.search(r"SYSMON reset (\w+) t=(\d+)us idle=(\d+)", line)
            if m:
                print("  restart by %s at %.1f ms after start (%s rounds since the last)" % (m.group(1), int(m.group(2)) / 1000, m.group(3)))

main()
