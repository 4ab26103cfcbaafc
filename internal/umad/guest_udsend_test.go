//go:build linux

package umad

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/go-rdma/rdmacm/cm/engine"
	"github.com/go-rdma/rdmacm/internal/vmtest"
	"github.com/go-rdma/rdmacm/internal/vmtest/guest"
	"github.com/go-rdma/rdmacm/mad"
	"github.com/go-rdma/rdmacm/uverbs"
)

// TestGuestUDSendAgainstKernelCM: the engine in guest a (no ib_cm) sends
// its MADs from a UD QP of its own (UDSend) and still receives through
// umad. Guest b's kernel CM answers them at our QP 1 in both roles: our
// REQ gets rping -s's REP, rping -c's REQ gets our REP and then its RTU,
// and our DREQs their DREPs. On the wire our MADs leave from the UD QP to
// QP 1 with the GSI Q_Key. One AH serves a destination until ahTTL, then
// a new one resolves the MAC again.
func TestGuestUDSendAgainstKernelCM(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	needNoKernelCM(t, ctx)
	dev, err := uverbs.DefaultDiscovery.Device("rxe0")
	if err != nil {
		t.Fatal(err)
	}
	var ud *UDSend
	g := startGuestCM(t, ctx, guestOpts{wrap: func(tr Transport) Transport {
		if ud, err = NewUDSend(tr, dev, 1); err != nil {
			t.Fatal(err)
		}
		return ud
	}})
	capture, err := guest.Local().StartCapture(ctx, "umad-udsend.pcap", "")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // tcpdump up

	// Active: our REQ and RTU, rping -s's REP.
	srv, err := guest.Peer().Start(ctx, "rping -s -v -a "+guest.Peer().Addr+" -p 7176 -C 1")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // rping listening
	id, _ := g.connect(t, ctx, 41001, 7176, 0x1236)
	g.do(t, func(e *engine.Engine, now time.Time) error { return e.Establish(now, id, nil) })
	time.Sleep(time.Second)
	g.disconnect(t, ctx, id)
	if res, _ := srv.Stop(ctx); res != nil {
		t.Logf("rping -s on %s: %s%s", guest.Peer().Name, res.Stdout, res.Stderr)
	}
	if n := ud.AHs.Load(); n != 1 {
		t.Errorf("%d AHs for one destination within %v", n, ahTTL)
	}

	// Passive, after the AH expired: rping -c's REQ, our REP, its RTU.
	time.Sleep(ahTTL)
	g.listen(t, 7177)
	cli, err := guest.Peer().Start(ctx, "rping -c -v -a "+guest.Local().Addr+" -p 7177 -C 1")
	if err != nil {
		t.Fatal(err)
	}
	req := g.wait(t, ctx, engine.EventConnectRequest)
	g.accept(t, req, 0x1237)
	g.wait(t, ctx, engine.EventEstablished)
	g.disconnect(t, ctx, req.ID)
	if res, _ := cli.Stop(ctx); res != nil {
		t.Logf("rping -c on %s: %s%s", guest.Peer().Name, res.Stdout, res.Stderr)
	}

	if err := ud.Failed(); err != nil {
		t.Errorf("UD path failed: %v", err)
	}
	// REQ, RTU, DREQ; REP, DREQ.
	if n, m := ud.UDSends.Load(), ud.UMADSends.Load(); n < 5 || m != 0 {
		t.Errorf("%d MADs sent from the UD QP, %d through umad; want ≥ 5 and 0", n, m)
	}
	if n := ud.AHs.Load(); n != 2 {
		t.Errorf("%d AHs; want 2 (one renewed after %v)", n, ahTTL)
	}

	time.Sleep(500 * time.Millisecond)
	if _, err := capture.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	pkts, err := vmtest.ReadCMCapture(filepath.Join(guest.OutDir(), "umad-udsend.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	local := netip.MustParseAddr(guest.Local().Addr).As4()
	seen := map[string]int{}
	for _, p := range pkts {
		t.Logf("wire: %v>%v qp %d>%d %s", netip.AddrFrom4(p.SrcIP), netip.AddrFrom4(p.DstIP), p.SrcQP, p.DestQP, mad.Describe(p.MAD))
		if p.SrcIP != local {
			continue
		}
		seen[p.AttrName]++
		if p.SrcQP != ud.Num() || p.DestQP != 1 || p.QKey != gsiQKey {
			t.Errorf("our %s left QP %d for QP %d with Q_Key %#x; want QP %d → 1, %#x", p.AttrName, p.SrcQP, p.DestQP, p.QKey, ud.Num(), uint32(gsiQKey))
		}
	}
	for _, a := range []string{"REQ", "RTU", "REP", "DREQ"} {
		if seen[a] == 0 {
			t.Errorf("no %s of ours on the wire (saw %v)", a, seen)
		}
	}
}

const udsendChildEnv = "UMAD_UDSEND_CHILD"

// TestUDSendChild is run as nobody by TestGuestUDSendNeedsNetRaw.
func TestUDSendChild(t *testing.T) {
	if os.Getenv(udsendChildEnv) != "1" {
		t.Skip("helper for TestGuestUDSendNeedsNetRaw")
	}
	dev, err := uverbs.DefaultDiscovery.Device("rxe0")
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewUDSend(nil, dev, 1)
	if err == nil {
		s.x.Close()
		t.Fatal("UD QP with the GSI Q_Key made without CAP_NET_RAW")
	}
	fmt.Printf("UDSEND-REFUSED eperm=%v: %v\n", errors.Is(err, unix.EPERM), err)
}

// TestGuestUDSendNeedsNetRaw: without CAP_NET_RAW (as nobody) the kernel
// refuses the controlled GSI Q_Key on our UD QP (EPERM from MODIFY_QP),
// so NewUDSend fails and the user backend keeps sending through umad.
func TestGuestUDSendNeedsNetRaw(t *testing.T) {
	guest.Require(t)
	out := guest.RunAsNobody(t, udsendChildEnv, "-test.run", "^TestUDSendChild$", "-test.v")
	if !strings.Contains(string(out), "UDSEND-REFUSED eperm=true") {
		t.Fatalf("want NewUDSend to fail with EPERM as nobody:\n%s", out)
	}
	t.Logf("as nobody: %s", strings.TrimSpace(string(out)))
}
