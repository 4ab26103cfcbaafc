//go:build linux

package rsocket_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm"
	"github.com/go-rdma/rdmacm/internal/vmtest/guest"
	"github.com/go-rdma/rdmacm/rdma"
	"github.com/go-rdma/rdmacm/rsocket"
)

// The helper mode: the test binary, run in guest b, is a Go rstream peer
// (RSOCKET_HELPER=server|client, the other settings in RSOCKET_ARGS).
const helperEnv = "RSOCKET_HELPER"

func TestMain(m *testing.M) {
	if role := os.Getenv(helperEnv); role != "" {
		flag.Parse()
		if err := helper(role, strings.Fields(os.Getenv("RSOCKET_ARGS"))); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			os.Exit(1)
		}
		fmt.Println("HELPER-OK")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// helper args: addr size count iters backend
func helper(role string, args []string) error {
	if len(args) != 5 {
		return fmt.Errorf("args %q", args)
	}
	size, _ := strconv.Atoi(args[1])
	count, _ := strconv.Atoi(args[2])
	iters, _ := strconv.Atoi(args[3])
	opts := &rsocket.Options{Backend: rdma.Backend(args[4])}
	if role == "httpclient" { // TestHTTPKeepAliveInGuest's client: count requests
		if os.Getenv("RSOCKET_WATCHDOG") == "" {
			// A hang prints this process's goroutines before the test's deadline.
			debug.SetTraceback("all")
			time.AfterFunc(90*time.Second, func() { panic("httpclient: still running after 90s") })
		}
		return httpClientLoop(args[0], httpOpts(opts.Backend, iters != 0), count)
	}
	p := &rstreamPeer{client: role == "client", size: size, count: count, iters: iters, verify: true}
	var c net.Conn
	if strings.HasPrefix(role, "rio") {
		opts.IOMapSize = 1 // riostream's RDMA_IOMAPSIZE
	}
	if role == "server" || role == "hold" || role == "rioserver" {
		l, err := rsocket.Listen(args[0], opts)
		if err != nil {
			return err
		}
		fmt.Println("LISTENING")
		c, err = l.Accept()
		l.Close()
		if err != nil {
			return err
		}
	} else {
		var err error
		if role == "kaclient" {
			opts.KeepAlive = 500 * time.Millisecond
		}
		if c, err = rsocket.Dial(context.Background(), args[0], opts); err != nil {
			return err
		}
	}
	if role == "kaclient" { // by hand: how long a dead peer takes to notice
		fmt.Println("CONNECTED")
		start := time.Now()
		_, err := c.Read(make([]byte, 1))
		fmt.Printf("read after %v: %v\n", time.Since(start), err)
		c.Close()
		return nil
	}
	defer c.Close()
	if os.Getenv("RSOCKET_WATCHDOG") != "" {
		time.AfterFunc(20*time.Second, func() { panic("watchdog") })
	}
	if rc, ok := c.(*rsocket.Conn); ok && (role == "rioserver" || role == "rioclient") {
		rp := &rioPeer{client: role == "rioclient", size: size, count: count, iters: iters, verify: true}
		return rp.run(rc)
	}
	if role == "hold" { // the peer of the dead-peer and drain tests: sink until the end
		fmt.Println("HOLDING")
		n, err := io.Copy(io.Discard, c)
		fmt.Printf("HELD %d\n", n)
		return err
	}
	return p.run(c)
}

func guestBackend() rdma.Backend {
	if slices.Contains(guest.Local().NoMods, "ib_cm") {
		return rdma.BackendUser
	}
	return rdma.BackendKernel
}

// peerBackend is the backend guest b's helper uses: b always has the
// kernel CM.
const peerBackend = rdma.BackendKernel

const localAddr = "192.0.2.1"

func startHelper(t *testing.T, ctx context.Context, role, addr string, size, count, iters int) *guest.Process {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := fmt.Sprintf("%s=%s RSOCKET_ARGS='%s %d %d %d %s' %s", helperEnv, role, addr, size, count, iters, peerBackend, exe)
	if os.Getenv("RSOCKET_WATCHDOG") != "" {
		cmd = "GOTRACEBACK=all RSOCKET_WATCHDOG=1 " + cmd + " 2>/host/helper.log"
	}
	p, err := guest.Peer().Start(ctx, cmd)
	if err != nil {
		t.Fatal(err)
	}
	if role == "server" || role == "hold" || role == "rioserver" {
		if err := p.WaitOutput(ctx, "LISTENING"); err != nil {
			r, _ := p.Stop(ctx)
			t.Fatalf("helper: %v %+v", err, r)
		}
	}
	return p
}

func waitPeer(t *testing.T, ctx context.Context, p *guest.Process, what string) {
	t.Helper()
	r, err := p.Wait(ctx)
	if err != nil || r.ExitCode != 0 {
		t.Fatalf("%s: %v: exit %d\n%s\n%s", what, err, r.ExitCode, r.Stdout, r.Stderr)
	}
}

// TestExamplesInGuest runs the examples against the real kernel (the host
// has no RDMA device) and checks their output.
func TestExamplesInGuest(t *testing.T) {
	guest.Require(t)
	for _, tc := range []struct {
		name string
		f    func()
		want string
	}{
		{"echo", Example, "hello over RDMA <nil>\n"},
		{"http", ExampleDialer, "200 OK hello, rdma\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := guest.CaptureStdout(t, tc.f); got != tc.want {
				t.Fatalf("output %q, want %q", got, tc.want)
			}
		})
	}
}

// TestGoGoInGuest: our client in guest a with our server in guest b, then
// the other way round, verifying every byte both ways.
func TestGoGoInGuest(t *testing.T) {
	guest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	opts := &rsocket.Options{Backend: guestBackend()}
	for _, size := range []int{64, 4096, 1 << 20} {
		t.Run(fmt.Sprintf("a-client-%d", size), func(t *testing.T) {
			srv := startHelper(t, ctx, "server", guest.Peer().Addr+":7481", size, 10, 1)
			c, err := rsocket.Dial(ctx, guest.Peer().Addr+":7481", opts)
			if err != nil {
				srv.Stop(ctx)
				t.Fatal(err)
			}
			p := &rstreamPeer{client: true, size: size, count: 10, iters: 1, verify: true}
			if err := p.run(c); err != nil {
				r, _ := srv.Stop(ctx)
				t.Fatalf("%v\nserver in b: %+v", err, r)
			}
			c.Close()
			waitPeer(t, ctx, srv, "server in b")
		})
		t.Run(fmt.Sprintf("a-server-%d", size), func(t *testing.T) {
			l, err := rsocket.Listen(localAddr+":7482", opts)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			cl := startHelper(t, ctx, "client", localAddr+":7482", size, 10, 1)
			c, err := l.AcceptConn(ctx)
			if err != nil {
				cl.Stop(ctx)
				t.Fatal(err)
			}
			defer c.Close()
			p := &rstreamPeer{size: size, count: 10, iters: 1, verify: true}
			if err := p.run(c); err != nil {
				t.Fatal(err)
			}
			waitPeer(t, ctx, cl, "client in b")
		})
	}
}

// TestRstreamInGuest: librdmacm's rstream in guest b against our Conn in
// guest a, both roles, blocking mode, data verified on both sides.
func TestRstreamInGuest(t *testing.T) {
	guest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	opts := &rsocket.Options{Backend: guestBackend()}
	for _, tc := range []struct{ size, count int }{{64, 50}, {4096, 10}} {
		t.Run(fmt.Sprintf("rstream-server-%d", tc.size), func(t *testing.T) {
			srv, c := startAndDial(t, ctx, fmt.Sprintf("rstream -b %s -p 7483 -T b -T v -S %d -C %d -I 1", guest.Peer().Addr, tc.size, tc.count), guest.Peer().Addr+":7483", opts)
			defer c.Close()
			p := &rstreamPeer{client: true, size: tc.size, count: tc.count, iters: 1, verify: true}
			if err := p.run(c); err != nil {
				r, _ := srv.Stop(ctx)
				t.Fatalf("%v\nrstream: %+v", err, r)
			}
			c.Close()
			waitPeer(t, ctx, srv, "rstream server in b")
			t.Logf("rstream: %s", srv.Stdout())
		})
		t.Run(fmt.Sprintf("rstream-client-%d", tc.size), func(t *testing.T) {
			l, err := rsocket.Listen(localAddr+":7484", opts)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			cl, err := guest.Peer().Start(ctx, fmt.Sprintf("rstream -s %s -p 7484 -T b -T v -S %d -C %d -I 1", localAddr, tc.size, tc.count))
			if err != nil {
				t.Fatal(err)
			}
			c, err := l.AcceptConn(ctx)
			if err != nil {
				r, _ := cl.Stop(ctx)
				t.Fatalf("accept: %v\n%+v", err, r)
			}
			defer c.Close()
			p := &rstreamPeer{size: tc.size, count: tc.count, iters: 1, verify: true}
			if err := p.run(c); err != nil {
				r, _ := cl.Stop(ctx)
				t.Fatalf("%v\nrstream: %+v", err, r)
			}
			waitPeer(t, ctx, cl, "rstream client in b")
			t.Logf("rstream's REQ private data: % x", rsocket.PeerConnData(c))
			// rstream's close (SHUT_RDWR) reaches us as the end of stream.
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			if n, err := c.Read(make([]byte, 1)); err != io.EOF {
				t.Fatalf("after rstream's close: %d, %v, want io.EOF", n, err)
			}
			t.Logf("rstream: %s", cl.Stdout())
		})
	}
}

// localPair connects a client and a server Conn inside guest a.
func localPair(t *testing.T, ctx context.Context, port int, opts *rsocket.Options) (client, server *rsocket.Conn) {
	t.Helper()
	if opts == nil {
		opts = &rsocket.Options{}
	}
	opts.Backend = guestBackend()
	addr := fmt.Sprintf("%s:%d", localAddr, port)
	l, err := rsocket.Listen(addr, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan *rsocket.Conn, 1)
	go func() {
		c, err := l.AcceptConn(ctx)
		if err != nil {
			t.Error(err)
		}
		accepted <- c
	}()
	client, err = rsocket.Dial(ctx, addr, opts)
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	if server == nil {
		client.Close()
		t.FailNow()
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) && errors.As(err, &ne) && ne.Timeout()
}

// TestRiostreamInGuest: the iomap against librdmacm's riostream in guest
// b, both roles: windows exchanged, WriteAt into the peer's window, the
// marker byte polled, the data verified on both sides.
func TestRiostreamInGuest(t *testing.T) {
	guest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	opts := &rsocket.Options{Backend: guestBackend(), IOMapSize: 1}
	for _, tc := range []struct{ size, count int }{{64, 10}, {4096, 10}} {
		t.Run(fmt.Sprintf("riostream-server-%d", tc.size), func(t *testing.T) {
			srv, c := startAndDial(t, ctx, fmt.Sprintf("riostream -b %s -p 7500 -T b -T v -S %d -C %d -I 1", guest.Peer().Addr, tc.size, tc.count), guest.Peer().Addr+":7500", opts)
			defer c.Close()
			p := &rioPeer{client: true, size: tc.size, count: tc.count, iters: 1, verify: true}
			if err := p.run(c); err != nil {
				r, _ := srv.Stop(ctx)
				t.Fatalf("%v\nriostream: %+v", err, r)
			}
			c.Close()
			waitPeer(t, ctx, srv, "riostream server in b")
			t.Logf("riostream: %s", srv.Stdout())
		})
		t.Run(fmt.Sprintf("riostream-client-%d", tc.size), func(t *testing.T) {
			l, err := rsocket.Listen(localAddr+":7501", opts)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			cl, err := guest.Peer().Start(ctx, fmt.Sprintf("riostream -s %s -p 7501 -T b -T v -S %d -C %d -I 1", localAddr, tc.size, tc.count))
			if err != nil {
				t.Fatal(err)
			}
			c, err := l.AcceptConn(ctx)
			if err != nil {
				r, _ := cl.Stop(ctx)
				t.Fatalf("accept: %v\n%+v", err, r)
			}
			defer c.Close()
			p := &rioPeer{size: tc.size, count: tc.count, iters: 1, verify: true}
			if err := p.run(c); err != nil {
				r, _ := cl.Stop(ctx)
				t.Fatalf("%v\nriostream: %+v", err, r)
			}
			waitPeer(t, ctx, cl, "riostream client in b")
			t.Logf("riostream: %s", cl.Stdout())
		})
	}
}

// startAndDial starts a C server (rstream, riostream) in guest b and dials
// it until it listens. riostream sets RDMA_IOMAPSIZE on its listener only
// after rlisten, and librdmacm accepts in its own thread, so a connection
// that arrives in between is offered no iomap window: when opts asks for
// windows, such a server is stopped and started again.
func startAndDial(t *testing.T, ctx context.Context, cmd, addr string, opts *rsocket.Options) (*guest.Process, *rsocket.Conn) {
	t.Helper()
	for start := 1; ; start++ {
		srv, err := guest.Peer().Start(ctx, cmd)
		if err != nil {
			t.Fatal(err)
		}
		var c *rsocket.Conn
		for i := 0; ; i++ {
			c, err = rsocket.Dial(ctx, addr, opts)
			if err == nil || i == 50 {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil {
			r, _ := srv.Stop(ctx)
			t.Fatalf("dial %s: %v\n%+v", cmd, err, r)
		}
		if opts.IOMapSize == 0 || rsocket.PeerIOMapEntries(c) > 0 {
			return srv, c
		}
		c.Close()
		r, _ := srv.Stop(ctx)
		if start == 5 {
			t.Fatalf("%s offered no iomap window on %d connections\n%+v", cmd, start, r)
		}
		t.Logf("%s accepted before it set RDMA_IOMAPSIZE; starting it again", cmd)
	}
}

// TestIOMapGoGoInGuest: our iomap between two Go Conns in guest a, a 1 MiB
// window and the sizes between, both directions.
func TestIOMapGoGoInGuest(t *testing.T) {
	guest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, s := localPair(t, ctx, 7502, &rsocket.Options{IOMapSize: 1})
	for _, size := range []int{64, 4096, 1 << 20} {
		errs := make(chan error, 1)
		go func() { errs <- (&rioPeer{size: size, count: 3, iters: 2, verify: true}).run(s) }()
		if err := (&rioPeer{client: true, size: size, count: 3, iters: 2, verify: true}).run(c); err != nil {
			t.Fatalf("size %d client: %v", size, err)
		}
		if err := <-errs; err != nil {
			t.Fatalf("size %d server: %v", size, err)
		}
	}
}

// TestIOMapErrorsInGuest: IOMap and WriteAt fail with the rdma sentinels:
// no window offered, every window taken, and offsets outside the windows.
func TestIOMapErrorsInGuest(t *testing.T) {
	guest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, s := localPair(t, ctx, 7510, &rsocket.Options{IOMapSize: 1})
	if _, err := c.IOMap(0, 0); !errors.Is(err, rdma.ErrInvalidArgument) {
		t.Fatalf("IOMap of 0 bytes: %v, want ErrInvalidArgument", err)
	}
	m, err := c.IOMap(4096, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.IOMap(4096, 4096); !errors.Is(err, rdma.ErrBusy) {
		t.Fatalf("IOMap beyond the peer's one window: %v, want ErrBusy", err)
	}
	if _, err := c.Write([]byte("x")); err != nil { // sends the window
		t.Fatal(err)
	}
	if _, err := io.ReadFull(s, make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	if n, err := s.WriteAt(make([]byte, 4097), 0); n != 4096 || !errors.Is(err, rdma.ErrInvalidArgument) {
		t.Fatalf("WriteAt past the window's end: %d, %v; want 4096 and ErrInvalidArgument", n, err)
	}
	if _, err := s.WriteAt(make([]byte, 1), -1); !errors.Is(err, rdma.ErrInvalidArgument) {
		t.Fatalf("WriteAt at -1: %v, want ErrInvalidArgument", err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if m, err = c.IOMap(64, 0); err != nil {
		t.Fatalf("IOMap after the window was closed: %v", err)
	}
	m.Close()
	c0, _ := localPair(t, ctx, 7511, nil)
	if _, err := c0.IOMap(64, 0); !errors.Is(err, rdma.ErrNotSupported) {
		t.Fatalf("IOMap when the peer offers no window: %v, want ErrNotSupported", err)
	}
}

// TestDeadlinesInGuest: a read deadline and a write deadline end blocked
// calls with os.ErrDeadlineExceeded (a net.Error whose Timeout is true),
// and clearing them lets the connection go on.
func TestDeadlinesInGuest(t *testing.T) {
	guest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, s := localPair(t, ctx, 7485, &rsocket.Options{RecvBuffer: 8192, SendBuffer: 8192})
	start := time.Now()
	c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if n, err := c.Read(make([]byte, 10)); n != 0 || !isTimeout(err) {
		t.Fatalf("read past the deadline: %d, %v", n, err)
	}
	if d := time.Since(start); d < 200*time.Millisecond || d > 5*time.Second {
		t.Fatalf("read deadline of 200ms took %v", d)
	}
	// A deadline in the past fails at once; the zero time clears it.
	if _, err := c.Read(make([]byte, 10)); !isTimeout(err) {
		t.Fatalf("second read past the deadline: %v", err)
	}
	c.SetReadDeadline(time.Time{})
	// Writes block once the peer's buffer is full and nobody reads.
	c.SetWriteDeadline(time.Now().Add(500 * time.Millisecond))
	chunk := make([]byte, 4096)
	total := 0
	var err error
	for total < 1<<22 {
		var n int
		n, err = c.Write(chunk)
		total += n
		if err != nil {
			break
		}
	}
	if !isTimeout(err) {
		t.Fatalf("write into a full peer: %d bytes, %v", total, err)
	}
	t.Logf("%d bytes written before the write deadline", total)
	c.SetWriteDeadline(time.Time{})
	// The peer reads everything, then the connection still works.
	go func() {
		io.CopyN(io.Discard, s, int64(total))
		s.Write([]byte("ok"))
	}()
	b := make([]byte, 2)
	if _, err := io.ReadFull(c, b); err != nil || string(b) != "ok" {
		t.Fatalf("after the deadlines: %q, %v", b, err)
	}
}

// TestDeadlineAbortsWaitInGuest: a deadline moved into the past ends a
// Read and a Write that blocked with none (as net/http aborts its
// background read), wherever in its wait the call is, without ending the
// other; the connection goes on after. Both ways to wait: a blocking
// read of the channel, woken by a completion, and the netpoller's.
func TestDeadlineAbortsWaitInGuest(t *testing.T) {
	guest.Require(t)
	t.Run("blocking", func(t *testing.T) { deadlineAborts(t, 7503, false) })
	t.Run("netpoll", func(t *testing.T) { deadlineAborts(t, 7504, true) })
}

func deadlineAborts(t *testing.T, port int, netpoll bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, s := localPair(t, ctx, port, &rsocket.Options{RecvBuffer: 8192, SendBuffer: 8192, ThreadWait: !netpoll})
	past := time.Unix(1, 0)
	ended := func(what string, ch chan error) {
		t.Helper()
		select {
		case err := <-ch:
			if !isTimeout(err) {
				t.Fatalf("%s: %v, want a timeout", what, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: still blocked 5s after its deadline moved into the past", what)
		}
	}
	b := make([]byte, 1)
	var slowest time.Duration
	for i := range 20 {
		done := make(chan error, 1)
		go func() {
			_, err := c.Read(b)
			done <- err
		}()
		// From before the wait starts to well into it.
		time.Sleep(time.Duration(i) * time.Millisecond)
		start := time.Now()
		c.SetReadDeadline(past)
		ended(fmt.Sprintf("read %d", i), done)
		slowest = max(slowest, time.Since(start))
		c.SetReadDeadline(time.Time{})
	}
	t.Logf("slowest read abort: %v", slowest)
	// A Write blocked on credits and a Read blocked on data: each
	// deadline ends its own call only.
	readDone := make(chan error, 1)
	go func() {
		_, err := c.Read(b)
		readDone <- err
	}()
	written := make(chan int, 1)
	writeDone := make(chan error, 1)
	go func() {
		n, err := c.Write(make([]byte, 1<<20))
		written <- n
		writeDone <- err
	}()
	time.Sleep(300 * time.Millisecond)
	c.SetWriteDeadline(past)
	ended("blocked write", writeDone)
	select {
	case err := <-readDone:
		t.Fatalf("the write deadline ended the read: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	c.SetReadDeadline(past)
	ended("read beside the write", readDone)
	c.SetDeadline(time.Time{})
	n := <-written
	go func() {
		io.CopyN(io.Discard, s, int64(n))
		s.Write([]byte("ok"))
	}()
	two := make([]byte, 2)
	if _, err := io.ReadFull(c, two); err != nil || string(two) != "ok" {
		t.Fatalf("after the aborts: %q, %v", two, err)
	}
}

// TestFullDuplexInGuest: both ends write 8 MiB at once while reading the
// other's (credits and data cross both ways; small buffers so they run
// out often), and several goroutines share each Conn's Writes.
func TestFullDuplexInGuest(t *testing.T) {
	guest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, s := localPair(t, ctx, 7497, &rsocket.Options{SendBuffer: 16 << 10, RecvBuffer: 16 << 10})
	const size, writers = 8 << 20, 4
	errs := make(chan error, 2*writers+2)
	for _, conn := range []*rsocket.Conn{c, s} {
		for w := range writers {
			go func() { // records of 1 KiB: a writer byte and a counter
				rec := make([]byte, 1024)
				for i := 0; i < size/writers/len(rec); i++ {
					rec[0], rec[1], rec[2] = byte(w), byte(i), byte(i>>8)
					if _, err := conn.Write(rec); err != nil {
						errs <- err
						return
					}
				}
				errs <- nil
			}()
		}
		go func() { // each Write is whole: records arrive unbroken and in order per writer
			rec := make([]byte, 1024)
			var next [writers]int
			for n := 0; n < size; n += len(rec) {
				if _, err := io.ReadFull(conn, rec); err != nil {
					errs <- err
					return
				}
				w := int(rec[0])
				if w >= writers || int(rec[1])|int(rec[2])<<8 != next[w]&0xffff {
					errs <- fmt.Errorf("record %d: writer %d count %d, want %d", n/len(rec), w, int(rec[1])|int(rec[2])<<8, next[w%writers])
					return
				}
				next[w]++
			}
			errs <- nil
		}()
	}
	for range 2*writers + 2 {
		select {
		case err := <-errs:
			if err != nil {
				t.Fatal(err)
			}
		case <-ctx.Done():
			t.Fatal("full duplex transfer stalled")
		}
	}
}

// TestCloseUnblocksInGuest: Close ends a blocked Read and a blocked Write
// with net.ErrClosed, and the peer then reads io.EOF; both ways to wait.
func TestCloseUnblocksInGuest(t *testing.T) {
	guest.Require(t)
	t.Run("blocking", func(t *testing.T) { closeUnblocks(t, 7486, false) })
	t.Run("netpoll", func(t *testing.T) { closeUnblocks(t, 7505, true) })
}

func closeUnblocks(t *testing.T, port int, netpoll bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, s := localPair(t, ctx, port, &rsocket.Options{RecvBuffer: 8192, SendBuffer: 8192, ThreadWait: !netpoll})
	readErr := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 10))
		readErr <- err
	}()
	writeErr := make(chan error, 1)
	go func() {
		b := make([]byte, 4096)
		for {
			if _, err := c.Write(b); err != nil {
				writeErr <- err
				return
			}
		}
	}()
	time.Sleep(300 * time.Millisecond)
	c.Close()
	for _, ch := range []chan error{readErr, writeErr} {
		select {
		case err := <-ch:
			if !errors.Is(err, net.ErrClosed) {
				t.Fatalf("blocked call after Close: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Close did not unblock")
		}
	}
	s.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.Copy(io.Discard, s); err != nil {
		t.Fatalf("peer after Close: %v, want io.EOF (nil from io.Copy)", err)
	}
}

// TestCloseWriteInGuest: CloseWrite half-closes: the peer reads the data
// then io.EOF, and can still answer.
func TestCloseWriteInGuest(t *testing.T) {
	guest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, s := localPair(t, ctx, 7487, nil)
	if _, err := c.Write([]byte("request")); err != nil {
		t.Fatal(err)
	}
	if err := c.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("x")); !errors.Is(err, syscall.ECONNRESET) || !errors.Is(err, rdma.ErrDisconnected) {
		t.Fatalf("Write after CloseWrite: %v, want ECONNRESET and ErrDisconnected", err)
	}
	s.SetReadDeadline(time.Now().Add(10 * time.Second))
	req, err := io.ReadAll(s)
	if err != nil || string(req) != "request" {
		t.Fatalf("server read %q, %v", req, err)
	}
	if _, err := s.Write([]byte("response")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := io.ReadAll(c)
	if err != nil || string(resp) != "response" {
		t.Fatalf("client read %q, %v", resp, err)
	}
}

// TestBadVersionInGuest: a REQ whose rs_conn_data version is 2 is
// rejected by the Listener with ErrVersion, and a REP with version 2
// fails Dial with ErrVersion (rsocket.c: rs_accept, rs_do_connect).
func TestBadVersionInGuest(t *testing.T) {
	guest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	bad := make([]byte, 40)
	bad[0], bad[1], bad[3], bad[15], bad[31] = 2, 2, 16, 2, 64
	backend := guestBackend()

	l, err := rsocket.Listen(localAddr+":7488", &rsocket.Options{Backend: backend})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	acceptErr := make(chan error, 1)
	go func() {
		c, err := l.AcceptConn(ctx)
		if err == nil {
			c.Close()
		}
		acceptErr <- err
	}()
	ep, err := rdmacm.Dial(ctx, localAddr+":7488", &rdmacm.EndpointOptions{Backend: backend, PrivateData: bad})
	if err == nil {
		ep.Close()
		t.Fatal("a version-2 REQ was accepted")
	}
	if err := <-acceptErr; !errors.Is(err, rsocket.ErrVersion) {
		t.Fatalf("accept of a version-2 REQ: %v", err)
	}
	t.Logf("dialer: %v", err)

	rl, err := rdmacm.Listen(localAddr+":7489", &rdmacm.EndpointOptions{Backend: backend, PrivateData: bad})
	if err != nil {
		t.Fatal(err)
	}
	defer rl.Close()
	go func() {
		ep, err := rl.Accept(ctx)
		if err == nil {
			<-ep.Done()
			ep.Close()
		}
	}()
	if c, err := rsocket.Dial(ctx, localAddr+":7489", &rsocket.Options{Backend: backend}); !errors.Is(err, rsocket.ErrVersion) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("dial to a version-2 REP: %v", err)
	}
}

// TestNoLeakInGuest: dial/close cycles leave no fd and no goroutine
// behind.
func TestNoLeakInGuest(t *testing.T) {
	guest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	opts := &rsocket.Options{Backend: guestBackend()}
	l, err := rsocket.Listen(localAddr+":7490", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				io.Copy(c, c)
				c.Close()
			}()
		}
	}()
	var tDial, tClose time.Duration
	cycle := func() {
		t0 := time.Now()
		c, err := rsocket.Dial(ctx, localAddr+":7490", opts)
		if err != nil {
			t.Fatal(err)
		}
		tDial += time.Since(t0)
		b := []byte("ping")
		if _, err := c.Write(b); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, b); err != nil {
			t.Fatal(err)
		}
		t0 = time.Now()
		c.Close()
		tClose += time.Since(t0)
	}
	cycle() // the shared CM channel and device stay open after the first
	time.Sleep(200 * time.Millisecond)
	fds, gs := countFDs(t), runtime.NumGoroutine()
	start := time.Now()
	cycles := leakCycles
	if guestBackend() == rdma.BackendUser && os.Getenv("RSOCKET_LEAK_CYCLES") == "" {
		cycles = 200 // the kernel run does the 1,000; this one keeps make vmtest short
	}
	for range cycles {
		cycle()
	}
	t.Logf("%d cycles in %v (dial %v, close %v in all)", cycles, time.Since(start), tDial, tClose)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) && (countFDs(t) > fds || runtime.NumGoroutine() > gs) {
		time.Sleep(50 * time.Millisecond)
	}
	if n, g := countFDs(t), runtime.NumGoroutine(); n > fds || g > gs {
		t.Fatalf("after %d cycles: %d fds (was %d), %d goroutines (was %d)", cycles, n, fds, g, gs)
	}
}

// leakCycles is 1,000 (the count); RSOCKET_LEAK_CYCLES changes it
// for a quick run by hand.
var leakCycles = func() int {
	if n, err := strconv.Atoi(os.Getenv("RSOCKET_LEAK_CYCLES")); err == nil {
		return n
	}
	return 1000
}()

func countFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestKilledPeerInGuest: the peer process is killed (SIGKILL) mid-stream,
// with keepalive on (1s): our blocked Read and Write end with io.EOF (the
// peer kernel's DREQ) or an error (the keepalive WRITE to the dead QP
// exhausts its retries) instead of hanging.
func TestKilledPeerInGuest(t *testing.T) {
	guest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if os.Getenv("RSOCKET_CAPTURE") != "" {
		capt, err := guest.Local().StartCapture(ctx, "killed.pcap", guest.CMFilter)
		if err != nil {
			t.Fatal(err)
		}
		defer capt.Stop(ctx)
	}
	srv := startHelper(t, ctx, "hold", guest.Peer().Addr+":7491", 0, 0, 0)
	defer srv.Stop(ctx)
	c, err := rsocket.Dial(ctx, guest.Peer().Addr+":7491", &rsocket.Options{Backend: guestBackend(), KeepAlive: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := srv.WaitOutput(ctx, "HOLDING"); err != nil {
		t.Fatal(err)
	}
	readErr := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 1))
		readErr <- err
	}()
	writeErr := make(chan error, 1)
	go func() {
		b := make([]byte, 65536)
		for {
			if _, err := c.Write(b); err != nil {
				writeErr <- err
				return
			}
		}
	}()
	time.Sleep(500 * time.Millisecond)
	if _, err := guest.Peer().Run(ctx, killHelpers()); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	limit := time.After(killedPeerLimit)
	for _, w := range []struct {
		name string
		ch   chan error
	}{{"read", readErr}, {"write", writeErr}} {
		select {
		case err := <-w.ch:
			if err == nil {
				t.Fatalf("%s after the peer was killed: no error", w.name)
			}
			if w.name == "write" && (!errors.Is(err, syscall.ECONNRESET) || !errors.Is(err, rdma.ErrDisconnected)) {
				t.Fatalf("write after the peer was killed: %v, want ECONNRESET and ErrDisconnected", err)
			}
			t.Logf("%s after %v: %v", w.name, time.Since(killed).Round(time.Millisecond), err)
		case <-limit:
			t.Fatalf("%s still blocked %v after the peer was killed", w.name, killedPeerLimit)
		}
	}
}

// killedPeerLimit bounds how long a dead peer may go unnoticed.
const killedPeerLimit = 60 * time.Second

// TestKeepaliveSentInGuest: with KeepAlive set, a zero-length RDMA WRITE
// goes out every period and completes (the peer sees nothing).
func TestKeepaliveSentInGuest(t *testing.T) {
	guest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, _ := localPair(t, ctx, 7495, &rsocket.Options{KeepAlive: 100 * time.Millisecond})
	time.Sleep(1100 * time.Millisecond)
	posted, limit := rsocket.CtrlCounts(c)
	t.Logf("after 1.1s: %d control messages posted, completions moved the limit to %d", posted, limit)
	if posted < 5 || limit != posted+4 {
		t.Fatalf("keepalives: %d posted, limit %d, want >= 5 and all completed (limit = posted + 4)", posted, limit)
	}
}

// killHelpers kills the test binary's helpers in guest b by their
// command name (busybox has no pkill; the kernel keeps 15 bytes of it).
func killHelpers() string {
	exe, _ := os.Executable()
	comm := filepath.Base(exe)
	comm = comm[:min(len(comm), 15)]
	return fmt.Sprintf(`for p in /proc/[0-9]*; do [ "$(cat $p/comm 2>/dev/null)" = %q ] && kill -9 ${p#/proc/}; done; true`, comm)
}

// BenchmarkPingPongInGuest is a 64-byte ping-pong between two Conns in
// guest a (loopback through rxe): latency and allocations per round trip.
func BenchmarkPingPongInGuest(b *testing.B) {
	guest.Require(b)
	ctx := context.Background()
	l, err := rsocket.Listen(localAddr+":7494", &rsocket.Options{Backend: guestBackend()})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := l.AcceptConn(ctx)
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 64)
		for {
			if _, err := io.ReadFull(c, buf); err != nil {
				return
			}
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	}()
	c, err := rsocket.Dial(ctx, localAddr+":7494", &rsocket.Options{Backend: guestBackend()})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, 64)
	c.SetDeadline(time.Now().Add(time.Hour)) // deadlines armed: they must cost nothing per call
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Write(buf); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			b.Fatal(err)
		}
	}
}
