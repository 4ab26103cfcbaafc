package umad

import (
	"fmt"
	"syscall"

	"github.com/go-rdma/rdmacm/rdma"
)

// kernelCMError is ErrKernelCM; it also matches EINVAL, the errno the
// registration returns.
type kernelCMError struct{}

func (kernelCMError) Error() string {
	return "umad: the kernel CM (ib_cm) owns the CM MAD class on this port: use the kernel rdma_cm backend, or unload ib_cm and its users (rdma_cm, rdma_ucm, ib_ipoib) for the user-space CM"
}

func (kernelCMError) Is(target error) bool { return target == syscall.EINVAL }

var (
	// ErrKernelCM: registering the CM class failed with EINVAL because the
	// kernel's ib_cm holds it (mad.c: "Method 3 already in use").
	ErrKernelCM error = kernelCMError{}
	// ErrNotSupported: umad exists only on Linux; UDSend needs a uverbs
	// data path (package rdma's sentinel).
	ErrNotSupported = rdma.ErrNotSupported
	// ErrClosed: the port or driver was closed (package rdma's sentinel).
	ErrClosed = rdma.ErrClosed
)

// errClosed is ErrClosed with the package prefix.
var errClosed = fmt.Errorf("umad: %w", ErrClosed)

// SendError is a send the kernel handed back with a failure status (it
// only does so for MADs sent with a MAD-layer timeout).
type SendError struct {
	Status uint32
}

func (e *SendError) Error() string { return fmt.Sprintf("umad: send failed: status %d", e.Status) }
