//go:build linux

package cm

import (
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/go-rdma/rdmacm/cm/engine"
	"github.com/go-rdma/rdmacm/internal/testfabric"
	"github.com/go-rdma/rdmacm/internal/unix"
	"github.com/go-rdma/rdmacm/rdma"
	"github.com/go-rdma/rdmacm/uverbs"
)

// The user backend's Notify takes what the kernel's ib_cm_notify takes
// (rdma_notify on IB and RoCE): COMM_EST (cm_establish: REP_SENT becomes
// ESTABLISHED, EISCONN once established) and PATH_MIG (cm_migrate: EINVAL
// unless established, then nothing changes on RoCE). Anything else is
// EINVAL, naming the event.
func TestUserNotifyEvents(t *testing.T) {
	const port = 7174
	f := testfabric.New(2, 1)
	f.Nodes[1].Policy = testfabric.Policy{AutoAccept: true}
	var passive engine.ID
	f.Nodes[1].OnEvent = func(_ *testfabric.Node, ev *engine.Event) {
		if ev.Type == engine.EventConnectRequest {
			passive = ev.ID
		}
	}
	eng := f.Nodes[1].Engine
	if _, err := eng.Listen(f.Now, engine.ListenParams{PortSpace: rdma.PortSpaceTCP, Port: port}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Connect(0, 1, port); err != nil {
		t.Fatal(err)
	}
	f.Stabilize() // no RTU from node 1: the passive side waits in REP_SENT
	state := func(want engine.State) {
		t.Helper()
		if got, ok := eng.State(passive); !ok || got != want {
			t.Fatalf("passive ID in %v (exists %v), want %v", got, ok, want)
		}
	}
	notify := func(ev uverbs.AsyncEventType) error {
		t.Helper()
		err := notifyEngine(eng, f.Now, passive, ev)
		f.Flush()
		if ferr := f.Err(); ferr != nil {
			t.Fatal(ferr)
		}
		return errnoError("Notify", err) // as ID.do returns it
	}
	state(engine.StateREPSent)

	for _, ev := range []uverbs.AsyncEventType{uverbs.EventQPFatal, uverbs.EventSQDrained, uverbs.EventPathMigErr, 99} {
		err := notify(ev)
		if !errors.Is(err, ErrInvalidArgument) || !errors.Is(err, unix.EINVAL) ||
			!strings.Contains(err.Error(), "event ") || !strings.Contains(err.Error(), "PATH_MIG") {
			t.Errorf("event %d: %v, want EINVAL naming the event", ev, err)
		}
	}
	state(engine.StateREPSent)

	if err := notify(uverbs.EventPathMig); !errors.Is(err, ErrInvalidState) || !errors.Is(err, unix.EINVAL) {
		t.Errorf("PATH_MIG in REP_SENT: %v, want EINVAL", err)
	}
	state(engine.StateREPSent)

	if err := notify(uverbs.EventCommEst); err != nil {
		t.Fatalf("COMM_EST in REP_SENT: %v", err)
	}
	state(engine.StateEstablished)
	if err := notify(uverbs.EventCommEst); !errors.Is(err, syscall.EISCONN) {
		t.Errorf("COMM_EST when established: %v, want EISCONN", err)
	}

	inFlight := f.InFlight()
	if err := notify(uverbs.EventPathMig); err != nil {
		t.Errorf("PATH_MIG when established: %v", err)
	}
	if f.InFlight() != inFlight {
		t.Errorf("PATH_MIG sent MADs: %d in flight, was %d", f.InFlight(), inFlight)
	}
	state(engine.StateEstablished)
}
