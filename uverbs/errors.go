package uverbs

import (
	"fmt"

	"github.com/go-rdma/rdmacm/internal/unix"
	"github.com/go-rdma/rdmacm/rdma"
)

// Sentinel errors, matched with errors.Is; they are package rdma's, so
// uverbs.ErrNotSupported and cm.ErrNotSupported are one test. Errors of
// this package are *rdma.OpError (Pkg "uverbs"), and the errno behind one
// stays reachable: errors.Is(err, unix.EOPNOTSUPP) holds for every
// ErrNotSupported that came from the kernel or stands for it.
var (
	// ErrNoDevice: no RDMA device, or not the one asked for (ENODEV, ENXIO).
	ErrNoDevice = rdma.ErrNoDevice
	// ErrNotSupported: the kernel, the provider or this library lacks the
	// operation (EOPNOTSUPP, EPROTONOSUPPORT, ENOSYS).
	ErrNotSupported = rdma.ErrNotSupported
	// ErrPermission: a device node or an operation is not permitted
	// (EACCES, EPERM).
	ErrPermission = rdma.ErrPermission
	// ErrABIVersion: the kernel speaks an ABI version this package does not.
	ErrABIVersion = rdma.ErrABIVersion
	// ErrClosed: the object (or its context) was closed.
	ErrClosed = rdma.ErrClosed
	// ErrQueueFull: a work queue has no free slot.
	ErrQueueFull = rdma.ErrQueueFull
	// ErrInvalidArgument: an argument is out of range for the object (EINVAL).
	ErrInvalidArgument = rdma.ErrInvalidArgument
)

// opError is the error of one operation on a device (dev may be empty).
func opError(op, dev string, err error) *rdma.OpError {
	return &rdma.OpError{Pkg: "uverbs", Op: op, Device: dev, Err: err}
}

func opErr(op, dev string, err error) error {
	if err == nil {
		return nil
	}
	return opError(op, dev, err)
}

// notOnThisOS is the error of every entry point (Devices, Open,
// OpenDevice, AllocBuffer, AllocBufferAt) off Linux: it reads "uverbs: op:
// not supported on GOOS" and matches ErrNotSupported.
func notOnThisOS(op string) error { return opError(op, "", unix.ErrNotSupported) }

// notSupported is the error for an operation the provider lacks; it
// matches ErrNotSupported and unix.EOPNOTSUPP.
func notSupported(op, dev, why string) error {
	return opError(op, dev, fmt.Errorf("%s: %w", why, unix.EOPNOTSUPP))
}
