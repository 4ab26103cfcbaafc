package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-rdma/rdmacm/cm"
	"github.com/go-rdma/rdmacm/ece"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
)

// The connect-only mode runs the external-QP flow of rdma_set_local_ece(3)
// and rdma_get_remote_ece(3): the program creates its QP, offers ECE,
// applies the peer's answer to the QP and moves the QP itself.

// applyRemoteECE asks the QP for the peer's ECE; providers without ECE
// (rxe) answer not-supported, which is fine.
func applyRemoteECE(q extQP, remote ece.ECE) error {
	if q == nil || remote.IsZero() {
		return nil
	}
	if err := q.SetECE(remote); err != nil && !errors.Is(err, cm.ErrNotSupported) {
		return fmt.Errorf("set the QP's ECE: %w", err)
	}
	return nil
}

// qpECE is the QP's own ECE, zero when the provider has none.
func qpECE(q extQP) (ece.ECE, error) {
	if q == nil {
		return ece.None, nil
	}
	e, err := q.QueryECE()
	if errors.Is(err, cm.ErrNotSupported) {
		return ece.None, nil
	}
	return e, err
}

// modifyQP moves an external QP through the given states with the
// attributes the CM computes (rdma_init_qp_attr).
func modifyQP(id *cm.ID, q extQP, states ...qp.State) error {
	if q == nil {
		return nil
	}
	for _, s := range states {
		attr, mask, err := id.InitQPAttr(s)
		if err != nil {
			return err
		}
		if err := q.Modify(&attr, mask); err != nil {
			return fmt.Errorf("modify QP to %v: %w", s, err)
		}
	}
	return nil
}

func (a *app) connectOnlyClient(ctx context.Context) error {
	id, err := a.ch.CreateID(rdma.PortSpaceTCP, &cm.IDOptions{Sync: true})
	if err != nil {
		return err
	}
	defer id.Destroy()
	if err := a.resolve(ctx, id); err != nil {
		return err
	}
	q, err := a.newExternalQP(id)
	if err != nil {
		return err
	}
	if q != nil {
		defer q.Close()
	}
	// Offer ECE: the -ece value, else what the QP reports.
	offer := a.cfg.ece
	if !a.cfg.eceSet {
		if offer, err = qpECE(q); err != nil {
			return err
		}
	}
	if !offer.IsZero() {
		if err := id.SetLocalECE(offer); err != nil {
			return err
		}
	}
	if err := modifyQP(id, q, qp.Init); err != nil {
		return err
	}
	param := connParam(q)
	sctx, cancel := a.step(ctx)
	defer cancel()
	if err := id.Connect(sctx, &param); err != nil {
		return err
	}
	remote, err := id.RemoteECE()
	if err != nil {
		return err
	}
	fmt.Printf("remote ECE: %s\n", formatECE(remote))
	if err := applyRemoteECE(q, remote); err != nil {
		return err
	}
	if err := modifyQP(id, q, qp.RTR, qp.RTS); err != nil {
		return err
	}
	if err := id.Establish(); err != nil {
		return err
	}
	fmt.Printf("private data length: %d\n", len(id.ConnParam().PrivateData))
	fmt.Println("connected")
	if err := id.Disconnect(sctx); err != nil {
		return err
	}
	fmt.Println("disconnected")
	return nil
}

func (a *app) connectOnlyServer(ctx context.Context) error {
	l, err := a.listen()
	if err != nil {
		return err
	}
	defer l.Destroy()
	fmt.Printf("listening on %v\n", l.LocalAddr())
	id, err := l.GetRequest(ctx)
	if err != nil {
		return err
	}
	defer id.Destroy()
	remote, err := id.RemoteECE()
	if err != nil {
		return err
	}
	fmt.Printf("remote ECE: %s\n", formatECE(remote))
	fmt.Printf("private data length: %d\n", len(id.RequestParam().PrivateData))
	if a.cfg.rejectECE {
		if err := id.RejectECE(nil); err != nil {
			return err
		}
		fmt.Println("rejected with reason 35")
		return nil
	}
	q, err := a.newExternalQP(id)
	if err != nil {
		return err
	}
	if q != nil {
		defer q.Close()
	}
	// rdma_set_local_ece(3), passive side: apply the remote ECE to the QP,
	// modify it, then answer with what it took.
	if err := applyRemoteECE(q, remote); err != nil {
		return err
	}
	if err := modifyQP(id, q, qp.Init, qp.RTR, qp.RTS); err != nil {
		return err
	}
	param := connParam(q)
	answer := a.cfg.ece
	if !a.cfg.eceSet {
		if answer, err = qpECE(q); err != nil {
			return err
		}
	}
	if answer.IsZero() {
		param.DeclineECE = true
	} else if err := id.SetLocalECE(answer); err != nil {
		return err
	}
	sctx, cancel := a.step(ctx)
	defer cancel()
	if err := id.Accept(sctx, &param); err != nil {
		return err
	}
	fmt.Println("connected")
	if a.cfg.disconnectFirst {
		// Our DREQ first; Disconnect waits for the peer's DREP.
		if err := id.Disconnect(sctx); err != nil {
			return err
		}
		fmt.Println("disconnected")
		return nil
	}
	// Wait for the peer's disconnect, then answer it.
	for {
		ev, err := id.GetEvent(ctx)
		if err != nil {
			return err
		}
		t := ev.Type
		ev.Ack()
		a.dbg("event %v", t)
		if t == cm.EventDisconnected {
			break
		}
	}
	if err := id.Disconnect(ctx); err != nil {
		return err
	}
	fmt.Println("disconnected")
	return nil
}

// connParam is rping's rdma_conn_param: one read in flight each way,
// retries 7.
func connParam(q extQP) cm.ConnParam {
	p := cm.ConnParam{ResponderResources: 1, InitiatorDepth: 1, RetryCount: 7, RNRRetryCount: 7}
	if q != nil {
		p.QPNum = q.Num()
	}
	return p
}
