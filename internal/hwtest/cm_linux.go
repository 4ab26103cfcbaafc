package hwtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"time"

	"github.com/go-rdma/rdmacm/cm"
	"github.com/go-rdma/rdmacm/ece"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
	"github.com/go-rdma/rdmacm/uverbs"
)

// cmOffer is the ECE the cm checks and rdmacm-ping offer (README.md's).
var cmOffer = ece.ECE{VendorID: ece.VendorMellanox, Options: 0x30000001}

// Ports of the in-process cm checks.
const (
	portCMKernel = 7390
	portCMUser   = 7391
)

// ibCMLoaded reports whether the kernel's ib_cm is loaded: then it owns
// the CM class and our engine cannot register it.
func ibCMLoaded() bool {
	_, err := os.Stat("/sys/module/ib_cm")
	return err == nil
}

func (r *runner) cmChecks(ctx context.Context, tg *target) {
	r.check(ctx, "cm kernel backend + ECE", func(ctx context.Context) (string, error) {
		if !tg.dev.RDMACM.Present {
			return "", skipf("no %s: rdma_ucm is not loaded", valueOr(tg.dev.RDMACM.Path, "/dev/infiniband/rdma_cm"))
		}
		return tg.cmExchange(ctx, cm.BackendKernel, portCMKernel)
	})
	r.check(ctx, "cm user backend + ECE", func(ctx context.Context) (string, error) {
		if ibCMLoaded() {
			return "", skipf("ib_cm is loaded: it owns the CM class, so our engine (-backend user) runs only on hosts without it")
		}
		return tg.cmExchange(ctx, cm.BackendUser, portCMUser)
	})
}

// endpoint is one side's application QP with its CQ and buffer.
type endpoint struct {
	x   *uverbs.Context
	q   *uverbs.QP
	cq  *uverbs.CQ
	buf *uverbs.Buffer
	mr  *uverbs.MR
}

func newEndpoint(id *cm.ID) (*endpoint, error) {
	x, pd, err := id.Verbs()
	if err != nil {
		return nil, fmt.Errorf("verbs: %w", err)
	}
	e := &endpoint{x: x}
	if e.cq, err = x.CreateCQ(8, nil, 0); err != nil {
		return nil, fmt.Errorf("create CQ: %w", err)
	}
	if e.buf, err = uverbs.AllocBuffer(4096); err != nil {
		e.close()
		return nil, err
	}
	if e.mr, err = pd.RegMR(e.buf, qp.AccessLocalWrite); err != nil {
		e.close()
		return nil, fmt.Errorf("reg MR: %w", err)
	}
	if e.q, err = pd.CreateQP(uverbs.QPInit{Type: qp.RC, SendCQ: e.cq, RecvCQ: e.cq,
		Cap: qp.Cap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}}); err != nil {
		e.close()
		return nil, fmt.Errorf("create QP: %w", err)
	}
	return e, nil
}

func (e *endpoint) close() {
	if e.q != nil {
		e.q.Close()
	}
	if e.mr != nil {
		e.mr.Close()
	}
	if e.cq != nil {
		e.cq.Close()
	}
	if e.buf != nil {
		e.buf.Close()
	}
}

// poll waits for one completion, polling (these CQs have no channel).
func (e *endpoint) poll(ctx context.Context) (uverbs.WC, error) {
	wc := make([]uverbs.WC, 1)
	for {
		n, err := e.cq.Poll(wc)
		if err != nil {
			return uverbs.WC{}, err
		}
		if n == 1 {
			if wc[0].Status != rdma.WCSuccess {
				return wc[0], fmt.Errorf("completion %d: %v", wc[0].ID, wc[0].Status)
			}
			return wc[0], nil
		}
		select {
		case <-ctx.Done():
			return uverbs.WC{}, fmt.Errorf("waiting for a completion: %w", ctx.Err())
		case <-time.After(time.Millisecond):
		}
	}
}

// modify moves the QP with the CM's attributes (rdma_init_qp_attr).
func modify(id *cm.ID, q *uverbs.QP, states ...qp.State) error {
	for _, s := range states {
		attr, mask, err := id.InitQPAttr(s)
		if err != nil {
			return fmt.Errorf("attributes for %v: %w", s, err)
		}
		if err := q.Modify(&attr, mask); err != nil {
			return fmt.Errorf("modify QP to %v: %w", s, err)
		}
	}
	return nil
}

// applyECE gives the QP the peer's ECE where the provider has ECE and
// returns what the QP took (the value itself elsewhere).
func applyECE(e *endpoint, remote ece.ECE) (ece.ECE, error) {
	if !e.x.HasECE() {
		return remote, nil
	}
	if err := e.q.SetECE(remote); err != nil {
		return ece.ECE{}, fmt.Errorf("SetECE(%s): %w", fmtECE(remote), err)
	}
	return e.q.QueryECE()
}

const cmMessage = "hwtest: one message over a CM connection"

// cmExchange runs a listener and a client in this process on the device's
// IPv4 address: REQ with ECE, REP with the answer, RTU, one SEND checked,
// DREQ/DREP.
func (tg *target) cmExchange(ctx context.Context, backend cm.Backend, port uint16) (string, error) {
	if !tg.ip.IsValid() {
		return "", skipf("no IPv4 address for the CM: %v", tg.ipErr)
	}
	ch, err := cm.Open(&cm.Options{Backend: backend})
	if err != nil {
		return "", fmt.Errorf("open %s backend: %w", backend, err)
	}
	defer ch.Close()
	addr := netip.AddrPortFrom(tg.ip, port)
	l, err := ch.CreateID(rdma.PortSpaceTCP, &cm.IDOptions{Sync: true})
	if err != nil {
		return "", fmt.Errorf("create listener: %w", err)
	}
	defer l.Destroy()
	l.SetReuseAddr(true)
	if err := l.Bind(addr); err != nil {
		return "", fmt.Errorf("bind %v: %w", addr, err)
	}
	if err := l.Listen(0); err != nil {
		return "", fmt.Errorf("listen: %w", err)
	}

	type served struct {
		offer, answer ece.ECE
		dev           string
		err           error
	}
	done := make(chan served, 1)
	sctx, cancelServer := context.WithCancel(ctx)
	defer cancelServer()
	go func() {
		var s served
		s.err = func() error {
			id, err := l.GetRequest(sctx)
			if err != nil {
				return fmt.Errorf("get request: %w", err)
			}
			defer id.Destroy()
			if s.offer, err = id.RemoteECE(); err != nil {
				return fmt.Errorf("remote ECE: %w", err)
			}
			e, err := newEndpoint(id)
			if err != nil {
				return err
			}
			defer e.close()
			s.dev = e.x.Name()
			if s.answer, err = applyECE(e, s.offer); err != nil {
				return err
			}
			if err := modify(id, e.q, qp.Init); err != nil {
				return err
			}
			if err := e.q.PostRecv([]uverbs.RecvWR{{ID: 1, SGEs: []uverbs.SGE{e.mr.SGE(0, 4096)}}}); err != nil {
				return fmt.Errorf("post receive: %w", err)
			}
			if err := modify(id, e.q, qp.RTR, qp.RTS); err != nil {
				return err
			}
			if err := id.SetLocalECE(s.answer); err != nil {
				return fmt.Errorf("SetLocalECE(%s): %w", fmtECE(s.answer), err)
			}
			if err := id.Accept(sctx, &cm.ConnParam{QPNum: e.q.Num(), ResponderResources: 1, InitiatorDepth: 1}); err != nil {
				return fmt.Errorf("accept: %w", err)
			}
			wc, err := e.poll(sctx)
			if err != nil {
				return fmt.Errorf("receive: %w", err)
			}
			if got := e.buf.Bytes()[:wc.ByteLen]; string(got) != cmMessage {
				return fmt.Errorf("received %q", got)
			}
			ev, err := id.GetEvent(sctx)
			if err != nil {
				return fmt.Errorf("waiting for the disconnect: %w", err)
			}
			typ := ev.Type
			ev.Ack()
			if typ != cm.EventDisconnected {
				return fmt.Errorf("event %v, want DISCONNECTED", typ)
			}
			return id.Disconnect(sctx)
		}()
		if s.err != nil {
			s.err = fmt.Errorf("server: %w", s.err)
		}
		done <- s
	}()

	remote, cerr := tg.cmClient(ctx, ch, addr)
	if cerr != nil {
		cancelServer()
	}
	var s served
	select {
	case s = <-done:
	case <-time.After(30 * time.Second):
		s.err = errors.New("server did not finish")
	}
	if err := errors.Join(cerr, s.err); err != nil {
		return "", err
	}
	if s.offer != cmOffer {
		return "", fmt.Errorf("the REQ carried ECE %s, offered %s", fmtECE(s.offer), fmtECE(cmOffer))
	}
	if remote != s.answer {
		return "", fmt.Errorf("the REP carried ECE %s, the server answered %s", fmtECE(remote), fmtECE(s.answer))
	}
	if s.dev != tg.dev.Name {
		return "", fmt.Errorf("the CM used device %s, not %s", s.dev, tg.dev.Name)
	}
	return fmt.Sprintf("%s backend on %s %v: REQ ECE %s, REP ECE %s, %d-byte SEND checked, disconnected",
		ch.Backend(), s.dev, addr, fmtECE(s.offer), fmtECE(remote), len(cmMessage)), nil
}

// cmClient connects with an application QP offering cmOffer, sends one
// message and disconnects. It returns the ECE of the REP.
func (tg *target) cmClient(ctx context.Context, ch *cm.Channel, addr netip.AddrPort) (ece.ECE, error) {
	id, err := ch.CreateID(rdma.PortSpaceTCP, &cm.IDOptions{Sync: true})
	if err != nil {
		return ece.ECE{}, fmt.Errorf("client: create: %w", err)
	}
	defer id.Destroy()
	if err := id.ResolveAddr(ctx, netip.AddrPort{}, addr, 2*time.Second); err != nil {
		return ece.ECE{}, fmt.Errorf("client: resolve address: %w", err)
	}
	if err := id.ResolveRoute(ctx, 2*time.Second); err != nil {
		return ece.ECE{}, fmt.Errorf("client: resolve route: %w", err)
	}
	e, err := newEndpoint(id)
	if err != nil {
		return ece.ECE{}, fmt.Errorf("client: %w", err)
	}
	defer e.close()
	if err := id.SetLocalECE(cmOffer); err != nil {
		return ece.ECE{}, fmt.Errorf("client: SetLocalECE: %w", err)
	}
	if err := modify(id, e.q, qp.Init); err != nil {
		return ece.ECE{}, fmt.Errorf("client: %w", err)
	}
	if err := id.Connect(ctx, &cm.ConnParam{QPNum: e.q.Num(), ResponderResources: 1, InitiatorDepth: 1, RetryCount: 7, RNRRetryCount: 7}); err != nil {
		return ece.ECE{}, fmt.Errorf("client: connect: %w", err)
	}
	remote, err := id.RemoteECE()
	if err != nil {
		return ece.ECE{}, fmt.Errorf("client: remote ECE: %w", err)
	}
	if _, err := applyECE(e, remote); err != nil {
		return remote, fmt.Errorf("client: %w", err)
	}
	if err := modify(id, e.q, qp.RTR, qp.RTS); err != nil {
		return remote, fmt.Errorf("client: %w", err)
	}
	if err := id.Establish(); err != nil {
		return remote, fmt.Errorf("client: establish: %w", err)
	}
	n := copy(e.buf.Bytes(), cmMessage)
	if err := e.q.PostSend([]uverbs.SendWR{{ID: 2, Opcode: uverbs.OpSend, Flags: uverbs.SendSignaled, SGEs: []uverbs.SGE{e.mr.SGE(0, n)}}}); err != nil {
		return remote, fmt.Errorf("client: post send: %w", err)
	}
	if _, err := e.poll(ctx); err != nil {
		return remote, fmt.Errorf("client: send: %w", err)
	}
	if !bytes.Equal(e.buf.Bytes()[:n], []byte(cmMessage)) {
		return remote, errors.New("client: send buffer changed")
	}
	if err := id.Disconnect(ctx); err != nil {
		return remote, fmt.Errorf("client: disconnect: %w", err)
	}
	return remote, nil
}
