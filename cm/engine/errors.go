package engine

import (
	"fmt"
	"syscall"

	"github.com/go-rdma/rdmacm/rdma"
)

// sentinel is an engine error that matches the package rdma sentinel for
// its condition (if any) and the errno the kernel's CM returns in the same
// case, so errors.Is(err, rdma.ErrInvalidState) and errors.Is(err,
// syscall.EINVAL) both hold.
type sentinel struct {
	msg   string
	base  error
	errno syscall.Errno
}

func (s *sentinel) Error() string { return s.msg }

// Is matches the rdma sentinel and the errno as well as s itself.
func (s *sentinel) Is(target error) bool {
	if e, ok := target.(syscall.Errno); ok {
		return e == s.errno
	}
	return s.base != nil && target == s.base
}

// Errno returns the errno the kernel returns in the same case.
func (s *sentinel) Errno() syscall.Errno { return s.errno }

// Sentinel errors; match them with errors.Is. Each also matches its errno
// and, where one exists, its package rdma sentinel; the errors the engine
// returns read "engine: op ID: cause".
var (
	// ErrInvalidState: the operation is not allowed in the ID's state
	// (rdma.ErrInvalidState; EINVAL, as ib_send_cm_* return).
	ErrInvalidState error = &sentinel{"operation not allowed in this state", rdma.ErrInvalidState, syscall.EINVAL}
	// ErrInvalidArgument: a parameter is out of range
	// (rdma.ErrInvalidArgument; EINVAL).
	ErrInvalidArgument error = &sentinel{"invalid argument", rdma.ErrInvalidArgument, syscall.EINVAL}
	// ErrUnknownID: no such ID (ENOENT).
	ErrUnknownID error = &sentinel{"unknown ID", nil, syscall.ENOENT}
	// ErrBusy: the service ID already has a listener (rdma.ErrBusy;
	// EBUSY, as ib_cm_listen).
	ErrBusy error = &sentinel{"service ID in use", rdma.ErrBusy, syscall.EBUSY}
	// ErrNoResources: no free communication ID (ENOMEM).
	ErrNoResources error = &sentinel{"no free communication ID", nil, syscall.ENOMEM}
	// ErrConnected: Notify on an established connection (EISCONN, as
	// cm_establish).
	ErrConnected error = &sentinel{"already established", nil, syscall.EISCONN}
)

func opError(op string, id ID, err error) error {
	return fmt.Errorf("engine: %s %v: %w", op, id, err)
}

func stateError(op string, c *conn) error {
	return fmt.Errorf("engine: %s %v in state %v: %w", op, ID(c.localID), c.state, ErrInvalidState)
}
