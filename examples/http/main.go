// Command http serves and fetches HTTP over rsockets: net/http on an
// rsocket.Listener and an http.Transport dialing with rsocket.Dialer,
// nothing else changed. The client GETs a body and POSTs one, and both
// ends check every byte.
//
//	http -s -a 192.0.2.1                  # server: /body and /upload
//	http -a 192.0.2.1 -size 67108864      # client
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-rdma/rdmacm/rdma"
	"github.com/go-rdma/rdmacm/rsocket"
)

var (
	server   = flag.Bool("s", false, "server")
	addr     = flag.String("a", "192.0.2.1", "server address")
	port     = flag.String("p", "8080", "port")
	size     = flag.Int64("size", 64<<20, "client: bytes to GET")
	upload   = flag.Int64("upload", 16<<20, "client: bytes to POST")
	requests = flag.Int("n", 2, "server: exit after this many requests (0: never)")
	backend  = flag.String("backend", "", "CM backend: auto, kernel, user")
)

// body is the data both ends agree on: ChaCha8 from a seed, so the
// client can check a body without a copy of it.
func body(seed byte, n int64) io.Reader {
	var key [32]byte
	key[0] = seed
	return io.LimitReader(rand.NewChaCha8(key), n)
}

func main() {
	flag.Parse()
	opts := rsocket.Options{Backend: rdma.Backend(*backend)}
	if *server {
		if err := serve(net.JoinHostPort(*addr, *port), &opts); err != nil {
			log.Fatal(err)
		}
		return
	}
	if err := fetch("http://"+net.JoinHostPort(*addr, *port), &opts); err != nil {
		log.Fatal(err)
	}
}

func serve(address string, opts *rsocket.Options) error {
	l, err := rsocket.Listen(address, opts)
	if err != nil {
		return err
	}
	srv := &http.Server{}
	var served atomic.Int64
	shut := make(chan error, 1)
	done := func() {
		if n := served.Add(1); *requests > 0 && n == int64(*requests) {
			go func() { shut <- srv.Shutdown(context.Background()) }()
		}
	}
	mux := http.NewServeMux()
	// GET /body?n=BYTES: n bytes of the shared stream.
	mux.HandleFunc("GET /body", func(w http.ResponseWriter, r *http.Request) {
		defer done()
		n, err := strconv.ParseInt(r.URL.Query().Get("n"), 10, 64)
		if err != nil || n < 0 {
			http.Error(w, "n: want a byte count", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
		sent, err := io.CopyBuffer(w, body(1, n), make([]byte, 1<<20))
		fmt.Printf("server: GET /body from %s: %d bytes, %v\n", r.RemoteAddr, sent, errOK(err))
	})
	// POST /upload: the body must be the shared stream; the reply is its
	// length and sha256.
	mux.HandleFunc("POST /upload", func(w http.ResponseWriter, r *http.Request) {
		defer done()
		n, diff, err := compare(r.Body, 2)
		if err == nil && diff >= 0 {
			err = fmt.Errorf("byte %d differs", diff)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			fmt.Printf("server: POST /upload from %s: %v\n", r.RemoteAddr, err)
			return
		}
		sum := sha256.New()
		io.Copy(sum, body(2, n))
		fmt.Fprintf(w, "%d %s\n", n, hex.EncodeToString(sum.Sum(nil)))
		fmt.Printf("server: POST /upload from %s: %d bytes, identical\n", r.RemoteAddr, n)
	})
	srv.Handler = mux
	fmt.Printf("listening on %s\n", l.Addr())
	if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	// Serve returns as Shutdown begins; the last reply is still being
	// written and its connection closed (Close waits for the peer to have
	// it). Exiting now would destroy the QP under it.
	return <-shut
}

func errOK(err error) string {
	if err != nil {
		return err.Error()
	}
	return "ok"
}

// compare reads r to its end against the stream of seed and returns the
// length read and the first differing offset (-1: none).
func compare(r io.Reader, seed byte) (n int64, diff int64, err error) {
	want := body(seed, 1<<62)
	got, exp := make([]byte, 1<<20), make([]byte, 1<<20)
	for {
		k, rerr := r.Read(got)
		if k > 0 {
			io.ReadFull(want, exp[:k])
			if i := firstDiff(got[:k], exp[:k]); i >= 0 {
				return n + int64(i), n + int64(i), nil
			}
			n += int64(k)
		}
		if rerr == io.EOF {
			return n, -1, nil
		}
		if rerr != nil {
			return n, -1, rerr
		}
	}
}

func firstDiff(a, b []byte) int {
	if bytes.Equal(a, b) {
		return -1
	}
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

func fetch(base string, opts *rsocket.Options) error {
	// The one change to a net/http client: dial with rsockets.
	client := &http.Client{Transport: &http.Transport{
		DialContext: (&rsocket.Dialer{Options: *opts}).DialContext,
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/body?n="+strconv.FormatInt(*size, 10), nil)
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	n, diff, err := compare(resp.Body, 1)
	resp.Body.Close()
	elapsed := time.Since(start)
	switch {
	case err != nil:
		return fmt.Errorf("GET /body: %v after %d bytes", err, n)
	case diff >= 0:
		return fmt.Errorf("GET /body: byte %d differs", diff)
	case n != *size:
		return fmt.Errorf("GET /body: %d bytes, want %d", n, *size)
	}
	fmt.Printf("client: GET /body: %d bytes, identical, %.1f MB/s\n", n, float64(n)/elapsed.Seconds()/1e6)

	req, _ = http.NewRequestWithContext(ctx, http.MethodPost, base+"/upload", body(2, *upload))
	req.ContentLength = *upload
	start = time.Now()
	resp, err = client.Do(req)
	if err != nil {
		return err
	}
	reply, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST /upload: %s %v: %s", resp.Status, err, reply)
	}
	sum := sha256.New()
	io.Copy(sum, body(2, *upload))
	if want := fmt.Sprintf("%d %s\n", *upload, hex.EncodeToString(sum.Sum(nil))); string(reply) != want {
		return fmt.Errorf("POST /upload: server says %q, want %q", reply, want)
	}
	fmt.Printf("client: POST /upload: %d bytes, identical, %.1f MB/s\n", *upload, float64(*upload)/time.Since(start).Seconds()/1e6)
	return nil
}
