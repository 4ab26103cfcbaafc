//go:build !linux

package rdmacm

import "context"

// JoinMulticast returns ErrNotSupported off Linux.
func JoinMulticast(ctx context.Context, group string, opts *MulticastOptions) (*DatagramEndpoint, error) {
	return nil, errNotSupported
}
