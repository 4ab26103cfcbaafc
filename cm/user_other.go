//go:build !linux

package cm

import (
	"fmt"

	"github.com/go-rdma/rdmacm/internal/unix"
)

// haveUserBackend: the user backend needs umad, which is Linux's.
const haveUserBackend = false

// openUserBackend fails: umad is Linux's. The error reads "not supported
// on GOOS" and matches ErrNotSupported.
func openUserBackend(*Options) (backend, error) {
	return nil, fmt.Errorf("cm: the user-space CM backend needs Linux (umad): %w", unix.ErrNotSupported)
}
