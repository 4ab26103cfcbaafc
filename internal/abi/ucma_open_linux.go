//go:build linux

package abi

import (
	"runtime"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The calls that open the rdma_cm channel are raw syscalls, like the
// commands: none of them waits (a sysfs attribute, a misc device's open,
// an anonymous page). Through the scheduler's syscall path (os.ReadFile,
// unix.Open, unix.Mmap), each call that outlives one tick of Go's sysmon
// has its P retaken when GOMAXPROCS is 1 (runtime/proc.go retake: no
// idle P, no spinning M), which restarts sysmon's 20 µs polling for its
// next 50 rounds (sysmon: idle = 0). A 1-vCPU guest then runs the first
// milliseconds after cm.Open, cmtime's create id step, with a sysmon
// wake-up every 60-250 µs (issue 17, docs/benchmarks.md "Third pass").

// atFDCWD is AT_FDCWD (-100) as a syscall argument.
var atFDCWD = func() uintptr { v := unix.AT_FDCWD; return uintptr(v) }()

// UcmaOpen opens the rdma_cm node read-write, non-blocking and
// close-on-exec (ucma.c ucma_open allocates the file's context and
// returns).
func UcmaOpen(path string, mode int, perm uint32) (int, error) {
	p, err := unix.BytePtrFromString(path)
	if err != nil {
		return -1, err
	}
	fd, _, e := unix.RawSyscall6(unix.SYS_OPENAT, atFDCWD, uintptr(unsafe.Pointer(p)), uintptr(mode), uintptr(perm), 0, 0)
	runtime.KeepAlive(p)
	if e != 0 {
		return -1, e
	}
	return int(fd), nil
}

// UcmaReadABIVersion reads the ucma ABI version from the first of
// UcmaABIVersionPaths that exists; the error of the first path when
// none can be read (an *fs.PathError: errors.Is(err, fs.ErrNotExist)
// holds for ENOENT).
func UcmaReadABIVersion() (int, error) {
	var firstErr error
	for _, path := range UcmaABIVersionPaths() {
		b, err := SysfsReadFile(path)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		return strconv.Atoi(strings.TrimSpace(string(b)))
	}
	return 0, firstErr
}

// UcmaWarmScratch maps n command pages (mapScratchPage: a raw mmap)
// and keeps them for the commands to come (at most scratchKeep in all),
// so that the channel's first commands (create id, the event reader's
// GET_EVENT) map nothing.
func UcmaWarmScratch(n int) {
	for range n {
		if scratchKept() >= min(n, scratchKeep) {
			return
		}
		s := mapScratchPage()
		if s == nil {
			return
		}
		putScratch(s)
	}
}
