package uverbs

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/go-rdma/rdmacm/ece"
	"github.com/go-rdma/rdmacm/internal/abi"
	"github.com/go-rdma/rdmacm/internal/kcall"
	"github.com/go-rdma/rdmacm/internal/unix"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
)

// unsafe: the rxe queues are rings mmap'd from the uverbs fd and shared
// with the kernel; WQEs, CQEs and indices are read and written in place.

// The soft-RoCE (rxe) provider. The kernel shares each CQ and work queue
// as a ring (struct rxe_queue_buf) that user space maps from the uverbs fd
// at the cookie offset returned in the create response (struct mminfo).
// Posting writes WQEs into the ring and publishes the producer index;
// sends then ring a doorbell, a POST_SEND write command with no WRs that
// makes the kernel run the QP's requester. Polling reads CQEs and
// publishes the consumer index. (include/uapi/rdma/rdma_user_rxe.h;
// kernel drivers/infiniband/sw/rxe/rxe_queue.h; rdma-core providers/rxe.)
//
// Memory ordering: the kernel reads user-owned indices with
// smp_load_acquire and publishes its own with smp_store_release. Here the
// indices are accessed only through sync/atomic, whose operations are
// sequentially consistent in the Go memory model and so at least
// acquire/release on every architecture (LDAR/STLR on arm64; plain MOV
// plus the x86 TSO guarantees and XCHG on amd64). A producer store
// therefore orders the WQE bytes written before it, and a CQE is read only
// after the acquire load of the producer index that covers it.

type rxeProvider struct {
	// qpResp is CREATE_QP's driver output, reused: qpData and newQP run
	// under the context's lock (PD.CreateQP).
	qpResp [unsafe.Sizeof(abi.RxeCreateQPResp{})]byte
}

func (*rxeProvider) name() string { return "rxe" }

// rdma-core's rxe provider accepts driver ABI 1..2 on 64-bit hosts.
func (*rxeProvider) checkABI(dev Device) error {
	return abiRange(dev, "rxe", 1, abi.RxeUverbsABIVersion)
}

func (*rxeProvider) contextData() (ins [][]byte, out []byte) { return [][]byte{nil}, nil }
func (*rxeProvider) contextCreated(*Context, []byte) error   { return nil }
func (*rxeProvider) close() error                            { return nil }

func (*rxeProvider) cqData(_ *CQ, cqe int) (in, out []byte, cmdCQE int, err error) {
	return nil, make([]byte, unsafe.Sizeof(abi.RxeCreateCQResp{})), cqe, nil
}
func (*rxeProvider) cqAbort(*CQ) {}
func (*rxeProvider) qpAbort(*QP) {}

// rxeQPAlloc is an rxe QP and its provider state in one object: one
// allocation per QP, not two.
type rxeQPAlloc struct {
	q QP
	r rxeQP
}

// allocQP returns the QP of a new rxeQPAlloc; newQP finds the rxeQP
// through q.drv.
func (*rxeProvider) allocQP() *QP {
	a := new(rxeQPAlloc)
	a.q.drv = &a.r
	return &a.q
}

func (*rxeProvider) newCQ(cq *CQ, out []byte) (cqOps, error) {
	resp := abi.Decode[abi.RxeCreateCQResp](out)
	q, err := mapRxeQueue(cq.ctx.fd, resp.MI, int(unsafe.Sizeof(abi.UverbsWC{})))
	if err != nil {
		return nil, opErr("map CQ ring", cq.ctx.dev.Name, err)
	}
	return &rxeCQ{q: q}, nil
}

// rxe takes no driver input for QPs (the kernel requires inlen == 0).
func (p *rxeProvider) qpData(*QP, *QPInit) (in, out []byte, err error) {
	p.qpResp = [len(p.qpResp)]byte{}
	return nil, p.qpResp[:], nil
}

// newQP maps the QP's two rings and encodes its doorbell, in the rxeQP
// that allocQP made with q (rings and doorbell inside it).
func (*rxeProvider) newQP(q *QP, out []byte) (qpOps, error) {
	x := q.pd.ctx
	resp := abi.Decode[abi.RxeCreateQPResp](out)
	r := q.drv.(*rxeQP) // q came from allocQP (PD.CreateQP)
	q.drv = nil
	r.qp, r.fd = q, x.fd
	if err := r.sqRing.mapRing(x.fd, resp.SQMI, int(unsafe.Sizeof(abi.RxeSendWQE{}))); err != nil {
		return nil, opErr("map send queue", x.dev.Name, err)
	}
	r.sq = &r.sqRing
	if q.srq == nil { // a QP on an SRQ has no receive queue
		if err := r.rqRing.mapRing(x.fd, resp.RQMI, int(unsafe.Sizeof(abi.RxeRecvWQE{}))); err != nil {
			r.sqRing.unmap()
			return nil, opErr("map receive queue", x.dev.Name, err)
		}
		r.rq = &r.rqRing
	}
	resPtr := kcall.SinkPtr()
	if resPtr == 0 { // no page outside the heap: a word of ours, pinned
		r.dbResp = new(uint32)
		r.pin.Pin(r.dbResp)
		resPtr = abi.Ptr(unsafe.Pointer(r.dbResp))
	}
	putRxeDoorbell(&r.dbBuf, q.handle, resPtr)
	r.doorbell = r.dbBuf[:]
	return r, nil
}

// rxeDoorbellSize is the doorbell command's length: the write header
// and struct ib_uverbs_post_send.
const rxeDoorbellSize = int(unsafe.Sizeof(abi.UverbsCmdHdr{}) + unsafe.Sizeof(abi.UverbsPostSend{}))

// putRxeDoorbell encodes the send doorbell into b: a POST_SEND write
// command with wr_count = sge_count = 0 (rdma-core rxe.c post_send_db);
// the kernel then runs the QP's requester over the shared send queue and
// writes the response (bad_wr) at resp. wqe_size is sizeof(struct
// ib_uverbs_send_wr), which the kernel requires as a minimum.
func putRxeDoorbell(b *[rxeDoorbellSize]byte, qpHandle uint32, resp uint64) {
	hdr := abi.UverbsCmdHdr{Command: abi.UverbsCmdPostSend, InWords: uint16((8 + unsafe.Sizeof(abi.UverbsPostSend{})) / 4), OutWords: 1}
	body := abi.UverbsPostSend{Response: resp, QPHandle: qpHandle, WQESize: uint32(unsafe.Sizeof(abi.UverbsSendWR{}))}
	n := copy(b[:], abi.Bytes(&hdr))
	copy(b[n:], abi.Bytes(&body))
}

func (*rxeProvider) pdData() []byte { return nil }

func (*rxeProvider) ahData(qp.AH) ([]byte, error) {
	return make([]byte, unsafe.Sizeof(abi.RxeCreateAHResp{})), nil
}

func (*rxeProvider) ahCreated(ah *AH, out []byte) {
	ah.num = abi.Decode[abi.RxeCreateAHResp](out).AHNum
}

func (*rxeProvider) modifyQPData(*QP, *qp.Attr, qp.Mask) (in, out []byte, ex bool) {
	return nil, nil, false
}
func (*rxeProvider) modifyQPDone(*QP, *qp.Attr, qp.Mask, []byte) {}

func (*rxeProvider) hasECE() bool { return false }

// rxe implements neither query_ece nor set_ece; libibverbs then answers
// EOPNOTSUPP (dummy ops), and so does this.
func (*rxeProvider) queryECE(q *QP) (ece.ECE, error) {
	return ece.ECE{}, notSupported("query ECE", q.pd.ctx.dev.Name, "the rxe provider has no ECE")
}
func (*rxeProvider) setECE(q *QP, _ ece.ECE) error {
	return notSupported("set ECE", q.pd.ctx.dev.Name, "the rxe provider has no ECE")
}

// rxeQueue is one mapped ring.
type rxeQueue struct {
	mem   []byte
	prod  *uint32
	cons  *uint32
	mask  uint32
	shift uint32
	data  unsafe.Pointer
}

// mapRxeQueue maps mi and validates its header once: the element size
// must hold minElem bytes and every slot must lie inside the mapping.
func mapRxeQueue(fd int, mi abi.RxeMmapInfo, minElem int) (*rxeQueue, error) {
	q := new(rxeQueue)
	if err := q.mapRing(fd, mi, minElem); err != nil {
		return nil, err
	}
	return q, nil
}

// mapRing is mapRxeQueue into q (a QP's rings live in its rxeQP).
func (q *rxeQueue) mapRing(fd int, mi abi.RxeMmapInfo, minElem int) error {
	if mi.Size < abi.RxeQueueDataOff {
		return fmt.Errorf("queue size %d below the %d-byte header", mi.Size, abi.RxeQueueDataOff)
	}
	mem, err := kcall.Mmap(fd, int64(mi.Offset), int(mi.Size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("mmap offset %#x size %d: %w", mi.Offset, mi.Size, err)
	}
	if err := q.init(mem, minElem); err != nil {
		kcall.Munmap(mem)
		return err
	}
	return nil
}

// newRxeQueue reads and validates a mapped queue's header: a power-of-two
// slot count, slots of at least minElem bytes, all inside mem.
func newRxeQueue(mem []byte, minElem int) (*rxeQueue, error) {
	q := new(rxeQueue)
	if err := q.init(mem, minElem); err != nil {
		return nil, err
	}
	return q, nil
}

// init is newRxeQueue into q; q is left zero on error.
func (q *rxeQueue) init(mem []byte, minElem int) error {
	// At least one byte past the header: data points at mem[384], and a
	// mapping of exactly the header has no slots (found by FuzzRxeCQPoll).
	if len(mem) <= abi.RxeQueueDataOff {
		return fmt.Errorf("queue of %d bytes: no slots after the %d-byte header", len(mem), abi.RxeQueueDataOff)
	}
	hdr := (*abi.RxeQueueBuf)(unsafe.Pointer(&mem[0]))
	mask, shift := hdr.IndexMask, hdr.Log2ElemSize
	slots := uint64(mask) + 1
	if shift > 20 || mask&(mask+1) != 0 || 1<<shift < minElem ||
		abi.RxeQueueDataOff+slots<<shift > uint64(len(mem)) {
		return fmt.Errorf("bad queue header: log2_elem_size %d, index_mask %#x, %d bytes mapped", shift, mask, len(mem))
	}
	*q = rxeQueue{
		mem:   mem,
		prod:  (*uint32)(unsafe.Pointer(&mem[abi.RxeQueueProducerOff])),
		cons:  (*uint32)(unsafe.Pointer(&mem[abi.RxeQueueConsumerOff])),
		mask:  mask,
		shift: shift,
		data:  unsafe.Pointer(&mem[abi.RxeQueueDataOff]),
	}
	return nil
}

func (q *rxeQueue) slot(i uint32) unsafe.Pointer {
	return unsafe.Add(q.data, uintptr(i&q.mask)<<q.shift)
}

func (q *rxeQueue) elemSize() int { return 1 << q.shift }

func (q *rxeQueue) unmap() error {
	if q == nil || q.mem == nil {
		return nil
	}
	err := kcall.Munmap(q.mem)
	q.mem = nil
	return err
}

// rxeCQ polls a mapped CQ ring. The caller (CQ.Poll) serialises.
type rxeCQ struct{ q *rxeQueue }

func (c *rxeCQ) poll(wc []WC) int {
	q := c.q
	cons := atomic.LoadUint32(q.cons) // ours; the kernel only reads it
	prod := atomic.LoadUint32(q.prod) // acquire: CQEs up to prod are written
	n := 0
	for n < len(wc) && cons != prod {
		w := (*abi.UverbsWC)(q.slot(cons))
		wc[n] = WC{
			ID: w.WrID, Status: rdma.WCStatus(w.Status), Opcode: rdma.WCOpcode(w.Opcode), VendorErr: w.VendorErr,
			ByteLen: w.ByteLen, Imm: binary.BigEndian.Uint32(w.ImmData[:]), QPNum: w.QPNum, SrcQP: w.SrcQP,
			Flags: WCFlags(w.WCFlags), PKeyIndex: w.PkeyIndex, SLID: w.SLID, SL: w.SL,
			DLIDPathBits: w.DLIDPathBits, PortNum: w.PortNum,
		}
		cons = (cons + 1) & q.mask
		n++
	}
	if n > 0 {
		// Release: the slots were read before the kernel may reuse them.
		atomic.StoreUint32(q.cons, cons)
	}
	return n
}

func (c *rxeCQ) close() error { return c.q.unmap() }

// rxeQP posts into the mapped send and receive rings.
type rxeQP struct {
	qp       *QP
	fd       int
	sq, rq   *rxeQueue
	sqMu     sync.Mutex
	rqMu     sync.Mutex
	ssn      uint32
	doorbell []byte
	// sqRing and rqRing are what sq and rq point to (one allocation per
	// QP); dbBuf holds the doorbell command.
	sqRing, rqRing rxeQueue
	dbBuf          [rxeDoorbellSize]byte
	// dbResp is the POST_SEND response (bad_wr), pinned for the QP's
	// life, only when kcall.SinkPtr has no page outside the heap.
	dbResp *uint32
	pin    runtime.Pinner
}

const rxeSendHdr = int(unsafe.Sizeof(abi.RxeSendWQE{})) // 208
const rxeRecvHdr = int(unsafe.Sizeof(abi.RxeRecvWQE{})) // 40
const rxeSGESize = int(unsafe.Sizeof(abi.RxeSGE{}))

// ring writes the send doorbell through the scheduler's path: for a user
// QP, rxe_post_send runs the requester inline over every queued WQE, after
// ib_uverbs_post_send's GFP_KERNEL allocation, so the write can sleep and
// run long.
func (r *rxeQP) ring() error {
	_, err := kcall.Write(r.fd, r.doorbell)
	return err
}

// memAt views n bytes at the address of an inline send's SGE, memory the
// caller registered or pinned, as librxe's memcpy from sge->addr reads it.
func memAt(addr uint64, n int) []byte { return kcall.MemAt(addr, n) }

func (r *rxeQP) checkSend(wr *SendWR) error {
	q := r.qp
	switch wr.Opcode {
	case OpSend, OpSendWithImm:
	case OpRDMAWrite, OpRDMAWriteWithImm:
		if q.typ == qp.UD {
			return fmt.Errorf("%w: RDMA write on a UD QP", ErrInvalidArgument)
		}
	case OpRDMARead:
		if q.typ != qp.RC {
			return fmt.Errorf("%w: RDMA read needs an RC QP", ErrInvalidArgument)
		}
		if wr.Flags&SendInline != 0 {
			return fmt.Errorf("%w: RDMA read cannot be inline", ErrInvalidArgument)
		}
	case OpAtomicCompareSwap, OpAtomicFetchAdd:
		// rxe's atomic_cap is fixed at ATOMIC_HCA (rxe_param.h).
		if err := checkAtomicWR(q, wr); err != nil {
			return err
		}
	default:
		return fmt.Errorf("%w: opcode %d", ErrNotSupported, wr.Opcode)
	}
	if q.typ == qp.UD && wr.AH == nil {
		return fmt.Errorf("%w: UD send without an AH", ErrInvalidArgument)
	}
	room := r.sq.elemSize() - rxeSendHdr
	if wr.Flags&SendInline != 0 {
		n := len(wr.InlineData)
		if wr.InlineData == nil {
			n = 0
			for _, s := range wr.SGEs {
				n += int(s.Length)
			}
		}
		if n > int(q.cap.MaxInlineData) || n > room {
			return fmt.Errorf("%w: %d inline bytes, the QP takes %d", ErrInvalidArgument, n, q.cap.MaxInlineData)
		}
	} else if len(wr.SGEs) > int(q.cap.MaxSendSGE) || len(wr.SGEs)*rxeSGESize > room {
		return fmt.Errorf("%w: %d SGEs, the QP takes %d", ErrInvalidArgument, len(wr.SGEs), q.cap.MaxSendSGE)
	}
	return nil
}

func (r *rxeQP) postSend(wrs []SendWR) error {
	r.sqMu.Lock()
	defer r.sqMu.Unlock()
	q := r.sq
	prod := atomic.LoadUint32(q.prod)
	posted := 0
	var err error
	for i := range wrs {
		wr := &wrs[i]
		if err = r.checkSend(wr); err != nil {
			break
		}
		// Acquire: slots the kernel has consumed are free to overwrite.
		if (prod+1)&q.mask == atomic.LoadUint32(q.cons) {
			err = ErrQueueFull
			break
		}
		slot := q.slot(prod)
		wqe := (*abi.RxeSendWQE)(slot)
		*wqe = abi.RxeSendWQE{}
		wqe.WR.WrID = wr.ID
		wqe.WR.Opcode = uint32(wr.Opcode)
		wqe.WR.SendFlags = uint32(wr.Flags)
		if wr.Opcode == OpSendWithImm || wr.Opcode == OpRDMAWriteWithImm {
			binary.BigEndian.PutUint32(wqe.WR.ImmData[:], wr.Imm)
		}
		u := wqe.WR.WR[:]
		const base = 24 // the union's offset in rxe_send_wr
		switch wr.Opcode {
		case OpRDMAWrite, OpRDMAWriteWithImm, OpRDMARead:
			abi.Native.PutUint64(u[abi.RxeWRRDMARemoteAddr-base:], wr.RemoteAddr)
			abi.Native.PutUint32(u[abi.RxeWRRDMARKey-base:], wr.RKey)
			wqe.IOVA = wr.RemoteAddr
		case OpAtomicCompareSwap, OpAtomicFetchAdd:
			abi.Native.PutUint64(u[abi.RxeWRAtomicRemoteAddr-base:], wr.RemoteAddr)
			abi.Native.PutUint64(u[abi.RxeWRAtomicCompareAdd-base:], wr.CompareAdd)
			abi.Native.PutUint64(u[abi.RxeWRAtomicSwap-base:], wr.Swap)
			abi.Native.PutUint32(u[abi.RxeWRAtomicRKey-base:], wr.RKey)
			wqe.IOVA = wr.RemoteAddr
		}
		if r.qp.typ == qp.UD {
			abi.Native.PutUint32(u[abi.RxeWRUDRemoteQPN-base:], wr.RemoteQPN)
			abi.Native.PutUint32(u[abi.RxeWRUDRemoteQKey-base:], wr.RemoteQKey)
			abi.Native.PutUint32(u[abi.RxeWRUDAHNum-base:], wr.AH.num)
		}
		total := 0
		payload := unsafe.Slice((*byte)(unsafe.Add(slot, rxeSendHdr)), q.elemSize()-rxeSendHdr)
		if wr.Flags&SendInline != 0 {
			if wr.InlineData != nil {
				total = copy(payload, wr.InlineData)
			} else {
				for _, s := range wr.SGEs {
					total += copy(payload[total:], memAt(s.Addr, int(s.Length)))
				}
			}
		} else {
			for j, s := range wr.SGEs {
				sge := (*abi.RxeSGE)(unsafe.Add(slot, rxeSendHdr+j*rxeSGESize))
				*sge = abi.RxeSGE{Addr: s.Addr, Length: s.Length, LKey: s.LKey}
				total += int(s.Length)
			}
		}
		wqe.DMA = abi.RxeDMAInfo{Length: uint32(total), Resid: uint32(total), NumSGE: uint32(len(wr.SGEs))}
		wqe.SSN = r.ssn
		r.ssn++
		prod = (prod + 1) & q.mask
		// Release: the WQE above is visible before the kernel sees the
		// new producer index.
		atomic.StoreUint32(q.prod, prod)
		posted++
	}
	if posted > 0 {
		if werr := r.ring(); werr != nil {
			return opErr(fmt.Sprintf("post send doorbell on QP %#x", r.qp.num), r.qp.pd.ctx.dev.Name, werr)
		}
	}
	if err != nil {
		return &rdma.OpError{Pkg: "uverbs", Op: fmt.Sprintf("post send WR %d of %d on QP %#x", posted+1, len(wrs), r.qp.num), Device: r.qp.pd.ctx.dev.Name, Err: err}
	}
	return nil
}

func (r *rxeQP) postRecv(wrs []RecvWR) error {
	r.rqMu.Lock()
	defer r.rqMu.Unlock()
	q := r.rq
	prod := atomic.LoadUint32(q.prod)
	for i := range wrs {
		wr := &wrs[i]
		if len(wr.SGEs) > int(r.qp.cap.MaxRecvSGE) || rxeRecvHdr+len(wr.SGEs)*rxeSGESize > q.elemSize() {
			return &rdma.OpError{Pkg: "uverbs", Op: fmt.Sprintf("post receive WR %d on QP %#x", i+1, r.qp.num), Device: r.qp.pd.ctx.dev.Name,
				Err: fmt.Errorf("%w: %d SGEs, the QP takes %d", ErrInvalidArgument, len(wr.SGEs), r.qp.cap.MaxRecvSGE)}
		}
		if (prod+1)&q.mask == atomic.LoadUint32(q.cons) {
			return &rdma.OpError{Pkg: "uverbs", Op: fmt.Sprintf("post receive WR %d on QP %#x", i+1, r.qp.num), Device: r.qp.pd.ctx.dev.Name, Err: ErrQueueFull}
		}
		slot := q.slot(prod)
		total := 0
		for j, s := range wr.SGEs {
			*(*abi.RxeSGE)(unsafe.Add(slot, rxeRecvHdr+j*rxeSGESize)) = abi.RxeSGE{Addr: s.Addr, Length: s.Length, LKey: s.LKey}
			total += int(s.Length)
		}
		*(*abi.RxeRecvWQE)(slot) = abi.RxeRecvWQE{WrID: wr.ID, DMA: abi.RxeDMAInfo{Length: uint32(total), Resid: uint32(total), NumSGE: uint32(len(wr.SGEs))}}
		prod = (prod + 1) & q.mask
		atomic.StoreUint32(q.prod, prod) // release, as for sends
	}
	return nil
}

func (r *rxeQP) close() error {
	err1 := r.sq.unmap()
	err2 := r.rq.unmap()
	r.pin.Unpin()
	if err1 != nil {
		return err1
	}
	return err2
}
