package engine

import (
	"errors"
	"syscall"

	"github.com/go-rdma/rdmacm/internal/errfmt"
	"github.com/go-rdma/rdmacm/rdma"
)

// Sentinel errors; match them with errors.Is. The three shared with other
// packages are package rdma's values, so engine.ErrBusy == rdma.ErrBusy.
// The errors the engine returns read "engine: op ID: cause" and also
// match the errno the kernel's CM returns in the same case, so
// errors.Is(err, rdma.ErrInvalidState) and errors.Is(err, syscall.EINVAL)
// both hold.
var (
	// ErrInvalidState: the operation is not allowed in the ID's state
	// (EINVAL, as ib_send_cm_* return).
	ErrInvalidState = rdma.ErrInvalidState
	// ErrInvalidArgument: a parameter is out of range (EINVAL).
	ErrInvalidArgument = rdma.ErrInvalidArgument
	// ErrBusy: the service ID already has a listener (EBUSY, as
	// ib_cm_listen).
	ErrBusy = rdma.ErrBusy
	// ErrUnknownID: no such ID (ENOENT).
	ErrUnknownID = errors.New("unknown ID")
	// ErrNoResources: no free communication ID (ENOMEM).
	ErrNoResources = errors.New("no free communication ID")
	// ErrConnected: Notify on an established connection (EISCONN, as
	// cm_establish).
	ErrConnected = errors.New("already established")
)

// errnos is the errno the kernel's CM returns for each sentinel.
var errnos = []struct {
	sentinel error
	errno    syscall.Errno
}{
	{ErrInvalidState, syscall.EINVAL},
	{ErrInvalidArgument, syscall.EINVAL},
	{ErrBusy, syscall.EBUSY},
	{ErrUnknownID, syscall.ENOENT},
	{ErrNoResources, syscall.ENOMEM},
	{ErrConnected, syscall.EISCONN},
}

// errnoError is an engine error that also matches the kernel CM's errno
// for its sentinel. The errno is matched by Is, not unwrapped, so that an
// invalid state (EINVAL) does not read as rdma.ErrInvalidArgument through
// rdma.ErrnoSentinel.
type errnoError struct {
	err   error
	errno syscall.Errno
}

func (e *errnoError) Error() string { return e.err.Error() }
func (e *errnoError) Unwrap() error { return e.err }

// Is matches the errno; the sentinel is matched through Unwrap.
func (e *errnoError) Is(target error) bool {
	t, ok := target.(syscall.Errno)
	return ok && t == e.errno
}

// errorf is fmt.Errorf("engine: "+format, args...), its error arguments
// without their package prefixes (errfmt.Errorf), that also matches the
// errno of the sentinel it wraps.
func errorf(format string, args ...any) error {
	err := errfmt.Errorf("engine: "+format, args...)
	for _, r := range errnos {
		if errors.Is(err, r.sentinel) {
			return &errnoError{err, r.errno}
		}
	}
	return err
}

func opError(op string, id ID, err error) error {
	return errorf("%s ID %v: %w", op, id, err)
}

func stateError(op string, c *conn) error {
	return errorf("%s ID %v in state %v: %w", op, ID(c.localID), c.state, ErrInvalidState)
}
