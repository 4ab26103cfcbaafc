package rdmacm

import (
	"context"
	"fmt"

	"github.com/go-rdma/rdmacm/uverbs"
)

// NewQPDataFunc is NewQPFunc for protocols whose private data names
// memory of the connection (librdmacm's rsockets put the receive buffer's
// address and rkey in the REQ and REP): it makes the caller's QP on pd and
// returns it with the private data to send. peerData is the REQ's private
// data on the accepting side (nil when dialing); an error from it rejects
// the request.
type NewQPDataFunc func(pd *uverbs.PD, peerData []byte) (QPSetup, error)

// QPSetup is what a NewQPDataFunc returns.
type QPSetup struct {
	// QP is the caller's RC QP, in RESET (as from a NewQPFunc).
	QP *uverbs.QP
	// PrivateData goes in the REQ or REP (nil: the options' or
	// AcceptQPData's own).
	PrivateData []byte
	// AtInit, if set, runs once the QP is in INIT and before the peer can
	// send to it (before the REQ leaves, or the REP): the time to post
	// receives (librdmacm's rs_create_ep posts them there too).
	AtInit func() error
}

func (f NewQPFunc) withData() NewQPDataFunc {
	if f == nil {
		return nil
	}
	return func(pd *uverbs.PD, _ []byte) (QPSetup, error) {
		q, err := f(pd)
		return QPSetup{QP: q}, err
	}
}

// atInit runs the caller's AtInit hook, if any.
func (ep *Endpoint) atInit() error {
	if ep.initHook == nil {
		return nil
	}
	return ep.initHook()
}

// DialQPData is DialQP whose REQ carries the private data newQP returns.
func DialQPData(ctx context.Context, address string, opts *EndpointOptions, newQP NewQPDataFunc) (*Endpoint, error) {
	if newQP == nil {
		return nil, fmt.Errorf("rdmacm: DialQPData: nil NewQPDataFunc: %w", ErrInvalidArgument)
	}
	return dial(ctx, address, opts, newQP)
}

// AcceptQPData is AcceptQP whose newQP sees the REQ's private data and
// returns the REP's; an error from newQP rejects the request and is
// returned.
func (l *Listener) AcceptQPData(ctx context.Context, newQP NewQPDataFunc) (*Endpoint, error) {
	if newQP == nil {
		return nil, fmt.Errorf("rdmacm: AcceptQPData: nil NewQPDataFunc: %w", ErrInvalidArgument)
	}
	return l.accept(ctx, l.cfg.privateData, newQP)
}
