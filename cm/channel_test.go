package cm

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/ece"
	"github.com/go-rdma/rdmacm/internal/unix"
	"github.com/go-rdma/rdmacm/mad"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
)

// fakeBackend is an in-memory backend: commands are recorded, events are
// injected by the test through push.
type fakeBackend struct {
	mu       sync.Mutex
	next     uint32
	calls    []string
	connects []ece.ECE // ECE of each connect
	accepts  []acceptCall
	rejects  []uint8
	failOn   map[string]error
	events   chan rawEvent
	closed   chan struct{}
	// connParams are the parameters each connect got.
	connParams []ConnParam
	once       sync.Once
}

type acceptCall struct {
	uid   uint64
	param *ConnParam
	ece   ece.ECE
}

func newFake() *fakeBackend {
	return &fakeBackend{events: make(chan rawEvent, 64), closed: make(chan struct{}), failOn: map[string]error{}}
}

func (f *fakeBackend) rec(c string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, c)
	return f.failOn[c]
}

func (f *fakeBackend) name() Backend { return "fake" }
func (f *fakeBackend) createID(uid uint64, ps rdma.PortSpace, t qp.QPType) (uint32, error) {
	if err := f.rec("createID"); err != nil {
		return 0, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.next++
	return f.next, nil
}
func (f *fakeBackend) destroyID(h uint32) (uint32, error) { return 0, f.rec("destroyID") }
func (f *fakeBackend) bind(h uint32, a netip.AddrPort) error {
	return f.rec("bind")
}
func (f *fakeBackend) resolveAddr(h uint32, s, d netip.AddrPort, t time.Duration) error {
	return f.rec("resolveAddr")
}
func (f *fakeBackend) resolveRoute(h uint32, t time.Duration) error  { return f.rec("resolveRoute") }
func (f *fakeBackend) queryAddr(h uint32) (AddrInfo, error)          { return AddrInfo{}, f.rec("queryAddr") }
func (f *fakeBackend) queryPath(h uint32) ([]rdma.PathRecord, error) { return nil, f.rec("queryPath") }
func (f *fakeBackend) listen(h uint32, b int) error                  { return f.rec("listen") }
func (f *fakeBackend) connect(h uint32, p *ConnParam, e ece.ECE) error {
	f.mu.Lock()
	f.connects = append(f.connects, e)
	f.connParams = append(f.connParams, *p)
	f.mu.Unlock()
	return f.rec("connect")
}
func (f *fakeBackend) accept(h uint32, uid uint64, p *ConnParam, e ece.ECE) error {
	f.mu.Lock()
	f.accepts = append(f.accepts, acceptCall{uid, p, e})
	f.mu.Unlock()
	return f.rec("accept")
}
func (f *fakeBackend) reject(h uint32, pd []byte, reason uint8) error {
	f.mu.Lock()
	f.rejects = append(f.rejects, reason)
	f.mu.Unlock()
	return f.rec("reject")
}
func (f *fakeBackend) disconnect(h uint32) error { return f.rec("disconnect") }
func (f *fakeBackend) initQPAttr(h uint32, s qp.State) (qp.Attr, qp.Mask, error) {
	return qp.Attr{State: s}, qp.MaskState, f.rec("initQPAttr")
}
func (f *fakeBackend) setOption(h uint32, l, n uint32, v []byte) error { return f.rec("setOption") }
func (f *fakeBackend) notify(h uint32, e uint32) error                 { return f.rec("notify") }
func (f *fakeBackend) join(h uint32, uid uint64, a netip.Addr, s bool) (uint32, error) {
	return 7, f.rec("join")
}
func (f *fakeBackend) leave(mc uint32) (uint32, error) { return 0, f.rec("leave") }
func (f *fakeBackend) readEvents(ctx context.Context, fn func(*rawEvent)) error {
	select {
	case ev := <-f.events:
		fn(&ev)
		for {
			select {
			case ev := <-f.events:
				fn(&ev)
			default:
				return nil
			}
		}
	case <-ctx.Done():
		return ctx.Err()
	case <-f.closed:
		return unix.EBADF
	}
}
func (f *fakeBackend) close() error {
	f.once.Do(func() { close(f.closed) })
	return nil
}

func (f *fakeBackend) push(ev rawEvent) { f.events <- ev }

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestSyncActiveFlow(t *testing.T) {
	f := newFake()
	c := newChannel(f)
	defer c.Close()
	ctx := testCtx(t)
	id, err := c.CreateID(rdma.PortSpaceTCP, &IDOptions{Sync: true})
	if err != nil {
		t.Fatal(err)
	}
	go f.push(rawEvent{uid: id.uid, typ: EventAddrResolved})
	if err := id.ResolveAddr(ctx, netip.AddrPort{}, netip.MustParseAddrPort("192.0.2.2:7174"), 0); err != nil {
		t.Fatal(err)
	}
	go f.push(rawEvent{uid: id.uid, typ: EventRouteResolved})
	if err := id.ResolveRoute(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if err := id.SetLocalECE(mlx); err != nil {
		t.Fatal(err)
	}
	rep := ece.ECE{VendorID: mlx.VendorID, Options: 0x10000000}
	go f.push(rawEvent{uid: id.uid, typ: EventConnectResponse, ece: rep,
		conn: ConnParam{PrivateData: []byte{1, 2, 3}}})
	if err := id.Connect(ctx, &ConnParam{QPNum: 0x11}); err != nil {
		t.Fatal(err)
	}
	if f.connects[0] != mlx {
		t.Fatalf("REQ ECE %v, want %v", f.connects[0], mlx)
	}
	if got, _ := id.RemoteECE(); got != rep {
		t.Fatalf("RemoteECE %v, want %v", got, rep)
	}
	if got := id.ConnParam().PrivateData; len(got) != 3 {
		t.Fatalf("private data %v", got)
	}
	if id.State() != StateConnectResponse {
		t.Fatalf("state %v", id.State())
	}
	if err := id.SetLocalECE(mlx); !errors.Is(err, ErrECEOrder) {
		t.Fatalf("SetLocalECE after REP: %v", err)
	}
	if err := id.Establish(); err != nil {
		t.Fatal(err)
	}
	if a := f.accepts[0]; a.param != nil || a.ece != ece.None {
		t.Fatalf("Establish sent accept %+v, want the RTU form (no param, no ECE)", a)
	}
	go f.push(rawEvent{uid: id.uid, typ: EventDisconnected})
	if err := id.Disconnect(ctx); err != nil {
		t.Fatal(err)
	}
	if id.State() != StateDisconnected {
		t.Fatalf("state %v after disconnect", id.State())
	}
	if err := id.Destroy(); err != nil {
		t.Fatal(err)
	}
	if c.Unacked() != 0 {
		t.Fatalf("%d events unacked after sync flow", c.Unacked())
	}
}

func TestSyncResolveErrors(t *testing.T) {
	for _, tc := range []struct {
		status int32
		want   error
	}{
		// ADDR_ERROR with ENODEV: the route leads through a netdev
		// without RDMA (seen on the real kernel, TestKernelErrorSentinels).
		{-int32(unix.ENODEV), ErrNoRoute},
		{-int32(unix.EHOSTUNREACH), ErrNoRoute},
		{-int32(unix.ETIMEDOUT), ErrTimeout},
	} {
		f := newFake()
		c := newChannel(f)
		id, _ := c.CreateID(rdma.PortSpaceTCP, &IDOptions{Sync: true})
		go f.push(rawEvent{uid: id.uid, typ: EventAddrError, status: tc.status})
		err := id.ResolveAddr(testCtx(t), netip.AddrPort{}, netip.MustParseAddrPort("192.0.2.2:1"), 0)
		if !errors.Is(err, tc.want) || !errors.Is(err, unix.Errno(-tc.status)) {
			t.Fatalf("status %d: %v, want %v wrapping the errno", tc.status, err, tc.want)
		}
		if id.State() != StateAddrBound {
			t.Fatalf("state %v after ADDR_ERROR", id.State())
		}
		c.Close()
	}
}

func TestSyncConnectRejected(t *testing.T) {
	f := newFake()
	c := newChannel(f)
	defer c.Close()
	id, _ := c.CreateID(rdma.PortSpaceTCP, &IDOptions{Sync: true})
	id.st.state = StateRouteResolved
	go f.push(rawEvent{uid: id.uid, typ: EventRejected, status: 35, conn: ConnParam{PrivateData: []byte("no")}})
	err := id.Connect(testCtx(t), nil)
	var re *RejectError
	if !errors.As(err, &re) || !errors.Is(err, ErrRejected) {
		t.Fatalf("Connect: %v, want *RejectError", err)
	}
	if re.Reason != mad.RejectVendorOptionNotSupported || re.Reason.String() != "vendor option is not supported" || string(re.PrivateData) != "no" {
		t.Fatalf("RejectError %+v (%v)", re, re)
	}
	if id.State() != StateRejected {
		t.Fatalf("state %v", id.State())
	}
}

func TestAsyncPassiveFlow(t *testing.T) {
	f := newFake()
	c := newChannel(f)
	defer c.Close()
	ctx := testCtx(t)
	l, _ := c.CreateID(rdma.PortSpaceTCP, nil)
	if err := l.Bind(netip.MustParseAddrPort("0.0.0.0:7174")); err != nil {
		t.Fatal(err)
	}
	if err := l.Listen(0); err != nil {
		t.Fatal(err)
	}
	if err := l.SetLocalECE(mlx); !errors.Is(err, ErrECEOrder) {
		t.Fatalf("SetLocalECE on a listener: %v", err)
	}
	f.push(rawEvent{uid: l.uid, handle: 99, typ: EventConnectRequest, ece: mlx,
		conn: ConnParam{InitiatorDepth: 3, ResponderResources: 4, PrivateData: make([]byte, 56)}})
	ev, err := c.GetEvent(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Type != EventConnectRequest || ev.Listener != l || ev.ID == nil || ev.ID == l || ev.ECE != mlx {
		t.Fatalf("event %+v", ev)
	}
	nid := ev.ID
	if nid.handle != 99 || nid.Role() != RolePassive || nid.State() != StateRequestReceived {
		t.Fatalf("new ID handle %d role %v state %v", nid.handle, nid.Role(), nid.State())
	}
	if c.Unacked() != 1 {
		t.Fatalf("unacked %d", c.Unacked())
	}
	if err := ev.Ack(); err != nil {
		t.Fatal(err)
	}
	if err := ev.Ack(); !errors.Is(err, ErrInvalidState) {
		t.Fatalf("second Ack: %v, want ErrInvalidState", err)
	}
	if err := (&Event{}).Ack(); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("Ack of an event no channel delivered: %v, want ErrInvalidArgument", err)
	}
	// External QP, ECE offered, not answered.
	err = nid.Accept(ctx, &ConnParam{QPNum: 0x22})
	var ue *ECEUnansweredError
	if !errors.As(err, &ue) || ue.Remote != mlx {
		t.Fatalf("Accept unanswered: %v", err)
	}
	if len(f.accepts) != 0 {
		t.Fatal("an unanswered accept reached the backend")
	}
	if got, _ := nid.RemoteECE(); got != mlx {
		t.Fatalf("RemoteECE %v", got)
	}
	ans := ece.ECE{VendorID: mlx.VendorID, Options: 0x10000000}
	if err := nid.SetLocalECE(ans); err != nil {
		t.Fatal(err)
	}
	if err := nid.Accept(ctx, &ConnParam{QPNum: 0x22, ResponderResources: MaxResources, InitiatorDepth: MaxResources}); err != nil {
		t.Fatal(err)
	}
	a := f.accepts[0]
	if a.ece != ans || a.uid != nid.uid || a.param.QPNum != 0x22 {
		t.Fatalf("accept %+v", a)
	}
	if a.param.ResponderResources != 4 || a.param.InitiatorDepth != 3 {
		t.Fatalf("MaxResources resolved to %d/%d, want the REQ's 4/3", a.param.ResponderResources, a.param.InitiatorDepth)
	}
	if err := nid.SetLocalECE(ans); !errors.Is(err, ErrECEOrder) {
		t.Fatalf("SetLocalECE after Accept: %v", err)
	}
	f.push(rawEvent{uid: nid.uid, typ: EventEstablished})
	ev, err = c.GetEvent(ctx)
	if err != nil || ev.Type != EventEstablished || ev.ID != nid {
		t.Fatalf("%v %v", ev, err)
	}
	ev.Ack()
	if nid.State() != StateEstablished {
		t.Fatalf("state %v", nid.State())
	}
}

func TestRejectECE(t *testing.T) {
	f := newFake()
	c := newChannel(f)
	defer c.Close()
	l, _ := c.CreateID(rdma.PortSpaceTCP, nil)
	l.Listen(0)
	f.push(rawEvent{uid: l.uid, handle: 5, typ: EventConnectRequest, ece: mlx})
	ev, _ := c.GetEvent(testCtx(t))
	if err := ev.ID.RejectECE([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if f.rejects[0] != 35 {
		t.Fatalf("reject reason %d, want 35", f.rejects[0])
	}
	if err := ev.ID.RejectECE(nil); !errors.Is(err, ErrInvalidState) {
		t.Fatalf("second reject: %v", err)
	}
	if err := ev.ID.Reject(make([]byte, 256)); err == nil {
		t.Fatal("256 bytes of private data accepted")
	}
}

// A failed command leaves the state machine where it was.
func TestFailedCommandRestoresState(t *testing.T) {
	f := newFake()
	c := newChannel(f)
	defer c.Close()
	id, _ := c.CreateID(rdma.PortSpaceTCP, nil)
	id.st.state = StateRouteResolved
	f.failOn["connect"] = unix.ENODEV
	err := id.Connect(testCtx(t), nil)
	if !errors.Is(err, unix.ENODEV) || !errors.Is(err, ErrNoDevice) {
		t.Fatalf("Connect: %v", err)
	}
	if id.State() != StateRouteResolved {
		t.Fatalf("state %v after failed connect", id.State())
	}
	if err := id.SetLocalECE(mlx); err != nil {
		t.Fatalf("SetLocalECE after failed connect: %v", err)
	}
}

func TestCloseInterruptsWaiters(t *testing.T) {
	f := newFake()
	c := newChannel(f)
	sid, _ := c.CreateID(rdma.PortSpaceTCP, &IDOptions{Sync: true})
	errs := make(chan error, 3)
	go func() { _, err := c.GetEvent(context.Background()); errs <- err }()
	go func() { _, err := c.GetEvent(context.Background()); errs <- err }()
	go func() { _, err := sid.GetEvent(context.Background()); errs <- err }()
	time.Sleep(20 * time.Millisecond)
	c.Close()
	for i := 0; i < 3; i++ {
		select {
		case err := <-errs:
			if !errors.Is(err, ErrClosed) {
				t.Fatalf("waiter %d: %v, want ErrClosed", i, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Close did not interrupt a waiter")
		}
	}
	if _, err := c.CreateID(rdma.PortSpaceTCP, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("CreateID after Close: %v", err)
	}
	if err := sid.SetLocalECE(mlx); !errors.Is(err, ErrClosed) {
		t.Fatalf("SetLocalECE after Close: %v", err)
	}
}

func TestGetEventContext(t *testing.T) {
	f := newFake()
	c := newChannel(f)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := c.GetEvent(ctx)
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("GetEvent past deadline: %v", err)
	}
	// A second waiter takes over reading after the first one left.
	id, _ := c.CreateID(rdma.PortSpaceTCP, nil)
	go func() {
		time.Sleep(10 * time.Millisecond)
		f.push(rawEvent{uid: id.uid, typ: EventTimewaitExit})
	}()
	ev, err := c.GetEvent(testCtx(t))
	if err != nil || ev.Type != EventTimewaitExit {
		t.Fatalf("%v %v", ev, err)
	}
}

// Events of a synchronous ID never reach Channel.GetEvent, and the other
// way round, whoever reads the backend.
func TestSyncAndAsyncDemux(t *testing.T) {
	f := newFake()
	c := newChannel(f)
	defer c.Close()
	ctx := testCtx(t)
	sid, _ := c.CreateID(rdma.PortSpaceTCP, &IDOptions{Sync: true})
	aid, _ := c.CreateID(rdma.PortSpaceTCP, nil)
	f.push(rawEvent{uid: sid.uid, typ: EventTimewaitExit})
	f.push(rawEvent{uid: aid.uid, typ: EventAddrChange})
	ev, err := c.GetEvent(ctx)
	if err != nil || ev.ID != aid || ev.Type != EventAddrChange {
		t.Fatalf("async got %v %v", ev, err)
	}
	ev, err = sid.GetEvent(ctx)
	if err != nil || ev.ID != sid || ev.Type != EventTimewaitExit {
		t.Fatalf("sync got %v %v", ev, err)
	}
	if _, err := aid.GetEvent(ctx); !errors.Is(err, ErrInvalidState) {
		t.Fatalf("GetEvent on an async ID: %v", err)
	}
}

// Destroying a listener destroys the IDs of requests not yet handed out.
func TestDestroyListenerReapsPendingRequests(t *testing.T) {
	f := newFake()
	c := newChannel(f)
	defer c.Close()
	l, _ := c.CreateID(rdma.PortSpaceTCP, nil)
	l.Listen(0)
	other, _ := c.CreateID(rdma.PortSpaceTCP, nil)
	f.push(rawEvent{uid: l.uid, handle: 50, typ: EventConnectRequest})
	f.push(rawEvent{uid: other.uid, typ: EventAddrChange})
	ev, _ := c.GetEvent(testCtx(t)) // reads both, returns the request
	ev.Ack()
	f.push(rawEvent{uid: l.uid, handle: 51, typ: EventConnectRequest})
	// Make the channel read the second request without delivering it.
	ev, _ = c.GetEvent(testCtx(t))
	if ev.ID != other {
		t.Fatalf("got %v", ev)
	}
	ev.Ack()
	time.Sleep(10 * time.Millisecond)
	f.mu.Lock()
	before := len(f.calls)
	f.mu.Unlock()
	if err := l.Destroy(); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, call := range f.calls[before:] {
		if call == "destroyID" {
			n++
		}
	}
	// Request 51 may still be in the fake's queue (then the kernel reaps
	// it); request 50 was handed out and is the application's.
	if n < 1 {
		t.Fatalf("destroy of the listener made %d destroyID calls", n)
	}
}

func TestEventNames(t *testing.T) {
	if EventAddrResolved.String() != "RDMA_CM_EVENT_ADDR_RESOLVED" || EventInternal.String() != "RDMA_CM_EVENT_INTERNAL" {
		t.Fatal("event names")
	}
	if EventType(20).Known() || !EventType(19).Known() || EventType(20).String() != "UNKNOWN EVENT" {
		t.Fatal("event range")
	}
}

// A synchronous listener's GetRequest loop reads the backend while
// another goroutine waits in Accept for ESTABLISHED (rdmacm-ping -s -P).
func TestSyncAcceptWhileListenerReads(t *testing.T) {
	f := newFake()
	c := newChannel(f)
	defer c.Close()
	ctx := testCtx(t)
	l, _ := c.CreateID(rdma.PortSpaceTCP, &IDOptions{Sync: true})
	l.Listen(0)
	reqs := make(chan *ID)
	go func() {
		for {
			id, err := l.GetRequest(ctx)
			if err != nil {
				close(reqs)
				return
			}
			reqs <- id
		}
	}()
	f.push(rawEvent{uid: l.uid, handle: 9, typ: EventConnectRequest})
	id := <-reqs
	done := make(chan error, 1)
	go func() { done <- id.Accept(ctx, &ConnParam{}) }()
	// Wait until the accept reached the backend, then deliver ESTABLISHED.
	for {
		f.mu.Lock()
		n := len(f.accepts)
		f.mu.Unlock()
		if n == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(10 * time.Millisecond)
	f.push(rawEvent{uid: id.uid, typ: EventEstablished})
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		c.mu.Lock()
		np, na := len(id.pending), len(c.async)
		var lp []EventType
		for _, e := range l.pending {
			lp = append(lp, e.Type)
		}
		c.mu.Unlock()
		t.Fatalf("Accept did not see ESTABLISHED read by the listener's goroutine (pending %d, async %d, listener pending %v, state %v)", np, na, lp, id.State())
	}
}
