//go:build linux

package kcall

import (
	"runtime"
	"strconv"
	"strings"
	"unsafe"

	"github.com/go-rdma/rdmacm/internal/abi"
	"golang.org/x/sys/unix"
)

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
	fd, _, e := unix.Syscall6(unix.SYS_OPENAT, atFDCWD, uintptr(unsafe.Pointer(p)), uintptr(mode), uintptr(perm), 0, 0)
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
	for _, path := range abi.UcmaABIVersionPaths() {
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

// UcmaWarmScratch maps n command pages (mapScratchPage) and keeps them
// for the commands to come (at most scratchKeep in all), so that the
// channel's first commands (create id, the event reader's GET_EVENT) map
// nothing.
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
