//go:build linux

package rdmacm_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm"
	"github.com/go-rdma/rdmacm/cm"
	"github.com/go-rdma/rdmacm/internal/udaddy"
	"github.com/go-rdma/rdmacm/internal/unix"
	"github.com/go-rdma/rdmacm/internal/vmtest/guest"
	"github.com/go-rdma/rdmacm/mad"
)

// udaddy's lines for a run without errors.
const (
	udaddyServerLines = "udaddy: starting server\nreceiving data transfers\nsending replies\ndata transfers complete\ntest complete\nreturn status 0\n"
	udaddyClientLines = "udaddy: starting client\nudaddy: connecting\ninitiating data transfers\nreceiving data transfers\ndata transfers complete\ntest complete\nreturn status 0\n"
)

// TestDatagramInGuest runs the datagram endpoints on the guest's CM (the
// kernel's, or our engine with vmexec -nocm-a): the example over the
// local device, a SIDR request to a port of the peer where nothing
// listens, a leak check, and the udaddy twin against librdmacm's udaddy
// in guest b in both roles.
func TestDatagramInGuest(t *testing.T) {
	guest.Require(t)
	backend := guestBackend()
	t.Logf("backend %s", backend)
	exampleOptions.Backend = backend
	peer := guest.Peer()

	t.Run("example", func(t *testing.T) {
		got := guest.CaptureStdout(t, Example_datagram)
		want := `client: the service's Q_Key is 0x1234567
client: "HELLO" from the service's QP: true
client: "DATAGRAM" from the service's QP: true
client: one byte over the MTU refused: true
`
		if got != want {
			t.Fatalf("output:\n%s\nwant:\n%s", got, want)
		}
	})

	t.Run("sidr-status", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := rdmacm.DialDatagram(ctx, peer.Addr+":7199", &rdmacm.DatagramOptions{Backend: backend})
		t.Logf("dial a port without a listener: %v", err)
		var se *cm.SIDRError
		if !errors.Is(err, rdmacm.ErrRejected) || !errors.As(err, &se) || se.Status != mad.SIDRUnsupported || !errors.Is(err, unix.ECONNREFUSED) {
			t.Fatalf("got %v, want a *cm.SIDRError with status unsupported service matching ErrRejected and ECONNREFUSED", err)
		}
	})

	t.Run("rejected", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var seen rdmacm.DatagramRequest
		srv, err := rdmacm.ListenDatagram(exampleHost+":7479", &rdmacm.DatagramOptions{Backend: backend,
			OnRequest: func(r rdmacm.DatagramRequest) error { seen = r; return errors.New("not you") }})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		_, err = rdmacm.DialDatagram(ctx, exampleHost+":7479", &rdmacm.DatagramOptions{Backend: backend, PrivateData: []byte("let me in")})
		t.Logf("dial a listener that refuses: %v (request from %v to %v, %q)", err, seen.From, seen.To, bytes.TrimRight(seen.PrivateData, "\x00"))
		var se *cm.SIDRError
		if !errors.Is(err, rdmacm.ErrRejected) || !errors.As(err, &se) || se.Status != mad.SIDRReject {
			t.Fatalf("got %v, want a *cm.SIDRError with status REJECT", err)
		}
		if !bytes.HasPrefix(seen.PrivateData, []byte("let me in")) || seen.To.Port() != 7479 || seen.From.Addr().String() != exampleHost {
			t.Errorf("OnRequest saw %+v", seen)
		}
	})

	t.Run("oversize", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// Refused before the SIDR request leaves.
		_, err := rdmacm.DialDatagram(ctx, exampleHost+":7477", &rdmacm.DatagramOptions{Backend: backend, MaxMessage: 1 << 20})
		t.Logf("dial with MaxMessage 1 MiB: %v", err)
		if !errors.Is(err, rdmacm.ErrInvalidArgument) || !strings.Contains(err.Error(), "path MTU") {
			t.Fatalf("got %v, want ErrInvalidArgument naming the path MTU", err)
		}
	})

	t.Run("leaks", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cycle := func() {
			srv, err := rdmacm.ListenDatagram(exampleHost+":7478", &rdmacm.DatagramOptions{Backend: backend})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			cli, err := rdmacm.DialDatagram(ctx, exampleHost+":7478", &rdmacm.DatagramOptions{Backend: backend})
			if err != nil {
				t.Fatal(err)
			}
			defer cli.Close()
			if err := cli.Send(ctx, cli.Peer(), []byte("x")); err != nil {
				t.Fatal(err)
			}
			if _, err := srv.Recv(ctx, make([]byte, 8)); err != nil {
				t.Fatal(err)
			}
			if _, err := rdmacm.DialDatagram(ctx, peer.Addr+":7199", &rdmacm.DatagramOptions{Backend: backend}); !errors.Is(err, rdmacm.ErrRejected) {
				t.Fatalf("dial a port without a listener: %v", err)
			}
		}
		cycle() // the channel and the device context stay open between endpoints
		fds, gs := openFDs(t), runtime.NumGoroutine()
		for range 10 {
			cycle()
		}
		time.Sleep(100 * time.Millisecond)
		fds2, gs2 := openFDs(t), runtime.NumGoroutine()
		t.Logf("fds %d → %d, goroutines %d → %d", fds, fds2, gs, gs2)
		if fds2 > fds || gs2 > gs+2 {
			t.Fatalf("10 cycles left fds %d → %d, goroutines %d → %d", fds, fds2, gs, gs2)
		}
	})

	t.Run("udaddy-c-server", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		srv, err := peer.Start(ctx, "udaddy -C 10 -S 100")
		if err != nil {
			t.Fatal(err)
		}
		waitListen(t, ctx, peer, udaddy.Port)
		cfg, err := udaddy.Parse([]string{"-s", peer.Addr, "-b", guest.Local().Addr, "-C", "10", "-S", "100", "-backend", string(backend)}, os.Stderr)
		if err != nil {
			t.Fatal(err)
		}
		var out, errOut bytes.Buffer
		ret := udaddy.Run(ctx, cfg, &out, &errOut)
		r, werr := srv.Wait(ctx)
		t.Logf("Go client (a) returned %d:\n%s%s", ret, out.String(), errOut.String())
		if r == nil {
			t.Fatalf("udaddy server: %v", werr)
		}
		t.Logf("udaddy server (b) exit %d:\n%s%s", r.ExitCode, r.Stdout, r.Stderr)
		if ret != 0 || out.String() != udaddyClientLines {
			t.Errorf("Go client: status %d, lines:\n%s\nwant:\n%s", ret, out.String(), udaddyClientLines)
		}
		if r.ExitCode != 0 || r.Stdout != udaddyServerLines {
			t.Errorf("udaddy server: exit %d, lines:\n%s\nwant:\n%s", r.ExitCode, r.Stdout, udaddyServerLines)
		}
	})

	t.Run("udaddy-go-server", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cfg, err := udaddy.Parse([]string{"-c", "2", "-C", "10", "-S", "100", "-backend", string(backend)}, os.Stderr)
		if err != nil {
			t.Fatal(err)
		}
		var out, errOut bytes.Buffer
		done := make(chan int, 1)
		go func() { done <- udaddy.Run(ctx, cfg, &out, &errOut) }()
		time.Sleep(200 * time.Millisecond) // ListenDatagram has bound and listens by then
		r, err := peer.Run(ctx, "udaddy -s "+guest.Local().Addr+" -c 2 -C 10 -S 100")
		if r == nil {
			t.Fatalf("udaddy client: %v", err)
		}
		t.Logf("udaddy client (b) exit %d:\n%s%s", r.ExitCode, r.Stdout, r.Stderr)
		var ret int
		select {
		case ret = <-done:
		case <-ctx.Done():
			t.Fatalf("Go server did not finish; so far:\n%s%s", out.String(), errOut.String())
		}
		t.Logf("Go server (a) returned %d:\n%s%s", ret, out.String(), errOut.String())
		if ret != 0 || out.String() != udaddyServerLines {
			t.Errorf("Go server: status %d, lines:\n%s\nwant:\n%s", ret, out.String(), udaddyServerLines)
		}
		if r.ExitCode != 0 || r.Stdout != udaddyClientLines {
			t.Errorf("udaddy client: exit %d, lines:\n%s\nwant:\n%s", r.ExitCode, r.Stdout, udaddyClientLines)
		}
	})
}

// waitListen waits until the kernel CM of m lists a listener on port.
func waitListen(t *testing.T, ctx context.Context, m *guest.Machine, port string) {
	t.Helper()
	want := regexp.MustCompile(`state LISTEN .*src-addr \S+:` + port + ` `)
	for {
		r, err := m.Run(ctx, "rdma resource show cm_id")
		if err == nil && want.MatchString(r.Stdout) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("guest %s: no listener on port %s", m.Name, port)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func openFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}
