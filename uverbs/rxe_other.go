//go:build !linux

package uverbs

import "github.com/go-rdma/rdmacm/internal/unix"

// ring fails: there is no rxe doorbell here.
func (r *rxeQP) ring() error { return unix.ErrNotSupported }
