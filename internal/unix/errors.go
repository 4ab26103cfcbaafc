package unix

import (
	"runtime"
	"syscall"

	"github.com/go-rdma/rdmacm/rdma"
)

// ErrNotSupported is the error of every function of this package off
// Linux (on Linux nothing here returns it). It reads "not supported on
// <GOOS>", unwraps to rdma.ErrNotSupported, and also matches the errnos
// ENOTSUP and EOPNOTSUPP, so code that tests for the kernel's "not
// supported" treats it alike.
var ErrNotSupported error = notSupportedError{}

type notSupportedError struct{}

func (notSupportedError) Error() string { return "not supported on " + runtime.GOOS }

func (notSupportedError) Unwrap() error { return rdma.ErrNotSupported }

func (notSupportedError) Is(target error) bool {
	errno, ok := target.(syscall.Errno)
	return ok && (errno == syscall.ENOTSUP || errno == syscall.EOPNOTSUPP || errno == syscall.Errno(EOPNOTSUPP))
}
