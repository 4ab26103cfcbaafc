//go:build linux

package rdmacm_test

// The guests have no C compiler: make vmtest runs go generate on the host
// first, and vmexec copies testdata/ (with the binary) into the share.
//go:generate mkdir -p testdata/bin
//go:generate gcc -O2 -Wall -Werror -o testdata/bin/atomic_peer testdata/atomic_peer.c -lrdmacm -libverbs

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm"
	"github.com/go-rdma/rdmacm/internal/vmtest/guest"
)

// atomicPeer is the C peer's path, the same in both guests (the share).
func atomicPeer(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs("testdata/bin/atomic_peer")
	if err == nil {
		_, err = os.Stat(p)
	}
	if err != nil {
		t.Fatalf("the C atomic peer is missing (go generate . on the host builds it; make vmtest does): %v", err)
	}
	return p
}

// checkOlds checks the values fetch-and-add returned: n distinct values,
// exactly 0..n-1, as n increments of one counter from 0 must return.
func checkOlds(t *testing.T, olds []uint64, n int) {
	t.Helper()
	if len(olds) != n {
		t.Fatalf("%d values returned, want %d", len(olds), n)
	}
	s := slices.Clone(olds)
	slices.Sort(s)
	for i, v := range s {
		if v != uint64(i) {
			t.Fatalf("returned values are not 0..%d, each once: sorted, position %d holds %d (a repeat or a gap)", n-1, i, v)
		}
	}
}

// TestAtomicCounterInGuest: N endpoints in guest a fetch-and-add 1, K
// times each, to one counter of the C peer in guest b (librdmacm and
// libibverbs); the counter ends at N*K and the returned values are
// 0..N*K-1, each once. One endpoint then compare-and-swaps the peer's
// second word, missing then hitting, and the peer sees the swap.
func TestAtomicCounterInGuest(t *testing.T) {
	guest.Require(t)
	const n, k = 4, 25
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	backend := guestBackend()
	peer := guest.Peer()
	srv, err := peer.Start(ctx, fmt.Sprintf("%s -s -a %s -p 7461 -n %d", atomicPeer(t), peer.Addr, n))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop(context.Background())
	if err := srv.WaitOutput(ctx, "listening"); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var olds []uint64
	eps := make([]*rdmacm.Endpoint, n)
	errs := make(chan error, n)
	for c := range n {
		ep, err := rdmacm.Dial(ctx, peer.Addr+":7461", &rdmacm.EndpointOptions{Backend: backend})
		if err != nil {
			t.Fatal(err)
		}
		eps[c] = ep
		defer ep.Close()
		go func() {
			errs <- func() error {
				dst, _, err := rdmacm.DecodeRemoteBuf(ep.PrivateData())
				if err != nil {
					return err
				}
				m, err := ep.RegMsgs(8 * k)
				if err != nil {
					return err
				}
				defer m.Close()
				for i := range k {
					if err := ep.PostFetchAdd(m, 8*i, dst, 1); err != nil {
						return err
					}
					wc, err := ep.WaitSend(ctx)
					if err != nil {
						return err
					}
					if wc.Opcode != rdmacm.WCFetchAdd || wc.ByteLen != 8 || wc.ID != uint64(8*i) {
						return fmt.Errorf("fetch-and-add completion %+v", wc)
					}
					mu.Lock()
					olds = append(olds, binary.NativeEndian.Uint64(m.Bytes()[8*i:]))
					mu.Unlock()
				}
				return nil
			}()
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	checkOlds(t, olds, n*k)

	// Compare-and-swap on word 1 (1000): a miss, then a hit.
	ep := eps[0]
	dst, _, _ := rdmacm.DecodeRemoteBuf(ep.PrivateData())
	word1, ok := dst.Slice(8, 8)
	if !ok {
		t.Fatalf("remote buffer %v has no second word", dst)
	}
	m, err := ep.RegMsgs(16)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for i, c := range []struct{ compare, swap, want uint64 }{{1, 7, 1000}, {1000, 3000, 1000}} {
		if err := ep.PostCompareSwap(m, 8*i, word1, c.compare, c.swap); err != nil {
			t.Fatal(err)
		}
		wc, err := ep.WaitSend(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := binary.NativeEndian.Uint64(m.Bytes()[8*i:]); wc.Opcode != rdmacm.WCCompSwap || wc.ByteLen != 8 || got != c.want {
			t.Errorf("compare-and-swap %d: opcode %v, %d bytes, returned %d, want %d", i, wc.Opcode, wc.ByteLen, got, c.want)
		}
	}
	// Refused before posting: a misaligned or short remote target.
	if mis, _ := dst.Slice(4, 8); !errors.Is(ep.PostFetchAdd(m, 0, mis, 1), rdmacm.ErrInvalidArgument) {
		t.Error("fetch-and-add at a misaligned remote address was not refused")
	}
	if short, _ := dst.Slice(0, 4); !errors.Is(ep.PostFetchAdd(m, 0, short, 1), rdmacm.ErrInvalidArgument) {
		t.Error("fetch-and-add on a 4-byte remote buffer was not refused")
	}
	if err := ep.PostFetchAdd(m, 12, dst, 1); !errors.Is(err, rdmacm.ErrInvalidArgument) {
		t.Errorf("result past the local MR: %v", err)
	}

	for _, ep := range eps {
		ep.Close()
	}
	r, err := srv.Wait(ctx)
	if err != nil || r == nil {
		t.Fatalf("C peer: %v (%+v)", err, r)
	}
	want := fmt.Sprintf("counter %d word1 3000", n*k)
	if !strings.Contains(r.Stdout, want) {
		t.Fatalf("C peer printed %q, want %q", r.Stdout, want)
	}
}

// TestAtomicFromCInGuest: two C clients in guest b (librdmacm and
// libibverbs) fetch-and-add 1, K times each, to a counter an endpoint
// listener in guest a registered with RegAtomic and sent in its REP;
// the counter ends at 2*K with every returned value once, and of their
// two compare-and-swaps on the second word exactly one hits.
func TestAtomicFromCInGuest(t *testing.T) {
	guest.Require(t)
	const k = 25
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	backend := guestBackend()
	local := guest.Local()
	// The REP carries the words' RemoteBuf, known once the listener has
	// registered them.
	var rep atomic.Pointer[[]byte]
	opts := &rdmacm.EndpointOptions{Backend: backend, Setup: func(*rdmacm.Endpoint) (rdmacm.ConnSetup, error) {
		return rdmacm.ConnSetup{PrivateData: *rep.Load()}, nil
	}}
	l, err := rdmacm.Listen(local.Addr+":7462", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	words, err := l.RegAtomic(16)
	if err != nil {
		t.Fatal(err)
	}
	defer words.Close()
	binary.NativeEndian.PutUint64(words.Bytes()[0:], 0)
	binary.NativeEndian.PutUint64(words.Bytes()[8:], 1000)
	b, _ := words.Remote().MarshalBinary()
	rep.Store(&b)

	done := make(chan error, 2)
	go func() {
		for range 2 {
			ep, err := l.Accept(ctx)
			if err != nil {
				done <- err
				return
			}
			go func() {
				defer ep.Close()
				_, err := ep.WaitRecv(ctx) // until the client disconnects
				switch {
				case err == io.EOF:
					err = nil
				case err == nil:
					err = errors.New("a message from a client that sends none")
				}
				done <- err
			}()
		}
	}()
	peer := guest.Peer()
	cli := fmt.Sprintf("%s -c -a %s -p 7462 -k %d", atomicPeer(t), local.Addr, k)
	r, err := peer.Run(ctx, fmt.Sprintf("%s >/tmp/atomic.1 2>&1 & a=$!; %s >/tmp/atomic.2 2>&1 & b=$!; wait $a; x=$?; wait $b; y=$?; cat /tmp/atomic.1 /tmp/atomic.2; [ $x = 0 ] && [ $y = 0 ]", cli, cli))
	if err != nil || r == nil {
		t.Fatalf("C clients: %v (%+v)", err, r)
	}
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	var olds []uint64
	hits := 0
	for _, line := range strings.Split(r.Stdout, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 2 && f[0] == "old":
			v, err := strconv.ParseUint(f[1], 10, 64)
			if err != nil {
				t.Fatal(line)
			}
			olds = append(olds, v)
		case len(f) == 4 && f[0] == "cas":
			if f[2] == "1000" {
				hits++
			}
			if f[3] != strconv.Itoa(2000+k) {
				t.Errorf("word 1 after a client's compare-and-swap: %s, want %d", f[3], 2000+k)
			}
		}
	}
	checkOlds(t, olds, 2*k)
	if got := binary.NativeEndian.Uint64(words.Bytes()); got != 2*k {
		t.Errorf("counter %d, want %d", got, 2*k)
	}
	if got := binary.NativeEndian.Uint64(words.Bytes()[8:]); hits != 1 || got != 2000+k {
		t.Errorf("%d compare-and-swaps hit, word 1 is %d; want 1 and %d\n%s", hits, got, 2000+k, r.Stdout)
	}
}
