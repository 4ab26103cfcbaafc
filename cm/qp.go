package cm

import (
	"errors"

	"github.com/go-rdma/rdmacm/ece"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/uverbs"
)

// verbsQP is what a library QP needs from the verbs layer.
type verbsQP interface {
	Num() uint32
	Modify(a *qp.Attr, m qp.Mask) error
	// QueryECE and SetECE return an error matching ErrNotSupported when
	// the provider has no ECE (rxe).
	QueryECE() (ece.ECE, error)
	SetECE(e ece.ECE) error
	HasSRQ() bool
	Close() error
}

// QP is a QP created by the library on an ID (rdma_create_qp), with its
// completion queues. The library moves it through INIT, RTR and RTS as the
// connection progresses and owns its ECE.
type QP struct {
	v      verbsQP
	extra  []interface{ Close() error } // CQs and channels the library made
	maxRD  uint8                        // device max_qp_rd_atom
	maxIRD uint8                        // device max_qp_init_rd_atom
	ud     bool
	owner  *ID
	// noECE: the provider answered not-supported once; later ECE calls
	// on this QP are skipped (they cannot succeed).
	noECE bool

	// Verbs is the verbs QP, for posting work requests.
	Verbs *uverbs.QP
	// SendCQ and RecvCQ are the QP's completion queues; SendChannel and
	// RecvChannel their completion channels when CreateQP made them.
	SendCQ, RecvCQ           *uverbs.CQ
	SendChannel, RecvChannel *uverbs.CompChannel
}

// Num returns the QP number (ibv_qp.qp_num).
func (q *QP) Num() uint32 { return q.v.Num() }

// modify is q.v.Modify, called directly on a verbs QP so that a stays on
// the caller's stack (through the interface it escapes: an allocation of
// 144 bytes per modify).
func (q *QP) modify(a *qp.Attr, m qp.Mask) error {
	if u, ok := q.v.(uverbsQP); ok {
		return u.q.Modify(a, m)
	}
	c := *a
	return q.v.Modify(&c, m)
}

// toInit is the INIT step of rdma_create_qp (connected QPs), or INIT, RTR
// and RTS for UD QPs (librdmacm ucma_init_ud_qp). Called with id.mu held.
func (q *QP) toInit(id *ID) error {
	a, m, err := id.createQPInitAttr()
	if err != nil {
		return errnoError("get QP attributes for INIT", err)
	}
	if err := q.modify(&a, m); err != nil {
		return err // uverbs names the QP and the state
	}
	if !q.ud {
		return nil
	}
	if err := q.modify(&qp.Attr{State: qp.RTR}, qp.MaskState); err != nil {
		return err // uverbs names the QP and the state
	}
	if err := q.modify(&qp.Attr{State: qp.RTS}, qp.MaskState|qp.MaskSQPSN); err != nil {
		return err // uverbs names the QP and the state
	}
	return nil
}

// toRTS moves the QP to RTR and RTS (ucma_modify_qp_rtr,
// ucma_modify_qp_rts). librdmacm first re-applies INIT because the access
// flags the CM grants (remote read and write, once the responder
// resources are known) are only final now; here they ride on the
// INIT→RTR modify, which takes ACCESS_FLAGS as an optional attribute
// (package qp's transition table; kernel ib_modify_qp_is_ok), saving one
// modify per connection.
func (q *QP) toRTS(id *ID, resp, init uint8) error {
	ia, im, err := id.ch.b.initQPAttr(id.handle, qp.Init)
	if err != nil {
		return errnoError("get QP attributes for INIT", err)
	}
	a, m, err := id.ch.b.initQPAttr(id.handle, qp.RTR)
	if err != nil {
		return errnoError("get QP attributes for RTR", err)
	}
	if im&qp.MaskAccessFlags != 0 {
		a.AccessFlags = ia.AccessFlags
		m |= qp.MaskAccessFlags
	}
	if resp != MaxResources {
		a.MaxDestRdAtomic = resp
	}
	if err := q.modify(&a, m); err != nil {
		return err // uverbs names the QP and the state
	}
	a, m, err = id.ch.b.initQPAttr(id.handle, qp.RTS)
	if err != nil {
		return errnoError("get QP attributes for RTS", err)
	}
	if init != MaxResources {
		a.MaxRdAtomic = init
	}
	if err := q.modify(&a, m); err != nil {
		return err // uverbs names the QP and the state
	}
	return nil
}

// toErr moves the QP to ERR, flushing its work requests.
func (q *QP) toErr() { _ = q.modify(&qp.Attr{State: qp.Err}, qp.MaskState) }

// setECE requests e on the QP; a provider without ECE (or vendor 0, which
// ibv_set_ece refuses with EOPNOTSUPP) is not an error.
func (q *QP) setECE(e ece.ECE) error {
	if e.VendorID == 0 || q.noECE {
		return nil
	}
	err := q.v.SetECE(e)
	if isNotSupported(err) {
		q.noECE = true
		return nil
	}
	if err != nil {
		return err // uverbs names the operation
	}
	return nil
}

// queryECE returns the QP's ECE, zero when the provider has none.
func (q *QP) queryECE() (ece.ECE, error) {
	if q.noECE {
		return ece.None, nil
	}
	e, err := q.v.QueryECE()
	if isNotSupported(err) {
		q.noECE = true
		return ece.None, nil
	}
	if err != nil {
		return ece.None, err // uverbs names the operation
	}
	return e, nil
}

// negotiatedOptions returns the options the QP ended with (0 without ECE).
func (q *QP) negotiatedOptions() (uint32, error) {
	e, err := q.queryECE()
	return e.Options, err
}

// destroy closes the verbs QP, then what the library made for it, last
// made first; the slice of errors is made only when one fails.
func (q *QP) destroy() error {
	var errs []error
	if q.v != nil {
		if err := q.v.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	for i := len(q.extra) - 1; i >= 0; i-- {
		if err := q.extra[i].Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// attachQP runs librdmacm's rdma_create_qp_ex steps on a new verbs QP:
// query its ECE, on a passive ID answer the REQ's ECE (init_ece), move it
// to INIT, and on a passive ID take the negotiated options
// (set_local_ece). On failure the caller destroys the QP.
func (id *ID) attachQP(q *QP) error {
	id.mu.Lock()
	defer id.mu.Unlock()
	return id.attachQPLocked(q)
}

func (id *ID) attachQPLocked(q *QP) error {
	if id.closed.Load() {
		return errnoError("CreateQP", ErrClosed)
	}
	if err := id.st.createQP(); err != nil {
		return err
	}
	local, err := q.queryECE()
	if err != nil {
		return errnoError("CreateQP", err)
	}
	if set, ok := id.st.libPassiveECE(local); ok {
		if err := q.setECE(set); err != nil {
			return errnoError("CreateQP", err)
		}
	}
	if err := q.toInit(id); err != nil {
		return errnoError("CreateQP", err)
	}
	if !id.st.remote.IsZero() {
		n, err := q.negotiatedOptions()
		if err != nil {
			return errnoError("CreateQP", err)
		}
		local.Options = n
	}
	q.owner = id
	id.qp = q
	id.st.qpCreated(local)
	return nil
}

// createQPInitAttr gives rdma_create_qp's INIT attributes (INIT_QP_ATTR),
// asked of the backend for every QP as librdmacm does. Called with id.mu
// held.
func (id *ID) createQPInitAttr() (qp.Attr, qp.Mask, error) {
	// Not cached per port: the P_Key index in the answer follows the
	// port's P_Key table, which can change under a live device.
	return id.ch.b.initQPAttr(id.handle, qp.Init)
}

// QP returns the library QP, nil if none.
func (id *ID) QP() *QP {
	id.mu.Lock()
	defer id.mu.Unlock()
	return id.qp
}

// DestroyQP destroys the library QP and its CQs (rdma_destroy_qp).
func (id *ID) DestroyQP() error {
	id.mu.Lock()
	q := id.qp
	id.qp = nil
	id.st.qpDestroyed()
	id.mu.Unlock()
	if q == nil {
		return nil
	}
	return q.destroy()
}

// fillLibraryParam completes Connect/Accept parameters from the library
// QP (number, SRQ) and resolves MaxResources. Called with id.mu held.
func (id *ID) fillLibraryParam(p *ConnParam, active bool) error {
	if id.qp != nil {
		p.QPNum = id.qp.Num()
		p.SRQ = id.qp.v.HasSRQ()
	}
	maxRD, maxIRD := uint8(0), uint8(0)
	if id.qp != nil {
		maxRD, maxIRD = id.qp.maxRD, id.qp.maxIRD
	}
	resolve := func(v, peer, devMax uint8) uint8 {
		if v != MaxResources {
			return v
		}
		if active {
			if devMax == 0 {
				return 1
			}
			return devMax
		}
		if devMax != 0 && devMax < peer {
			return devMax
		}
		return peer
	}
	p.ResponderResources = resolve(p.ResponderResources, id.reqConn.ResponderResources, maxRD)
	p.InitiatorDepth = resolve(p.InitiatorDepth, id.reqConn.InitiatorDepth, maxIRD)
	return nil
}
