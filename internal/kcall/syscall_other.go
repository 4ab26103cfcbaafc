//go:build !linux

package kcall

import (
	"runtime"
	"unsafe"

	"github.com/go-rdma/rdmacm/internal/abi"
	"github.com/go-rdma/rdmacm/internal/unix"
)

// The syscalls of syscall_linux.go, testdevice_linux.go and
// umad_linux.go, off Linux: each fails with unix.ErrNotSupported ("not
// supported on GOOS", matching rdma.ErrNotSupported), unless a TestDevice
// answers it, as on Linux.

// Do fails: there is no uverbs ioctl here.
func (c *IoctlCall) Do(fd int) error {
	c.Encoded()
	if c.tooManyAttrs() {
		c.finish()
		return errTooManyAttrs
	}
	err := unix.ErrNotSupported
	if handled, derr := c.viaTestDevice(fd); handled {
		err = derr
	}
	c.finish()
	return err
}

// Write fails.
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
	return 0, unix.ErrNotSupported
}

// Read fails.
func Read(fd int, b []byte) (int, error) { return 0, unix.ErrNotSupported }

// Ppoll fails.
func Ppoll(fds []PollFD, timeout int64) (int, error) { return 0, unix.ErrNotSupported }

// Eventfd fails.
func Eventfd() (int, error) { return -1, unix.ErrNotSupported }

// Mmap fails.
func Mmap(fd int, offset int64, size int, prot, flags int) ([]byte, error) {
	if d := currentTestDevice(); d != nil {
		if handled, mem, err := d.Mmap(fd, offset, size, prot, flags); handled {
			return mem, err
		}
	}
	return nil, unix.ErrNotSupported
}

// Munmap fails.
func Munmap(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if d := currentTestDevice(); d != nil {
		if handled, err := d.Munmap(b); handled {
			return err
		}
	}
	return unix.ErrNotSupported
}

// Close does nothing.
func Close(fd int) {}

// MmapAnonAt fails.
func MmapAnonAt(addr uint64, n int) ([]byte, error) { return nil, unix.ErrNotSupported }

// UmadRegisterAgent2Call fails.
func UmadRegisterAgent2Call(fd int, r *abi.UmadRegReq2) error { return unix.ErrNotSupported }
