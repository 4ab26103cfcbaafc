//go:build linux

package umad

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
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
	var id engine.ID
	if err := g.d.Do(func(e *engine.Engine, now time.Time) (err error) {
		id, err = e.Connect(now, engine.ConnectParams{
			PortSpace: mad.PortSpaceTCP,
			Src:       netip.AddrPortFrom(netip.MustParseAddr(guest.Local().Addr), 41001),
			Dst:       netip.AddrPortFrom(netip.MustParseAddr(guest.Peer().Addr), 7176),
			Path:      g.path(), QPN: 0x1236, ResponderResources: 1, InitiatorDepth: 1, RetryCount: 7, RNRRetryCount: 7,
		})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	g.wait(t, ctx, engine.EventConnectReply)
	if err := g.d.Do(func(e *engine.Engine, now time.Time) error { return e.Establish(now, id, nil) }); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if err := g.d.Do(func(e *engine.Engine, now time.Time) error { return e.Disconnect(now, id, nil) }); err != nil {
		t.Fatal(err)
	}
	g.wait(t, ctx, engine.EventDisconnectReply)
	if res, _ := srv.Stop(ctx); res != nil {
		t.Logf("rping -s on %s: %s%s", guest.Peer().Name, res.Stdout, res.Stderr)
	}
	if n := ud.AHs.Load(); n != 1 {
		t.Errorf("%d AHs for one destination within %v", n, ahTTL)
	}

	// Passive, after the AH expired: rping -c's REQ, our REP, its RTU.
	time.Sleep(ahTTL)
	if err := g.d.Do(func(e *engine.Engine, now time.Time) error {
		_, err := e.Listen(now, engine.ListenParams{PortSpace: mad.PortSpaceTCP, Port: 7177})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	cli, err := guest.Peer().Start(ctx, "rping -c -v -a "+guest.Local().Addr+" -p 7177 -C 1")
	if err != nil {
		t.Fatal(err)
	}
	req := g.wait(t, ctx, engine.EventConnectRequest)
	if err := g.d.Do(func(e *engine.Engine, now time.Time) error {
		return e.Accept(now, req.ID, engine.AcceptParams{QPN: 0x1237, ResponderResources: req.Conn.ResponderResources,
			InitiatorDepth: req.Conn.InitiatorDepth, RNRRetryCount: 7})
	}); err != nil {
		t.Fatal(err)
	}
	g.wait(t, ctx, engine.EventEstablished)
	if err := g.d.Do(func(e *engine.Engine, now time.Time) error { return e.Disconnect(now, req.ID, nil) }); err != nil {
		t.Fatal(err)
	}
	g.wait(t, ctx, engine.EventDisconnectReply)
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
		t.Logf("wire: %v>%v qp %d>%d %s", netip.AddrFrom4(p.SrcIP), netip.AddrFrom4(p.DstIP), p.SrcQP, p.DestQP, engine.DescribeMAD(p.MAD))
		if p.SrcIP != local {
			continue
		}
		seen[p.AttrName]++
		if p.SrcQP != ud.QPN() || p.DestQP != 1 || p.QKey != gsiQKey {
			t.Errorf("our %s left QP %d for QP %d with Q_Key %#x; want QP %d → 1, %#x", p.AttrName, p.SrcQP, p.DestQP, p.QKey, ud.QPN(), gsiQKey)
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
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "udsend-child-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	child := filepath.Join(dir, "child")
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(child, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(child, "-test.run", "^TestUDSendChild$", "-test.v")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), udsendChildEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "UDSEND-REFUSED eperm=true") {
		t.Fatalf("want NewUDSend to fail with EPERM as nobody:\n%s", out)
	}
	t.Logf("as nobody: %s", strings.TrimSpace(string(out)))
}
