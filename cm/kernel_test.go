//go:build linux

package cm

// Real-kernel tests. They need an RDMA device and the rdma_cm device, so
// they run inside a vmtest guest (go test -exec vmexec, make vmtest);
// guest.Require skips them elsewhere and fails them when VMTEST=1 and
// CI=true. They connect over the guest's own address (rxe loops back), so
// no peer is needed; the cross-guest and librdmacm interop tests are in
// cmd/rdmacm-ping/interop_test.go.

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/go-rdma/rdmacm/ece"
	"github.com/go-rdma/rdmacm/internal/vmtest/guest"
	"github.com/go-rdma/rdmacm/mad"
	"github.com/go-rdma/rdmacm/rdma"
	"github.com/go-rdma/rdmacm/uverbs"
)

// kernelChannel opens a kernel channel; in a guest its absence fails.
func kernelChannel(t *testing.T) *Channel {
	t.Helper()
	guest.Require(t)
	c, err := Open(&Options{Backend: BackendKernel})
	if err != nil {
		t.Fatalf("open the kernel rdma_cm: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// localAddr is this guest's address on the soft-RoCE wire.
func localAddr(t *testing.T) netip.Addr {
	t.Helper()
	a, err := netip.ParseAddr(guest.Local().Addr)
	if err != nil {
		t.Fatalf("%s=%q: %v", guest.EnvLocalAddr, guest.Local().Addr, err)
	}
	return a
}

var nextPort = 20000 + uint16(os.Getpid()%1000)*10

func freePort() uint16 { nextPort++; return nextPort }

// fakeQPN numbers the QP-less connections: over loopback both sides share
// a CA GUID, and the CM rejects a REP whose (QPN, GUID) is already
// connected as stale (REJ 10), so every side needs its own number.
var fakeQPN uint32 = 0x1000

func nextQPN() uint32 { fakeQPN++; return fakeQPN }

func kctx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// serve runs an asynchronous listener on addr and calls onRequest for each
// CONNECT_REQUEST; other events go to onEvent. It returns when ctx ends.
type server struct {
	ch       *Channel
	listener *ID
	events   chan *Event
}

func startServer(t *testing.T, ch *Channel, addr netip.AddrPort) *server {
	t.Helper()
	l, err := ch.CreateID(rdma.PortSpaceTCP, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Bind(addr); err != nil {
		t.Fatal(err)
	}
	if err := l.Listen(0); err != nil {
		t.Fatal(err)
	}
	s := &server{ch: ch, listener: l, events: make(chan *Event, 16)}
	go func() {
		for {
			ev, err := ch.GetEvent(context.Background())
			if err != nil {
				close(s.events)
				return
			}
			if os.Getenv("CM_TEST_DEBUG") != "" {
				fmt.Fprintf(os.Stderr, "%s server event %v status %d id %p state %v\n", time.Now().Format("15:04:05.000"), ev.Type, ev.Status, ev.ID, ev.ID.State())
			}
			s.events <- ev
		}
	}()
	t.Cleanup(func() { l.Destroy() })
	return s
}

func (s *server) next(t *testing.T, want EventType) *Event {
	t.Helper()
	select {
	case ev, ok := <-s.events:
		if !ok {
			t.Fatalf("server channel closed while waiting for %v", want)
		}
		if ev.Type != want {
			t.Fatalf("server got %v (status %d), want %v", ev.Type, ev.Status, want)
		}
		return ev
	case <-time.After(20 * time.Second):
		out, _ := exec.Command("rdma", "resource", "show", "cm_id").CombinedOutput()
		t.Fatalf("server: no %v within 20s; kernel CM IDs:\n%s", want, out)
	}
	return nil
}

// dial resolves and connects a synchronous client ID with no QP.
func dial(t *testing.T, ch *Channel, dst netip.AddrPort, offer ece.ECE, pd []byte) (*ID, error) {
	t.Helper()
	ctx := kctx(t, 20*time.Second)
	id, err := ch.CreateID(rdma.PortSpaceTCP, &IDOptions{Sync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { id.Destroy() })
	if err := id.ResolveAddr(ctx, netip.AddrPort{}, dst, 0); err != nil {
		return id, err
	}
	if err := id.ResolveRoute(ctx, 0); err != nil {
		return id, err
	}
	if !offer.IsZero() {
		if err := id.SetLocalECE(offer); err != nil {
			t.Fatal(err)
		}
	}
	return id, id.Connect(ctx, &ConnParam{QPNum: nextQPN(), PrivateData: pd, ResponderResources: 1, InitiatorDepth: 1, RetryCount: 7, RNRRetryCount: 7})
}

func TestKernelConnectECEBothWays(t *testing.T) {
	cch := kernelChannel(t)
	sch := kernelChannel(t)
	addr := netip.AddrPortFrom(localAddr(t), freePort())
	srv := startServer(t, sch, addr)
	offer := ece.ECE{VendorID: 0x15b3, Options: 0x30000001}
	answer := ece.ECE{VendorID: 0x15b3, Options: 0x10000000}

	type result struct {
		id  *ID
		err error
	}
	done := make(chan result, 1)
	go func() {
		id, err := dial(t, cch, addr, offer, []byte("hello"))
		done <- result{id, err}
	}()
	ev := srv.next(t, EventConnectRequest)
	if ev.ECE != offer {
		t.Fatalf("CONNECT_REQUEST ECE %v, want %v", ev.ECE, offer)
	}
	if got := ev.Conn.PrivateData; len(got) != 56 || string(got[:5]) != "hello" {
		t.Fatalf("REQ private data %q (%d bytes), want \"hello\" padded to 56", got[:5], len(got))
	}
	pid := ev.ID
	ev.Ack()
	if got, _ := pid.RemoteECE(); got != offer {
		t.Fatalf("passive RemoteECE %v", got)
	}
	if err := pid.Accept(kctx(t, 10*time.Second), &ConnParam{QPNum: nextQPN(), ResponderResources: 1, InitiatorDepth: 1}); !errors.Is(err, ErrECEOrder) {
		t.Fatalf("Accept without answering the ECE offer: %v", err)
	}
	if err := pid.SetLocalECE(answer); err != nil {
		t.Fatal(err)
	}
	if err := pid.Accept(kctx(t, 10*time.Second), &ConnParam{QPNum: nextQPN(), ResponderResources: 1, InitiatorDepth: 1, PrivateData: []byte("world")}); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("client: %v", r.err)
	}
	if r.id.State() != StateConnectResponse {
		t.Fatalf("client state %v", r.id.State())
	}
	if got, _ := r.id.RemoteECE(); got != answer {
		t.Fatalf("REP ECE %v, want %v", got, answer)
	}
	if pd := r.id.ConnParam().PrivateData; len(pd) != 196 || string(pd[:5]) != "world" {
		t.Fatalf("REP private data %d bytes", len(pd))
	}
	if err := r.id.SetLocalECE(offer); !errors.Is(err, ErrECEOrder) {
		t.Fatalf("SetLocalECE after the REQ: %v", err)
	}
	if err := r.id.Establish(); err != nil {
		t.Fatal(err)
	}
	ev = srv.next(t, EventEstablished)
	ev.Ack()
	// Client-initiated disconnect: the client's DISCONNECTED needs the
	// server's DREP, which the server sends with its own Disconnect.
	discErr := make(chan error, 1)
	go func() { discErr <- r.id.Disconnect(kctx(t, 20*time.Second)) }()
	ev = srv.next(t, EventDisconnected)
	ev.Ack()
	if err := pid.Disconnect(kctx(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := <-discErr; err != nil {
		t.Fatal(err)
	}
	if pid.State() != StateDisconnected || r.id.State() != StateDisconnected {
		t.Fatalf("states %v / %v", pid.State(), r.id.State())
	}
}

func TestKernelDisconnectFromServer(t *testing.T) {
	cch := kernelChannel(t)
	sch := kernelChannel(t)
	addr := netip.AddrPortFrom(localAddr(t), freePort())
	srv := startServer(t, sch, addr)
	done := make(chan *ID, 1)
	go func() {
		id, err := dial(t, cch, addr, ece.None, nil)
		if err == nil {
			err = id.Establish()
		}
		if err != nil {
			t.Error(err)
		}
		done <- id
	}()
	ev := srv.next(t, EventConnectRequest)
	pid := ev.ID
	ev.Ack()
	if err := pid.Accept(kctx(t, 10*time.Second), &ConnParam{QPNum: nextQPN(), ResponderResources: 1, InitiatorDepth: 1}); err != nil {
		t.Fatal(err)
	}
	cid := <-done
	srv.next(t, EventEstablished).Ack()
	if err := pid.Disconnect(kctx(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	ev, err := cid.GetEvent(kctx(t, 20*time.Second))
	if err != nil || ev.Type != EventDisconnected {
		t.Fatalf("client: %v %v, want DISCONNECTED", ev, err)
	}
	ev.Ack()
	if err := cid.Disconnect(kctx(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	srv.next(t, EventDisconnected).Ack()
	if pid.State() != StateDisconnected {
		t.Fatalf("server state %v", pid.State())
	}
}

func TestKernelRejectECE(t *testing.T) {
	cch := kernelChannel(t)
	sch := kernelChannel(t)
	addr := netip.AddrPortFrom(localAddr(t), freePort())
	srv := startServer(t, sch, addr)
	done := make(chan error, 1)
	go func() {
		_, err := dial(t, cch, addr, ece.ECE{VendorID: 0x15b3, Options: 1}, nil)
		done <- err
	}()
	ev := srv.next(t, EventConnectRequest)
	if err := ev.ID.RejectECE([]byte("ece")); err != nil {
		t.Fatal(err)
	}
	ev.Ack()
	err := <-done
	var re *RejectError
	if !errors.As(err, &re) || !errors.Is(err, ErrRejected) {
		t.Fatalf("client: %v, want *RejectError", err)
	}
	if re.Reason != mad.RejectVendorOptionNotSupported || re.Reason.String() != "vendor option is not supported" {
		t.Fatalf("reason %d %q", re.Reason, re.Reason)
	}
	if !strings.Contains(err.Error(), "reason 35 (vendor option is not supported)") {
		t.Fatalf("error text %q", err)
	}
	if len(re.PrivateData) < 3 || string(re.PrivateData[:3]) != "ece" {
		t.Fatalf("REJ private data %q", re.PrivateData)
	}
}

func TestKernelNoListener(t *testing.T) {
	ch := kernelChannel(t)
	_, err := dial(t, ch, netip.AddrPortFrom(localAddr(t), freePort()), ece.None, nil)
	var re *RejectError
	if !errors.As(err, &re) || re.Reason != mad.RejectInvalidServiceID {
		t.Fatalf("connect to a port nobody listens on: %v, want REJ 8", err)
	}
}

// TestKernelErrorSentinels checks the sentinels against the real kernel:
// an address on no RDMA device (a veth made for the test), a destination
// that routes through that veth, and a neighbour that never answers.
func TestKernelErrorSentinels(t *testing.T) {
	ch := kernelChannel(t)
	ctx := kctx(t, 30*time.Second)
	ipCmd := func(args ...string) {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v\n%s", args, err, out)
		}
	}
	// cmtv0 (198.51.100.1, no RDMA device) is wired to cmtv1
	// (198.51.100.2) in another network namespace, so the destination
	// answers ARP but routes over a netdev without RDMA.
	os.MkdirAll("/run/netns", 0o755)
	ipCmd("netns", "add", "cmtns")
	t.Cleanup(func() { exec.Command("ip", "netns", "del", "cmtns").Run() })
	ipCmd("link", "add", "cmtv0", "type", "veth", "peer", "name", "cmtv1")
	t.Cleanup(func() { exec.Command("ip", "link", "del", "cmtv0").Run() })
	ipCmd("link", "set", "cmtv1", "netns", "cmtns")
	ipCmd("addr", "add", "198.51.100.1/24", "dev", "cmtv0")
	ipCmd("link", "set", "cmtv0", "up")
	ipCmd("-n", "cmtns", "addr", "add", "198.51.100.2/24", "dev", "cmtv1")
	ipCmd("-n", "cmtns", "link", "set", "cmtv1", "up")

	id, _ := ch.CreateID(rdma.PortSpaceTCP, &IDOptions{Sync: true})
	defer id.Destroy()
	err := id.Bind(netip.MustParseAddrPort("198.51.100.1:1"))
	t.Logf("bind to an address on a veth: %v", err)
	if !errors.Is(err, ErrNoDevice) || !errors.Is(err, unix.ENODEV) {
		t.Errorf("bind to an address without RDMA device: %v, want ErrNoDevice wrapping ENODEV", err)
	}

	id2, _ := ch.CreateID(rdma.PortSpaceTCP, &IDOptions{Sync: true})
	defer id2.Destroy()
	err = id2.ResolveAddr(ctx, netip.AddrPort{}, netip.MustParseAddrPort("198.51.100.2:1"), time.Second)
	t.Logf("resolve a destination routed through the veth: %v", err)
	var errno unix.Errno
	if !errors.Is(err, ErrNoRoute) || errors.Is(err, ErrNoDevice) || !errors.As(err, &errno) || errno != unix.ENODEV {
		t.Errorf("resolve through a non-RDMA netdev: %v, want ErrNoRoute wrapping ENODEV", err)
	}

	id4, _ := ch.CreateID(rdma.PortSpaceTCP, &IDOptions{Sync: true})
	defer id4.Destroy()
	err = id4.ResolveAddr(ctx, netip.AddrPort{}, netip.MustParseAddrPort("203.0.113.9:1"), time.Second)
	t.Logf("resolve a destination without a route: %v", err)
	if !errors.Is(err, ErrNoRoute) {
		t.Errorf("resolve without a route: %v, want ErrNoRoute", err)
	}

	id3, _ := ch.CreateID(rdma.PortSpaceTCP, &IDOptions{Sync: true})
	defer id3.Destroy()
	silent := localAddr(t).As4()
	silent[3] = 213 // nobody on the wire answers ARP for it
	err = id3.ResolveAddr(ctx, netip.AddrPort{}, netip.AddrPortFrom(netip.AddrFrom4(silent), 1), 500*time.Millisecond)
	t.Logf("resolve a silent neighbour: %v", err)
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, unix.ETIMEDOUT) {
		t.Errorf("resolve a silent neighbour: %v, want ErrTimeout wrapping ETIMEDOUT", err)
	}
}

// rdmaResources returns the rdma tool's resource counts for rxe0, for
// example {"cm_id": 1, "qp": 2}.
func rdmaResources(t *testing.T) map[string]int {
	t.Helper()
	out, err := exec.Command("rdma", "resource", "show").CombinedOutput()
	if err != nil {
		t.Fatalf("rdma resource show: %v\n%s", err, out)
	}
	m := map[string]int{}
	for _, f := range regexp.MustCompile(`([a-z_]+) (\d+)`).FindAllStringSubmatch(string(out), -1) {
		n, _ := strconv.Atoi(f[2])
		m[f[1]] += n
	}
	return m
}

func openFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestKernelLeaks runs 200 connect/disconnect cycles and checks that the
// kernel's CM IDs and the process's fds return to their baseline.
func TestKernelLeaks(t *testing.T) {
	cch := kernelChannel(t)
	sch := kernelChannel(t)
	addr := netip.AddrPortFrom(localAddr(t), freePort())
	srv := startServer(t, sch, addr)
	cycles := 200
	if s := os.Getenv("CM_LEAK_CYCLES"); s != "" {
		cycles, _ = strconv.Atoi(s)
	}
	cycle := func(i int) {
		done := make(chan error, 1)
		var cid *ID
		go func() {
			ctx := kctx(t, 20*time.Second)
			id, err := cch.CreateID(rdma.PortSpaceTCP, &IDOptions{Sync: true})
			if err != nil {
				done <- err
				return
			}
			cid = id
			if err = id.ResolveAddr(ctx, netip.AddrPort{}, addr, 0); err == nil {
				if err = id.ResolveRoute(ctx, 0); err == nil {
					if err = id.Connect(ctx, &ConnParam{QPNum: nextQPN(), ResponderResources: 1, InitiatorDepth: 1}); err == nil {
						err = id.Establish()
					}
				}
			}
			done <- err
		}()
		ev := srv.next(t, EventConnectRequest)
		pid := ev.ID
		ev.Ack()
		if err := pid.Accept(kctx(t, 10*time.Second), &ConnParam{QPNum: nextQPN(), ResponderResources: 1, InitiatorDepth: 1}); err != nil {
			t.Fatalf("cycle %d: accept: %v", i, err)
		}
		if err := <-done; err != nil {
			t.Fatalf("cycle %d: client: %v", i, err)
		}
		srv.next(t, EventEstablished).Ack()
		// Alternate who disconnects first.
		if i%2 == 0 {
			discErr := make(chan error, 1)
			go func() { discErr <- cid.Disconnect(kctx(t, 20*time.Second)) }()
			select {
			case err := <-discErr:
				t.Fatalf("cycle %d: client Disconnect returned before the server's DREP: %v (state %v)", i, err, cid.State())
			case <-time.After(10 * time.Millisecond):
			}
			srv.next(t, EventDisconnected).Ack()
			pid.Disconnect(kctx(t, 5*time.Second))
			if err := <-discErr; err != nil {
				t.Fatalf("cycle %d: %v", i, err)
			}
		} else {
			// The server's DISCONNECTED needs the client's DREP.
			pid.Disconnect(kctx(t, 5*time.Second))
			ev, err := cid.GetEvent(kctx(t, 20*time.Second))
			if err != nil || ev.Type != EventDisconnected {
				t.Fatalf("cycle %d: client %v %v", i, ev, err)
			}
			ev.Ack()
			cid.Disconnect(kctx(t, 5*time.Second))
			srv.next(t, EventDisconnected).Ack()
		}
		if err := cid.Destroy(); err != nil {
			t.Fatalf("cycle %d: destroy client: %v", i, err)
		}
		if err := pid.Destroy(); err != nil {
			t.Fatalf("cycle %d: destroy server: %v", i, err)
		}
	}
	cycle(0) // warm up lazily created state
	baseRes, baseFDs := rdmaResources(t), openFDs(t)
	start := time.Now()
	for i := 1; i <= cycles; i++ {
		cycle(i)
	}
	t.Logf("%d cycles in %v", cycles, time.Since(start))
	// The kernel releases a CM ID after its timewait; give it time.
	var res map[string]int
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		res = rdmaResources(t)
		if fmt.Sprint(res) == fmt.Sprint(baseRes) || time.Now().After(deadline) {
			break
		}
	}
	if fmt.Sprint(res) != fmt.Sprint(baseRes) {
		t.Errorf("rdma resources after %d cycles %v, baseline %v", cycles, res, baseRes)
	}
	if fds := openFDs(t); fds != baseFDs {
		t.Errorf("open fds after %d cycles %d, baseline %d", cycles, fds, baseFDs)
	}
	if n := cch.Unacked() + sch.Unacked(); n != 0 {
		t.Errorf("%d events unacked", n)
	}
	t.Logf("resources %v, fds %d", res, baseFDs)
}

// TestKernelUDSIDR resolves and "connects" a UD ID (SIDR_REQ/SIDR_REP):
// the client's ESTABLISHED carries the server's QP number and Q_Key.
func TestKernelUDSIDR(t *testing.T) {
	cch := kernelChannel(t)
	sch := kernelChannel(t)
	addr := netip.AddrPortFrom(localAddr(t), freePort())
	l, err := sch.CreateID(rdma.PortSpaceUDP, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Destroy()
	if err := l.Bind(addr); err != nil {
		t.Fatal(err)
	}
	if err := l.Listen(0); err != nil {
		t.Fatal(err)
	}
	ctx := kctx(t, 20*time.Second)
	id, _ := cch.CreateID(rdma.PortSpaceUDP, &IDOptions{Sync: true})
	defer id.Destroy()
	if err := id.ResolveAddr(ctx, netip.AddrPort{}, addr, 0); err != nil {
		t.Fatal(err)
	}
	if err := id.ResolveRoute(ctx, 0); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- id.Connect(ctx, &ConnParam{PrivateData: []byte("ud")}) }()
	ev, err := sch.GetEvent(ctx)
	if err != nil || ev.Type != EventConnectRequest {
		t.Fatalf("server: %v %v", ev, err)
	}
	if string(ev.UD.PrivateData[:2]) != "ud" {
		t.Fatalf("SIDR_REQ private data %q", ev.UD.PrivateData)
	}
	pid := ev.ID
	ev.Ack()
	defer pid.Destroy()
	// A library UD QP: CreateQP moves it to RTS at once (ucma_init_ud_qp).
	uq, err := pid.CreateQP(QPInit{})
	if err != nil {
		t.Fatal(err)
	}
	if st := uq.Verbs.State(); st.String() != "RTS" {
		t.Fatalf("library UD QP in %v, want RTS", st)
	}
	if err := pid.Accept(ctx, &ConnParam{QKey: 0}); err != nil {
		t.Fatal(err)
	}
	if pid.State() != StateEstablished {
		t.Fatalf("UD accept state %v", pid.State())
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ud := id.UDParam()
	t.Logf("SIDR answer: QPN %#x QKey %#x AH %+v", ud.QPNum, ud.QKey, ud.AH)
	if ud.QPNum != uq.Num() || ud.QKey != 0x01234567 {
		t.Fatalf("UD param QPN %#x QKey %#x, want the server's QP %#x and RDMA_UDP_QKEY", ud.QPNum, ud.QKey, uq.Num())
	}
	if !ud.AH.IsGlobal {
		t.Fatalf("RoCE AH without GRH: %+v", ud.AH)
	}
}

// TestKernelMulticastJoin joins a group on a UD ID (RoCE: no SA; the
// kernel answers with MULTICAST_JOIN carrying the MGID).
func TestKernelMulticastJoin(t *testing.T) {
	ch := kernelChannel(t)
	ctx := kctx(t, 20*time.Second)
	id, _ := ch.CreateID(rdma.PortSpaceUDP, &IDOptions{Sync: true})
	defer id.Destroy()
	if err := id.Bind(netip.AddrPortFrom(localAddr(t), 0)); err != nil {
		t.Fatal(err)
	}
	group := netip.MustParseAddr("239.1.2.3")
	m, err := id.JoinMulticast(ctx, group, false, "ctx")
	if err != nil {
		t.Fatal(err)
	}
	ah := m.AH()
	t.Logf("joined %v: AH %+v", group, ah)
	// RoCE MGID: ::ffff:239.1.2.3 (rdma_ip2gid).
	if ah.GRH.DGID[10] != 0xff || ah.GRH.DGID[12] != 239 || ah.GRH.DGID[15] != 3 {
		t.Fatalf("MGID %x", ah.GRH.DGID)
	}
	if err := m.Leave(); err != nil {
		t.Fatal(err)
	}
}

// TestKernelOptions sets every ID option on a real ID.
func TestKernelOptions(t *testing.T) {
	ch := kernelChannel(t)
	id, _ := ch.CreateID(rdma.PortSpaceTCP, nil)
	defer id.Destroy()
	for name, err := range map[string]error{
		"TOS":        id.SetTOS(32),
		"AckTimeout": id.SetAckTimeout(14),
		"ReuseAddr":  id.SetReuseAddr(true),
		"AFOnly":     id.SetAFOnly(false),
	} {
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := id.Notify(uverbs.EventCommEst); err == nil {
		t.Error("Notify on an unbound ID succeeded; the kernel wants a device")
	}
}

// TestKernelCloseInterruptsGetEvent: a goroutine blocked in the netpoller
// on the rdma_cm fd returns when the channel closes.
func TestKernelCloseInterruptsGetEvent(t *testing.T) {
	ch := kernelChannel(t)
	errc := make(chan error, 1)
	go func() { _, err := ch.GetEvent(context.Background()); errc <- err }()
	time.Sleep(100 * time.Millisecond)
	ch.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("GetEvent after Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not interrupt GetEvent")
	}
	ch2 := kernelChannel(t)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := ch2.GetEvent(ctx); !errors.Is(err, ErrTimeout) {
		t.Fatalf("GetEvent with a deadline: %v", err)
	}
}

// TestKernelQueryRoute reads the addresses, device and path the kernel
// resolved (QUERY ADDR and QUERY PATH).
func TestKernelQueryRoute(t *testing.T) {
	ch := kernelChannel(t)
	ctx := kctx(t, 20*time.Second)
	local := localAddr(t)
	dst := netip.AddrPortFrom(local, freePort())
	id, _ := ch.CreateID(rdma.PortSpaceTCP, &IDOptions{Sync: true})
	defer id.Destroy()
	if err := id.ResolveAddr(ctx, netip.AddrPort{}, dst, 0); err != nil {
		t.Fatal(err)
	}
	if err := id.ResolveRoute(ctx, 0); err != nil {
		t.Fatal(err)
	}
	ai, err := id.Query()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("addr info %+v", ai)
	// RoCE: QUERY ADDR reports P_Key 0 (ib_addr_get_pkey of an Ethernet
	// device address); the path record carries 0xffff.
	if ai.Dst != dst || ai.Src.Addr() != local || !ai.HasDevice || ai.Port != 1 {
		t.Fatalf("addr info %+v", ai)
	}
	if id.RemoteAddr() != dst || id.LocalAddr().Addr() != local {
		t.Fatalf("LocalAddr %v RemoteAddr %v", id.LocalAddr(), id.RemoteAddr())
	}
	prs, err := id.Route()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("path records %+v", prs)
	if len(prs) != 1 {
		t.Fatalf("%d path records", len(prs))
	}
	pr := prs[0]
	v4 := local.As4()
	mapped := [16]byte{10: 0xff, 11: 0xff, 12: v4[0], 13: v4[1], 14: v4[2], 15: v4[3]}
	if pr.SGID != mapped || pr.DGID != mapped || pr.PKey != 0xffff || pr.MTU == 0 || pr.HopLimit == 0 {
		t.Fatalf("path record %+v", pr)
	}
}
