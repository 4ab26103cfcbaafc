package uverbs

import (
	"errors"
	"fmt"
	"sync"

	"github.com/go-rdma/rdmacm/internal/abi"
	"github.com/go-rdma/rdmacm/internal/kcall"
	"github.com/go-rdma/rdmacm/internal/unix"
	"github.com/go-rdma/rdmacm/rdma"
)

// SRQInit describes a shared receive queue to create.
type SRQInit struct {
	// MaxWR is the number of receive WRs the SRQ must hold, MaxSGE the
	// SGEs per WR; both at least 1 and at most the device's MaxSRQWR and
	// MaxSRQSGE (DeviceAttr).
	MaxWR, MaxSGE int
	// Limit, when not 0, arms the SRQ at creation as Arm does: one
	// EventSRQLimitReached when fewer than Limit WRs remain.
	Limit int
}

// SRQAttr is what Query and Cap report.
type SRQAttr struct {
	MaxWR, MaxSGE int
	// Limit is the armed limit (0: not armed; it drops to 0 when the
	// limit event fires).
	Limit int
}

// SRQ is a shared receive queue: one pool of receive WRs that every QP
// created on it (QPInit.SRQ) consumes from, so that the receive memory of
// a server does not grow with its connections. Completions still go to
// each QP's receive CQ and name the QP (WC.QPNum).
type SRQ struct {
	pd      *PD
	handle  uint32
	uhandle uint64
	num     uint32
	cap     SRQAttr
	ops     srqOps
	drv     any // provider state between srqData and newSRQ

	// qps counts the QPs created on the SRQ and not yet destroyed, and
	// closed is set by Close; both under the context's mu.
	qps    int
	closed bool
	err    error
	// destroyResp is DESTROY_SRQ's response (events reported), in the
	// SRQ because an ioctl output escapes.
	destroyResp abi.UverbsDestroySRQResp
	mu          sync.Mutex // Arm and Query against Close
}

// srqProvider is a provider's SRQ support (rxe, mlx5). The generic
// provider has none: its SRQs exist in the kernel, without a data path.
type srqProvider interface {
	// srqData prepares an SRQ: driver data for the create command; it
	// may change init (mlx5 sends the rounded size). srqAbort undoes it
	// when the command fails.
	srqData(s *SRQ, init *SRQInit) (in, out []byte, err error)
	srqAbort(s *SRQ)
	newSRQ(s *SRQ, out []byte) (srqOps, error)
	// modifySRQData is MODIFY_SRQ's driver input (nil: none).
	modifySRQData(s *SRQ) []byte
}

// srqOps is a provider's SRQ data path.
type srqOps interface {
	postRecv(wrs []RecvWR) error
	close() error
}

// Num is the SRQ number the device gave it.
func (s *SRQ) Num() uint32 { return s.num }

// Handle is the user handle the kernel reports in the SRQ's async events
// (AsyncEvent.Element of EventSRQLimitReached and EventSRQErr).
func (s *SRQ) Handle() uint64 { return s.uhandle }

// PD is the SRQ's protection domain.
func (s *SRQ) PD() *PD { return s.pd }

// Cap is what the device granted at creation: at least the WRs and SGEs
// asked for, and the limit armed then.
func (s *SRQ) Cap() SRQAttr { return s.cap }

// HasDataPath reports whether PostRecv works: the provider has a data
// path in this package (rxe, mlx5).
func (s *SRQ) HasDataPath() bool { return s.ops != nil }

// srqErr is an SRQ call's error for bad input.
func srqErr(x *Context, op string, format string, args ...any) error {
	return &rdma.OpError{Pkg: "uverbs", Op: op, Device: x.dev.Name, Err: fmt.Errorf("%w: "+format, append([]any{ErrInvalidArgument}, args...)...)}
}

// CreateSRQ creates a shared receive queue (SRQ/CREATE, or CREATE_SRQ) and
// maps its ring when the provider shares one. Sizes beyond the device's
// MaxSRQWR or MaxSRQSGE, and a device without SRQs, are refused before
// any command, with errors matching ErrInvalidArgument and ErrNotSupported.
// A Limit arms the SRQ as Arm does after the create.
func (pd *PD) CreateSRQ(init SRQInit) (*SRQ, error) {
	x := pd.ctx
	const op = "create SRQ"
	if init.MaxWR < 1 || init.MaxSGE < 1 {
		return nil, srqErr(x, op, "max WR %d and max SGE %d (both at least 1)", init.MaxWR, init.MaxSGE)
	}
	if init.Limit < 0 || init.Limit > init.MaxWR {
		return nil, srqErr(x, op, "limit %d outside 0..max WR %d", init.Limit, init.MaxWR)
	}
	da, err := x.QueryDevice()
	if err != nil {
		return nil, err
	}
	if da.MaxSRQ == 0 {
		return nil, notSupported(op, x.dev.Name, "the device has no SRQs (max_srq 0)")
	}
	if init.MaxWR > da.MaxSRQWR {
		return nil, srqErr(x, op, "max WR %d beyond the device's %d (max_srq_wr)", init.MaxWR, da.MaxSRQWR)
	}
	if init.MaxSGE > da.MaxSRQSGE {
		return nil, srqErr(x, op, "max SGE %d beyond the device's %d (max_srq_sge)", init.MaxSGE, da.MaxSRQSGE)
	}
	s, err := pd.createSRQ(init)
	if err != nil {
		return nil, err
	}
	if init.Limit > 0 {
		if err := s.Arm(init.Limit); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

func (pd *PD) createSRQ(init SRQInit) (*SRQ, error) {
	x := pd.ctx
	if err := x.lockOpen("create SRQ"); err != nil {
		return nil, err
	}
	defer x.mu.Unlock()
	s := &SRQ{pd: pd, uhandle: x.handle()}
	sp, _ := x.prov.(srqProvider)
	var drvIn, drvOut []byte
	if sp != nil {
		var err error
		if drvIn, drvOut, err = sp.srqData(s, &init); err != nil {
			return nil, err
		}
	}
	var resp abi.UverbsCreateSRQResp
	err := error(unix.ENOTTY)
	if x.nativeIoctl {
		var maxWR, maxSGE [4]byte
		call := kcall.NewIoctl(abi.UverbsObjectSRQ, abi.UverbsMethodSRQCreate, x.driverID)
		h := call.IDR(abi.UverbsAttrCreateSRQHandle, 0)
		call.Const(abi.UverbsAttrCreateSRQType, abi.UverbsSRQTBasic)
		call.U64(abi.UverbsAttrCreateSRQUserHandle, s.uhandle)
		call.IDR(abi.UverbsAttrCreateSRQPDHandle, pd.handle)
		call.U32(abi.UverbsAttrCreateSRQMaxWR, uint32(init.MaxWR))
		call.U32(abi.UverbsAttrCreateSRQMaxSGE, uint32(init.MaxSGE))
		call.U32(abi.UverbsAttrCreateSRQLimit, uint32(init.Limit))
		if x.async != nil {
			call.FD(abi.UverbsAttrCreateSRQEventFD, x.async.fd())
		}
		call.Out(abi.UverbsAttrCreateSRQRespMaxWR, maxWR[:])
		call.Out(abi.UverbsAttrCreateSRQRespMaxSGE, maxSGE[:])
		if len(drvIn) > 0 {
			call.In(abi.UverbsAttrUHWIn, drvIn)
		}
		if len(drvOut) > 0 {
			call.Out(abi.UverbsAttrUHWOut, drvOut)
		}
		if err = x.do(call); err == nil {
			resp.SRQHandle = uint32(call.Data(h))
			resp.MaxWR, resp.MaxSGE = abi.Native.Uint32(maxWR[:]), abi.Native.Uint32(maxSGE[:])
		}
	}
	if noMethod(err) {
		req := abi.UverbsCreateSRQ{UserHandle: s.uhandle, PDHandle: pd.handle, MaxWR: uint32(init.MaxWR), MaxSGE: uint32(init.MaxSGE), SRQLimit: uint32(init.Limit)}
		err = x.exec(&cmd{num: abi.UverbsCmdCreateSRQ, in: abi.Bytes(&req), respPtr: true, out: abi.Bytes(&resp), drvIn: drvIn, drvOut: drvOut})
	}
	if err != nil {
		if sp != nil {
			sp.srqAbort(s)
		}
		return nil, opErr("create SRQ", x.dev.Name, err)
	}
	s.handle = resp.SRQHandle
	s.cap = SRQAttr{MaxWR: int(resp.MaxWR), MaxSGE: int(resp.MaxSGE)}
	if sp != nil {
		ops, err := sp.newSRQ(s, drvOut)
		if err != nil {
			x.destroySRQ(s)
			return nil, err
		}
		s.ops = ops
	}
	s.drv = nil
	if x.srqs == nil {
		x.srqs = map[*SRQ]struct{}{}
	}
	x.srqs[s] = struct{}{}
	return s, nil
}

func (x *Context) destroySRQ(s *SRQ) error {
	resp := abi.Bytes(&s.destroyResp)
	return x.destroy(abi.UverbsObjectSRQ, abi.UverbsMethodSRQDestroy, abi.UverbsAttrDestroySRQHandle, s.handle, resp, func() error {
		req := abi.UverbsDestroySRQ{SRQHandle: s.handle}
		return x.exec(&cmd{num: abi.UverbsCmdDestroySRQ, in: abi.Bytes(&req), respPtr: true, out: resp})
	})
}

// PostRecv posts wrs to the SRQ, for any QP on it to consume. On an
// error no WR after the failing one was posted; the error says which.
func (s *SRQ) PostRecv(wrs []RecvWR) error {
	if s.ops == nil {
		return notSupported("post SRQ receive", s.pd.ctx.dev.Name, "no data path for provider "+s.pd.ctx.prov.name())
	}
	return s.ops.postRecv(wrs)
}

// Arm sets the SRQ's limit (MODIFY_SRQ with IBV_SRQ_LIMIT): once fewer
// than limit WRs remain in the SRQ, the device reports one
// EventSRQLimitReached (AsyncEvents, Element = Handle) and disarms; arm
// again to hear of the next. Limit 0 disarms. A limit above the SRQ's
// MaxWR is refused with an error matching ErrInvalidArgument.
func (s *SRQ) Arm(limit int) error {
	x := s.pd.ctx
	op := fmt.Sprintf("arm SRQ %#x", s.num)
	if limit < 0 || limit > s.cap.MaxWR {
		return srqErr(x, op, "limit %d outside 0..%d (the SRQ's max WR)", limit, s.cap.MaxWR)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return opError(op, x.dev.Name, ErrClosed)
	}
	req := abi.UverbsModifySRQ{SRQHandle: s.handle, AttrMask: abi.UverbsSRQLimit, SRQLimit: uint32(limit)}
	var drvIn []byte
	if sp, ok := x.prov.(srqProvider); ok {
		drvIn = sp.modifySRQData(s)
	}
	return opErr(op, x.dev.Name, x.exec(&cmd{num: abi.UverbsCmdModifySRQ, in: abi.Bytes(&req), drvIn: drvIn}))
}

// Query reads the SRQ's attributes from the kernel (QUERY_SRQ).
func (s *SRQ) Query() (SRQAttr, error) {
	x := s.pd.ctx
	op := fmt.Sprintf("query SRQ %#x", s.num)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return SRQAttr{}, opError(op, x.dev.Name, ErrClosed)
	}
	req := abi.UverbsQuerySRQ{SRQHandle: s.handle}
	var r abi.UverbsQuerySRQResp
	if err := x.exec(&cmd{num: abi.UverbsCmdQuerySRQ, in: abi.Bytes(&req), respPtr: true, out: abi.Bytes(&r)}); err != nil {
		return SRQAttr{}, opErr(op, x.dev.Name, err)
	}
	return SRQAttr{MaxWR: int(r.MaxWR), MaxSGE: int(r.MaxSGE), Limit: int(r.SRQLimit)}, nil
}

// Close destroys the SRQ and unmaps its ring. While QPs created on it
// are open it fails, with an error matching rdma.ErrBusy (unix.EBUSY),
// and the SRQ stays usable: close the QPs first.
func (s *SRQ) Close() error {
	x := s.pd.ctx
	op := fmt.Sprintf("destroy SRQ %#x", s.num)
	s.mu.Lock()
	defer s.mu.Unlock()
	x.mu.Lock()
	if s.closed {
		x.mu.Unlock()
		return s.err
	}
	if s.qps > 0 {
		n := s.qps
		x.mu.Unlock()
		return opError(op, x.dev.Name, fmt.Errorf("%d QPs still use it: %w", n, unix.EBUSY))
	}
	s.closed = true // no QP is created on it from here on
	x.mu.Unlock()
	err := x.destroySRQ(s)
	if errors.Is(err, unix.EBUSY) {
		x.mu.Lock()
		s.closed = false
		x.mu.Unlock()
		return opError(op, x.dev.Name, err)
	}
	if err == nil && s.ops != nil {
		err = s.ops.close()
	}
	s.err = opErr(op, x.dev.Name, err)
	x.mu.Lock()
	delete(x.srqs, s)
	x.mu.Unlock()
	return s.err
}

// useSRQ checks init.SRQ for a QP about to be created on it and counts
// the QP; under the context's mu.
func (x *Context) useSRQ(s *SRQ) error {
	if s.pd.ctx != x {
		return srqErr(x, "create QP", "the SRQ belongs to device %s", s.pd.ctx.dev.Name)
	}
	if s.closed {
		return opError("create QP", x.dev.Name, fmt.Errorf("SRQ %#x: %w", s.num, ErrClosed))
	}
	s.qps++
	return nil
}
