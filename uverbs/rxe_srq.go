package uverbs

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/go-rdma/rdmacm/internal/abi"
	"github.com/go-rdma/rdmacm/rdma"
)

// unsafe: an rxe SRQ is a receive ring mmap'd from the uverbs fd, written
// in place like a QP's receive queue (rxe.go).

// The rxe SRQ: the kernel shares one receive ring (struct rxe_queue_buf of
// struct rxe_recv_wqe with max_sge SGEs each) at the cookie offset of
// struct rxe_create_srq_resp. Posting writes WQEs and publishes the
// producer index; the responder of any QP on the SRQ consumes them and
// fires the limit event when, after taking one, fewer than the armed limit
// remain. No doorbell: the kernel reads the ring when a message arrives.

// rxeSRQ is an rxe SRQ's provider state.
type rxeSRQ struct {
	s    *SRQ
	mu   sync.Mutex // the ring, against Close
	ring rxeQueue
	resp [unsafe.Sizeof(abi.RxeCreateSRQResp{})]byte
	// mi is where MODIFY_SRQ's driver data tells the kernel to write a
	// resized ring's mminfo; every user modify must carry the address
	// (rxe_modify_srq refuses shorter udata), though Arm never resizes.
	mi  abi.RxeMmapInfo
	cmd abi.RxeModifySRQCmd
	pin runtime.Pinner
}

func (*rxeProvider) srqData(s *SRQ, _ *SRQInit) (in, out []byte, err error) {
	r := &rxeSRQ{s: s}
	s.drv = r
	return nil, r.resp[:], nil // rxe takes no driver input at create
}

func (*rxeProvider) srqAbort(s *SRQ) { s.drv = nil }

func (*rxeProvider) newSRQ(s *SRQ, out []byte) (srqOps, error) {
	x := s.pd.ctx
	r := s.drv.(*rxeSRQ) // from srqData
	resp := abi.Decode[abi.RxeCreateSRQResp](out)
	s.num = resp.SRQNum
	if err := r.ring.mapRing(x.fd, resp.MI, rxeRecvHdr+s.cap.MaxSGE*rxeSGESize); err != nil {
		return nil, opErr("map SRQ ring", x.dev.Name, err)
	}
	// The ring holds index_mask WRs (one slot stays empty), what
	// QUERY_SRQ reports; the create response repeats the request.
	s.cap.MaxWR = max(s.cap.MaxWR, int(r.ring.mask))
	r.pin.Pin(&r.mi)
	r.cmd.MmapInfoAddr = abi.Ptr(unsafe.Pointer(&r.mi))
	return r, nil
}

func (*rxeProvider) modifySRQData(s *SRQ) []byte {
	if r, ok := s.ops.(*rxeSRQ); ok {
		return abi.Bytes(&r.cmd)
	}
	return nil
}

// postRecv writes wrs into the ring, as rxeQP.postRecv does for a QP's
// own receive queue.
func (r *rxeSRQ) postRecv(wrs []RecvWR) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.s
	q := &r.ring
	if q.mem == nil {
		return opError(fmt.Sprintf("post receive on SRQ %#x", s.num), s.pd.ctx.dev.Name, ErrClosed)
	}
	prod := atomic.LoadUint32(q.prod)
	for i := range wrs {
		wr := &wrs[i]
		if len(wr.SGEs) > s.cap.MaxSGE || rxeRecvHdr+len(wr.SGEs)*rxeSGESize > q.elemSize() {
			return &rdma.OpError{Pkg: "uverbs", Op: fmt.Sprintf("post receive WR %d of %d on SRQ %#x", i+1, len(wrs), s.num), Device: s.pd.ctx.dev.Name,
				Err: fmt.Errorf("%w: %d SGEs, the SRQ takes %d", ErrInvalidArgument, len(wr.SGEs), s.cap.MaxSGE)}
		}
		// Acquire: slots the kernel has consumed are free to overwrite.
		if (prod+1)&q.mask == atomic.LoadUint32(q.cons) {
			return &rdma.OpError{Pkg: "uverbs", Op: fmt.Sprintf("post receive WR %d of %d on SRQ %#x", i+1, len(wrs), s.num), Device: s.pd.ctx.dev.Name, Err: ErrQueueFull}
		}
		slot := q.slot(prod)
		total := 0
		for j, sg := range wr.SGEs {
			*(*abi.RxeSGE)(unsafe.Add(slot, rxeRecvHdr+j*rxeSGESize)) = abi.RxeSGE{Addr: sg.Addr, Length: sg.Length, LKey: sg.LKey}
			total += int(sg.Length)
		}
		*(*abi.RxeRecvWQE)(slot) = abi.RxeRecvWQE{WrID: wr.ID, DMA: abi.RxeDMAInfo{Length: uint32(total), Resid: uint32(total), NumSGE: uint32(len(wr.SGEs))}}
		prod = (prod + 1) & q.mask
		// Release: the WQE is visible before the kernel sees the index.
		atomic.StoreUint32(q.prod, prod)
	}
	return nil
}

func (r *rxeSRQ) close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	err := r.ring.unmap()
	r.pin.Unpin()
	return err
}
