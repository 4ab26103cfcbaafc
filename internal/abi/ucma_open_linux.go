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
// none can be read (an errno: errors.Is(err, fs.ErrNotExist) holds for
// ENOENT).
func UcmaReadABIVersion() (int, error) {
	var firstErr error
	for _, path := range UcmaABIVersionPaths() {
		b, err := readSmallFile(path)
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

// readSmallFile reads up to 64 bytes of a sysfs attribute with raw
// syscalls (an attribute's show method fills one page at the first read).
func readSmallFile(path string) ([]byte, error) {
	fd, err := UcmaOpen(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.RawSyscall(unix.SYS_CLOSE, uintptr(fd), 0, 0)
	var buf [64]byte
	n := 0
	for n < len(buf) {
		m, err := ReadShort(fd, buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if m == 0 {
			break
		}
		n += m
	}
	return buf[:n], nil
}

// UcmaWarmScratch maps n command pages with raw mmap calls and keeps
// them for the commands to come (at most scratchKeep in all), so that the
// channel's first commands (create id, the event reader's GET_EVENT) map
// nothing. Where mmap takes its arguments in a struct (386, s390x:
// old_mmap) the raw call fails and unix.Mmap maps the page.
func UcmaWarmScratch(n int) {
	for range n {
		scratchPool.Lock()
		full := len(scratchPool.free) >= min(n, scratchKeep)
		scratchPool.Unlock()
		if full {
			return
		}
		const prot, flags = unix.PROT_READ | unix.PROT_WRITE, unix.MAP_PRIVATE | unix.MAP_ANONYMOUS
		var mem []byte
		addr, _, e := unix.RawSyscall6(unix.SYS_MMAP, 0, scratchSize, prot, flags, ^uintptr(0), 0)
		if e == 0 {
			mem = unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(nil), addr)), scratchSize)
		} else {
			var err error
			if mem, err = unix.Mmap(-1, 0, scratchSize, prot, flags); err != nil {
				return
			}
		}
		putScratch(&scratch{mem: mem})
	}
}
