package kcall

import (
	"runtime"
	"unsafe"

	"github.com/go-rdma/rdmacm/internal/abi"
	"golang.org/x/sys/unix"
)

// The syscalls, Linux only: they call x/sys/unix's assembly stubs
// directly, so that a uintptr(unsafe.Pointer(p)) argument keeps p alive
// (internal/unix has no Syscall for that reason); syscall_other.go stubs
// them elsewhere. Every one goes through unix.Syscall (the runtime's
// entersyscall/exitsyscall), as the package doc says why.

// Do runs the ioctl on fd, copies the outputs back and releases the
// call's scratch page and pins. A call whose attributes need neither (all
// inline) can be run again. Errors are the raw errno (unix.Errno).
func (c *IoctlCall) Do(fd int) error {
	c.Encoded()
	if c.tooManyAttrs() {
		c.finish()
		return errTooManyAttrs
	}
	if testDevice.Load() != nil { // the check inline: no call per command without a test device
		if handled, err := c.viaTestDevice(fd); handled {
			c.finish()
			return err
		}
	}
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), abi.RDMAVerbsIoctl, uintptr(unsafe.Pointer(&c.hdr)))
	runtime.KeepAlive(c)
	c.finish()
	if e != 0 {
		return e
	}
	return nil
}

// Write writes b to fd: a uverbs write command, a ucma command, a umad
// send. Errors are the raw errno.
func Write(fd int, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	if d := currentTestDevice(); d != nil {
		if handled, n, err := d.Write(fd, uintptr(unsafe.Pointer(&b[0])), len(b)); handled {
			runtime.KeepAlive(b)
			return n, err
		}
	}
	n, _, e := unix.Syscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	runtime.KeepAlive(b)
	if e != 0 {
		return int(n), e
	}
	return int(n), nil
}

// Read reads from fd into b (EAGAIN from a non-blocking fd with nothing
// queued). Errors are the raw errno.
func Read(fd int, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	n, _, e := unix.Syscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	runtime.KeepAlive(b)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// Mmap maps size bytes of fd at offset (in bytes, a multiple of the page
// size). The call is each arch's own (mmap): six registers and a byte
// offset on 64-bit arches, mmap2 and a 4096-byte unit on 386, arm and
// mips, the argument struct on s390x. Errors are the raw errno. Unmap
// the result with Munmap, never unix.Munmap (which refuses mappings it
// did not make).
func Mmap(fd int, offset int64, size int, prot, flags int) ([]byte, error) {
	if d := currentTestDevice(); d != nil {
		if handled, mem, err := d.Mmap(fd, offset, size, prot, flags); handled {
			return mem, err
		}
	}
	addr, err := mmap(0, uintptr(size), prot, flags, fd, offset)
	if err != nil {
		return nil, err
	}
	return unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(nil), addr)), size), nil
}

// Munmap unmaps a mapping made by Mmap (munmap takes the same three
// registers on every arch).
func Munmap(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if d := currentTestDevice(); d != nil {
		if handled, err := d.Munmap(b); handled {
			return err
		}
	}
	_, _, e := unix.Syscall(unix.SYS_MUNMAP, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), 0)
	if e != 0 {
		return e
	}
	return nil
}

// Close closes fd (a socket or file nothing else uses).
func Close(fd int) { unix.Syscall(unix.SYS_CLOSE, uintptr(fd), 0, 0) }

// Ppoll blocks until an fd of fds is ready or timeout (ns; negative: no
// timeout) passes, and returns how many are ready: ppoll(2) without a
// signal mask (arm64 has no poll(2)). A signal ends it with EINTR
// whatever SA_RESTART says.
func Ppoll(fds []PollFD, timeout int64) (int, error) {
	if len(fds) == 0 {
		return 0, unix.EINVAL
	}
	var ts *unix.Timespec
	if timeout >= 0 {
		t := unix.NsecToTimespec(timeout)
		ts = &t
	}
	n, _, e := unix.Syscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&fds[0])), uintptr(len(fds)), uintptr(unsafe.Pointer(ts)), 0, 0, 0)
	runtime.KeepAlive(fds)
	runtime.KeepAlive(ts)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// Eventfd makes a non-blocking, close-on-exec eventfd with count 0.
func Eventfd() (int, error) {
	fd, _, e := unix.Syscall(unix.SYS_EVENTFD2, 0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK, 0)
	if e != 0 {
		return -1, e
	}
	return int(fd), nil
}
