//go:build linux

package umad

// Real-kernel tests, run inside vmtest guests (soft-RoCE rxe0 on eth0):
//
//	go build -o bin/vmexec ./internal/vmtest/cmd/vmexec
//	CGO_ENABLED=0 go test -count=1 -p 1 -v -exec "$PWD/bin/vmexec -nocm-a" ./internal/umad/
//	CGO_ENABLED=0 go test -count=1 -p 1 -v -exec "$PWD/bin/vmexec" ./internal/umad/
//
// With -nocm-a guest a has no ib_cm: the engine owns the CM class there and
// talks to guest b's kernel CM (rping). Without it, registration must fail
// with ErrKernelCM. On the host the tests skip (and fail when VMTEST=1 and
// CI=true).

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/cm/engine"
	"github.com/go-rdma/rdmacm/internal/vmtest"
	"github.com/go-rdma/rdmacm/internal/vmtest/guest"
	"github.com/go-rdma/rdmacm/mad"
	"github.com/go-rdma/rdmacm/rdma"
)

const helperEnv = "UMAD_REGISTER_HELPER"

// TestRegisterHelper is run on guest b by TestGuestRegisterWithKernelCM.
func TestRegisterHelper(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		t.Skip("helper for TestGuestRegisterWithKernelCM")
	}
	checkKernelCMRefuses(t)
}

func checkKernelCMRefuses(t *testing.T) {
	dev, err := FindDevice("rxe0", 1)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Open(dev)
	if err == nil {
		p.Close()
		t.Fatal("CM agent registered although ib_cm is loaded")
	}
	if !errors.Is(err, ErrKernelCM) || !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "kernel rdma_cm backend") {
		t.Fatalf("error %v: want ErrKernelCM (EINVAL) naming the kernel backend", err)
	}
	t.Logf("KERNEL-CM-REFUSED: %v", err)
}

// TestGuestRegisterWithKernelCM: where ib_cm is loaded, registering the CM
// class fails with EINVAL (mad.c method_in_use) and the error names the
// kernel backend. Checked on whichever guest has ib_cm.
func TestGuestRegisterWithKernelCM(t *testing.T) {
	guest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	has, err := guest.Local().HasModule(ctx, "ib_cm")
	if err != nil {
		t.Fatal(err)
	}
	if has {
		checkKernelCMRefuses(t)
		return
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	res, err := guest.Peer().Run(ctx, fmt.Sprintf("%s=1 %s -test.run '^TestRegisterHelper$' -test.v", helperEnv, exe))
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || !strings.Contains(res.Stdout, "KERNEL-CM-REFUSED") {
		t.Fatalf("on guest b: exit %d\n%s\n%s", res.ExitCode, res.Stdout, res.Stderr)
	}
	t.Logf("guest b: %s", strings.TrimSpace(res.Stdout))
}

type guestCM struct {
	d      *Driver
	events chan engine.Event
	gid    rdma.GID
	gidIdx uint8
	peer   rdma.GID
}

// guestOpts adjusts startGuestCM: wrap the transport, change the config.
type guestOpts struct {
	wrap func(Transport) Transport
	cfg  func(*engine.Config)
}

func startGuestCM(t *testing.T, ctx context.Context, opts ...guestOpts) *guestCM {
	t.Helper()
	dev, err := FindDevice("rxe0", 1)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Open(dev)
	if err != nil {
		t.Fatal(err)
	}
	gid, idx, err := LocalGID("rxe0", 1, netip.MustParseAddr(guest.Local().Addr))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile("/sys/class/infiniband/rxe0/node_guid")
	if err != nil {
		t.Fatal(err)
	}
	guid, err := strconv.ParseUint(strings.ReplaceAll(strings.TrimSpace(string(raw)), ":", ""), 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	cfg := engine.Config{CAGUID: guid, Source: NewRandomSource(0), ACKDelay: 15}
	for _, o := range opts {
		if o.cfg != nil {
			o.cfg(&cfg)
		}
	}
	e, err := engine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var tr Transport = p
	for _, o := range opts {
		if o.wrap != nil {
			tr = o.wrap(tr)
		}
	}
	g := &guestCM{d: NewDriver(e, tr), events: make(chan engine.Event, 64), gid: gid, gidIdx: idx,
		peer: rdma.GIDFromAddr(netip.MustParseAddr(guest.Peer().Addr))}
	g.d.OnEvent = func(ev engine.Event) { g.events <- ev }
	go g.d.Run(ctx)
	t.Cleanup(func() { g.d.Close() })
	return g
}

func (g *guestCM) path() engine.Path {
	return engine.Path{
		PathRecord: rdma.PathRecord{PKey: 0xffff, SGID: g.gid, DGID: g.peer, HopLimit: 64, MTU: rdma.MTU1024, PacketLifeTime: 18},
		Port:       1,
		SGIDIndex:  g.gidIdx,
		RoCE:       true,
	}
}

func (g *guestCM) wait(t *testing.T, ctx context.Context, want engine.EventType) engine.Event {
	t.Helper()
	for {
		select {
		case ev := <-g.events:
			t.Logf("event %v", &ev)
			if ev.Type == want {
				return ev
			}
			if ev.Type == engine.EventRejected || ev.Type == engine.EventReqError || ev.Type == engine.EventRepError {
				t.Fatalf("got %v while waiting for %v", &ev, want)
			}
		case <-ctx.Done():
			t.Fatalf("no %v: %v", want, ctx.Err())
		}
	}
}

// do runs fn on the engine and fails t on its error.
func (g *guestCM) do(t *testing.T, fn func(e *engine.Engine, now time.Time) error) {
	t.Helper()
	if err := g.d.Do(fn); err != nil {
		t.Fatal(err)
	}
}

// listen listens on a TCP port-space port and returns the listener.
func (g *guestCM) listen(t *testing.T, port uint16) engine.ID {
	t.Helper()
	var lid engine.ID
	g.do(t, func(e *engine.Engine, now time.Time) (err error) {
		lid, err = e.Listen(now, engine.ListenParams{PortSpace: rdma.PortSpaceTCP, Port: port})
		return err
	})
	return lid
}

// connect sends a REQ from our srcPort to the peer's dstPort and waits for
// the REP; Establish is the caller's.
func (g *guestCM) connect(t *testing.T, ctx context.Context, srcPort, dstPort uint16, qpn uint32) (engine.ID, engine.Event) {
	t.Helper()
	var id engine.ID
	g.do(t, func(e *engine.Engine, now time.Time) (err error) {
		id, err = e.Connect(now, engine.ConnectParams{PortSpace: rdma.PortSpaceTCP,
			Src:  netip.AddrPortFrom(netip.MustParseAddr(guest.Local().Addr), srcPort),
			Dst:  netip.AddrPortFrom(netip.MustParseAddr(guest.Peer().Addr), dstPort),
			Path: g.path(), QPN: qpn, ResponderResources: 1, InitiatorDepth: 1, RetryCount: 7, RNRRetryCount: 7})
		return err
	})
	return id, g.wait(t, ctx, engine.EventConnectReply)
}

// accept answers a REQ with a REP for qpn.
func (g *guestCM) accept(t *testing.T, req engine.Event, qpn uint32) {
	t.Helper()
	g.do(t, func(e *engine.Engine, now time.Time) error {
		return e.Accept(now, req.ID, engine.AcceptParams{QPN: qpn, ResponderResources: req.Conn.ResponderResources,
			InitiatorDepth: req.Conn.InitiatorDepth, RNRRetryCount: 7})
	})
}

// disconnect sends a DREQ and waits for the DREP.
func (g *guestCM) disconnect(t *testing.T, ctx context.Context, id engine.ID) {
	t.Helper()
	g.do(t, func(e *engine.Engine, now time.Time) error { return e.Disconnect(now, id, nil) })
	g.wait(t, ctx, engine.EventDisconnectReply)
}

func needNoKernelCM(t *testing.T, ctx context.Context) {
	t.Helper()
	guest.Require(t)
	has, err := guest.Local().HasModule(ctx, "ib_cm")
	if err != nil {
		t.Fatal(err)
	}
	if has {
		t.Skip("guest a has ib_cm; run with vmexec -nocm-a")
	}
}

// saveCapture keeps the CM MADs of the test in the output directory and
// checks they all parse.
func saveCapture(t *testing.T, ctx context.Context, name string) func() {
	c, err := guest.Local().StartCapture(ctx, name, "")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // tcpdump up
	return func() {
		time.Sleep(500 * time.Millisecond)
		if _, err := c.Stop(ctx); err != nil {
			t.Logf("capture: %v", err)
		}
		pkts, err := vmtest.ReadCMCapture(filepath.Join(guest.OutDir(), name))
		if err != nil {
			t.Logf("capture: %v", err)
			return
		}
		for _, p := range pkts {
			t.Logf("wire: %v>%v %s", netip.AddrFrom4(p.SrcIP), netip.AddrFrom4(p.DstIP), mad.Describe(p.MAD))
		}
	}
}

// TestGuestActiveAgainstKernelCM: the engine in guest a (no ib_cm)
// connects to rping -s in guest b. b's kernel CM and rdma_cm accept the
// REQ (IP header, service ID, path) and answer with a REP; our RTU
// establishes; our DREQ gets the kernel's DREP.
func TestGuestActiveAgainstKernelCM(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	needNoKernelCM(t, ctx)
	g := startGuestCM(t, ctx)
	defer saveCapture(t, ctx, "umad-active.pcap")()
	srv, err := guest.Peer().Start(ctx, "rping -s -v -a "+guest.Peer().Addr+" -p 7174 -C 1")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		res, _ := srv.Stop(ctx)
		if res != nil {
			t.Logf("rping -s on %s: %s%s", guest.Peer().Name, res.Stdout, res.Stderr)
		}
	}()
	time.Sleep(2 * time.Second) // rping listening
	id, rep := g.connect(t, ctx, 41000, 7174, 0x1234)
	if rep.Conn.RemoteQPN == 0 || rep.Conn.TargetACKDelay != 15 {
		t.Errorf("REP from the kernel: %+v", rep.Conn)
	}
	g.do(t, func(e *engine.Engine, now time.Time) error { return e.Establish(now, id, nil) })
	time.Sleep(time.Second)
	g.disconnect(t, ctx, id)
}

// TestGuestPassiveAgainstKernelCM: rping -c in guest b connects to the
// engine listening in guest a. The kernel's REQ is parsed (IP header,
// ECE-free), our REP is accepted by b's kernel CM, which answers with an
// RTU; our DREQ gets its DREP.
func TestGuestPassiveAgainstKernelCM(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	needNoKernelCM(t, ctx)
	g := startGuestCM(t, ctx)
	defer saveCapture(t, ctx, "umad-passive.pcap")()
	g.listen(t, 7175)
	cli, err := guest.Peer().Start(ctx, "rping -c -v -a "+guest.Local().Addr+" -p 7175 -C 1")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		res, _ := cli.Stop(ctx)
		if res != nil {
			t.Logf("rping -c on %s: %s%s", guest.Peer().Name, res.Stdout, res.Stderr)
		}
	}()
	req := g.wait(t, ctx, engine.EventConnectRequest)
	if !req.Conn.HasIP || req.Conn.Src.Addr().String() != guest.Peer().Addr || req.Conn.Dst.Port() != 7175 {
		t.Errorf("REQ from the kernel: %+v", req.Conn)
	}
	g.accept(t, req, 0x1235)
	g.wait(t, ctx, engine.EventEstablished)
	g.disconnect(t, ctx, req.ID)
}
