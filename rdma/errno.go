//go:build !plan9

package rdma

import (
	"errors"
	"syscall"
)

// errnoTable maps errnos to sentinels. ENOTSUP equals EOPNOTSUPP on Linux
// but not everywhere; errnoExtra adds the OS-specific rows.
var errnoTable = append([]struct {
	errno    syscall.Errno
	sentinel error
}{
	{syscall.EOPNOTSUPP, ErrNotSupported},
	{syscall.EPROTONOSUPPORT, ErrNotSupported},
	{syscall.ENOSYS, ErrNotSupported},
	{syscall.EACCES, ErrPermission},
	{syscall.EPERM, ErrPermission},
	{syscall.ENODEV, ErrNoDevice},
	{syscall.ENXIO, ErrNoDevice},
	{syscall.EINVAL, ErrInvalidArgument},
	{syscall.ETIMEDOUT, ErrTimeout},
	{syscall.EHOSTUNREACH, ErrNoRoute},
	{syscall.ENETUNREACH, ErrNoRoute},
	{syscall.EADDRNOTAVAIL, ErrNoRoute},
	{syscall.ECONNREFUSED, ErrRejected},
	{syscall.EBUSY, ErrBusy},
	{syscall.EADDRINUSE, ErrBusy},
}, errnoExtra...)

// ErrnoSentinel returns the sentinel an errno stands for, or nil:
//
//	EOPNOTSUPP, ENOTSUP, EPROTONOSUPPORT, ENOSYS  ErrNotSupported
//	EACCES, EPERM                                 ErrPermission
//	ENODEV, ENXIO                                 ErrNoDevice
//	EINVAL                                        ErrInvalidArgument
//	ETIMEDOUT                                     ErrTimeout
//	EHOSTUNREACH, ENETUNREACH, EADDRNOTAVAIL      ErrNoRoute
//	ECONNREFUSED                                  ErrRejected
//	EBUSY, EADDRINUSE                             ErrBusy
//
// Other errnos (ENOMEM, ENOENT, EAGAIN, …) have no sentinel.
func ErrnoSentinel(errno syscall.Errno) error {
	for _, r := range errnoTable {
		if r.errno == errno {
			return r.sentinel
		}
	}
	return nil
}

// errnoSentinelOf is ErrnoSentinel of the errno err wraps, if any.
func errnoSentinelOf(err error) error {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return nil
	}
	return ErrnoSentinel(errno)
}
