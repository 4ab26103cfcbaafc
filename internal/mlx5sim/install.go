//go:build linux

package mlx5sim

import (
	"sync"
	"unsafe"

	"github.com/go-rdma/rdmacm/internal/abi"
	"github.com/go-rdma/rdmacm/internal/kcall"
	"golang.org/x/sys/unix"
)

// unsafe: the simulated device answers syscalls by address (ioctl
// arguments, mmap'd pages it hands out and takes back).

// seam adapts a Device to kcall.TestDevice for the in-process (Go) stack.
type seam struct {
	d   *Device
	mem Mem

	mu   sync.Mutex
	maps map[uintptr]int // our anonymous mappings: address -> length
}

// IsUverbsFD reports whether fd is a simulated uverbs fd: a character
// device 1:7 (/dev/full, see WriteDevRoot).
func IsUverbsFD(fd int) bool {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR {
		return false
	}
	rdev := uint64(st.Rdev) // uint32 on mips and mips64
	return unix.Major(rdev) == NodeMajor && unix.Minor(rdev) == NodeMinor
}

// Install makes the device answer this process's uverbs calls (fds for
// which IsUverbsFD holds) through kcall.SetTestDevice; other fds pass
// through to the kernel. New fds it hands out (async event file,
// completion channels) are eventfds. User memory is accessed with
// SelfMem, so a stale address is an EFAULT in the trace, not a crash.
// Fences are not recorded in-process: they are observed as executed
// instructions under qemu-user (Remote, c/fenceplugin.c).
func (d *Device) Install() (restore func()) {
	s := &seam{d: d, mem: SelfMem(), maps: map[uintptr]int{}}
	d.mu.Lock()
	d.newFD = func() (int, error) { return unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK) }
	d.mu.Unlock()
	undo := kcall.SetTestDevice(s)
	return func() {
		undo()
		d.mu.Lock()
		d.newFD = nil
		d.mu.Unlock()
	}
}

func errOf(e unix.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

func (s *seam) Ioctl(fd int, req uintptr, arg uintptr) (bool, error) {
	if !IsUverbsFD(fd) {
		return false, nil
	}
	var h [24]byte
	if uint64(req) == abi.RDMAVerbsIoctl && s.mem.Read(uint64(arg), h[:]) == nil && abi.Native.Uint16(h[2:]) == 0 && abi.Native.Uint16(h[4:]) == abi.UverbsMethodGetContext {
		s.reopened(fd)
	}
	_, _, e := s.d.Ioctl(s.mem, fd, uint64(req), uint64(arg), -1)
	return true, errOf(e)
}

// reopened handles a GET_CONTEXT on an fd number that already has a
// context: in-process, close(2) is not seen, so the number was closed
// and reused; the old context is torn down as the kernel did at close.
func (s *seam) reopened(fd int) {
	s.d.mu.Lock()
	c := s.d.ctxs[fd]
	ready := c != nil && c.ready
	s.d.mu.Unlock()
	if ready {
		s.d.Close(fd)
	}
}

func (s *seam) Write(fd int, p uintptr, n int) (bool, int, error) {
	if !IsUverbsFD(fd) {
		return false, 0, nil
	}
	var h [4]byte
	if n >= 8 && s.mem.Read(uint64(p), h[:]) == nil && abi.Native.Uint32(h[:]) == abi.UverbsCmdGetContext {
		s.reopened(fd)
	}
	ret, _, e := s.d.Write(s.mem, fd, uint64(p), uint64(n), -1)
	if e != 0 {
		return true, 0, e
	}
	return true, int(ret), nil
}

func (s *seam) Mmap(fd int, offset int64, size int, prot, flags int) (bool, []byte, error) {
	if !IsUverbsFD(fd) {
		return false, nil, nil
	}
	if size <= 0 {
		return true, nil, unix.EINVAL
	}
	b, err := kcall.Mmap(-1, 0, size, prot|unix.PROT_READ, unix.MAP_SHARED|unix.MAP_ANONYMOUS)
	if err != nil {
		return true, nil, err
	}
	addr := uintptr(unsafe.Pointer(&b[0]))
	if e := s.d.Mmap(s.mem, fd, uint64(addr), uint64(size), uint64(offset), prot); e != 0 {
		rawMunmap(addr, size)
		return true, nil, e
	}
	s.mu.Lock()
	s.maps[addr] = size
	s.mu.Unlock()
	return true, b, nil
}

func (s *seam) Munmap(b []byte) (bool, error) {
	if len(b) == 0 {
		return false, nil
	}
	addr := uintptr(unsafe.Pointer(&b[0]))
	s.mu.Lock()
	n, ok := s.maps[addr]
	delete(s.maps, addr)
	s.mu.Unlock()
	if !ok {
		return false, nil
	}
	s.d.Munmap(s.mem, uint64(addr), uint64(len(b)))
	if err := rawMunmap(addr, n); err != nil {
		return true, err
	}
	return true, nil
}

func rawMunmap(addr uintptr, n int) error {
	_, _, e := unix.Syscall(unix.SYS_MUNMAP, addr, uintptr(n), 0) // munmap takes mmap_lock: it can sleep
	if e != 0 {
		return e
	}
	return nil
}

// Local is the device as an in-process scenario interpreter sees it:
// snapshots, CQE injection and record lines on this process's memory
// (scenario.Device).
type Local struct {
	D   *Device
	Mem Mem
}

// Local returns the in-process view of d (memory through SelfMem).
func (d *Device) Local() *Local { return &Local{D: d, Mem: SelfMem()} }

// Snapshot records the device-visible memory (see Device.Snapshot).
func (l *Local) Snapshot(label string) { l.D.Snapshot(l.Mem, label) }

// Exec runs a device-side scenario line (see Device.Exec).
func (l *Local) Exec(line string) error { return errOf(l.D.Exec(l.Mem, line)) }

// Record puts a line in the trace.
func (l *Local) Record(line string) { l.D.Record(line) }

// Fence records a fence instruction about to execute (see Device.Fence).
func (l *Local) Fence(instr string) { l.D.Fence(l.Mem, instr) }
