package umad

import (
	"context"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/cm/engine"
	"github.com/go-rdma/rdmacm/mad"
	"github.com/go-rdma/rdmacm/rdma"
)

// memTransport is one end of an in-memory wire.
type memTransport struct {
	gid  rdma.GID
	in   chan memMAD
	peer *memTransport
	once sync.Once
	done chan struct{}
	// drop loses the first n MADs sent.
	drop int
	mu   sync.Mutex
}

type memMAD struct {
	from rdma.GID
	m    [mad.MADSize]byte
}

func memPair(a, b rdma.GID) (*memTransport, *memTransport) {
	x := &memTransport{gid: a, in: make(chan memMAD, 64), done: make(chan struct{})}
	y := &memTransport{gid: b, in: make(chan memMAD, 64), done: make(chan struct{})}
	x.peer, y.peer = y, x
	return x, y
}

func (t *memTransport) Send(to engine.Addr, m []byte) error {
	t.mu.Lock()
	if t.drop > 0 {
		t.drop--
		t.mu.Unlock()
		return nil
	}
	t.mu.Unlock()
	var mm memMAD
	mm.from = t.gid
	copy(mm.m[:], m)
	select {
	case t.peer.in <- mm:
	case <-t.peer.done:
	}
	return nil
}

func (t *memTransport) Recv(ctx context.Context, buf []byte) (engine.Addr, int, error) {
	select {
	case mm := <-t.in:
		return engine.Addr{Port: 1, GID: mm.from, QPN: 1, HopLimit: 64}, copy(buf, mm.m[:]), nil
	case <-ctx.Done():
		return engine.Addr{}, 0, ctx.Err()
	case <-t.done:
		return engine.Addr{}, 0, ErrClosed
	}
}

func (t *memTransport) Close() error {
	t.once.Do(func() { close(t.done) })
	return nil
}

// TestDriverHandshake runs two engines through their drivers on an
// in-memory wire with real goroutines and timers: the first REQ is lost,
// so the connection needs the driver's timer (a 1 ms packet lifetime and
// response timeout 8 make the REQ's resend interval 3 ms).
func TestDriverHandshake(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ga, gb := rdma.GIDFromAddr(netip.MustParseAddr("192.0.2.1")), rdma.GIDFromAddr(netip.MustParseAddr("192.0.2.2"))
	ta, tb := memPair(ga, gb)
	ta.drop = 1
	mk := func(seed uint64) *engine.Engine {
		e, err := engine.New(engine.Config{CAGUID: seed, Source: engine.NewSeededSource(seed, 2), ACKDelay: 15})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	da, db := NewDriver(mk(1), ta), NewDriver(mk(2), tb)
	events := make(chan engine.Event, 16)
	da.OnEvent = func(ev engine.Event) { events <- ev }
	db.OnEvent = func(ev engine.Event) {
		events <- ev
		if ev.Type == engine.EventConnectRequest {
			go func() {
				if err := db.Do(func(e *engine.Engine, now time.Time) error {
					return e.Accept(now, ev.ID, engine.AcceptParams{QPN: 0x22, RNRRetryCount: 7})
				}); err != nil {
					t.Error(err)
				}
			}()
		}
	}
	go da.Run(ctx)
	go db.Run(ctx)
	defer da.Close()
	defer db.Close()
	if err := db.Do(func(e *engine.Engine, now time.Time) error {
		_, err := e.Listen(now, engine.ListenParams{PortSpace: rdma.PortSpaceTCP, Port: 7174})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var id engine.ID
	if err := da.Do(func(e *engine.Engine, now time.Time) (err error) {
		id, err = e.Connect(now, engine.ConnectParams{
			PortSpace: rdma.PortSpaceTCP, Src: netip.MustParseAddrPort("192.0.2.1:40000"), Dst: netip.MustParseAddrPort("192.0.2.2:7174"),
			Path: engine.Path{PathRecord: rdma.PathRecord{PKey: 0xffff, SGID: ga, DGID: gb, HopLimit: 64, MTU: rdma.MTU1024, PacketLifeTime: 0}, Port: 1, RoCE: true},
			QPN:  0x11, RNRRetryCount: 7, CMResponseTimeout: 8,
		})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	want := map[engine.EventType]bool{engine.EventConnectRequest: true, engine.EventConnectReply: true}
	for len(want) > 0 {
		select {
		case ev := <-events:
			delete(want, ev.Type)
			if ev.Type == engine.EventConnectReply {
				if err := da.Do(func(e *engine.Engine, now time.Time) error { return e.Establish(now, id, nil) }); err != nil {
					t.Fatal(err)
				}
			}
		case <-ctx.Done():
			t.Fatalf("events missing: %v", want)
		}
	}
	select {
	case ev := <-events:
		if ev.Type != engine.EventEstablished {
			t.Fatalf("event %v", &ev)
		}
	case <-ctx.Done():
		t.Fatal("no ESTABLISHED")
	}
}
