//go:build ignore

// idlehog spins on one thread under SCHED_IDLE, so that a guest's vCPU
// never halts while nothing else wants it and yields at once to anything
// that does (docs/benchmarks.md, issue 17 "Sixth pass"). Build it with
// CGO_ENABLED=0 go build -o DIR/idlehog cmd/rdmacm-ping/tracetools/idlehog/main.go
// and run connect-disconnect/idle_spinner.sh in guest a.
package main

import (
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

const schedIdle = 5 // SCHED_IDLE, include/uapi/linux/sched.h

var spins uint64

func main() {
	runtime.GOMAXPROCS(1)
	runtime.LockOSThread()
	attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: schedIdle}
	if err := unix.SchedSetAttr(0, &attr, 0); err != nil {
		fmt.Fprintln(os.Stderr, "idlehog: sched_setattr:", err)
		os.Exit(1)
	}
	for {
		spins++
	}
}
