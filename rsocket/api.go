package rsocket

import (
	"context"
	"net"
	"time"

	"github.com/go-rdma/rdmacm/rdma"
)

// Options configure Dial and Listen. A nil *Options and every zero field
// mean rsocket.c's defaults.
type Options struct {
	// Backend is the CM: "" (rdma.BackendAuto), rdma.BackendKernel or
	// rdma.BackendUser.
	Backend rdma.Backend
	// SendBuffer and RecvBuffer are given as to SO_SNDBUF and SO_RCVBUF:
	// rsocket doubles them. 0: rsocket's default 128 KiB buffers.
	SendBuffer, RecvBuffer int
	// InlineSize is the largest send copied into the work request (0: 64,
	// rsocket's default; negative: no inline data).
	InlineSize int
	// SQSize and RQSize are the work queue depths (0: 384, rsocket's default).
	SQSize, RQSize int
	// KeepAlive is the keepalive period (0: off, as rsocket without
	// SO_KEEPALIVE): a zero-length RDMA WRITE the peer never sees
	// (rsocket.c tcp_svc_send_keepalive). A dead peer fails it after the
	// QP's retries (8 ACK timeouts) and Read and Write return an error.
	KeepAlive time.Duration
	// IOMapSize is how many windows (Conn.IOMap) the peer may give us to
	// write into with WriteAt, as RDMA_IOMAPSIZE (0: none, rsocket's
	// default; rounded as rsocket.c rounds it: above 128 in steps of 256).
	IOMapSize int
	// PollTime is how long a blocked Read or Write polls the CQ before it
	// arms it and sleeps on the completion channel (0: 10 µs, rsocket.c's
	// default polling_time; negative: not at all). A completion found by
	// polling costs no syscall; the price is up to PollTime of CPU per
	// wait.
	PollTime time.Duration
	// ThreadWait makes a blocked Read or Write sleep in one blocking
	// read(2) of the completion channel, as rsocket.c's blocking calls
	// do: one syscall per wait, against the netpoller's read that finds
	// nothing, epoll_pwait and handoffs between threads. It holds an OS
	// thread while it sleeps, so it suits a program with few busy
	// connections; with thousands of idle ones, each with a blocked Read
	// (an HTTP server's kept-alive ones), it holds as many threads, and Go
	// stops the program at 10,000 (debug.SetMaxThreads). The default
	// sleeps in the netpoller, which holds no thread.
	ThreadWait bool
}

// Dial connects to address ("host:port") with rsockets; ctx bounds the
// address and route resolution and the connection exchange. (Dialer's
// DialContext is the form http.Transport and gRPC take.)
func Dial(ctx context.Context, address string, opts *Options) (*Conn, error) {
	return dial(ctx, address, opts)
}

// Dialer dials rsockets connections with its Options; its DialContext
// fits http.Transport.DialContext and gRPC's WithContextDialer.
type Dialer struct{ Options Options }

// DialContext connects to address; network is "tcp", "tcp4", "tcp6" or
// "rdma".
func (d *Dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	switch network {
	case "tcp", "tcp4", "tcp6", "rdma":
	default:
		return nil, &net.OpError{Op: "dial", Net: network, Err: net.UnknownNetworkError(network)}
	}
	c, err := dial(ctx, address, &d.Options)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Listen listens on address (":7471" listens on every RDMA device). Like
// net.Listen it waits for nothing but the lookup of a host name, and takes
// no context; Listener.AcceptConn does, and Accept (net.Listener's) ends
// with Close.
func Listen(address string, opts *Options) (*Listener, error) {
	return listen(address, opts)
}

var _ net.Conn = (*Conn)(nil)
var _ net.Listener = (*Listener)(nil)
