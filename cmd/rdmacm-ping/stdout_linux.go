package main

import (
	"os"

	"github.com/go-rdma/rdmacm/internal/abi"
	"golang.org/x/sys/unix"
)

// rawStdout writes to stdout with raw write(2)s. -line-buffered's step
// lines mark a trace's step edges, and a write through the scheduler
// (os.File.Write, entersyscall) wakes Go's sysmon from its deep sleep and
// restarts its 20 µs polling inside the step that follows (Go 1.26
// runtime/proc.go reentersyscall: entersyscallWakeSysmon), so the marker
// changed what it marked (issue 17, docs/benchmarks.md "Fifth pass").
// A non-blocking stdout that is full (EAGAIN) gets the rest through
// os.Stdout.
type rawStdout struct{}

func (rawStdout) Write(b []byte) (int, error) {
	done := 0
	for done < len(b) {
		n, err := abi.WriteShort(1, b[done:])
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			m, err := os.Stdout.Write(b[done:])
			return done + m, err
		case err != nil:
			return done, &os.PathError{Op: "write", Path: "/dev/stdout", Err: err}
		}
		done += n
	}
	return done, nil
}
