package rdmacm

import (
	"errors"

	"github.com/go-rdma/rdmacm/rdma"
)

// The sentinels, package rdma's (rdmacm.ErrTimeout == cm.ErrTimeout ==
// uverbs.ErrClosed's sibling rdma.ErrTimeout). Match them with errors.Is.
var (
	ErrNotSupported    = rdma.ErrNotSupported
	ErrNoDevice        = rdma.ErrNoDevice
	ErrPermission      = rdma.ErrPermission
	ErrInvalidArgument = rdma.ErrInvalidArgument
	ErrInvalidState    = rdma.ErrInvalidState
	ErrTimeout         = rdma.ErrTimeout
	ErrClosed          = rdma.ErrClosed
	ErrNoRoute         = rdma.ErrNoRoute
	ErrRejected        = rdma.ErrRejected
	ErrQueueFull       = rdma.ErrQueueFull
	ErrBusy            = rdma.ErrBusy
	ErrDisconnected    = rdma.ErrDisconnected

	// ErrCompletion: a work request completed with an error status; the
	// error is a *WCError.
	ErrCompletion = errors.New("work completion error")
)
