package engine

import (
	"fmt"
	"syscall"
)

// sentinel is an engine error that also matches the errno the kernel's CM
// returns for the same condition, so errors.Is(err, syscall.EINVAL) works.
type sentinel struct {
	msg   string
	errno syscall.Errno
}

func (s *sentinel) Error() string { return s.msg }

// Is matches the errno as well as the sentinel itself.
func (s *sentinel) Is(target error) bool {
	e, ok := target.(syscall.Errno)
	return ok && e == s.errno
}

// Errno returns the errno the kernel returns in the same case.
func (s *sentinel) Errno() syscall.Errno { return s.errno }

// Sentinel errors; match them with errors.Is. Each also matches its errno.
var (
	// ErrInvalidState: the operation is not allowed in the ID's state
	// (EINVAL, as ib_send_cm_* return).
	ErrInvalidState error = &sentinel{"engine: operation not allowed in this state", syscall.EINVAL}
	// ErrInvalidParam: a parameter is out of range (EINVAL).
	ErrInvalidParam error = &sentinel{"engine: invalid parameter", syscall.EINVAL}
	// ErrUnknownID: no such ID (ENOENT).
	ErrUnknownID error = &sentinel{"engine: unknown ID", syscall.ENOENT}
	// ErrBusy: the service ID already has a listener (EBUSY, as
	// ib_cm_listen).
	ErrBusy error = &sentinel{"engine: service ID in use", syscall.EBUSY}
	// ErrNoResources: no free communication ID (ENOMEM).
	ErrNoResources error = &sentinel{"engine: no free communication ID", syscall.ENOMEM}
	// ErrConnected: Notify on an established connection (EISCONN, as
	// cm_establish).
	ErrConnected error = &sentinel{"engine: already established", syscall.EISCONN}
)

func opError(op string, id ID, err error) error {
	return fmt.Errorf("engine: %s %v: %w", op, id, err)
}

func stateError(op string, c *conn) error {
	return fmt.Errorf("engine: %s %v in state %v: %w", op, ID(c.localID), c.state, ErrInvalidState)
}
