//go:build !linux

package cm

import "fmt"

func openKernel() (backend, error) {
	return nil, fmt.Errorf("cm: the kernel rdma_cm backend needs Linux: %w", ErrNotSupported)
}
