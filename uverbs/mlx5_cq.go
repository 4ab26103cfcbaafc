package uverbs

// mlx5 CQs: buffer and doorbell record (verbs.c create_cq), polling
// (cq.c mlx5_poll_one / mlx5_parse_cqe, non-lazy path), arming
// (mlx5_arm_cq) and cleaning (__mlx5_cq_clean). unsafe: the CQ ring,
// doorbell record and UAR are mmap'd device memory (see mlx5.go).

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"os"
	"runtime"
	"strconv"
	"unsafe"

	"github.com/go-rdma/rdmacm/internal/abi"
	"github.com/go-rdma/rdmacm/internal/barrier"
	"github.com/go-rdma/rdmacm/internal/unix"
	"github.com/go-rdma/rdmacm/rdma"
)

// CQE layout (struct mlx5_cqe64, mlx5dv.h) and opcodes.
const (
	mlx5CQESize         = 64
	cqeMLPath           = 17
	cqeSLID             = 22
	cqeFlagsRQPN        = 24
	cqeSRQNUIdx         = 32
	cqeImmInvalPKey     = 36
	cqeByteCnt          = 44
	cqeVendorErrSynd    = 54 // struct mlx5_err_cqe
	cqeSyndrome         = 55
	cqeSopDropQPN       = 56
	cqeWQECounter       = 60
	cqeOpOwn            = 63
	mlx5CQEOwnerMask    = 1
	mlx5CQEReq          = 0
	mlx5CQERespWrImm    = 1
	mlx5CQERespSend     = 2
	mlx5CQERespSendImm  = 3
	mlx5CQERespSendInv  = 4
	mlx5CQEResizeCQ     = 5
	mlx5CQEReqErr       = 13
	mlx5CQERespErr      = 14
	mlx5CQEInvalid      = 15
	mlx5InlineScatter32 = 0x4
	mlx5InlineScatter64 = 0x8
	mlx5CQDoorbell      = 0x20    // MLX5_CQ_DOORBELL
	mlx5CQDBReqNotSol   = 1 << 24 // MLX5_CQ_DB_REQ_NOT_SOL
	mlx5CQDBReqNot      = 0
	mlx5CQSetCI         = 0
	mlx5CQArmDB         = 1
)

// ibv_wc_status values not in rdma.WCStatus's named set.
const (
	wcMWBindErr  rdma.WCStatus = 6
	wcRemAbortEr rdma.WCStatus = 16
)

// mlx5CQ is struct mlx5_cq for the default CQ.
type mlx5CQ struct {
	p    *mlx5Provider
	cq   *CQ
	mem  []byte // the mapping
	buf  []byte // ncqe * cqe size
	mask uint32 // ibcq->cqe (kernel's count, validated)
	// A CQE is 64 bytes, or 128 (MLX5_CQE_SIZE=128) with its struct
	// mlx5_cqe64 in the second half: slot n starts at n<<shift and its
	// cqe64 at off64 past that; ring is the cqe64 of slot 0. (The poll
	// loops shift by shift&63: no check for an oversized shift.)
	shift     uint8
	off64     int
	ring      unsafe.Pointer
	consIndex uint32
	armSN     uint32
	cqn       uint32
	db        *[2]uint32
	uidxKey   bool          // cqe_version 1: CQEs name their QP by user index
	rsns      *mlx5RsnTable // the table that key looks up (uidx or qpns)
}

// mlx5 CQ creation state between cqData and newCQ.
type mlx5CQPending struct {
	c *mlx5CQ
}

// mlx5CQESizeEnv is get_cqe_size without mlx5dv: the CQE size libmlx5
// takes from the environment, read at every CQ creation as libmlx5 does,
// so that a program moved from libmlx5 keeps its 128-byte CQEs.
func mlx5CQESizeEnv() (int, bool) {
	v, ok := os.LookupEnv("MLX5_CQE_SIZE")
	if !ok {
		return mlx5CQESize, true
	}
	n, _ := strconv.Atoi(v) // atoi: garbage is 0, refused below
	return n, n == 64 || n == 128
}

// cqData allocates the buffer and doorbell record and returns
// mlx5_ib_create_cq and the cqe count the command carries (ncqe-1).
func (p *mlx5Provider) cqData(cq *CQ, cqe int) (in, out []byte, cmdCQE int, err error) {
	ncqe := 1
	for ncqe < cqe+1 {
		ncqe <<= 1
	}
	if ncqe > 1<<24 || ncqe < cqe+1 {
		return nil, nil, 0, &rdma.OpError{Pkg: "uverbs", Op: "create CQ", Device: p.x.dev.Name, Err: fmt.Errorf("%w: %d entries: %w", ErrInvalidArgument, cqe, unix.EINVAL)}
	}
	size, ok := mlx5CQESizeEnv()
	if !ok {
		return nil, nil, 0, &rdma.OpError{Pkg: "uverbs", Op: "create CQ", Device: p.x.dev.Name, Err: fmt.Errorf("%w: MLX5_CQE_SIZE %d is neither 64 nor 128: %w", ErrInvalidArgument, size, unix.EINVAL)}
	}
	c := &mlx5CQ{p: p, cq: cq, uidxKey: p.cqeVersion != 0, rsns: &p.qpns, shift: 6}
	if size == 128 {
		c.shift, c.off64 = 7, mlx5CQESize
	}
	if c.uidxKey {
		c.rsns = &p.uidx
	}
	c.mem, err = mmapAnon(ncqe * size)
	if err != nil {
		return nil, nil, 0, opErr("create CQ buffer", p.x.dev.Name, err)
	}
	c.buf = c.mem[:ncqe*size]
	c.ring = unsafe.Pointer(&c.buf[c.off64])
	for i := 0; i < ncqe; i++ {
		c.buf[i*size+c.off64+cqeOpOwn] = mlx5CQEInvalid << 4
	}
	c.db, err = p.allocDB()
	if err != nil {
		unix.Munmap(c.mem)
		return nil, nil, 0, opErr("create CQ doorbell record", p.x.dev.Name, err)
	}
	c.db[mlx5CQSetCI], c.db[mlx5CQArmDB] = 0, 0
	req := abi.MLX5CreateCQ{BufAddr: addrOf(c.buf), DBAddr: uint64(uintptr(unsafe.Pointer(c.db))), CQESize: uint32(size)}
	if p.ncUAR != nil {
		req.Flags |= abi.MLX5CreateCQFlagsUARPageIx
		req.UARPageIndex = uint16(p.ncUAR.pageID)
	}
	cq.drv = &mlx5CQPending{c: c}
	return append([]byte(nil), abi.Bytes(&req)...), make([]byte, unsafe.Sizeof(abi.MLX5CreateCQResp{})), ncqe - 1, nil
}

func addrOf(b []byte) uint64 { return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b)))) }

// cqAbort frees what cqData allocated when the command failed.
func (p *mlx5Provider) cqAbort(cq *CQ) {
	if pc, ok := cq.drv.(*mlx5CQPending); ok {
		pc.c.free()
	}
	cq.drv = nil
}

func (c *mlx5CQ) free() {
	c.p.freeDB(c.db)
	c.db = nil
	if c.mem != nil {
		unix.Munmap(c.mem)
		c.mem, c.buf, c.ring = nil, nil, nil
	}
}

func (p *mlx5Provider) newCQ(cq *CQ, out []byte) (cqOps, error) {
	pc, ok := cq.drv.(*mlx5CQPending)
	if !ok {
		return nil, opErr("create CQ", p.x.dev.Name, fmt.Errorf("%w: no mlx5 CQ state", ErrInvalidArgument))
	}
	cq.drv = nil
	c := pc.c
	c.cqn = abi.Decode[abi.MLX5CreateCQResp](out).CQN
	// ibcq->cqe is the kernel's answer; libmlx5 masks with it. Accept
	// only a mask inside our buffer.
	m := uint32(cq.cqe)
	if cq.cqe < 0 || m&(m+1) != 0 || int(m) >= len(c.buf)>>c.shift {
		c.free()
		return nil, opErr("create CQ", p.x.dev.Name, fmt.Errorf("%w: kernel CQ size %d for a %d-entry buffer", ErrInvalidArgument, cq.cqe, len(c.buf)>>c.shift))
	}
	c.mask = m
	return c, nil
}

// close frees the buffer and doorbell record after DESTROY_CQ
// (mlx5_destroy_cq).
func (c *mlx5CQ) close() error {
	c.free()
	return nil
}

// cqe is the struct mlx5_cqe64 of slot n.
func (c *mlx5CQ) cqe(n uint32) []byte {
	i := int(n&c.mask)<<c.shift + c.off64
	return c.buf[i : i+mlx5CQESize : i+mlx5CQESize]
}

// slot is the whole CQE of slot n (64 or 128 bytes).
func (c *mlx5CQ) slot(n uint32) []byte {
	i := int(n&c.mask) << c.shift
	return c.buf[i : i+1<<c.shift : i+1<<c.shift]
}

// swCQE is get_sw_cqe: the CQE at n if software owns it.
func (c *mlx5CQ) swCQE(n uint32) []byte {
	e := c.cqe(n)
	own := e[cqeOpOwn]
	if own>>4 != mlx5CQEInvalid && (own&mlx5CQEOwnerMask != 0) == (n&(c.mask+1) != 0) {
		return e
	}
	return nil
}

// pollList is poll_cq for up to len(wc) CQEs (poll, for any length but
// one); SET_CI is written on every call (update_cons_index). It returns
// -1 (CQ_POLL_ERR) for a CQE naming an unknown QP; that CQE is
// consumed, as in libmlx5.
//
// A successful requester CQE without scatter-to-CQE, the common case, is
// parsed inline here (handle_good_req); every other CQE goes through
// parse. As in
// poll_cq, the QP found for one CQE is kept for the next (libmlx5's
// cur_rsc, looked up again only when the CQE names another user index
// or QP number). The loop keeps few values live across the barrier
// (a call, across which Go keeps no value in a register): the ring is
// reloaded from c after it, and the send queue's tail is stored per
// CQE, as libmlx5 does (a plain store on amd64, StoreRelease32).
func (c *mlx5CQ) pollList(wc []WC) int {
	var cur *mlx5QP // cur_rsc
	n := 0
	for ; n < len(wc); n++ {
		// get_sw_cqe at the consumer index. The ring is (mask + 1)
		// CQEs long (newCQ checks it).
		// unsafe: the ring is mmap'd, and slicing it here cost 4-12% per WR (BenchmarkGoSide).
		ci := c.consIndex
		e := (*[mlx5CQESize]byte)(unsafe.Add(c.ring, uintptr(ci&c.mask)<<(c.shift&63)))
		if own := e[cqeOpOwn]; own>>4 == mlx5CQEInvalid || ((own&mlx5CQEOwnerMask != 0) != (ci&(c.mask+1) != 0) && mlx5Mutant != mutantOwnerList) {
			break
		}
		c.consIndex = ci + 1
		// Read the CQE only after the ownership check.
		if mlx5Mutant != mutantPollBarrier {
			barrier.UDMAFromDevice()
		}
		w := &wc[n]
		own := e[cqeOpOwn]
		if own>>4 != mlx5CQEReq || own&(mlx5InlineScatter32|mlx5InlineScatter64) != 0 {
			cur = nil
			if !c.parse(e[:], w) {
				c.updateCI()
				return -1
			}
			continue
		}
		sop := binary.BigEndian.Uint32(e[cqeSopDropQPN:])
		key := sop & 0xffffff
		if c.uidxKey {
			key = binary.BigEndian.Uint32(e[cqeSRQNUIdx:]) & 0xffffff
		}
		if cur == nil || key != cur.rsn {
			cur = c.rsns.find(key)
			if cur == nil || cur.sq.wqeCnt == 0 {
				c.updateCI()
				return -1
			}
		}
		sq := &cur.sq
		idx := uint32(binary.BigEndian.Uint16(e[cqeWQECounter:])) & (sq.wqeCnt - 1)
		r := &mlx5ReqWC[sop>>24]
		*w = WC{ID: sq.wrid[idx], QPNum: sop & 0xffffff, Opcode: r.op, Flags: r.flags}
		if mlx5Mutant == mutantCQEQPN {
			w.QPNum = key
		}
		if r.len != 0 {
			mlx5GoodReq(w, e[:])
		}
		sq.tail.Store(sq.wqeHead[idx] + 1)
	}
	c.updateCI()
	return n
}

// poll is poll_cq: a poll of one WC (ibv_poll_cq with num_entries 1,
// as latency-bound callers poll) is written out here without the loop:
// across the barrier call only c, the WC and the CQE are live, where
// the loop keeps its whole state. Any other length goes to pollList.
// Same CQE handling, barrier and doorbell record in both.
func (c *mlx5CQ) poll(wc []WC) int {
	if len(wc) != 1 {
		return c.pollList(wc)
	}
	w := &wc[0]
	ci := c.consIndex
	// unsafe: as in pollList, an mmap'd ring at a masked index.
	e := (*[mlx5CQESize]byte)(unsafe.Add(c.ring, uintptr(ci&c.mask)<<(c.shift&63)))
	if own := e[cqeOpOwn]; own>>4 == mlx5CQEInvalid || ((own&mlx5CQEOwnerMask != 0) != (ci&(c.mask+1) != 0) && mlx5Mutant != mutantOwnerOne) {
		c.updateCI()
		return 0
	}
	c.consIndex = ci + 1
	// Read the CQE only after the ownership check.
	if mlx5Mutant != mutantPollBarrier {
		barrier.UDMAFromDevice()
	}
	own := e[cqeOpOwn]
	if own>>4 == mlx5CQEReq && own&(mlx5InlineScatter32|mlx5InlineScatter64) == 0 {
		sop := binary.BigEndian.Uint32(e[cqeSopDropQPN:])
		key := sop & 0xffffff
		if c.uidxKey {
			key = binary.BigEndian.Uint32(e[cqeSRQNUIdx:]) & 0xffffff
		}
		q := c.rsns.find(key)
		if q == nil || q.sq.wqeCnt == 0 {
			c.updateCI()
			return -1
		}
		sq := &q.sq
		idx := uint32(binary.BigEndian.Uint16(e[cqeWQECounter:])) & (sq.wqeCnt - 1)
		r := &mlx5ReqWC[sop>>24]
		*w = WC{ID: sq.wrid[idx], QPNum: sop & 0xffffff, Opcode: r.op, Flags: r.flags}
		if mlx5Mutant == mutantCQEQPN {
			w.QPNum = key
		}
		if r.len != 0 {
			mlx5GoodReq(w, e[:])
		}
		sq.tail.Store(sq.wqeHead[idx] + 1)
	} else if !c.parse(e[:], w) {
		c.updateCI()
		return -1
	}
	if mlx5Mutant != mutantCQCILate {
		c.updateCI()
	}
	return 1
}

func (c *mlx5CQ) updateCI() {
	c.db[mlx5CQSetCI] = htobe32(c.consIndex & 0xffffff)
	if mlx5Mutant == mutantCQCI {
		c.db[mlx5CQSetCI] = c.consIndex & 0xffffff
	}
}

// htobe32 is htobe32(3): one BSWAP on a little-endian host (the
// GOARCH list is a constant, so the branch folds away).
func htobe32(v uint32) uint32 {
	if bigEndianHost {
		return v
	}
	return bits.ReverseBytes32(v)
}

// bigEndianHost: the GOARCHes whose byte order is big-endian.
const bigEndianHost = runtime.GOARCH == "s390x" || runtime.GOARCH == "ppc64" || runtime.GOARCH == "mips" ||
	runtime.GOARCH == "mips64" || runtime.GOARCH == "sparc64"

func be32(b []byte, off int) uint32 { return binary.BigEndian.Uint32(b[off:]) }
func be16(b []byte, off int) uint16 { return binary.BigEndian.Uint16(b[off:]) }

// lookup is get_req_context / get_resp_ctx_v1 / get_qp_ctx.
func (c *mlx5CQ) lookup(e []byte) *mlx5QP {
	if c.p.cqeVersion != 0 {
		return c.p.uidx.find(be32(e, cqeSRQNUIdx) & 0xffffff)
	}
	return c.p.qpns.find(be32(e, cqeSopDropQPN) & 0xffffff)
}

// parse is mlx5_parse_cqe (lazy = 0) into a zeroed WC (ibv_poll_cq
// leaves fields it does not set untouched; callers of this package get
// zero there).
func (c *mlx5CQ) parse(e []byte, w *WC) bool {
	*w = WC{}
	qpn := be32(e, cqeSopDropQPN) & 0xffffff
	w.QPNum = qpn
	if mlx5Mutant == mutantCQEQPN && c.p.cqeVersion != 0 {
		w.QPNum = be32(e, cqeSRQNUIdx) & 0xffffff
	}
	opcode := e[cqeOpOwn] >> 4
	switch opcode {
	case mlx5CQEReq:
		q := c.lookup(e)
		if q == nil || q.sq.wqeCnt == 0 {
			return false
		}
		wq := &q.sq
		ctr := be16(e, cqeWQECounter)
		idx := uint32(ctr) & (wq.wqeCnt - 1)
		mlx5GoodReq(w, e)
		// The data is where handle_responder finds it: in the cqe64
		// (32), or in the 64 bytes before it (64, 128-byte CQEs only).
		// libmlx5 before v64 passed the slot's void pointer here (and
		// that pointer minus one byte), which misplaced both on
		// 128-byte CQEs (rdma-core 45184d2c8).
		var st rdma.WCStatus
		if e[cqeOpOwn]&mlx5InlineScatter32 != 0 {
			st = q.copyToSendWQE(uint32(ctr), c.buf, c.cqeOff(e), int(w.ByteLen))
		} else if e[cqeOpOwn]&mlx5InlineScatter64 != 0 {
			st = q.copyToSendWQE(uint32(ctr), c.buf, c.cqeOff(e)-mlx5CQESize, int(w.ByteLen))
			if mlx5Mutant == mutantScatter64R {
				st = q.copyToSendWQE(uint32(ctr), c.buf, c.cqeOff(e), int(w.ByteLen))
			}
		}
		w.ID = wq.wrid[idx]
		w.Status = st
		wq.tail.Store(wq.wqeHead[idx] + 1)
	case mlx5CQERespWrImm, mlx5CQERespSend, mlx5CQERespSendImm, mlx5CQERespSendInv:
		q, s, ok := c.respCtx(e)
		if !ok {
			return false
		}
		if s != nil {
			w.Status = c.srqResponder(w, e, s)
		} else {
			w.Status = c.responder(w, e, q)
		}
	case mlx5CQEResizeCQ:
	case mlx5CQEReqErr, mlx5CQERespErr:
		w.Status = mlx5ErrorStatus(e[cqeSyndrome])
		w.VendorErr = uint32(e[cqeVendorErrSynd])
		if mlx5Mutant == mutantSyndrome && e[cqeSyndrome] == 0x05 {
			w.Status = rdma.WCGeneralErr
		}
		if mlx5Mutant == mutantVendorErr {
			w.VendorErr = 0
		}
		if opcode == mlx5CQERespErr {
			q, s, ok := c.respCtx(e)
			if !ok {
				return false
			}
			if s != nil { // the SRQ's WQE goes back to its free list
				ctr := int(be16(e, cqeWQECounter))
				if ctr >= len(s.wrid) {
					return false
				}
				w.ID = s.wrid[ctr]
				s.freeWQE(ctr)
				return true
			}
			if q.rq.wqeCnt == 0 {
				return false
			}
			t := q.rq.tail.Load()
			w.ID = q.rq.wrid[t&(q.rq.wqeCnt-1)]
			q.rq.tail.Store(t + 1)
			return true
		}
		q := c.lookup(e)
		if q == nil || q.sq.wqeCnt == 0 {
			return false
		}
		idx := uint32(be16(e, cqeWQECounter)) & (q.sq.wqeCnt - 1)
		w.ID = q.sq.wrid[idx]
		q.sq.tail.Store(q.sq.wqeHead[idx] + 1)
	default:
		// NO_PACKET, SIG_ERR (tag matching, signature) are never produced
		// for the QPs this package creates.
		return false
	}
	return true
}

func (c *mlx5CQ) cqeOff(e []byte) int {
	return int(uintptr(unsafe.Pointer(unsafe.SliceData(e))) - uintptr(unsafe.Pointer(unsafe.SliceData(c.buf))))
}

// mlx5ReqWC is handle_good_req's result per MLX5_OPCODE_* of the CQE
// (sop_drop_qpn >> 24): the completion opcode and flags, and the byte
// count (mlx5ReqLenCQE: the CQE's byte_cnt). Opcodes it does not list
// leave the WC as it is (opcode 0, no flags), as the switch in libmlx5
// does. A table, not a switch: one load on the data path.
var mlx5ReqWC = func() (t [256]struct {
	op    rdma.WCOpcode
	flags WCFlags
	len   uint8
}) {
	t[mlx5OpcodeRDMAWriteImm].op, t[mlx5OpcodeRDMAWriteImm].flags = rdma.WCRDMAWrite, WCWithImm
	t[mlx5OpcodeRDMAWrite].op = rdma.WCRDMAWrite
	t[mlx5OpcodeSendImm].op, t[mlx5OpcodeSendImm].flags = rdma.WCSend, WCWithImm
	t[mlx5OpcodeSend].op = rdma.WCSend
	t[mlx5OpcodeSendInval].op = rdma.WCSend
	t[mlx5OpcodeRDMARead].op, t[mlx5OpcodeRDMARead].len = rdma.WCRDMARead, mlx5ReqLenCQE
	t[mlx5OpcodeAtomicCS].op, t[mlx5OpcodeAtomicCS].len = 3, 8 // IBV_WC_COMP_SWAP
	t[mlx5OpcodeAtomicFA].op, t[mlx5OpcodeAtomicFA].len = 4, 8 // IBV_WC_FETCH_ADD
	t[mlx5OpcodeTSO].op = 7                                    // IBV_WC_TSO
	return t
}()

const mlx5ReqLenCQE = 0xff

// mlx5GoodReq is handle_good_req for the opcodes this package posts.
func mlx5GoodReq(w *WC, e []byte) {
	r := &mlx5ReqWC[e[cqeSopDropQPN]]
	w.Opcode = r.op
	w.Flags |= r.flags
	switch r.len {
	case 0:
	case mlx5ReqLenCQE:
		w.ByteLen = be32(e, cqeByteCnt)
	default:
		w.ByteLen = uint32(r.len)
	}
}

// responder is handle_responder for a QP's own receive queue
// (srqResponder for an SRQ's).
func (c *mlx5CQ) responder(w *WC, e []byte, q *mlx5QP) rdma.WCStatus {
	w.ByteLen = be32(e, cqeByteCnt)
	if mlx5Mutant == mutantByteCnt {
		w.ByteLen = 0
	}
	wq := &q.rq
	if wq.wqeCnt == 0 {
		return rdma.WCGeneralErr
	}
	t := wq.tail.Load()
	ctr := t & (wq.wqeCnt - 1)
	w.ID = wq.wrid[ctr]
	wq.tail.Store(t + 1)
	var st rdma.WCStatus
	if e[cqeOpOwn]&mlx5InlineScatter32 != 0 {
		st = q.copyToRecvWQE(ctr, c.buf, c.cqeOff(e), int(w.ByteLen))
	} else if e[cqeOpOwn]&mlx5InlineScatter64 != 0 {
		st = q.copyToRecvWQE(ctr, c.buf, c.cqeOff(e)-mlx5CQESize, int(w.ByteLen))
		if mlx5Mutant == mutantScatter64 {
			st = q.copyToRecvWQE(ctr, c.buf, c.cqeOff(e), int(w.ByteLen))
		}
	}
	if st != rdma.WCSuccess {
		return st
	}
	mlx5RespFields(w, e)
	return rdma.WCSuccess
}

// mlx5RespFields is the rest of handle_responder: opcode, flags and the
// sender's fields, the same for a QP's receive queue and an SRQ.
func mlx5RespFields(w *WC, e []byte) {
	switch e[cqeOpOwn] >> 4 {
	case mlx5CQERespWrImm:
		w.Opcode = rdma.WCRecvRDMAWithImm
		w.Flags |= WCWithImm
		w.Imm = be32(e, cqeImmInvalPKey)
	case mlx5CQERespSend:
		w.Opcode = rdma.WCRecv
	case mlx5CQERespSendImm:
		w.Opcode = rdma.WCRecv
		if mlx5Mutant != mutantCQEOpcode {
			w.Flags |= WCWithImm
		}
		w.Imm = be32(e, cqeImmInvalPKey)
	case mlx5CQERespSendInv:
		w.Opcode = rdma.WCRecv
		w.Flags |= WCWithInv
		w.Imm = be32(e, cqeImmInvalPKey) // invalidated_rkey shares imm_data
	}
	if mlx5Mutant == mutantCQEImm && w.Flags&WCWithImm != 0 {
		w.Imm = binary.LittleEndian.Uint32(e[cqeImmInvalPKey:])
	}
	w.SLID = be16(e, cqeSLID)
	fr := be32(e, cqeFlagsRQPN)
	w.SL = uint8(fr>>24) & 0xf
	w.SrcQP = fr & 0xffffff
	w.DLIDPathBits = e[cqeMLPath] & 0x7f
	if (fr>>28)&3 != 0 && mlx5Mutant != mutantGRH {
		w.Flags |= WCWithGRH
	}
	switch mlx5Mutant {
	case mutantCQESL:
		w.SL = uint8(fr >> 28)
	case mutantSrcQP:
		w.SrcQP = 0
	}
	w.PKeyIndex = uint16(be32(e, cqeImmInvalPKey) & 0xffff)
}

// mlx5ErrorStatus is mlx5_handle_error_cqe.
func mlx5ErrorStatus(syndrome uint8) rdma.WCStatus {
	switch syndrome {
	case 0x01:
		return rdma.WCLocLenErr
	case 0x02:
		return rdma.WCLocQPOpErr
	case 0x04:
		return rdma.WCLocProtErr
	case 0x05:
		return rdma.WCWRFlushErr
	case 0x06:
		return wcMWBindErr
	case 0x10:
		return rdma.WCBadRespErr
	case 0x11:
		return rdma.WCLocAccessErr
	case 0x12:
		return rdma.WCRemInvReqErr
	case 0x13:
		return rdma.WCRemAccessErr
	case 0x14:
		return rdma.WCRemOpErr
	case 0x15:
		return rdma.WCRetryExcErr
	case 0x16:
		return rdma.WCRNRRetryExcErr
	case 0x22:
		return wcRemAbortEr
	}
	return rdma.WCGeneralErr
}

// arm is mlx5_arm_cq: the ARM doorbell record, then one 64-bit
// big-endian store of {sn<<28 | cmd | ci, cqn} at MLX5_CQ_DOORBELL of
// the CQ UAR page. No command reaches the kernel.
func (c *mlx5CQ) arm(solicited bool) error {
	if c.p.cqUARReg == nil {
		return notSupported("arm CQ", c.p.x.dev.Name, "no UAR page mapped")
	}
	sn := c.armSN & 3
	ci := c.consIndex & 0xffffff
	if mlx5Mutant == mutantArmCI {
		ci = 0
	}
	cmd := uint32(mlx5CQDBReqNot)
	if solicited && mlx5Mutant != mutantArmCmd {
		cmd = mlx5CQDBReqNotSol
	}
	hi := sn<<28 | cmd | ci
	if mlx5Mutant != mutantArmDBRec {
		c.db[mlx5CQArmDB] = htobe32(hi)
	}
	// mmio_wc_start: the doorbell record is written before the UAR store.
	if mlx5Mutant != mutantArmBarrier {
		barrier.MMIOFlushWrites()
	}
	cqn := uint64(c.cqn)
	if mlx5Mutant == mutantArmCQN {
		cqn = 0
	}
	mmioWrite64BE(unsafe.Add(c.p.cqUARReg, mlx5CQDoorbell), uint64(hi)<<32|cqn)
	barrier.MMIOFlushWrites()
	return nil
}

// event is mlx5_cq_event (ibv_get_cq_event): the arm sequence number
// advances once per completion event read.
func (c *mlx5CQ) event() {
	if mlx5Mutant != mutantArmSN {
		c.armSN++
	}
}

// mmioWrite64BE is mmio_write64_be: one 64-bit store of v in big-endian
// byte order (two 32-bit stores on 32-bit hosts, as rdma-core's
// non-atomic fallback).
func mmioWrite64BE(p unsafe.Pointer, v uint64) {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	if unsafe.Sizeof(uintptr(0)) == 8 {
		*(*uint64)(p) = abi.Native.Uint64(b[:])
		return
	}
	*(*uint32)(p) = abi.Native.Uint32(b[:4])
	*(*uint32)(unsafe.Add(p, 4)) = abi.Native.Uint32(b[4:])
}

// clean is __mlx5_cq_clean: drop the CQEs of user index / QP number rsn
// still in the ring, compacting older ones over them; the SRQ WQEs of
// dropped receives go back to srq's free list (free_res_cqe).
func (c *mlx5CQ) clean(rsn uint32, srq *mlx5SRQ) {
	if c == nil || c.buf == nil {
		return
	}
	prod := c.consIndex
	for c.swCQE(prod) != nil {
		if prod == c.consIndex+c.mask {
			break
		}
		prod++
	}
	nfreed := uint32(0)
	for int32(prod-1-c.consIndex) >= 0 {
		prod--
		e := c.cqe(prod)
		var match, fromSRQ bool
		if c.p.cqeVersion != 0 {
			match = be32(e, cqeSRQNUIdx)&0xffffff == rsn
			switch e[cqeOpOwn] >> 4 { // is_responder
			case mlx5CQERespWrImm, mlx5CQERespSend, mlx5CQERespSendImm, mlx5CQERespSendInv, mlx5CQERespErr:
				fromSRQ = true
			}
		} else {
			match = be32(e, cqeSopDropQPN)&0xffffff == rsn
			fromSRQ = be32(e, cqeSRQNUIdx)&0xffffff != 0
		}
		if match {
			if srq != nil && fromSRQ {
				srq.freeWQE(int(be16(e, cqeWQECounter)))
			}
			nfreed++
		} else if nfreed != 0 {
			d := c.cqe(prod + nfreed)
			owner := d[cqeOpOwn] & mlx5CQEOwnerMask
			copy(c.slot(prod+nfreed), c.slot(prod))
			if mlx5Mutant != mutantCleanOwner {
				d[cqeOpOwn] = owner | d[cqeOpOwn]&^mlx5CQEOwnerMask
			}
		}
	}
	if nfreed != 0 {
		c.consIndex += nfreed
		barrier.UDMAToDevice()
		c.updateCI()
	}
}
