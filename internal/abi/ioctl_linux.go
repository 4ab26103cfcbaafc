package abi

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The raw syscalls, Linux only: they call x/sys/unix's assembly stubs
// directly, so that a uintptr(unsafe.Pointer(p)) argument keeps p alive
// (internal/unix has no Syscall for that reason); ioctl_other.go stubs
// them elsewhere.

// Do runs the ioctl on fd and unpins everything. Errors are the raw errno
// (unix.Errno).
func (c *IoctlCall) Do(fd int) error {
	c.Encoded()
	if c.tooManyAttrs() {
		c.finish(true)
		return errTooManyAttrs
	}
	if handled, err := c.viaTestDevice(fd); handled {
		c.finish(true)
		return err
	}
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), RDMAVerbsIoctl, uintptr(unsafe.Pointer(&c.hdr)))
	runtime.KeepAlive(c)
	c.finish(true)
	if e != 0 {
		return e
	}
	return nil
}

// DoShort is Do for a command that returns without waiting on user
// space (every uverbs command): the syscall is issued raw, so the Go
// runtime does not hand the P to another thread when the kernel takes
// longer than sysmon's 20 µs. In the 1-vCPU TCG guests that handoff
// (a thread switch each way) made verbs commands 2–3× slower
// (docs/benchmarks.md).
func (c *IoctlCall) DoShort(fd int) error {
	c.Encoded()
	if c.tooManyAttrs() {
		c.finish(true)
		return errTooManyAttrs
	}
	if testDevice.Load() != nil { // the check inline: no call per command without a test device
		if handled, err := c.viaTestDevice(fd); handled {
			c.finish(true)
			return err
		}
	}
	_, _, e := unix.RawSyscall(unix.SYS_IOCTL, uintptr(fd), RDMAVerbsIoctl, uintptr(unsafe.Pointer(&c.hdr)))
	runtime.KeepAlive(c)
	c.finish(true)
	if e != 0 {
		return e
	}
	return nil
}

// WriteShort writes b to fd with a raw syscall, for command writes that
// return without waiting on user space (see DoShort). Errors are the raw
// errno.
func WriteShort(fd int, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	if d := currentTestDevice(); d != nil {
		if handled, n, err := d.Write(fd, uintptr(unsafe.Pointer(&b[0])), len(b)); handled {
			runtime.KeepAlive(b)
			return n, err
		}
	}
	n, _, e := unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	runtime.KeepAlive(b)
	if e != 0 {
		return int(n), e
	}
	return int(n), nil
}

// DoRaw is Do without the runtime's syscall bookkeeping, for calls that
// never block (the kernel returns at once): the scheduler then has no
// reason to hand the P to another thread meanwhile. The call can be run
// again; it must not reference memory that needs pinning, and keeps its
// scratch page (In over 8 bytes, Out) for the next run.
func (c *IoctlCall) DoRaw(fd int) error {
	c.Encoded()
	if c.tooManyAttrs() {
		c.finish(false)
		return errTooManyAttrs
	}
	if testDevice.Load() != nil {
		if handled, err := c.viaTestDevice(fd); handled {
			c.finish(false)
			return err
		}
	}
	_, _, e := unix.RawSyscall(unix.SYS_IOCTL, uintptr(fd), RDMAVerbsIoctl, uintptr(unsafe.Pointer(&c.hdr)))
	runtime.KeepAlive(c)
	c.finish(false)
	if e != 0 {
		return e
	}
	return nil
}

// MmapShort maps size bytes of fd at offset (in bytes, a multiple of the
// page size) with a raw syscall (see DoShort: a driver's mmap handler
// returns without waiting on user space). The call is each arch's own
// (rawMmap): six registers and a byte offset on 64-bit arches, mmap2 and
// a 4096-byte unit on 386, arm and mips, the argument struct on s390x.
// Errors are the raw errno. Unmap the result with MunmapShort, never
// unix.Munmap (which refuses mappings it did not make).
func MmapShort(fd int, offset int64, size int, prot, flags int) ([]byte, error) {
	if d := currentTestDevice(); d != nil {
		if handled, mem, err := d.Mmap(fd, offset, size, prot, flags); handled {
			return mem, err
		}
	}
	addr, err := rawMmap(0, uintptr(size), prot, flags, fd, offset)
	if err != nil {
		return nil, err
	}
	return unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(nil), addr)), size), nil
}

// MmapShortNextTo is MmapShort at an address that touches prev's pages:
// first right below them, where a top-down mmap layout usually leaves room,
// then right after their last page (MAP_FIXED_NOREPLACE, Linux 4.17; older
// kernels take the address as a hint). If the mapping lands there, both
// spans prev's pages and mem, so that one MunmapShort(both) unmaps the two
// with one call and one TLB flush (mm/mmap.c do_vmi_munmap unmaps every
// VMA in the range under one mmu_gather). If both places are taken or the
// kernel put it elsewhere, mem is mapped anyway and both is nil; an error
// is plain MmapShort's.
func MmapShortNextTo(prev []byte, fd int, offset int64, size int, prot, flags int) (mem, both []byte, err error) {
	if d := currentTestDevice(); d != nil || len(prev) == 0 || size <= 0 {
		mem, err = MmapShort(fd, offset, size, prot, flags)
		return mem, nil, err
	}
	page := uintptr(unix.Getpagesize())
	roundUp := func(n uintptr) uintptr { return (n + page - 1) &^ (page - 1) }
	start := uintptr(unsafe.Pointer(&prev[0]))
	prevEnd := start + roundUp(uintptr(len(prev)))
	below := start - roundUp(uintptr(size))
	for _, at := range [2]uintptr{below, prevEnd} {
		if at == below && below > start { // would wrap under address 0
			continue
		}
		addr, err := rawMmap(at, uintptr(size), prot, flags|unix.MAP_FIXED_NOREPLACE, fd, offset)
		if err != nil { // EEXIST: taken; anything else, MmapShort below reports
			continue
		}
		mem = unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(nil), addr)), size)
		switch addr {
		case below:
			both = unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(nil), below)), prevEnd-below)
		case prevEnd:
			both = unsafe.Slice(&prev[0], prevEnd-start+uintptr(size))
		}
		return mem, both, nil
	}
	mem, err = MmapShort(fd, offset, size, prot, flags)
	return mem, nil, err
}

// MunmapShort unmaps a mapping made by MmapShort (munmap takes the same
// three registers on every arch).
func MunmapShort(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if d := currentTestDevice(); d != nil {
		if handled, err := d.Munmap(b); handled {
			return err
		}
	}
	_, _, e := unix.RawSyscall(unix.SYS_MUNMAP, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), 0)
	if e != 0 {
		return e
	}
	return nil
}

// ReadShort reads from a non-blocking fd with a raw syscall (EAGAIN when
// nothing is queued), for event and MAD reads driven by the netpoller.
func ReadShort(fd int, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	n, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	runtime.KeepAlive(b)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}
