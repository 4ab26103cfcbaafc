//go:build linux

package rsocket_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/internal/vmtest/guest"
	"github.com/go-rdma/rdmacm/rsocket"
)

// TestCloseDeliversInGuest: what was written just before Close reaches
// the peer, followed by io.EOF, even when the wire loses it. The peer's
// address is gone for longer than the QP's ACK timeout (about 2 s with
// the CM's values), so packets to it are dropped and the data arrives
// only by a retransmission after Close began. A Close that gave up on
// its sends sooner would destroy the QP with them unacknowledged, and
// its one DREQ would be lost as well: the peer would wait forever. Here
// Close takes its whole bound: once its address is back, b's QP takes
// the data but sends no ACK (rxe's counters show nothing leave b), an
// effect of the address flip that a lossy wire does not have.
func TestCloseDeliversInGuest(t *testing.T) {
	guest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	srv := startHelper(t, ctx, "hold", guest.Peer().Addr+":7498", 0, 0, 0)
	defer srv.Stop(ctx)
	c, err := rsocket.Dial(ctx, guest.Peer().Addr+":7498", &rsocket.Options{Backend: guestBackend()})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.WaitOutput(ctx, "HOLDING"); err != nil {
		t.Fatal(err)
	}
	addr := guest.Peer().Addr + "/24 dev eth0"
	if r, err := guest.Peer().Run(ctx, "ip addr del "+addr); err != nil || r.ExitCode != 0 {
		c.Close()
		t.Fatalf("address removal in b: %v %+v", err, r)
	}
	up, err := guest.Peer().Start(ctx, "sleep 4; ip addr add "+addr)
	if err != nil {
		c.Close()
		t.Fatal(err)
	}
	const size = 32 << 10 // within the peer's first grant: Write does not wait for credits
	if n, err := c.Write(make([]byte, size)); err != nil || n != size {
		t.Fatalf("write: %d, %v", n, err)
	}
	start := time.Now()
	cerr := c.Close()
	t.Logf("Close returned after %v: %v", time.Since(start).Round(time.Millisecond), cerr)
	if r, err := up.Wait(ctx); err != nil || r.ExitCode != 0 {
		t.Fatalf("address back in b: %v %+v", err, r)
	}
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	r, err := srv.Wait(wctx)
	if err != nil {
		t.Fatalf("the peer never read the data and its end: %v", err)
	}
	if r.ExitCode != 0 || !strings.Contains(r.Stdout, "HELD 32768\n") {
		t.Fatalf("peer: exit %d\n%s\n%s", r.ExitCode, r.Stdout, r.Stderr)
	}
}
