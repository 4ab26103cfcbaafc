package uverbs

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// Sentinel errors, matched with errors.Is. The errno behind an error stays
// reachable too: errors.Is(err, unix.EOPNOTSUPP) holds for every
// ErrNotSupported that came from the kernel or stands for it.
var (
	// ErrNoDevice: no RDMA device, or not the one asked for.
	ErrNoDevice = errors.New("uverbs: no RDMA device")
	// ErrNotSupported: the kernel, the provider or this library lacks the
	// operation (EOPNOTSUPP, EPROTONOSUPPORT, ENOSYS).
	ErrNotSupported = errors.New("uverbs: not supported")
	// ErrPermission: a device node or an operation is not permitted
	// (EACCES, EPERM).
	ErrPermission = errors.New("uverbs: permission denied")
	// ErrABIVersion: the kernel speaks an ABI version this package does not.
	ErrABIVersion = errors.New("uverbs: unsupported ABI version")
	// ErrClosed: the object (or its context) was closed.
	ErrClosed = errors.New("uverbs: use of closed object")
	// ErrQueueFull: a work queue has no free slot.
	ErrQueueFull = errors.New("uverbs: work queue full")
	// ErrInvalid: an argument is out of range for the object.
	ErrInvalid = errors.New("uverbs: invalid argument")
)

// OpError is the error of one operation: what was done, on which device
// or node, and the underlying cause (usually a unix.Errno).
type OpError struct {
	Op     string // "create QP", "open", …
	Device string // "rxe0"; may be empty
	Path   string // device node or sysfs file involved; may be empty
	Err    error
}

func (e *OpError) Error() string {
	s := "uverbs: " + e.Op
	if e.Device != "" {
		s += " on " + e.Device
	}
	if e.Path != "" {
		s += " (" + e.Path + ")"
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *OpError) Unwrap() error { return e.Err }

// Is makes kernel errnos match the package sentinels.
func (e *OpError) Is(target error) bool {
	var errno unix.Errno
	if !errors.As(e.Err, &errno) {
		return false
	}
	switch target {
	case ErrNotSupported:
		return errno == unix.EOPNOTSUPP || errno == unix.EPROTONOSUPPORT || errno == unix.ENOSYS
	case ErrPermission:
		return errno == unix.EACCES || errno == unix.EPERM
	case ErrNoDevice:
		return errno == unix.ENODEV || errno == unix.ENXIO
	}
	return false
}

func opErr(op, dev string, err error) error {
	if err == nil {
		return nil
	}
	return &OpError{Op: op, Device: dev, Err: err}
}

// notSupported is the error for an operation the provider lacks; it
// matches ErrNotSupported and unix.EOPNOTSUPP.
func notSupported(op, dev, why string) error {
	return &OpError{Op: op, Device: dev, Err: fmt.Errorf("%s: %w", why, unix.EOPNOTSUPP)}
}
