package rdma

import "syscall"

// ENOTSUP is EOPNOTSUPP on Linux.
var errnoExtra []struct {
	errno    syscall.Errno
	sentinel error
}
