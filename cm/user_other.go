//go:build !linux

package cm

import "fmt"

func openUserBackend(*Options) (backend, error) {
	return nil, fmt.Errorf("cm: the user-space CM backend needs Linux (umad): %w", ErrNotSupported)
}

func openKernelBackend(o *Options) (backend, error) {
	if o.Trace != nil {
		return nil, errKernelTrace
	}
	return openKernel()
}

func openAuto(o *Options) (backend, error) { return openKernelBackend(o) }
