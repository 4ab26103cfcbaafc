//go:build !linux

package cm

import "fmt"

// haveUserBackend: the user backend needs umad, which is Linux's.
const haveUserBackend = false

func openUserBackend(*Options) (backend, error) {
	return nil, fmt.Errorf("cm: the user-space CM backend needs Linux (umad): %w", ErrNotSupported)
}
