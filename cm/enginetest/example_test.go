package enginetest_test

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/go-rdma/rdmacm/cm/engine"
	"github.com/go-rdma/rdmacm/cm/enginetest"
	"github.com/go-rdma/rdmacm/mad"
	"github.com/go-rdma/rdmacm/rdma"
)

// This example drives two engines by hand, without this package's
// helpers, to show the contract between the engine and its driver. The
// driver owns the clock, the wire and the engines' inputs: it feeds every
// received MAD to Receive, acts on Ready after every input (send the
// Messages, apply the QPTransitions, deliver the Events, then Advance),
// and calls Tick once the earliest Deadline has passed. A real driver
// receives from a umad fd and sleeps on a timer set to the deadline; here
// the clock is a variable and the wire a slice, which loses the first REP
// so that the passive side's retransmission timer has something to do.
func Example_readyLoop() {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := start

	// Two CAs with the RoCE GIDs of 192.0.2.1 and 192.0.2.2.
	var ips [2]netip.Addr
	var gids [2]rdma.GID
	var engines [2]*engine.Engine
	for i := range engines {
		ips[i] = netip.AddrFrom4([4]byte{192, 0, 2, byte(i + 1)})
		gids[i] = rdma.GIDFromAddr(ips[i])
		e, err := engine.New(engine.Config{CAGUID: uint64(i + 1), ACKDelay: 15,
			Source: engine.NewSeededSource(uint64(i+1), 2)})
		if err != nil {
			panic(err)
		}
		engines[i] = e
	}
	nodeOf := func(g rdma.GID) int {
		if g == gids[0] {
			return 0
		}
		return 1
	}

	// The wire: MADs in flight, with their sender's address as the
	// receiver will see it.
	type inFlight struct {
		to   int
		from engine.Addr
		mad  [mad.MADSize]byte
	}
	var wire []inFlight
	lostREP := false

	// ready is the body of the loop: the driver's duty after any input.
	var ready func(i int)
	ready = func(i int) {
		e := engines[i]
		if !e.HasReady() {
			return
		}
		rd := e.Ready()
		for _, m := range rd.Messages {
			wire = append(wire, inFlight{to: nodeOf(m.To.GID),
				from: engine.Addr{Port: 1, GID: gids[i], QPN: 1, HopLimit: 64}, mad: m.MAD})
		}
		// rd.QPTransitions is empty: no connection here sets ManageQP.
		// Events and their slices are valid until Advance: keep what is
		// needed, acknowledge, then act.
		events := append([]engine.Event(nil), rd.Events...)
		e.Advance()
		for _, ev := range events {
			fmt.Printf("%v node %d: %v\n", now.Sub(start), i+1, ev.Type)
			var err error
			switch ev.Type {
			case engine.EventConnectRequest:
				err = e.Accept(now, ev.ID, engine.AcceptParams{QPN: 0x22, ResponderResources: 1,
					InitiatorDepth: 1, RNRRetryCount: 7})
			case engine.EventConnectReply:
				err = e.Establish(now, ev.ID, nil)
			case engine.EventDisconnectRequest:
				err = e.Disconnect(now, ev.ID, nil) // the DREP
			case engine.EventTimewaitExit:
				err = e.Destroy(now, ev.ID)
			}
			if err != nil {
				panic(err)
			}
		}
		ready(i) // the answers made outputs of their own
	}

	// run is the driver's main loop: receive, and when nothing is left to
	// receive, sleep until the earliest deadline and Tick.
	run := func() {
		for {
			for len(wire) > 0 {
				m := wire[0]
				wire = wire[1:]
				if h, _ := mad.ParseHeader(m.mad[:]); h.AttributeID() == mad.AttrREP && !lostREP {
					lostREP = true
					fmt.Printf("%v wire: REP lost\n", now.Sub(start))
					continue
				}
				engines[m.to].Receive(now, m.from, m.mad[:])
				ready(m.to)
			}
			var next time.Time
			for _, e := range engines {
				if d := e.Deadline(); !d.IsZero() && (next.IsZero() || d.Before(next)) {
					next = d
				}
			}
			if next.IsZero() {
				return // nothing in flight, no timer armed
			}
			now = next // a real driver: time.NewTimer(time.Until(next))
			for i, e := range engines {
				e.Tick(now)
				ready(i)
			}
		}
	}

	if _, err := engines[1].Listen(now, engine.ListenParams{PortSpace: rdma.PortSpaceTCP, Port: 7174}); err != nil {
		panic(err)
	}
	ready(1)
	id, err := engines[0].Connect(now, engine.ConnectParams{
		PortSpace: rdma.PortSpaceTCP,
		Src:       netip.AddrPortFrom(ips[0], 40000),
		Dst:       netip.AddrPortFrom(ips[1], 7174),
		Path: engine.Path{PathRecord: rdma.PathRecord{PKey: 0xffff, SGID: gids[0], DGID: gids[1],
			HopLimit: 64, MTU: rdma.MTU1024, PacketLifeTime: 18}, Port: 1, RoCE: true},
		QPN: 0x11, ResponderResources: 1, InitiatorDepth: 1, RetryCount: 7, RNRRetryCount: 7,
	})
	if err != nil {
		panic(err)
	}
	ready(0)
	run()
	state, _ := engines[0].State(id)
	fmt.Printf("%v node 1 is %v\n", now.Sub(start), state)

	if err := engines[0].Disconnect(now, id, nil); err != nil {
		panic(err)
	}
	ready(0)
	run()
	fmt.Printf("%v IDs left: %d on node 1, %d (the listener) on node 2\n", now.Sub(start), engines[0].Len(), engines[1].Len())

	// Output:
	// 0s node 2: CONNECT_REQUEST
	// 0s wire: REP lost
	// 4.096s node 1: CONNECT_REPLY
	// 4.096s node 2: ESTABLISHED
	// 4.096s node 1 is ESTABLISHED
	// 4.096s node 2: DISCONNECT_REQUEST
	// 4.096s node 1: DISCONNECT_REPLY
	// 6.144s node 1: TIMEWAIT_EXIT
	// 6.144s node 2: TIMEWAIT_EXIT
	// 6.144s IDs left: 0 on node 1, 1 (the listener) on node 2
}

// A connection through the fabric loses its REP; the passive side resends
// it when its timer (the REQ's local CM response timeout, 2^(20-8) ms)
// expires, and the connection completes.
func ExampleFabric_AddFault() {
	f := enginetest.NewFabric(2, enginetest.WithPolicy(enginetest.Policy{AutoAccept: true, AutoEstablish: true}))
	f.AddFault(enginetest.Fault{Kind: mad.AttrREP, Action: enginetest.Drop, Count: 1})
	f.OnMessage(func(m enginetest.Message) { fmt.Println(m) })
	client, server := f.Node(1), f.Node(2)

	if _, err := server.Listen(7174); err != nil {
		panic(err)
	}
	id, err := client.Connect(server, 7174)
	if err != nil {
		panic(err)
	}
	f.RunUntilIdle()

	for _, ev := range f.Events() {
		fmt.Printf("%v node %d: %v\n", ev.At.Sub(enginetest.Epoch), ev.Node, ev.Type)
	}
	state, _ := client.State(id)
	fmt.Println("client:", state)
	fmt.Println("REPs resent:", server.Engine().Stats().Retransmits)
	fmt.Println("errors:", f.Err())

	// Output:
	// 0s 1>2 REQ
	// 0s 2>1 REP dropped
	// 4.096s 2>1 REP resend 1
	// 4.096s 1>2 RTU
	// 0s node 2: CONNECT_REQUEST
	// 4.096s node 1: CONNECT_REPLY
	// 4.096s node 2: ESTABLISHED
	// client: ESTABLISHED
	// REPs resent: 1
	// errors: <nil>
}

// A partition between the two nodes leaves the REQ unanswered: it is sent
// three times (MaxCMRetries 2), 2 × 2^(18-8) + 2^(20-8) ms apart, and then
// the active side reports REQ_ERROR (the rdma_cm's UNREACHABLE).
func ExampleFabric_Partition() {
	f := enginetest.NewFabric(2)
	f.Partition(1, 2)
	f.OnMessage(func(m enginetest.Message) { fmt.Println(m) })
	client, server := f.Node(1), f.Node(2)

	if _, err := server.Listen(7174); err != nil {
		panic(err)
	}
	p := client.ConnectParams(server, 7174)
	p.MaxCMRetries = 2
	if _, err := client.ConnectWith(p); err != nil {
		panic(err)
	}
	f.RunUntilIdle()
	for _, ev := range client.Events() {
		fmt.Println(ev.At.Sub(enginetest.Epoch), ev.Type)
	}

	// Output:
	// 0s 1>2 REQ lost
	// 6.144s 1>2 REQ lost resend 1
	// 12.288s 1>2 REQ lost resend 2
	// 18.432s REQ_ERROR
}
