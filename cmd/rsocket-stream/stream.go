package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/go-rdma/rdmacm/rsocket"
)

// defaultBuffer is what rstream gives SO_SNDBUF and SO_RCVBUF without -B.
const defaultBuffer = 1 << 19

// optimization is rstream's rs_optimization: which inline size a
// connection gets.
type optimization int

const (
	optMixed     optimization = iota // custom tests: rsocket's default inline size
	optLatency                       // the latency set: -i
	optBandwidth                     // the bandwidth set: no inline data
)

// pattern is common.c's format_buf and verify_buf: one byte counter for
// everything this process sends and one for everything it checks, across
// transfers and connections, so a C and a Go peer agree on the data.
type pattern struct {
	next     byte  // format_buf's static data
	expect   byte  // verify_buf's static data
	verified int64 // verify_buf's static total_bytes
}

func (p *pattern) format(b []byte) {
	for i := range b {
		b[i] = p.next
		p.next++
	}
}

func (p *pattern) check(b []byte) error {
	for i := range b {
		if b[i] != p.expect {
			// rstream prints this line and fails the test.
			return fmt.Errorf("data verification failed byte %d", p.verified)
		}
		p.expect++
		p.verified++
	}
	return nil
}

// stream runs rstream's tests on connections.
type stream struct {
	c    *config
	out  io.Writer
	buf  []byte
	data pattern
}

func (s *stream) send(conn net.Conn, size int) error {
	b := s.buf[:size]
	if s.c.verify {
		s.data.format(b)
	}
	if _, err := conn.Write(b); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	return nil
}

// recv reads size bytes: at once with io.ReadFull (-T b, MSG_WAITALL),
// or as whatever each Read returns (the default), as rstream's loops do.
func (s *stream) recv(conn net.Conn, size int) error {
	b := s.buf[:size]
	if s.c.blocking {
		if _, err := io.ReadFull(conn, b); err != nil {
			return fmt.Errorf("recv: %w", noEOF(err))
		}
	} else {
		for off := 0; off < size; {
			n, err := conn.Read(b[off:])
			off += n
			if err != nil && off < size {
				return fmt.Errorf("recv: %w", noEOF(err))
			}
		}
	}
	if s.c.verify {
		return s.data.check(b)
	}
	return nil
}

// noEOF reports an end of stream in the middle of a transfer as
// io.ErrUnexpectedEOF.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// sync is rstream's sync_test: 16 bytes from the client, 16 back.
func (s *stream) sync(conn net.Conn) error {
	if s.c.server != "" {
		if err := s.send(conn, 16); err != nil {
			return err
		}
		return s.recv(conn, 16)
	}
	if err := s.recv(conn, 16); err != nil {
		return err
	}
	return s.send(conn, 16)
}

// runTest is rstream's run_test: the sync, then per iteration count
// transfers one way and count back, timed, then the row.
func (s *stream) runTest(conn net.Conn, t test) error {
	if err := s.sync(conn); err != nil {
		return err
	}
	client := s.c.server != ""
	start := time.Now()
	for i := 0; i < t.iterations; i++ {
		for range t.count {
			var err error
			if client {
				err = s.send(conn, t.size)
			} else {
				err = s.recv(conn, t.size)
			}
			if err != nil {
				return err
			}
		}
		for range t.count {
			var err error
			if client {
				err = s.recv(conn, t.size)
			} else {
				err = s.send(conn, t.size)
			}
			if err != nil {
				return err
			}
		}
	}
	printRow(s.out, t, time.Since(start).Microseconds())
	return nil
}

// endpoint opens the connections of one run: rsockets or TCP.
type endpoint struct {
	c   *config
	out io.Writer
	ln  net.Listener
}

func (c *config) rsocketOptions(opt optimization) *rsocket.Options {
	// One connection at a time: its waits may hold a thread, as rstream's.
	o := &rsocket.Options{Backend: c.backend, SendBuffer: defaultBuffer, RecvBuffer: defaultBuffer, ThreadWait: true}
	if c.bufferSize > 0 {
		o.SendBuffer, o.RecvBuffer = c.bufferSize, c.bufferSize
	}
	switch opt {
	case optLatency:
		o.InlineSize = c.inlineSize
		if c.inlineSize == 0 {
			o.InlineSize = -1
		}
	case optBandwidth:
		o.InlineSize = -1
	}
	if c.keepalive > 0 {
		o.KeepAlive = time.Duration(c.keepalive) * time.Second
	}
	return o
}

func (e *endpoint) listen(opt optimization) error {
	addr := net.JoinHostPort(e.c.bind, e.c.port)
	var err error
	if e.c.tcp {
		e.ln, err = net.Listen("tcp", addr)
	} else {
		// One listener for both sets: rsocket.Options are fixed at Listen, so
		// the bandwidth set's connection gets the latency set's inline size
		// (rstream changes it on the listening rsocket between the two).
		e.ln, err = rsocket.Listen(addr, e.c.rsocketOptions(opt))
	}
	return err
}

// connect returns the next connection: the server accepts, the client dials.
func (e *endpoint) connect(ctx context.Context, opt optimization) (net.Conn, error) {
	var conn net.Conn
	var err error
	switch {
	case e.ln != nil:
		conn, err = e.ln.Accept()
	case e.c.tcp:
		d := net.Dialer{}
		if e.c.bind != "" {
			if d.LocalAddr, err = net.ResolveTCPAddr("tcp", net.JoinHostPort(e.c.bind, "0")); err != nil {
				return nil, err
			}
		}
		conn, err = d.DialContext(ctx, "tcp", net.JoinHostPort(e.c.server, e.c.port))
	default:
		conn, err = rsocket.Dial(ctx, net.JoinHostPort(e.c.server, e.c.port), e.c.rsocketOptions(opt))
	}
	if err != nil {
		return nil, err
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		// rstream's set_options on a plain socket: buffers, TCP_NODELAY (Go's
		// default) and keepalive.
		size := defaultBuffer
		if e.c.bufferSize > 0 {
			size = e.c.bufferSize
		}
		tc.SetReadBuffer(size)
		tc.SetWriteBuffer(size)
		if e.c.keepalive > 0 {
			tc.SetKeepAliveConfig(net.KeepAliveConfig{Enable: true, Idle: time.Duration(e.c.keepalive) * time.Second})
		}
	}
	if e.c.keepalive > 0 {
		fmt.Fprintf(e.out, "Keepalive: ON\n  time: %d\n", e.c.keepalive)
	}
	return conn, nil
}

// run is rstream's run(): the header, then the custom test on one
// connection, or the latency set on one connection and the bandwidth set
// on a second.
func run(c *config, out io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s := &stream{c: c, out: out}
	if c.custom {
		s.buf = make([]byte, max(c.size, 16))
	} else {
		s.buf = make([]byte, testSizes[len(testSizes)-1].size)
	}
	e := &endpoint{c: c, out: out}
	if c.server == "" {
		first := optLatency
		if c.custom {
			first = optMixed
		}
		if err := e.listen(first); err != nil {
			return err
		}
		defer e.ln.Close()
	}
	printHeader(out)
	phase := func(opt optimization, tests []test) error {
		dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		conn, err := e.connect(dctx, opt)
		if err != nil {
			return err
		}
		// Close interrupts a blocked Read or Write on a signal.
		done := make(chan struct{})
		defer close(done)
		go func() {
			select {
			case <-ctx.Done():
				conn.Close()
				if e.ln != nil {
					e.ln.Close()
				}
			case <-done:
			}
		}()
		for _, t := range tests {
			if err := s.runTest(conn, t); err != nil {
				conn.Close()
				return fmt.Errorf("%s: %w", t.name, err)
			}
		}
		// rstream: rshutdown(SHUT_RDWR), then rclose.
		return conn.Close()
	}
	if c.custom {
		return phase(optMixed, []test{{name: "custom", size: c.size, count: c.count, iterations: c.iterations}})
	}
	if err := phase(optLatency, latencyTests(c.all)); err != nil {
		return err
	}
	return phase(optBandwidth, bandwidthTests(c.all))
}
