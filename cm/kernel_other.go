//go:build !linux

package cm

import (
	"fmt"

	"github.com/go-rdma/rdmacm/internal/unix"
)

// openKernel fails: rdma_ucm is Linux's. The error reads "not supported
// on GOOS" and matches ErrNotSupported.
func openKernel() (backend, error) {
	return nil, fmt.Errorf("cm: the kernel rdma_cm backend needs Linux: %w", unix.ErrNotSupported)
}
