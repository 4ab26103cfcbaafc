package uverbs

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/go-rdma/rdmacm/ece"
	"github.com/go-rdma/rdmacm/internal/abi"
	"github.com/go-rdma/rdmacm/internal/kcall"
	"github.com/go-rdma/rdmacm/internal/unix"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
)

// QPInit describes a QP to create.
type QPInit struct {
	Type   qp.QPType // qp.RC, qp.UC or qp.UD
	SendCQ *CQ
	RecvCQ *CQ
	Cap    qp.Cap
	// SignalAll makes every send WR generate a completion.
	SignalAll bool
	// SRQ, when set, makes the QP receive from this shared receive queue:
	// the QP has no receive queue of its own, Cap.MaxRecvWR and
	// Cap.MaxRecvSGE are ignored, and QP.PostRecv fails (post to
	// SRQ.PostRecv). Receive completions still go to RecvCQ.
	SRQ *SRQ
}

// QP is a queue pair.
type QP struct {
	pd      *PD
	handle  uint32
	uhandle uint64
	num     uint32
	typ     qp.QPType
	cap     qp.Cap
	sendCQ  *CQ
	recvCQ  *CQ
	srq     *SRQ // the shared receive queue, or nil

	mu    sync.Mutex // state and modify
	state qp.State
	port  uint8
	// maxRdAtomic is the last max_rd_atomic set by Modify: with 0 the
	// QP may not issue atomics (read without mu by the send path).
	maxRdAtomic atomic.Uint32
	// attr is Modify's copy of the caller's attributes for the provider
	// (under mu), so that the caller's stay on its stack.
	attr qp.Attr
	// destroyResp is DESTROY_QP's response (events reported).
	destroyResp abi.UverbsDestroyQPResp

	slot int // index in the context's qps (under its mu)

	mcasts []mcastGroup // groups attached (mcast.go), under mu

	ops  qpOps
	drv  any // provider state (mlx5 ECE)
	once sync.Once
	err  error
}

// HasDataPath reports whether PostSend and PostRecv work on this QP: the
// provider has a data path in this package (rxe, mlx5).
func (q *QP) HasDataPath() bool { return q.ops != nil }

// Num is the QP number.
func (q *QP) Num() uint32 { return q.num }

// Type is the QP's transport type.
func (q *QP) Type() qp.QPType { return q.typ }

// Cap is the capacity the kernel granted (it may exceed what was asked).
func (q *QP) Cap() qp.Cap { return q.cap }

// State is the state the QP was last moved to by Modify.
func (q *QP) State() qp.State {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.state
}

// Handle is the user handle the kernel reports in async events.
func (q *QP) Handle() uint64 { return q.uhandle }

// PD is the protection domain of the QP.
func (q *QP) PD() *PD { return q.pd }

// SRQ is the shared receive queue the QP was created on, or nil.
func (q *QP) SRQ() *SRQ { return q.srq }

// CreateQP creates a QP in RESET (QP/CREATE, or CREATE_QP) and maps its
// work queues when the provider shares them.
func (pd *PD) CreateQP(init QPInit) (*QP, error) {
	x := pd.ctx
	switch init.Type {
	case qp.RC, qp.UC, qp.UD:
	default:
		return nil, &rdma.OpError{Pkg: "uverbs", Op: "create QP", Device: x.dev.Name, Err: fmt.Errorf("%w: QP type %v (RC, UC and UD are supported)", ErrNotSupported, init.Type)}
	}
	if init.SendCQ == nil || init.RecvCQ == nil {
		return nil, &rdma.OpError{Pkg: "uverbs", Op: "create QP", Device: x.dev.Name, Err: fmt.Errorf("%w: send and receive CQs are required", ErrInvalidArgument)}
	}
	if err := x.lockOpen("create QP"); err != nil {
		return nil, err
	}
	defer x.mu.Unlock()
	return pd.createQPLocked(init)
}

// createQPLocked is CreateQP under the context's lock.
func (pd *PD) createQPLocked(init QPInit) (*QP, error) {
	x := pd.ctx
	if init.SRQ != nil {
		if err := x.useSRQ(init.SRQ); err != nil {
			return nil, err
		}
		init.Cap.MaxRecvWR, init.Cap.MaxRecvSGE = 0, 0
	}
	q, err := pd.createQPOn(init)
	if err != nil && init.SRQ != nil {
		init.SRQ.qps--
	}
	return q, err
}

// createQPOn is createQPLocked once the SRQ, if any, counts the QP.
func (pd *PD) createQPOn(init QPInit) (*QP, error) {
	x := pd.ctx
	q := x.prov.allocQP()
	q.pd, q.uhandle, q.typ, q.sendCQ, q.recvCQ, q.srq = pd, x.handle(), init.Type, init.SendCQ, init.RecvCQ, init.SRQ
	// The provider may change init.Cap (mlx5's inline size).
	w := &x.qpCreate
	w.init = init
	drvIn, drvOut, err := x.prov.qpData(q, &w.init)
	w.init.SendCQ, w.init.RecvCQ, w.init.SRQ = nil, nil, nil // not kept past the call
	if err != nil {
		return nil, err
	}
	c := w.init.Cap
	capIn := abi.UverbsQPCap{MaxSendWR: c.MaxSendWR, MaxRecvWR: c.MaxRecvWR, MaxSendSGE: c.MaxSendSGE, MaxRecvSGE: c.MaxRecvSGE, MaxInlineData: c.MaxInlineData}
	capOut := &w.capOut
	*capOut = abi.UverbsQPCap{}
	err = error(unix.ENOTTY)
	if x.nativeIoctl {
		qpn := &w.qpn
		*qpn = [4]byte{}
		call := kcall.NewIoctl(abi.UverbsObjectQP, abi.UverbsMethodQPCreate, x.driverID)
		call.IDR(abi.UverbsAttrCreateQPPDHandle, pd.handle)
		call.IDR(abi.UverbsAttrCreateQPSendCQHandle, init.SendCQ.handle)
		call.IDR(abi.UverbsAttrCreateQPRecvCQHandle, init.RecvCQ.handle)
		if init.SRQ != nil {
			call.IDR(abi.UverbsAttrCreateQPSRQHandle, init.SRQ.handle)
		}
		h := call.IDR(abi.UverbsAttrCreateQPHandle, 0)
		call.Const(abi.UverbsAttrCreateQPType, uint64(init.Type))
		call.U64(abi.UverbsAttrCreateQPUserHandle, q.uhandle)
		call.In(abi.UverbsAttrCreateQPCap, abi.Bytes(&capIn))
		if x.async != nil {
			call.FD(abi.UverbsAttrCreateQPEventFD, x.async.fd())
		}
		if init.SignalAll {
			call.U32(abi.UverbsAttrCreateQPFlags, abi.UverbsQPCreateSQSigAll) // 4 bytes, as libibverbs (fill_attr_in_uint32)
		}
		call.Out(abi.UverbsAttrCreateQPRespCap, abi.Bytes(capOut))
		call.Out(abi.UverbsAttrCreateQPRespQPNum, qpn[:])
		if len(drvIn) > 0 {
			call.In(abi.UverbsAttrUHWIn, drvIn)
		}
		if len(drvOut) > 0 {
			call.Out(abi.UverbsAttrUHWOut, drvOut)
		}
		if err = x.do(call); err == nil {
			q.handle = uint32(call.Data(h))
			q.num = abi.Native.Uint32(qpn[:])
		}
	}
	if noMethod(err) {
		req := abi.UverbsCreateQP{
			UserHandle: q.uhandle, PDHandle: pd.handle, SendCQHandle: init.SendCQ.handle, RecvCQHandle: init.RecvCQ.handle,
			MaxSendWR: capIn.MaxSendWR, MaxRecvWR: capIn.MaxRecvWR, MaxSendSGE: capIn.MaxSendSGE, MaxRecvSGE: capIn.MaxRecvSGE,
			MaxInlineData: capIn.MaxInlineData, QPType: uint8(init.Type),
		}
		if init.SignalAll {
			req.SQSigAll = 1
		}
		if init.SRQ != nil {
			req.SRQHandle, req.IsSRQ = init.SRQ.handle, 1
		}
		var resp abi.UverbsCreateQPResp
		err = x.exec(&cmd{num: abi.UverbsCmdCreateQP, in: abi.Bytes(&req), respPtr: true, out: abi.Bytes(&resp), drvIn: drvIn, drvOut: drvOut})
		q.handle, q.num = resp.QPHandle, resp.QPN
		*capOut = abi.UverbsQPCap{MaxSendWR: resp.MaxSendWR, MaxRecvWR: resp.MaxRecvWR, MaxSendSGE: resp.MaxSendSGE, MaxRecvSGE: resp.MaxRecvSGE, MaxInlineData: resp.MaxInlineData}
	}
	if err != nil {
		x.prov.qpAbort(q)
		return nil, opErr("create QP", x.dev.Name, err)
	}
	q.cap = qp.Cap{MaxSendWR: capOut.MaxSendWR, MaxRecvWR: capOut.MaxRecvWR, MaxSendSGE: capOut.MaxSendSGE, MaxRecvSGE: capOut.MaxRecvSGE, MaxInlineData: capOut.MaxInlineData}
	ops, err := x.prov.newQP(q, drvOut)
	if err != nil {
		x.destroyQP(q)
		return nil, err
	}
	q.ops = ops
	x.addQP(q)
	return q, nil
}

func (x *Context) destroyQP(q *QP) error {
	resp := abi.Bytes(&q.destroyResp) // in the QP: an ioctl output escapes
	return x.destroy(abi.UverbsObjectQP, abi.UverbsMethodQPDestroy, abi.UverbsAttrDestroyQPHandle, q.handle, resp, func() error {
		req := abi.UverbsDestroyQP{QPHandle: q.handle}
		return x.exec(&cmd{num: abi.UverbsCmdDestroyQP, in: abi.Bytes(&req), respPtr: true, out: resp})
	})
}

// Close destroys the QP and unmaps its queues.
func (q *QP) Close() error {
	q.once.Do(func() {
		x := q.pd.ctx
		err := q.detachAll() // the kernel refuses to destroy an attached QP (EBUSY)
		if err == nil {
			err = x.destroyQP(q)
		}
		if err == nil && q.ops != nil {
			err = q.ops.close()
		}
		q.err = opErr("destroy QP", x.dev.Name, err)
		x.mu.Lock()
		x.dropQP(q)
		if q.srq != nil {
			q.srq.qps--
		}
		x.mu.Unlock()
	})
	return q.err
}

// Modify applies the attributes selected by mask (MODIFY_QP, or
// EX_MODIFY_QP when RATE_LIMIT is set or the provider sends driver data).
// The request is checked with qp.Check against the QP's type and current
// state before any syscall; the error then names the missing or
// forbidden attributes and matches qp.ErrIllegalTransition etc.
func (q *QP) Modify(attr *qp.Attr, mask qp.Mask) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.modifyLocked(attr, mask)
}

// modifyOp names a modify in an error: the QP, the state it was moved to
// and, for the kernel's refusal, the attributes sent.
func modifyOp(num uint32, a *qp.Attr, mask qp.Mask, withMask bool) string {
	s := fmt.Sprintf("modify QP %#x", num)
	if mask&qp.MaskState != 0 {
		s += " to " + a.State.String()
	}
	if withMask {
		s += " (" + mask.String() + ")"
	}
	return s
}

// modifyLocked is Modify under q.mu.
func (q *QP) modifyLocked(attr *qp.Attr, mask qp.Mask) error {
	x := q.pd.ctx
	if attr == nil {
		q.attr = qp.Attr{}
	} else {
		q.attr = *attr
	}
	a := &q.attr
	if err := qp.Check(q.typ, q.state, a, mask); err != nil {
		return opError(modifyOp(q.num, a, mask, false), x.dev.Name, err)
	}
	base := modifyCmd(q, a, mask)
	drvIn, drvOut, needEx := x.prov.modifyQPData(q, a, mask)
	var err error
	if mask&qp.MaskRateLimit != 0 || needEx {
		req := abi.UverbsExModifyQP{Base: base, RateLimit: a.RateLimit}
		var resp abi.UverbsExModifyQPResp
		err = x.exec(&cmd{num: abi.UverbsExCmdModifyQP, ex: true, in: abi.Bytes(&req), out: abi.Bytes(&resp), drvIn: drvIn, drvOut: drvOut})
	} else {
		err = x.execIn(abi.UverbsCmdModifyQP, abi.Bytes(&base))
	}
	if err != nil {
		return opError(modifyOp(q.num, a, mask, true), x.dev.Name, err)
	}
	x.prov.modifyQPDone(q, a, mask, drvOut)
	if mask&qp.MaskPort != 0 {
		q.port = a.Port
	}
	if mask&qp.MaskMaxQPRdAtomic != 0 {
		q.maxRdAtomic.Store(uint32(a.MaxRdAtomic))
	}
	if mask&qp.MaskState != 0 {
		q.state = a.State
	}
	return nil
}

func qpDest(a *qp.AH, port uint8) abi.UverbsQPDest {
	d := abi.UverbsQPDest{
		DGID: a.GRH.DGID, FlowLabel: a.GRH.FlowLabel, DLID: a.DLID, SGIDIndex: a.GRH.SGIDIndex,
		HopLimit: a.GRH.HopLimit, TrafficClass: a.GRH.TrafficClass, SL: a.SL, SrcPathBits: a.SrcPathBits,
		StaticRate: a.StaticRate, PortNum: a.PortNum,
	}
	if a.IsGlobal {
		d.IsGlobal = 1
	}
	if d.PortNum == 0 {
		d.PortNum = port // the kernel requires the QP's port here
	}
	return d
}

func b2u(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

func modifyCmd(q *QP, a *qp.Attr, mask qp.Mask) abi.UverbsModifyQP {
	port := q.port
	if mask&qp.MaskPort != 0 {
		port = a.Port
	}
	return abi.UverbsModifyQP{
		Dest:             qpDest(&a.AH, port),
		AltDest:          qpDest(&a.AltPath.AH, a.AltPath.PortNum),
		QPHandle:         q.handle,
		AttrMask:         uint32(mask) & uint32(qp.MaskLegacy),
		Qkey:             a.QKey,
		RQPSN:            a.RQPSN,
		SQPSN:            a.SQPSN,
		DestQPNum:        a.DestQPN,
		QPAccessFlags:    uint32(a.AccessFlags),
		PkeyIndex:        a.PKeyIndex,
		AltPkeyIndex:     a.AltPath.PKeyIndex,
		QPState:          uint8(a.State),
		CurQPState:       uint8(a.CurState),
		PathMTU:          uint8(a.PathMTU),
		PathMigState:     uint8(a.PathMigState),
		EnSQDAsyncNotify: b2u(a.EnSQDAsyncNotify),
		MaxRdAtomic:      a.MaxRdAtomic,
		MaxDestRdAtomic:  a.MaxDestRdAtomic,
		MinRNRTimer:      a.MinRNRTimer,
		PortNum:          a.Port,
		Timeout:          a.Timeout,
		RetryCnt:         a.RetryCnt,
		RNRRetry:         a.RNRRetry,
		AltPortNum:       a.AltPath.PortNum,
		AltTimeout:       a.AltPath.Timeout,
	}
}

// QPAttr is what Query reports: the attributes, the current state and
// the capacity.
type QPAttr struct {
	qp.Attr
	SQDraining bool
	SignalAll  bool
	Cap        qp.Cap
}

// Query reads the QP's attributes from the kernel (QUERY_QP); mask says
// which ones the caller wants (the kernel fills the others as well on
// most drivers).
func (q *QP) Query(mask qp.Mask) (QPAttr, error) {
	x := q.pd.ctx
	req := abi.UverbsQueryQP{QPHandle: q.handle, AttrMask: uint32(mask)}
	var r abi.UverbsQueryQPResp
	var out QPAttr
	if err := x.exec(&cmd{num: abi.UverbsCmdQueryQP, in: abi.Bytes(&req), respPtr: true, out: abi.Bytes(&r)}); err != nil {
		return out, opErr(fmt.Sprintf("query QP %#x", q.num), x.dev.Name, err)
	}
	a := &out.Attr
	a.State, a.CurState = qp.State(r.QPState), qp.State(r.CurQPState)
	a.PathMTU, a.PathMigState = rdma.MTU(r.PathMTU), qp.MigState(r.PathMigState)
	a.QKey, a.RQPSN, a.SQPSN, a.DestQPN = r.Qkey, r.RQPSN, r.SQPSN, r.DestQPNum
	a.AccessFlags = qp.Access(r.QPAccessFlags)
	a.PKeyIndex, a.Port = r.PkeyIndex, r.PortNum
	a.MaxRdAtomic, a.MaxDestRdAtomic, a.MinRNRTimer = r.MaxRdAtomic, r.MaxDestRdAtomic, r.MinRNRTimer
	a.Timeout, a.RetryCnt, a.RNRRetry = r.Timeout, r.RetryCnt, r.RNRRetry
	a.AH = fromDest(r.Dest)
	a.AltPath = qp.AltPath{AH: fromDest(r.AltDest), PKeyIndex: r.AltPkeyIndex, PortNum: r.AltPortNum, Timeout: r.AltTimeout}
	out.SQDraining, out.SignalAll = r.SQDraining != 0, r.SQSigAll != 0
	out.Cap = qp.Cap{MaxSendWR: r.MaxSendWR, MaxRecvWR: r.MaxRecvWR, MaxSendSGE: r.MaxSendSGE, MaxRecvSGE: r.MaxRecvSGE, MaxInlineData: r.MaxInlineData}
	if c, ok := q.ops.(qpCapQuerier); ok {
		c.queryCap(&out.Cap)
	}
	return out, nil
}

func fromDest(d abi.UverbsQPDest) qp.AH {
	return qp.AH{
		GRH:  qp.GRH{DGID: d.DGID, FlowLabel: d.FlowLabel, SGIDIndex: d.SGIDIndex, HopLimit: d.HopLimit, TrafficClass: d.TrafficClass},
		DLID: d.DLID, SL: d.SL, SrcPathBits: d.SrcPathBits, StaticRate: d.StaticRate, IsGlobal: d.IsGlobal != 0, PortNum: d.PortNum,
	}
}

// QueryECE returns the QP's Enhanced Connection Establishment value as the
// provider negotiated it. Providers without ECE (rxe, and any but mlx5)
// return an error matching ErrNotSupported and unix.EOPNOTSUPP, as
// libibverbs' ibv_query_ece does.
func (q *QP) QueryECE() (ece.ECE, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.pd.ctx.prov.queryECE(q)
}

// SetECE asks the provider to apply e at the QP's next modify (mlx5:
// ece_options in EX_MODIFY_QP). A zero vendor id is refused with
// unix.EOPNOTSUPP like ibv_set_ece; providers without ECE return an error
// matching ErrNotSupported.
func (q *QP) SetECE(e ece.ECE) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if e.VendorID == 0 {
		return &rdma.OpError{Pkg: "uverbs", Op: "set ECE", Device: q.pd.ctx.dev.Name, Err: fmt.Errorf("vendor id 0: %w", unix.EOPNOTSUPP)}
	}
	return q.pd.ctx.prov.setECE(q, e)
}

// Opcode is a send work request opcode (enum ib_uverbs_wr_opcode).
type Opcode uint32

// Send opcodes.
const (
	OpRDMAWrite        Opcode = 0
	OpRDMAWriteWithImm Opcode = 1
	OpSend             Opcode = 2
	OpSendWithImm      Opcode = 3
	OpRDMARead         Opcode = 4
	// OpAtomicCompareSwap and OpAtomicFetchAdd are the 8-byte atomics
	// (see AtomicCap): RC only, one 8-byte SGE for the original value,
	// RemoteAddr 8-byte aligned.
	OpAtomicCompareSwap Opcode = 5
	OpAtomicFetchAdd    Opcode = 6
)

// SendFlags modify a send work request (enum ib_send_flags).
type SendFlags uint32

// Send flags.
const (
	SendFence     SendFlags = 1 << 0
	SendSignaled  SendFlags = 1 << 1
	SendSolicited SendFlags = 1 << 2
	SendInline    SendFlags = 1 << 3
)

// SGE is a scatter/gather element: registered memory and its local key.
type SGE struct {
	Addr   uint64
	Length uint32
	LKey   uint32
}

// SendWR is a send work request.
type SendWR struct {
	ID     uint64
	Opcode Opcode
	Flags  SendFlags
	SGEs   []SGE
	// InlineData, with SendInline, is copied into the WQE instead of the
	// SGEs' memory (which is copied when InlineData is nil).
	InlineData []byte
	// Imm is the immediate data, host order (sent big-endian).
	Imm uint32
	// RDMA operations and atomics.
	RemoteAddr uint64
	RKey       uint32
	// Atomics: CompareAdd is the value compared (compare-and-swap) or
	// added (fetch-and-add); Swap is what compare-and-swap stores.
	CompareAdd uint64
	Swap       uint64
	// UD sends.
	AH         *AH
	RemoteQPN  uint32
	RemoteQKey uint32
}

// RecvWR is a receive work request.
type RecvWR struct {
	ID   uint64
	SGEs []SGE
}

// PostSend posts wrs to the send queue and rings the doorbell once. On an
// error no WR after the failing one was posted; the error says which.
func (q *QP) PostSend(wrs []SendWR) error {
	if q.ops == nil {
		return notSupported("post send", q.pd.ctx.dev.Name, "no data path for provider "+q.pd.ctx.prov.name())
	}
	return q.ops.postSend(wrs)
}

// PostRecv posts wrs to the receive queue. A QP created on an SRQ has
// none: the error matches ErrInvalidArgument (post to SRQ.PostRecv).
func (q *QP) PostRecv(wrs []RecvWR) error {
	if q.srq != nil {
		return &rdma.OpError{Pkg: "uverbs", Op: fmt.Sprintf("post receive on QP %#x", q.num), Device: q.pd.ctx.dev.Name,
			Err: fmt.Errorf("%w: the QP receives from SRQ %#x; post to the SRQ", ErrInvalidArgument, q.srq.num)}
	}
	if q.ops == nil {
		return notSupported("post receive", q.pd.ctx.dev.Name, "no data path for provider "+q.pd.ctx.prov.name())
	}
	return q.ops.postRecv(wrs)
}
