//go:build linux

package rdmacm_test

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm"
	"github.com/go-rdma/rdmacm/cm"
	"github.com/go-rdma/rdmacm/internal/vmtest/guest"
)

// TestMulticastInGuest joins groups through JoinMulticast on the guest's
// CM (the kernel's, or our engine with vmexec -nocm-a) against
// librdmacm's mckey in guest b: mckey sends to a group the endpoint
// receives, and a send-only endpoint sends to a group mckey receives. A
// unicast address is refused.
func TestMulticastInGuest(t *testing.T) {
	guest.Require(t)
	backend := guestBackend()
	t.Logf("backend %s", backend)
	peer, local := guest.Peer(), guest.Local()
	opts := func(sendOnly bool) *rdmacm.MulticastOptions {
		return &rdmacm.MulticastOptions{DatagramOptions: rdmacm.DatagramOptions{Backend: backend}, Bind: local.Addr, SendOnly: sendOnly}
	}
	const n, size = 5, 64

	t.Run("unicast", func(t *testing.T) {
		_, err := rdmacm.JoinMulticast(context.Background(), peer.Addr, opts(false))
		t.Logf("join %s: %v", peer.Addr, err)
		if !errors.Is(err, rdmacm.ErrInvalidArgument) {
			t.Fatalf("got %v, want ErrInvalidArgument", err)
		}
	})

	t.Run("receive-from-mckey", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		const group = "239.3.3.1"
		ep, err := rdmacm.JoinMulticast(ctx, group, opts(false))
		if err != nil {
			t.Fatal(err)
		}
		defer ep.Close()
		if p := ep.Peer(); p.QPN != 0xffffff || p.QKey != cm.UDPQKey || p.Addr != netip.MustParseAddr(group) {
			t.Errorf("group peer %v", p)
		}
		p, err := peer.Start(ctx, "mckey -s -m "+group+" -b "+peer.Addr+" -C 5 -S 64")
		if err != nil {
			t.Fatal(err)
		}
		defer p.Stop(context.Background())
		buf := make([]byte, 2*size)
		for i := range n {
			d, err := ep.Recv(ctx, buf)
			if err != nil {
				t.Fatalf("datagram %d: %v\nmckey:\n%s%s", i, err, p.Stdout(), p.Stderr())
			}
			// mckey sends its QP number as immediate data.
			if d.N != size || !d.HasImm || d.From.Addr.String() != peer.Addr || d.Imm != d.From.QPN {
				t.Errorf("datagram %d: %+v from %v", i, d, d.From)
			}
		}
		if res, err := p.Wait(ctx); err != nil || !strings.Contains(res.Stdout, "return status 0") {
			t.Errorf("mckey: %v\n%+v", err, res)
		}
	})

	t.Run("send-to-mckey", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		const group = "239.3.3.2"
		p, err := peer.Start(ctx, "mckey -m "+group+" -b "+peer.Addr+" -C 5 -S 64")
		if err != nil {
			t.Fatal(err)
		}
		defer p.Stop(context.Background())
		time.Sleep(1500 * time.Millisecond) // mckey joins and posts its receives
		ep, err := rdmacm.JoinMulticast(ctx, group, opts(true))
		if err != nil {
			t.Fatal(err)
		}
		defer ep.Close()
		msg := make([]byte, size)
		for range n {
			if err := ep.Send(ctx, ep.Peer(), msg); err != nil {
				t.Fatal(err)
			}
		}
		if err := ep.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		res, err := p.Wait(ctx)
		if err != nil || !strings.Contains(res.Stdout, "data transfers complete") || !strings.Contains(res.Stdout, "return status 0") {
			t.Fatalf("mckey: %v\n%+v", err, res)
		}
	})
}
