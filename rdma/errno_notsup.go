//go:build !plan9 && !linux

package rdma

import "syscall"

// ENOTSUP is its own errno here.
var errnoExtra = []struct {
	errno    syscall.Errno
	sentinel error
}{{syscall.ENOTSUP, ErrNotSupported}}
