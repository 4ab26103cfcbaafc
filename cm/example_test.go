package cm_test

// The two ECE flows, runnable. They need an RDMA device, so they carry no
// "Output:" comment: `go test` compiles them everywhere and
// TestExamplesInGuest (example_guest_test.go) runs them in a vmtest guest
// and checks what they print. Each runs a server and a client in one
// process over the local RDMA address exampleAddr.

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/go-rdma/rdmacm/cm"
	"github.com/go-rdma/rdmacm/ece"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
	"github.com/go-rdma/rdmacm/uverbs"
)

// exampleAddr is an address of a local RDMA device (in the vmtest guests,
// guest a's address on the soft-RoCE wire).
var exampleAddr = netip.MustParseAddr("192.0.2.1")

// The library-created QP flow: CreateQP makes the QP and its CQs, takes
// the QP's ECE (none on rxe), and moves the QP through INIT, RTR and RTS
// with the connection, as rdma_create_qp does.
func Example_libraryQP() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ch, err := cm.Open(nil)
	if err != nil {
		fmt.Println("open:", err)
		return
	}
	defer ch.Close()
	addr := netip.AddrPortFrom(exampleAddr, 7301)
	caps := cm.QPInit{Cap: qp.Cap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}}

	// Server: listen, take one request, give it a QP, accept.
	l, err := ch.CreateID(rdma.PortSpaceTCP, &cm.IDOptions{Sync: true})
	if err != nil {
		fmt.Println("create listener:", err)
		return
	}
	defer l.Destroy()
	if err := l.Bind(addr); err != nil {
		fmt.Println("bind:", err)
		return
	}
	if err := l.Listen(0); err != nil {
		fmt.Println("listen:", err)
		return
	}
	served := make(chan error, 1)
	go func() {
		id, err := l.GetRequest(ctx)
		if err != nil {
			served <- err
			return
		}
		defer id.Destroy()
		if _, err := id.CreateQP(caps); err != nil {
			served <- err
			return
		}
		// A nil ConnParam: librdmacm's defaults (the REQ's resources).
		if err := id.Accept(ctx, nil); err != nil {
			served <- err
			return
		}
		ev, err := id.GetEvent(ctx) // wait for the client's disconnect
		if err == nil {
			ev.Ack()
			err = id.Disconnect(ctx)
		}
		served <- err
	}()

	// Client: resolve, create the QP, connect.
	id, err := ch.CreateID(rdma.PortSpaceTCP, &cm.IDOptions{Sync: true})
	if err != nil {
		fmt.Println("create:", err)
		return
	}
	defer id.Destroy()
	if err := id.ResolveAddr(ctx, netip.AddrPort{}, addr, 2*time.Second); err != nil {
		fmt.Println("resolve address:", err)
		return
	}
	if err := id.ResolveRoute(ctx, 2*time.Second); err != nil {
		fmt.Println("resolve route:", err)
		return
	}
	q, err := id.CreateQP(caps)
	if err != nil {
		fmt.Println("create QP:", err)
		return
	}
	// The library owns the QP's ECE: the external-QP calls are refused.
	if err := id.SetLocalECE(ece.ECE{VendorID: ece.VendorMellanox}); errors.Is(err, cm.ErrLibraryQP) {
		fmt.Println("SetLocalECE refused: the library manages ECE")
	}
	if err := id.Connect(ctx, nil); err != nil {
		fmt.Println("connect:", err)
		return
	}
	fmt.Println("client state:", id.State(), "QP state:", q.Verbs.State())
	if err := id.Disconnect(ctx); err != nil {
		fmt.Println("disconnect:", err)
		return
	}
	if err := <-served; err != nil {
		fmt.Println("server:", err)
		return
	}
	fmt.Println("done")
}

// The external-QP flow of rdma_set_local_ece(3) and rdma_get_remote_ece(3):
// the application creates its QP, offers the QP's ECE (or its own), reads
// the peer's answer, applies it to the QP and moves the QP itself. The
// passive side answers an offer before Accept (SetLocalECE, or DeclineECE)
// or refuses it with RejectECE (REJ reason 35).
func Example_externalQP() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ch, err := cm.Open(nil)
	if err != nil {
		fmt.Println("open:", err)
		return
	}
	defer ch.Close()
	addr := netip.AddrPortFrom(exampleAddr, 7302)
	offer := ece.ECE{VendorID: ece.VendorMellanox, Options: 0x30000001}

	l, err := ch.CreateID(rdma.PortSpaceTCP, &cm.IDOptions{Sync: true})
	if err != nil {
		fmt.Println("create listener:", err)
		return
	}
	defer l.Destroy()
	if err := l.Bind(addr); err != nil {
		fmt.Println("bind:", err)
		return
	}
	if err := l.Listen(0); err != nil {
		fmt.Println("listen:", err)
		return
	}

	// Server: the first request is refused with REJ 35, the second one
	// accepted with the options its QP took.
	served := make(chan error, 1)
	go func() {
		served <- func() error {
			first, err := l.GetRequest(ctx)
			if err != nil {
				return err
			}
			defer first.Destroy()
			if err := first.RejectECE(nil); err != nil {
				return err
			}
			id, err := l.GetRequest(ctx)
			if err != nil {
				return err
			}
			defer id.Destroy()
			remote, _ := id.RemoteECE()
			fmt.Printf("server: REQ offered %v\n", remote)
			q, cleanup, err := exampleQP(id)
			if err != nil {
				return err
			}
			defer cleanup()
			// Apply the offer to the QP (rxe has no ECE: not supported).
			if err := q.SetECE(remote); err != nil && !errors.Is(err, cm.ErrNotSupported) {
				return err
			}
			if err := exampleModify(id, q, qp.Init, qp.RTR, qp.RTS); err != nil {
				return err
			}
			// Accepting before answering the offer is an ordering error.
			err = id.Accept(ctx, &cm.ConnParam{QPNum: q.Num(), ResponderResources: 1, InitiatorDepth: 1})
			if errors.Is(err, cm.ErrECEOrder) {
				fmt.Println("server: Accept before SetLocalECE refused")
			}
			// Answer with what the QP took (on rxe the offer itself).
			taken, err := q.QueryECE()
			if errors.Is(err, cm.ErrNotSupported) {
				taken = ece.ECE{VendorID: remote.VendorID, Options: 0x10000000}
			}
			if err := id.SetLocalECE(taken); err != nil {
				return err
			}
			if err := id.Accept(ctx, &cm.ConnParam{QPNum: q.Num(), ResponderResources: 1, InitiatorDepth: 1}); err != nil {
				return err
			}
			if err := id.SetLocalECE(taken); errors.Is(err, cm.ErrECEOrder) {
				fmt.Println("server: SetLocalECE after the REP refused")
			}
			ev, err := id.GetEvent(ctx) // the client's disconnect
			if err != nil {
				return err
			}
			ev.Ack()
			return id.Disconnect(ctx)
		}()
	}()

	// Client: twice, the first attempt is rejected with reason 35.
	for attempt := 1; attempt <= 2; attempt++ {
		id, err := ch.CreateID(rdma.PortSpaceTCP, &cm.IDOptions{Sync: true})
		if err != nil {
			fmt.Println("create:", err)
			return
		}
		defer id.Destroy()
		if err := id.ResolveAddr(ctx, netip.AddrPort{}, addr, 2*time.Second); err != nil {
			fmt.Println("resolve address:", err)
			return
		}
		if err := id.ResolveRoute(ctx, 2*time.Second); err != nil {
			fmt.Println("resolve route:", err)
			return
		}
		q, cleanup, err := exampleQP(id)
		if err != nil {
			fmt.Println("QP:", err)
			return
		}
		defer cleanup()
		// Offer the QP's ECE; rxe has none, so offer our own.
		mine, err := q.QueryECE()
		if errors.Is(err, cm.ErrNotSupported) {
			mine = offer
		}
		if err := id.SetLocalECE(mine); err != nil {
			fmt.Println("set local ECE:", err)
			return
		}
		if err := exampleModify(id, q, qp.Init); err != nil {
			fmt.Println("INIT:", err)
			return
		}
		err = id.Connect(ctx, &cm.ConnParam{QPNum: q.Num(), ResponderResources: 1, InitiatorDepth: 1, RetryCount: 7, RNRRetryCount: 7})
		var rej *cm.RejectError
		if errors.As(err, &rej) {
			fmt.Printf("client: attempt %d rejected: reason %d (%v)\n", attempt, rej.Reason, rej.Reason)
			continue
		}
		if err != nil {
			fmt.Println("connect:", err)
			return
		}
		// CONNECT_RESPONSE: apply the answer, move the QP, establish.
		remote, err := id.RemoteECE()
		if err != nil {
			fmt.Println("remote ECE:", err)
			return
		}
		fmt.Printf("client: REP answered %v\n", remote)
		if err := q.SetECE(remote); err != nil && !errors.Is(err, cm.ErrNotSupported) {
			fmt.Println("set QP ECE:", err)
			return
		}
		if err := exampleModify(id, q, qp.RTR, qp.RTS); err != nil {
			fmt.Println("RTR/RTS:", err)
			return
		}
		if err := id.Establish(); err != nil {
			fmt.Println("establish:", err)
			return
		}
		state := q.State()
		if err := id.Disconnect(ctx); err != nil {
			fmt.Println("disconnect:", err)
			return
		}
		fmt.Println("client: established (QP", state.String()+"), disconnected")
	}
	if err := <-served; err != nil {
		fmt.Println("server:", err)
		return
	}
	fmt.Println("done")
}

// exampleQP creates an application-owned RC QP on the ID's device.
func exampleQP(id *cm.ID) (*uverbs.QP, func(), error) {
	x, pd, err := id.Verbs()
	if err != nil {
		return nil, nil, err
	}
	cq, err := x.CreateCQ(8, nil, 0)
	if err != nil {
		return nil, nil, err
	}
	q, err := pd.CreateQP(uverbs.QPInit{Type: qp.RC, SendCQ: cq, RecvCQ: cq,
		Cap: qp.Cap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		cq.Close()
		return nil, nil, err
	}
	return q, func() { q.Close(); cq.Close() }, nil
}

// exampleModify moves the QP with the CM's attributes (rdma_init_qp_attr).
func exampleModify(id *cm.ID, q *uverbs.QP, states ...qp.State) error {
	for _, s := range states {
		attr, mask, err := id.InitQPAttr(s)
		if err != nil {
			return err
		}
		if err := q.Modify(&attr, mask); err != nil {
			return err
		}
	}
	return nil
}
