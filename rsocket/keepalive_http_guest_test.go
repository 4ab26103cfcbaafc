//go:build linux

package rsocket_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/internal/vmtest/guest"
	"github.com/go-rdma/rdmacm/rdma"
	"github.com/go-rdma/rdmacm/rsocket"
)

// TestHTTPKeepAliveInGuest: net/http's pattern on one keep-alive
// connection, many times over. While a handler runs, the server reads a
// byte in the background and aborts that read by moving its deadline into
// the past when the handler ends; the client's read waits for the next
// response while its write sends the next body. GETs and POSTs of growing
// sizes alternate, over buffers small enough that credits and the
// receive buffer's updates run out in every request. Both ends in guest
// a, with each wait, then the client in guest b on the kernel CM (the
// server on our engine under vmexec -nocm-a). A request that does not
// finish in time fails the test with the stacks of every goroutine.
func TestHTTPKeepAliveInGuest(t *testing.T) {
	guest.Require(t)
	const rounds = 60
	for _, tc := range []struct {
		name       string
		port       int
		threadWait bool
		peer       bool
	}{
		{"netpoll", 7507, false, false},
		{"threadwait", 7508, true, false},
		{"client-in-b", 7509, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := httpOpts(guestBackend(), tc.threadWait)
			addr := fmt.Sprintf("%s:%d", localAddr, tc.port)
			stop := serveHTTP(t, addr, opts)
			defer stop()
			start := time.Now()
			var err error
			if tc.peer {
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
				defer cancel()
				p := startHelper(t, ctx, "httpclient", addr, 0, rounds, 0)
				r, werr := p.Wait(ctx)
				if werr != nil || r.ExitCode != 0 {
					err = fmt.Errorf("client in b: %v, exit %d\n%s\n%s", werr, r.ExitCode, r.Stdout, r.Stderr)
				}
			} else {
				err = httpClientLoop(addr, opts, rounds)
			}
			if err != nil {
				var stacks strings.Builder
				pprof.Lookup("goroutine").WriteTo(&stacks, 2)
				t.Fatalf("%v\nthis process's goroutines:\n%s", err, stacks.String())
			}
			t.Logf("%d requests on one connection in %v", rounds, time.Since(start).Round(time.Millisecond))
		})
	}
}

// httpOpts: 16 KiB buffers, so that every request runs out of credits.
func httpOpts(b rdma.Backend, threadWait bool) rsocket.Options {
	return rsocket.Options{Backend: b, RecvBuffer: 16 << 10, SendBuffer: 16 << 10, ThreadWait: threadWait}
}

// httpPattern is the body of n bytes both ends expect.
func httpPattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + n)
	}
	return b
}

// serveHTTP serves GET /get?n= (n bytes) and POST /post (checked, answered
// with its length) on addr until stop.
func serveHTTP(t *testing.T, addr string, opts rsocket.Options) (stop func()) {
	t.Helper()
	l, err := rsocket.Listen(addr, &opts)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /get", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		w.Header().Set("Content-Length", strconv.Itoa(n))
		w.Write(httpPattern(n))
	})
	mux.HandleFunc("POST /post", func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil || !bytes.Equal(b, httpPattern(len(b))) {
			http.Error(w, fmt.Sprintf("body of %d bytes differs, %v", len(b), err), http.StatusBadRequest)
			return
		}
		fmt.Fprint(w, len(b))
	})
	srv := &http.Server{Handler: mux}
	go srv.Serve(l)
	return func() { srv.Close() }
}

// httpClientLoop sends rounds requests to serveHTTP's server, GETs and
// POSTs of 1 B to 192 KiB in turn, each within 20 s, on one connection.
func httpClientLoop(addr string, opts rsocket.Options, rounds int) error {
	dials := 0
	tr := &http.Transport{DialContext: func(ctx context.Context, network, a string) (net.Conn, error) {
		dials++
		return (&rsocket.Dialer{Options: opts}).DialContext(ctx, network, a)
	}}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	for i := range rounds {
		n := 1 + (i*4099)%(192<<10)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		var err error
		if i%2 == 0 {
			err = httpExchange(ctx, client, fmt.Sprintf("http://%s/get?n=%d", addr, n), nil, httpPattern(n))
		} else {
			err = httpExchange(ctx, client, "http://"+addr+"/post", httpPattern(n), []byte(strconv.Itoa(n)))
		}
		cancel()
		if err != nil {
			return fmt.Errorf("request %d (%d bytes): %w", i, n, err)
		}
	}
	if dials != 1 {
		return fmt.Errorf("%d connections dialled, want 1 kept alive", dials)
	}
	return nil
}

// httpExchange sends one request, a POST of body when body is not nil
// and a GET otherwise, and checks that the answer is 200 with want as
// its body.
func httpExchange(ctx context.Context, c *http.Client, url string, body, want []byte) error {
	method, rd := http.MethodGet, io.Reader(nil)
	if body != nil {
		method, rd = http.MethodPost, bytes.NewReader(body)
	}
	req, _ := http.NewRequestWithContext(ctx, method, url, rd)
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || !bytes.Equal(got, want) {
		return fmt.Errorf("%s: %s, %d bytes (%.40q), not the %d expected", method, resp.Status, len(got), got, len(want))
	}
	return nil
}
