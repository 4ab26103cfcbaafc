package uverbs

// mlx5 QPs: sizing and creation (verbs.c create_qp, mlx5_calc_*), the
// send path (qp.c _mlx5_post_send, post_send_db), the receive path
// (mlx5_post_recv) and scatter-to-CQE copy-out (mlx5_copy_to_*_wqe).
// unsafe: doorbell records and BlueFlame registers are mmap'd device
// memory (see mlx5.go), and user SGE memory is reached by address for
// inline sends and scatter-to-CQE; Go-heap slices are indexed normally.

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/go-rdma/rdmacm/internal/abi"
	"github.com/go-rdma/rdmacm/internal/barrier"
	"github.com/go-rdma/rdmacm/internal/unix"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
)

// WQE constants (mlx5dv.h).
const (
	mlx5SendWQEBB          = 64
	mlx5SendWQEShift       = 6
	mlx5InvalidLKey        = 0x100
	mlx5InlineSeg          = 0x80000000
	mlx5ExtendedUDAV       = 0x80000000
	mlx5WQECtrlCQUpdate    = 2 << 2
	mlx5WQECtrlSolicited   = 1 << 1
	mlx5WQECtrlFence       = 4 << 5
	mlx5OpcodeSendInval    = 0x01
	mlx5OpcodeRDMAWrite    = 0x08
	mlx5OpcodeRDMAWriteImm = 0x09
	mlx5OpcodeSend         = 0x0a
	mlx5OpcodeSendImm      = 0x0b
	mlx5OpcodeTSO          = 0x0e
	mlx5OpcodeRDMARead     = 0x10
	mlx5OpcodeAtomicCS     = 0x11
	mlx5OpcodeAtomicFA     = 0x12
	mlx5RcvDBR             = 0 // MLX5_RCV_DBR
	mlx5SndDBR             = 1 // MLX5_SND_DBR
	mlx5CtrlSize           = 16
	mlx5RaddrSize          = 16
	mlx5AtomicSize         = 16
	mlx5DataSegSize        = 16
	mlx5DatagramSize       = 48
)

// mlx5IBOpcode is mlx5_ib_opcode[] for the opcodes SendWR can carry.
var mlx5IBOpcode = [...]uint32{
	OpRDMAWrite: mlx5OpcodeRDMAWrite, OpRDMAWriteWithImm: mlx5OpcodeRDMAWriteImm,
	OpSend: mlx5OpcodeSend, OpSendWithImm: mlx5OpcodeSendImm, OpRDMARead: mlx5OpcodeRDMARead,
	OpAtomicCompareSwap: mlx5OpcodeAtomicCS, OpAtomicFetchAdd: mlx5OpcodeAtomicFA,
}

// mlx5WQ is struct mlx5_wq.
type mlx5WQ struct {
	wrid       []uint64
	wqeHead    []uint32
	wqeCnt     uint32
	maxPost    uint32
	head       uint32
	tail       wqTail
	curPost    uint32
	maxGS      int
	stateMaxGS int // qp_state_max_gs
	wqeShift   uint
	offset     int
}

// wqTail is mlx5_wq.tail: written by poll under the CQ lock, read by
// post without it (mlx5_wq_overflow's first look). Loads are atomic;
// stores are release stores (barrier.StoreRelease32: on amd64 a plain
// store, as libmlx5's, where atomic's Store is a locked XCHG).
type wqTail struct{ v uint32 }

func (t *wqTail) Load() uint32   { return atomic.LoadUint32(&t.v) }
func (t *wqTail) Store(v uint32) { barrier.StoreRelease32(&t.v, v) }

// mlx5WQSize is the sizing part of struct mlx5_wq.
type mlx5WQSize struct {
	wqeCnt, maxPost uint32
	maxGS           int
	wqeShift        uint
	offset          int
}

func (w *mlx5WQ) setSize(s mlx5WQSize) {
	w.wqeCnt, w.maxPost, w.maxGS, w.wqeShift, w.offset = s.wqeCnt, s.maxPost, s.maxGS, s.wqeShift, s.offset
}

// mlx5QP is struct mlx5_qp (data path and ECE state).
type mlx5QP struct {
	p   *mlx5Provider
	q   *QP
	typ qp.QPType
	qpn uint32

	mem     []byte // buffer mapping
	bufSize int
	sq      mlx5WQ
	rq      mlx5WQ
	sqBuf   []byte // SQ: buf[sq.offset : qend]
	db      *[2]uint32
	bf      *mlx5BF

	maxInline  int
	atomics    bool // atomics_enabled: the device's atomic_cap is not NONE
	signalBits uint8
	fmCache    uint8
	rsn        uint32
	uidx       uint32
	hasUIdx    bool
	inQPNTable bool

	// sq.lock and rq.lock: mlx5_spinlock (a pthread spinlock unless
	// MLX5_SINGLE_THREADED), as barrier.SpinLock: one locked instruction per
	// critical section.
	sqMu, rqMu barrier.SpinLock

	getECE uint32 // options the kernel/firmware reported
	setECE uint32 // options to send with the next modify
}

func roundupPow2(v int) int {
	n := 1
	for n < v {
		n <<= 1
	}
	return n
}

// ilog32 is rdma-core's ilog32: the number of significant bits.
func ilog32(v uint32) uint {
	n := uint(0)
	for v != 0 {
		n++
		v >>= 1
	}
	return n
}

// mlx5SQOverhead is sq_overhead with the default send ops of
// ibv_create_qp: RC/UC every op (BIND_MW/LOCAL_INV make the UMR overhead
// ctrl+umr_ctrl+mkey+64 = 192 the largest); UD SEND|SEND_IMM|TSO plus the
// datagram segment.
func mlx5SQOverhead(t qp.QPType) int {
	switch t {
	case qp.RC, qp.UC:
		return max(mlx5CtrlSize, mlx5CtrlSize+mlx5RaddrSize, mlx5CtrlSize+mlx5RaddrSize+16, mlx5CtrlSize+48+64+64)
	case qp.UD:
		return mlx5CtrlSize + mlx5DatagramSize
	}
	return -1
}

// mlx5Sizes is the result of mlx5_calc_wq_size.
type mlx5Sizes struct {
	total, sqSize, rqSize int
	sq, rq                mlx5WQSize
	maxInline             int
	cmdInline             uint32 // attr->cap.max_inline_data after sizing
}

// mlx5CalcWQSize is mlx5_calc_wq_size (mlx5_calc_sq_size +
// mlx5_calc_rq_size) against the context limits.
func (p *mlx5Provider) calcWQSize(t qp.QPType, c qp.Cap) (mlx5Sizes, error) {
	var s mlx5Sizes
	s.cmdInline = c.MaxInlineData
	inval := func(why string, a ...any) (mlx5Sizes, error) {
		return s, fmt.Errorf("%w: %s: %w", ErrInvalidArgument, fmt.Sprintf(why, a...), unix.EINVAL)
	}
	if c.MaxSendWR != 0 {
		ovh := mlx5SQOverhead(t)
		size := ovh
		inl := 0
		if c.MaxInlineData != 0 {
			inl = size + (4+int(c.MaxInlineData)+15)/16*16
		}
		maxGather := (p.maxSQDescSz - size) / mlx5DataSegSize
		if int(c.MaxSendSGE) > maxGather {
			return inval("%d send SGEs (at most %d)", c.MaxSendSGE, maxGather)
		}
		size += int(c.MaxSendSGE) * mlx5DataSegSize
		tot := max(size, inl)
		if tot > p.maxSQDescSz {
			return inval("send WQE of %d bytes (max_sq_desc_sz %d)", tot, p.maxSQDescSz)
		}
		wqeSize := (tot + mlx5SendWQEBB - 1) / mlx5SendWQEBB * mlx5SendWQEBB
		if wqeSize > p.maxSQDescSz {
			return inval("send WQE of %d bytes (max_sq_desc_sz %d)", wqeSize, p.maxSQDescSz)
		}
		s.maxInline = wqeSize - ovh - 4
		if mlx5Mutant == mutantSQInline {
			s.maxInline = wqeSize - ovh
		}
		s.cmdInline = uint32(s.maxInline)
		if int(c.MaxSendWR) > 0x7fffffff/p.maxSQDescSz {
			return inval("%d send WRs", c.MaxSendWR)
		}
		wq := roundupPow2(int(c.MaxSendWR) * wqeSize)
		if mlx5Mutant == mutantSQPow2 {
			wq = int(c.MaxSendWR) * wqeSize
		}
		s.sq.wqeCnt = uint32(wq / mlx5SendWQEBB)
		if s.sq.wqeCnt > p.maxSendWqebb {
			return inval("%d send WQEBBs (max_send_wqebb %d)", s.sq.wqeCnt, p.maxSendWqebb)
		}
		s.sq.wqeShift = mlx5SendWQEShift
		s.sq.maxGS = int(c.MaxSendSGE)
		s.sq.maxPost = uint32(wq / wqeSize)
		s.sqSize = wq
	}
	if c.MaxRecvWR != 0 {
		if c.MaxRecvWR > p.maxRecvWR {
			return inval("%d receive WRs (max_recv_wr %d)", c.MaxRecvWR, p.maxRecvWR)
		}
		size := mlx5DataSegSize * max(int(c.MaxRecvSGE), 1)
		if size > p.maxRQDescSz {
			return inval("receive WQE of %d bytes (max_rq_desc_sz %d)", size, p.maxRQDescSz)
		}
		wqeSize := roundupPow2(size)
		if wqeSize > p.maxRQDescSz {
			return inval("receive WQE of %d bytes (max_rq_desc_sz %d)", wqeSize, p.maxRQDescSz)
		}
		wq := max(roundupPow2(int(c.MaxRecvWR))*wqeSize, mlx5SendWQEBB)
		s.rq.wqeCnt = uint32(wq / wqeSize)
		s.rq.wqeShift = ilog32(uint32(wqeSize - 1))
		s.rq.maxPost = 1 << ilog32(uint32(wq/wqeSize-1))
		s.rq.maxGS = wqeSize / mlx5DataSegSize
		s.rqSize = wq
	}
	s.sq.offset = s.rqSize
	s.total = s.sqSize + s.rqSize
	return s, nil
}

// qpData is create_qp up to the command: sizing, buffer, doorbell
// record, user index, UAR, driver data. It sets init.Cap.MaxInlineData
// to the computed value, which the command carries.
func (p *mlx5Provider) qpData(q *QP, init *QPInit) (in, out []byte, err error) {
	dev := p.x.dev.Name
	if mlx5SQOverhead(init.Type) < 0 {
		return nil, nil, &rdma.OpError{Pkg: "uverbs", Op: "create QP", Device: dev, Err: fmt.Errorf("%w: QP type %v", ErrNotSupported, init.Type)}
	}
	s, err := p.calcWQSize(init.Type, init.Cap)
	if err != nil {
		return nil, nil, &rdma.OpError{Pkg: "uverbs", Op: "create QP", Device: dev, Err: err}
	}
	m := mlx5State(q)
	m.p, m.typ = p, init.Type
	m.sq.setSize(s.sq)
	m.rq.setSize(s.rq)
	m.maxInline = s.maxInline
	m.bufSize = s.total
	m.atomics = p.atomicCap != AtomicNone
	init.Cap.MaxInlineData = s.cmdInline
	if init.SignalAll {
		m.signalBits = mlx5WQECtrlCQUpdate // sq_signal_bits
	}
	if m.sq.wqeCnt != 0 {
		m.sq.wrid = make([]uint64, m.sq.wqeCnt)
		m.sq.wqeHead = make([]uint32, m.sq.wqeCnt)
	}
	if m.rq.wqeCnt != 0 {
		m.rq.wrid = make([]uint64, m.rq.wqeCnt)
	}
	if m.mem, err = mmapAnon(max(s.total, 1)); err != nil {
		return nil, nil, opErr("create QP buffer", dev, err)
	}
	m.sqBuf = m.mem[m.sq.offset : m.sq.offset+int(m.sq.wqeCnt)<<mlx5SendWQEShift]
	m.initIndices()
	if m.db, err = p.allocDB(); err != nil {
		m.free()
		return nil, nil, opErr("create QP doorbell record", dev, err)
	}
	m.db[mlx5RcvDBR], m.db[mlx5SndDBR] = 0, 0
	cmd := p.createQPCmd()
	cmd.Flags = abi.MLX5QPFlagScatterCQE // use_scatter_to_cqe(); no MLX5_QP_SIGNATURE
	cmd.BufAddr = addrOf(m.mem)
	cmd.DBAddr = uint64(uintptr(unsafe.Pointer(m.db)))
	cmd.SQWQECount, cmd.RQWQECount, cmd.RQWQEShift = m.sq.wqeCnt, m.rq.wqeCnt, uint32(m.rq.wqeShift)
	if p.cqeVersion == 0 {
		cmd.UIdx = 0xffffff
	} else {
		u, ok := p.uidx.store(m)
		if !ok {
			m.free()
			return nil, nil, opErr("create QP", dev, fmt.Errorf("no free user index: %w", unix.ENOMEM))
		}
		m.uidx, m.hasUIdx = u, true
		cmd.UIdx = u
	}
	if !p.noKernDynUAR {
		if m.bf, err = p.getQPUAR(); err != nil {
			m.free()
			return nil, nil, opErr("create QP UAR", dev, err)
		}
		cmd.BfregIndex = m.bf.pageID
		cmd.Flags |= abi.MLX5QPFlagUARPageIndex
	}
	return append([]byte(nil), abi.Bytes(&cmd)...), make([]byte, unsafe.Sizeof(abi.MLX5CreateQPResp{})), nil
}

func (m *mlx5QP) initIndices() {
	m.sq.head = 0
	m.sq.tail.Store(0)
	m.rq.head = 0
	m.rq.tail.Store(0)
	m.sq.curPost = 0
}

// free releases the user index, UAR, doorbell record and buffer (the
// error path of create_qp and the end of mlx5_destroy_qp).
func (m *mlx5QP) free() {
	if m.inQPNTable {
		m.p.qpns.clear(m.qpn)
		m.inQPNTable = false
	}
	if m.hasUIdx {
		m.p.uidx.clear(m.uidx)
		m.hasUIdx = false
	}
	if m.db != nil {
		m.p.freeDB(m.db)
		m.db = nil
	}
	if m.mem != nil {
		unix.Munmap(m.mem)
		m.mem, m.sqBuf = nil, nil
	}
	if m.bf != nil && !m.p.noKernDynUAR {
		m.p.putQPUAR(m.bf)
	}
	m.bf = nil
}

func (*mlx5Provider) allocQP() *QP { return new(QP) }

// qpAbort undoes qpData when the create command failed.
func (p *mlx5Provider) qpAbort(q *QP) {
	if m, ok := q.drv.(*mlx5QP); ok && m.p != nil {
		m.free()
	}
}

// newQP is create_qp after the command.
func (p *mlx5Provider) newQP(q *QP, out []byte) (qpOps, error) {
	m := mlx5State(q)
	if m.p == nil {
		return nil, opErr("create QP", p.x.dev.Name, fmt.Errorf("%w: no mlx5 QP state", ErrInvalidArgument))
	}
	resp := abi.Decode[abi.MLX5CreateQPResp](out)
	m.qpn = q.num
	if p.cqeVersion == 0 && (m.sq.wqeCnt != 0 || m.rq.wqeCnt != 0) {
		p.qpns.storeAt(q.num, m)
		m.inQPNTable = true
	}
	m.getECE = resp.ECEOptions
	if p.noKernDynUAR {
		// map_uuar: the kernel's bfreg index into the static table.
		if int(resp.BfregIndex) >= len(p.bfs) || p.bfs[resp.BfregIndex].reg == nil {
			m.free()
			return nil, opErr("create QP", p.x.dev.Name, fmt.Errorf("%w: bfreg_index %d of %d", ErrInvalidArgument, resp.BfregIndex, len(p.bfs)))
		}
		m.bf = &p.bfs[resp.BfregIndex]
	}
	m.rq.maxPost = m.rq.wqeCnt
	q.cap.MaxSendWR = m.sq.maxPost
	q.cap.MaxRecvWR = m.rq.maxPost
	q.cap.MaxRecvSGE = uint32(m.rq.maxGS)
	if m.hasUIdx {
		m.rsn = m.uidx
	} else {
		m.rsn = q.num
	}
	m.stateChanged(qp.Reset, false)
	return m, nil
}

// stateChanged is set_qp_operational_state, and after a modify to RESET
// the rest of mlx5_modify_qp: CQs cleaned of this QP, indices and
// doorbell record reset (the buffer is left as it is).
func (m *mlx5QP) stateChanged(s qp.State, modify bool) {
	switch s {
	case qp.Reset:
		if modify && m.q != nil && m.db != nil {
			rc, sc := mlx5CQOf(m.q.recvCQ), mlx5CQOf(m.q.sendCQ)
			if mlx5Mutant == mutantCleanReset {
				rc, sc = nil, nil
			}
			m.cleanCQ(rc, mlx5SRQOf(m.q))
			if sc != rc {
				m.cleanCQ(sc, nil)
			}
			m.initIndices()
			m.db[mlx5RcvDBR], m.db[mlx5SndDBR] = 0, 0
		}
		m.rq.stateMaxGS, m.sq.stateMaxGS = -1, -1
	case qp.Init:
		m.rq.stateMaxGS = m.rq.maxGS
	case qp.RTS:
		m.sq.stateMaxGS = m.sq.maxGS
	}
}

func mlx5CQOf(cq *CQ) *mlx5CQ {
	if cq == nil {
		return nil
	}
	c, _ := cq.ops.(*mlx5CQ)
	return c
}

func (m *mlx5QP) cleanCQ(c *mlx5CQ, srq *mlx5SRQ) {
	if c == nil {
		return
	}
	c.cq.mu.Lock()
	c.clean(m.rsn, srq)
	c.cq.mu.Unlock()
}

// close is mlx5_destroy_qp after DESTROY_QP: both CQs cleaned under their
// locks, then the user index, doorbell record, buffer and UAR released.
func (m *mlx5QP) close() error {
	rc, sc := mlx5CQOf(m.q.recvCQ), mlx5CQOf(m.q.sendCQ)
	first, second := rc, sc
	if sc != nil && rc != nil && sc != rc && sc.cqn < rc.cqn {
		first, second = sc, rc
	}
	if first != nil {
		first.cq.mu.Lock()
	}
	if second != nil && second != first {
		second.cq.mu.Lock()
	}
	if rc != nil && mlx5Mutant != mutantCleanDestroy {
		rc.clean(m.rsn, mlx5SRQOf(m.q))
	}
	if sc != nil && sc != rc && mlx5Mutant != mutantCleanDestroy {
		sc.clean(m.rsn, nil)
	}
	if m.inQPNTable {
		m.p.qpns.clear(m.qpn)
		m.inQPNTable = false
	}
	if second != nil && second != first {
		second.cq.mu.Unlock()
	}
	if first != nil {
		first.cq.mu.Unlock()
	}
	m.free()
	return nil
}

// queryCap is mlx5_query_qp's override of the kernel's capacity.
func (m *mlx5QP) queryCap(c *qp.Cap) {
	c.MaxSendWR = m.sq.maxPost
	c.MaxSendSGE = uint32(m.sq.maxGS)
	c.MaxInlineData = uint32(m.maxInline)
}

// overflow is mlx5_wq_overflow; the tail is re-read under the CQ lock.
func (m *mlx5QP) overflow(wq *mlx5WQ, nreq uint32, cq *CQ) bool {
	if wq.head-wq.tail.Load()+nreq < wq.maxPost {
		return false
	}
	if cq == nil {
		return wq.head-wq.tail.Load()+nreq >= wq.maxPost
	}
	cq.mu.Lock()
	full := wq.head-wq.tail.Load()+nreq >= wq.maxPost
	cq.mu.Unlock()
	return full
}

// sendErr builds the error of WR i (bad_wr), wrapping the errno libmlx5
// returns.
func (m *mlx5QP) sendErr(i, n int, base error, errno unix.Errno, why string) error {
	return &rdma.OpError{Pkg: "uverbs", Op: fmt.Sprintf("post send WR %d of %d on QP %#x", i+1, n, m.q.num), Device: m.p.x.dev.Name,
		Err: fmt.Errorf("%w: %s: %w", base, why, errno)}
}

func putBE32(b []byte, off int, v uint32) { binary.BigEndian.PutUint32(b[off:], v) }
func putBE64(b []byte, off int, v uint64) { binary.BigEndian.PutUint64(b[off:], v) }

// Why writeWQEs stopped before a WR (0: it did not).
const (
	stopOpcode = 1 + iota
	stopOverflow
	stopSGEs
	stopNoAH
	stopAV        // a UD WR needs its AH's address vector
	stopInline    // set_data_inl_seg failed
	stopInlineSeg // the inline data segment is left to setDataInlSeg
	stopAtomic    // an atomic (or a bad opcode): atomicWQE
	stopAtomicArg // an atomic that checkAtomicWR refuses
	stopAtomicCap // an atomic on a QP without atomics_enabled
)

// postSend is _mlx5_post_send for SEND, SEND_WITH_IMM, RDMA_WRITE,
// RDMA_WRITE_WITH_IMM and RDMA_READ on RC/UC/UD and the two atomics on
// RC, then post_send_db:
// writeWQEs checks and writes the WRs' WQEs, and one doorbell rings for
// all. Whatever needs a call is done in postSendRest, out of writeWQEs'
// loop (a call there would make it spill its values on every WR): the
// UD address vector's lookup, inline data that wraps or comes in
// pieces, a failed check's error and the overflow test under the CQ
// lock.
func (m *mlx5QP) postSend(wrs []SendWR) error {
	m.sqMu.Lock()
	var err error
	nreq, size, ctrl, stop := m.writeWQEs(wrs, 0, 0, 0, false, nil, nil)
	if stop != 0 {
		nreq, size, ctrl, err = m.postSendRest(wrs, nreq, size, ctrl, stop)
	}
	bf := m.bf
	if nreq == 0 || bf.lock || mlx5Mutant == mutantBarrier || mlx5Mutant == mutantBFCopy {
		m.ringSendUnlock(uint32(nreq), size, ctrl)
		return err
	}
	// post_send_db without a lock on the BlueFlame register (the common
	// case: a low-latency bfreg of its own): from udma_to_device_barrier
	// to mmio_flush_writes, and the unlock, in one call that keeps
	// libmlx5's stores and fences in its order.
	sq := &m.sq
	sq.head += uint32(nreq)
	buf := m.sqBuf
	n := 8 // mmio_write64_be of the ctrl segment's first 8 bytes
	if nreq == 1 && bf.uuarn != 0 && size > 1 && uint32(size) <= bf.bufSize/16 {
		n = int(uint(size*16+63) &^ 63) // mlx5_bf_copy (prefer_bf defaults to 1)
	}
	if mlx5Mutant == mutantBFMulti && nreq > 1 && bf.uuarn != 0 && size > 1 && uint32(size) <= bf.bufSize/16 {
		n = int(uint(size*16+63) &^ 63)
	}
	if mlx5Mutant == mutantBFNone {
		n = 8
	}
	n1 := min(n, len(buf)-ctrl) // the copy's source wraps at the end of the SQ
	// unsafe: the BlueFlame register is mmap'd UAR memory.
	reg := unsafe.Add(bf.reg, bf.offset)
	// The BlueFlame half toggles before the doorbell rather than after:
	// the register is this QP's alone (no bf lock), the offset is not
	// device-visible, and the send queue lock, released by the
	// doorbell's last store, covers both.
	if mlx5Mutant != mutantBFToggle {
		bf.offset ^= bf.bufSize
	}
	dbrec := htobe32(sq.curPost & 0xffff)
	if mlx5Mutant == mutantSQDB {
		dbrec = sq.curPost & 0xffff
	}
	barrier.DoorbellWCUnlock(&m.sqMu, &m.db[mlx5SndDBR], dbrec, reg, unsafe.Pointer(&buf[ctrl]), uintptr(n1),
		unsafe.Pointer(unsafe.SliceData(buf)), uintptr(n-n1))
	return err
}

// postSendRest continues postSend where writeWQEs stopped (at wrs[nreq],
// for stop), doing what needs a call and running writeWQEs again, and
// returns what it returns, with the error of the WR it stopped at.
func (m *mlx5QP) postSendRest(wrs []SendWR, nreq, size, ctrl, stop int) (int, int, int, error) {
	var ah *AH
	var av *mlx5AV
	locked := false
	for {
		switch stop {
		case 0:
			return nreq, size, ctrl, nil
		case stopAV:
			ah = wrs[nreq].AH
			av = m.p.av(ah.num)
		case stopAtomic:
			sz, c, st := m.atomicWQE(&wrs[nreq], uint32(nreq))
			if st != 0 {
				return nreq, size, ctrl, m.postSendErr(wrs, nreq, st)
			}
			nreq, size, ctrl = nreq+1, sz, c
		case stopInlineSeg:
			sz, c, st := m.finishInlineWQE(&wrs[nreq], uint32(nreq))
			if st != 0 {
				return nreq, size, ctrl, m.postSendErr(wrs, nreq, st)
			}
			nreq, size, ctrl = nreq+1, sz, c
		case stopOverflow:
			if m.overflow(&m.sq, uint32(nreq), m.q.sendCQ) {
				return nreq, size, ctrl, m.postSendErr(wrs, nreq, stop)
			}
			locked = true // not full after all: again, with the test passed
		default:
			return nreq, size, ctrl, m.postSendErr(wrs, nreq, stop)
		}
		nreq, size, ctrl, stop = m.writeWQEs(wrs, nreq, size, ctrl, locked, ah, av)
		locked = false
	}
}

// writeWQEs is the loop of _mlx5_post_send from wrs[nreq] on, for each
// WR the checks in libmlx5's order (for the first, the overflow test
// passed already if locked) and then the WQE: ctrl segment, remote
// address or datagram segment (av: the address vector of ah), data
// segments or inline data. It returns the number of WRs posted, the
// size (16-byte units) and offset of the last WQE written (size and
// ctrl if none), and why it stopped at wrs[nreq], if it did; at
// stopInlineSeg it has written that WR's WQE up to its inline data
// segment (finishInlineWQE). It makes no call, so that the loop keeps
// its values in registers.
func (m *mlx5QP) writeWQEs(wrs []SendWR, nreq, size, ctrl int, locked bool, ah *AH, av *mlx5AV) (int, int, int, int) {
	sq := &m.sq
	// Only what changes per WR and what every WR uses is kept in locals;
	// the rest is loaded from m where used.
	curPost, nextFence := sq.curPost, m.fmCache
	for ; nreq < len(wrs); nreq++ {
		wr := &wrs[nreq]
		op, flags, sges := wr.Opcode, wr.Flags, wr.SGEs
		if uint(op) >= uint(OpAtomicCompareSwap) {
			// Atomics, and opcodes out of range, in one test: atomicWQE.
			sq.curPost, m.fmCache = curPost, nextFence
			return nreq, size, ctrl, stopAtomic
		}
		if sq.head-sq.tail.Load()+uint32(nreq) >= sq.maxPost && !locked {
			sq.curPost, m.fmCache = curPost, nextFence
			return nreq, size, ctrl, stopOverflow // mlx5_wq_overflow's first look; postSend makes the second
		}
		inlData := flags&SendInline != 0 && wr.InlineData != nil
		nsge := len(sges)
		if inlData {
			nsge = 1
		}
		if nsge > sq.stateMaxGS {
			sq.curPost, m.fmCache = curPost, nextFence
			return nreq, size, ctrl, stopSGEs
		}
		if m.typ == qp.UD {
			if wr.AH == nil {
				sq.curPost, m.fmCache = curPost, nextFence
				return nreq, size, ctrl, stopNoAH
			}
			if wr.AH != ah {
				sq.curPost, m.fmCache = curPost, nextFence
				return nreq, size, ctrl, stopAV
			}
		}
		fm := m.signalBits | nextFence
		if flags&SendFence != 0 && mlx5Mutant != mutantFence {
			fm = m.signalBits | mlx5WQECtrlFence
			if mlx5Mutant == mutantFenceSigAll {
				fm = mlx5WQECtrlFence // mutation: sig_all lost
			}
		}
		nextFence = 0
		if flags&SendSignaled != 0 && mlx5Mutant != mutantSignaled {
			fm |= mlx5WQECtrlCQUpdate
		}
		if flags&SendSolicited != 0 {
			fm |= mlx5WQECtrlSolicited
		}
		if mlx5Mutant == mutantSegmentByte {
			fm ^= mlx5WQECtrlSolicited // mutation: a wrong fm_ce_se
		}

		// The ctrl segment, then what follows it in the first WQEBB.
		buf := m.sqBuf
		idx := curPost & (sq.wqeCnt - 1)
		c := int(idx) << mlx5SendWQEShift
		w := (*[mlx5SendWQEBB]byte)(buf[c : c+mlx5SendWQEBB])
		var imm uint32
		if op == OpSendWithImm || (op == OpRDMAWriteWithImm && mlx5Mutant != mutantImm) {
			imm = wr.Imm
		}
		binary.BigEndian.PutUint32(w[8:], uint32(fm)) // signature, rsvd = 0; fm_ce_se
		binary.BigEndian.PutUint32(w[12:], imm)
		if mlx5Mutant == mutantImmOrder {
			binary.LittleEndian.PutUint32(w[12:], imm)
		}
		sz := mlx5CtrlSize / 16
		seg := c + mlx5CtrlSize
		if m.typ != qp.UD {
			if mlx5HasRaddr(m.typ, op) {
				binary.BigEndian.PutUint64(w[16:], wr.RemoteAddr) // set_raddr_seg
				binary.BigEndian.PutUint32(w[24:], wr.RKey)
				binary.BigEndian.PutUint32(w[28:], 0)
				if mlx5Mutant == mutantRaddrOrder {
					binary.LittleEndian.PutUint64(w[16:], wr.RemoteAddr)
				}
				if mlx5Mutant == mutantRKey {
					binary.BigEndian.PutUint32(w[24:], 0)
				}
				seg += mlx5RaddrSize
				sz += mlx5RaddrSize / 16
			}
		} else {
			// set_datagram_seg: the AH's address vector, with the remote QP
			// number and Q_Key.
			if av != nil {
				// In 16-byte moves: a 48-byte copy is a call to memmove.
				*(*[16]byte)(w[16:32]) = *(*[16]byte)(av[0:16])
				*(*[16]byte)(w[32:48]) = *(*[16]byte)(av[16:32])
				*(*[16]byte)(w[48:64]) = *(*[16]byte)(av[32:48])
			}
			binary.BigEndian.PutUint32(w[mlx5CtrlSize+8:], wr.RemoteQPN|mlx5ExtendedUDAV)
			binary.BigEndian.PutUint32(w[mlx5CtrlSize:], wr.RemoteQKey)
			if mlx5Mutant == mutantExtAV {
				binary.BigEndian.PutUint32(w[mlx5CtrlSize+8:], wr.RemoteQPN)
			}
			if mlx5Mutant == mutantQKey {
				binary.BigEndian.PutUint32(w[mlx5CtrlSize:], 0)
			}
			seg += mlx5DatagramSize
			sz += mlx5DatagramSize / 16
			if seg == len(buf) {
				seg = 0
			}
		}

		// The data segments, or the inline data segment (its padding to 16
		// bytes is not written, as in libmlx5).
		if flags&SendInline != 0 && nsge > 0 {
			if !inlData && len(sges) == 1 && int(sges[0].Length) <= m.maxInline && seg+4+int(sges[0].Length) <= len(buf) && sges[0].Addr >= 4096 {
				// set_data_inl_seg for one SGE that does not wrap, in line.
				if l := int(sges[0].Length); l != 0 {
					dst := buf[seg : seg+4+l]
					binary.BigEndian.PutUint32(dst, uint32(l)|mlx5InlineSeg)
					if mlx5Mutant == mutantInlineHeader {
						binary.BigEndian.PutUint32(dst, uint32(l))
					}
					if wordCopyOK && l >= 32 && l <= 64 {
						copyInline32To64(dst[4:], sges[0].Addr)
					} else {
						copyInline(dst[4:], sges[0].Addr)
					}
					sz += (l + 4 + 15) / 16
					if mlx5Mutant == mutantInlinePadOne {
						sz -= (l+4+15)/16 - (l+4)/16
					}
				}
			} else {
				sq.curPost, m.fmCache = curPost, nextFence
				return nreq, size, ctrl, stopInlineSeg
			}
		} else {
			d := seg
			for i := range sges {
				s := &sges[i]
				if d == len(buf) {
					d = 0
				}
				if s.Length != 0 || mlx5Mutant == mutantSGEZero {
					ds := (*[mlx5DataSegSize]byte)(buf[d : d+mlx5DataSegSize]) // set_data_ptr_seg
					binary.BigEndian.PutUint32(ds[0:], s.Length)
					binary.BigEndian.PutUint32(ds[4:], s.LKey)
					if mlx5Mutant == mutantLKey {
						binary.BigEndian.PutUint32(ds[4:], 0)
					}
					binary.BigEndian.PutUint64(ds[8:], s.Addr)
					d += mlx5DataSegSize
					sz += mlx5DataSegSize / 16
				}
			}
		}
		curPost = m.finishWQE(w, idx, curPost, op, wr.ID, sz, uint32(nreq))
		locked, size, ctrl = false, sz, c
	}
	sq.curPost, m.fmCache = curPost, nextFence
	return nreq, size, ctrl, 0
}

// finishInlineWQE writes the inline data segment of the WQE writeWQEs
// left at stopInlineSeg, and finishes it; it returns the WQE's size and
// offset, or stopInline if set_data_inl_seg failed.
func (m *mlx5QP) finishInlineWQE(wr *SendWR, nreq uint32) (size, ctrl, stop int) {
	sq := &m.sq
	curPost := sq.curPost
	idx := curPost & (sq.wqeCnt - 1)
	c := int(idx) << mlx5SendWQEShift
	sz := mlx5CtrlSize / 16
	if m.typ == qp.UD {
		sz += mlx5DatagramSize / 16
	} else if mlx5HasRaddr(m.typ, wr.Opcode) {
		sz += mlx5RaddrSize / 16
	}
	seg := c + sz*16
	if seg == len(m.sqBuf) {
		seg = 0 // after a datagram segment that ends the SQ
	}
	n, ok := m.setDataInlSeg(wr, wr.InlineData != nil, seg)
	if !ok {
		return 0, 0, stopInline
	}
	sq.curPost = m.finishWQE((*[mlx5SendWQEBB]byte)(m.sqBuf[c:c+mlx5SendWQEBB]), idx, curPost, wr.Opcode, wr.ID, sz+n, nreq)
	return sz + n, c, 0
}

// mlx5HasRaddr says whether op's WQE on an RC or UC QP has a remote
// address segment (RDMA READ is RC only).
func mlx5HasRaddr(t qp.QPType, op Opcode) bool {
	if mlx5Mutant == mutantWriteImmRaddr && op == OpRDMAWriteWithImm {
		return false
	}
	return op == OpRDMAWrite || op == OpRDMAWriteWithImm || (op == OpRDMARead && t == qp.RC)
}

// finishWQE writes the ctrl segment w's opcode, index, QP number and
// size (sz 16-byte units), records the WR's ID, and returns cur_post
// moved on.
func (m *mlx5QP) finishWQE(w *[mlx5SendWQEBB]byte, idx, curPost uint32, op Opcode, id uint64, sz int, nreq uint32) uint32 {
	binary.BigEndian.PutUint32(w[0:], (curPost&0xffff)<<8|mlx5IBOpcode[op])
	binary.BigEndian.PutUint32(w[4:], uint32(sz)|m.qpn<<8)
	switch mlx5Mutant {
	case mutantOpcode:
		if op == OpSendWithImm {
			binary.BigEndian.PutUint32(w[0:], (curPost&0xffff)<<8|mlx5IBOpcode[OpSend])
		}
	case mutantCtrlIndex:
		binary.BigEndian.PutUint32(w[0:], idx<<8|mlx5IBOpcode[op])
	case mutantCtrlDS:
		binary.BigEndian.PutUint32(w[4:], uint32(sz-1)|m.qpn<<8)
	case mutantCtrlQPN:
		binary.BigEndian.PutUint32(w[4:], uint32(sz))
	}
	m.sq.wrid[idx] = id
	m.sq.wqeHead[idx] = m.sq.head + nreq
	return curPost + uint32(uint(sz*16+mlx5SendWQEBB-1)/mlx5SendWQEBB)
}

// postSendErr is the error of wrs[i], at which postSend stopped.
func (m *mlx5QP) postSendErr(wrs []SendWR, i, stop int) error {
	wr := &wrs[i]
	n := len(wrs)
	switch stop {
	case stopOpcode:
		return m.sendErr(i, n, ErrInvalidArgument, unix.EINVAL, fmt.Sprintf("bad opcode %d", wr.Opcode))
	case stopOverflow:
		return m.sendErr(i, n, ErrQueueFull, unix.ENOMEM, "work queue overflow")
	case stopSGEs:
		nsge := len(wr.SGEs)
		if wr.Flags&SendInline != 0 && wr.InlineData != nil {
			nsge = 1
		}
		return m.sendErr(i, n, ErrInvalidArgument, unix.ENOMEM, fmt.Sprintf("%d SGEs (QP takes %d in this state)", nsge, max(m.sq.stateMaxGS, 0)))
	case stopNoAH:
		return m.sendErr(i, n, ErrInvalidArgument, unix.EINVAL, "UD send without an AH")
	case stopAtomicArg:
		return m.atomicErr(i, n, checkAtomicWR(m.q, wr))
	case stopAtomicCap:
		return m.atomicErr(i, n, errAtomicCap(m.p.x.dev.Name))
	}
	for _, s := range wr.SGEs {
		if s.Length != 0 && s.Addr < 4096 && wr.InlineData == nil {
			return m.sendErr(i, n, ErrInvalidArgument, unix.EFAULT, fmt.Sprintf("inline SGE at address %#x", s.Addr))
		}
	}
	return m.sendErr(i, n, ErrInvalidArgument, unix.ENOMEM, fmt.Sprintf("inline data over %d bytes", m.maxInline))
}

// wordCopyOK: 8-byte loads and stores at any alignment are plain
// instructions on these GOARCHes.
const wordCopyOK = runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64" ||
	runtime.GOARCH == "ppc64le" || runtime.GOARCH == "ppc64" || runtime.GOARCH == "s390x"

// copyInline copies len(dst) bytes from user address src into a WQE,
// in 8-byte words then bytes where wordCopyOK.
// unsafe: src is the caller's registered memory, off the Go heap, reached
// by address; a call to memmove here would make postSend's loop spill.
func copyInline(dst []byte, src uint64) {
	if !wordCopyOK {
		copy(dst, memAt(src, len(dst)))
		return
	}
	d, s := unsafe.Pointer(unsafe.SliceData(dst)), *(*unsafe.Pointer)(unsafe.Pointer(&src))
	n := uintptr(len(dst))
	i := uintptr(0)
	for ; i+8 <= n; i += 8 {
		*(*uint64)(unsafe.Add(d, i)) = *(*uint64)(unsafe.Add(s, i))
	}
	for ; i < n; i++ {
		*(*byte)(unsafe.Add(d, i)) = *(*byte)(unsafe.Add(s, i))
	}
}

// copyInline32To64 is copyInline for 32 to 64 bytes where wordCopyOK:
// four 16-byte moves (one load and one store each), the last two ending
// at the last byte, as memmove's own case for 33 to 64 bytes, without
// its call. The callers test the length, so that both copies inline.
// unsafe: as copyInline.
func copyInline32To64(dst []byte, src uint64) {
	n := len(dst)
	d, s := unsafe.Pointer(unsafe.SliceData(dst)), *(*unsafe.Pointer)(unsafe.Pointer(&src))
	*(*[16]byte)(d) = *(*[16]byte)(s)
	*(*[16]byte)(unsafe.Add(d, 16)) = *(*[16]byte)(unsafe.Add(s, 16))
	*(*[16]byte)(unsafe.Add(d, n-32)) = *(*[16]byte)(unsafe.Add(s, n-32))
	*(*[16]byte)(unsafe.Add(d, n-16)) = *(*[16]byte)(unsafe.Add(s, n-16))
}

// setDataInlSeg is set_data_inl_seg: the SGEs' bytes (or InlineData)
// copied after a 4-byte header, wrapping at the end of the SQ; the
// padding to 16 bytes is not written. It fails (ok false) past
// max_inline_data, and at an SGE below 4096, whose fault would panic
// with the send queue locked.
func (m *mlx5QP) setDataInlSeg(wr *SendWR, inlData bool, seg int) (int, bool) {
	buf := m.sqBuf
	qend := len(buf)
	w := seg + 4
	inl := 0
	nsrc := len(wr.SGEs)
	if inlData {
		nsrc = 1
	}
	for j := 0; j < nsrc; j++ {
		src := wr.InlineData
		if !inlData {
			src = nil
			if l := int(wr.SGEs[j].Length); l != 0 && inl+l <= m.maxInline {
				if wr.SGEs[j].Addr < 4096 {
					return 0, false
				}
				src = memAt(wr.SGEs[j].Addr, l)
			}
			inl += int(wr.SGEs[j].Length)
		} else {
			inl += len(src)
		}
		if inl > m.maxInline {
			return 0, false
		}
		if w+len(src) > qend {
			c := copy(buf[w:qend], src)
			src = src[c:]
			w = 0
		}
		w += copy(buf[w:], src)
	}
	if inl == 0 {
		return 0, true
	}
	putBE32(buf, seg, uint32(inl)|mlx5InlineSeg)
	if mlx5Mutant == mutantInlinePadSeg {
		return (inl + 4) / 16, true
	}
	return (inl + 4 + 15) / 16, true
}

// ringSendUnlock is post_send_db with a lock on the BlueFlame register,
// or in the barrier and bfcopy mutants, spelt out; then the send
// queue's unlock.
// postSend rings the common case itself.
func (m *mlx5QP) ringSendUnlock(nreq uint32, size, ctrl int) {
	defer m.sqMu.Unlock()
	if nreq == 0 {
		return
	}
	sq := &m.sq
	sq.head += nreq
	bf := m.bf
	// unsafe: the BlueFlame register is mmap'd UAR memory.
	reg := unsafe.Add(bf.reg, bf.offset)
	n := 8 // mmio_write64_be of the ctrl segment's first 8 bytes
	if nreq == 1 && bf.uuarn != 0 && size > 1 && uint32(size) <= bf.bufSize/16 {
		n = (size*16 + 63) &^ 63 // mlx5_bf_copy (prefer_bf defaults to 1)
	}
	if mlx5Mutant == mutantBFMulti && nreq > 1 && bf.uuarn != 0 && size > 1 && uint32(size) <= bf.bufSize/16 {
		n = (size*16 + 63) &^ 63
	}
	if mlx5Mutant == mutantBFNone {
		n = 8
	}
	// Descriptors are written before the doorbell record.
	barrier.UDMAToDevice()
	m.db[mlx5SndDBR] = htobe32(sq.curPost & 0xffff)
	if mlx5Mutant == mutantSQDB {
		m.db[mlx5SndDBR] = sq.curPost & 0xffff
	}
	if bf.lock {
		// mmio_wc_spinlock: x86 relies on the lock's serialisation.
		bf.mu.Lock()
		defer bf.mu.Unlock()
		if runtime.GOARCH != "amd64" && runtime.GOARCH != "386" {
			barrier.MMIOFlushWrites()
		}
	} else if mlx5Mutant != mutantBarrier {
		// mmio_wc_start: the record is written before the WC copy.
		barrier.MMIOFlushWrites()
	}
	if n > 8 {
		m.bfCopy(reg, ctrl, n)
	} else {
		*(*uint64)(reg) = *(*uint64)(unsafe.Pointer(&m.sqBuf[ctrl]))
	}
	if mlx5Mutant == mutantBarrier {
		barrier.MMIOFlushWrites() // mutation: mmio_wc_start after the WC copy
	}
	// Flush the WC buffers before toggling the BlueFlame half.
	if mlx5Mutant != mutantBFFlush {
		barrier.MMIOFlushWrites()
	}
	if mlx5Mutant != mutantBFToggle {
		bf.offset ^= bf.bufSize
	}
}

// bfCopy is mlx5_bf_copy: 64 bytes at a time as eight 64-bit stores
// (mmio_memcpy_x64), the source wrapping at the end of the SQ.
// unsafe: dst is the mmap'd BlueFlame register.
func (m *mlx5QP) bfCopy(dst unsafe.Pointer, src, n int) {
	buf := m.sqBuf
	for n > 0 {
		s := unsafe.Pointer(&buf[src])
		for i := uintptr(0); i < 64; i += 8 {
			if mlx5Mutant == mutantBFCopy && i == 56 {
				break
			}
			*(*uint64)(unsafe.Add(dst, i)) = *(*uint64)(unsafe.Add(s, i))
		}
		n -= 64
		dst = unsafe.Add(dst, 64)
		src += 64
		if src == len(buf) {
			src = 0
		}
	}
}

// postRecv is mlx5_post_recv.
func (m *mlx5QP) postRecv(wrs []RecvWR) error {
	m.rqMu.Lock()
	defer m.rqMu.Unlock()
	rq := &m.rq
	ind := rq.head & (rq.wqeCnt - 1)
	var err error
	nreq := 0
	for ; nreq < len(wrs); nreq++ {
		wr := &wrs[nreq]
		if m.overflow(rq, uint32(nreq), m.q.recvCQ) {
			err = m.recvErr(nreq, len(wrs), ErrQueueFull, unix.ENOMEM, "work queue overflow")
			break
		}
		if len(wr.SGEs) > rq.stateMaxGS {
			err = m.recvErr(nreq, len(wrs), ErrInvalidArgument, unix.EINVAL, fmt.Sprintf("%d SGEs (QP takes %d in this state)", len(wr.SGEs), max(rq.stateMaxGS, 0)))
			break
		}
		scat := rq.offset + int(ind)<<rq.wqeShift
		b := m.mem
		j := 0
		for i := range wr.SGEs {
			s := &wr.SGEs[i]
			if s.Length == 0 {
				continue
			}
			d := scat + j*mlx5DataSegSize
			putBE32(b, d, s.Length)
			putBE32(b, d+4, s.LKey)
			putBE64(b, d+8, s.Addr)
			j++
		}
		if j < rq.maxGS {
			d := scat + j*mlx5DataSegSize
			putBE32(b, d, 0)
			putBE32(b, d+4, mlx5InvalidLKey)
			putBE64(b, d+8, 0)
		}
		rq.wrid[ind] = wr.ID
		ind = (ind + 1) & (rq.wqeCnt - 1)
	}
	if nreq > 0 {
		rq.head += uint32(nreq)
		// Descriptors are written before the doorbell record.
		if mlx5Mutant != mutantRQBarrier {
			barrier.UDMAToDevice()
		}
		m.db[mlx5RcvDBR] = htobe32(rq.head & 0xffff)
		if mlx5Mutant == mutantRQDB {
			m.db[mlx5RcvDBR] = rq.head & 0xffff
		}
	}
	return err
}

func (m *mlx5QP) recvErr(i, n int, base error, errno unix.Errno, why string) error {
	return &rdma.OpError{Pkg: "uverbs", Op: fmt.Sprintf("post receive WR %d of %d on QP %#x", i+1, n, m.q.num), Device: m.p.x.dev.Name,
		Err: fmt.Errorf("%w: %s: %w", base, why, errno)}
}

// copyToScat is copy_to_scat: size bytes of src into up to max data
// segments at off of buf. src is bounded to the CQ buffer (libmlx5 reads
// whatever follows the CQE); bytes past it count as missing
// (IBV_WC_LOC_LEN_ERR).
func (m *mlx5QP) copyToScat(buf []byte, off int, src []byte, size, maxSeg int) (rdma.WCStatus, int) {
	if size == 0 {
		return rdma.WCSuccess, 0
	}
	done := 0
	for i := 0; i < maxSeg; i++ {
		if off < 0 || off+mlx5DataSegSize > len(buf) {
			break
		}
		c := min(size, int(be32(buf, off)))
		if be32(buf, off+4) != mlx5InvalidLKey && c > 0 { // dump_fill_mkey default
			if done+c > len(src) {
				return rdma.WCLocLenErr, done
			}
			copy(memAt(binary.BigEndian.Uint64(buf[off+8:]), c), src[done:done+c])
		}
		size -= c
		done += c
		if size == 0 {
			return rdma.WCSuccess, done
		}
		off += mlx5DataSegSize
	}
	return rdma.WCLocLenErr, done
}

// cqeSrc bounds a scatter source at off of the CQ buffer.
func cqeSrc(cqbuf []byte, off int) []byte {
	if off < 0 || off > len(cqbuf) {
		return nil
	}
	return cqbuf[off:]
}

// copyToRecvWQE is mlx5_copy_to_recv_wqe.
func (m *mlx5QP) copyToRecvWQE(idx uint32, cqbuf []byte, off, size int) rdma.WCStatus {
	if m.mem == nil {
		return rdma.WCGeneralErr
	}
	maxSeg := 1 << (m.rq.wqeShift - 4)
	if mlx5Mutant == mutantScatter32 {
		off += 8
	}
	st, _ := m.copyToScat(m.mem, m.rq.offset+int(idx)<<m.rq.wqeShift, cqeSrc(cqbuf, off), size, maxSeg)
	return st
}

// copyToSendWQE is mlx5_copy_to_send_wqe (RDMA READ on RC only).
func (m *mlx5QP) copyToSendWQE(idx uint32, cqbuf []byte, off, size int) rdma.WCStatus {
	if m.sqBuf == nil || m.sq.wqeCnt == 0 {
		return rdma.WCGeneralErr
	}
	idx &= m.sq.wqeCnt - 1
	ctrl := int(idx) << mlx5SendWQEShift
	if m.typ != qp.RC {
		return rdma.WCGeneralErr
	}
	buf := m.sqBuf
	p := ctrl + mlx5CtrlSize
	switch be32(buf, ctrl) & 0xff {
	case mlx5OpcodeRDMARead:
		p += mlx5RaddrSize
	case mlx5OpcodeAtomicCS, mlx5OpcodeAtomicFA:
		p += mlx5RaddrSize + 16
	default:
		return rdma.WCRemInvReqErr
	}
	maxSeg := int(be32(buf, ctrl+4)&0x3f) - (p-ctrl)>>4
	src := cqeSrc(cqbuf, off)
	if mlx5Mutant == mutantScatter32 {
		src = cqeSrc(cqbuf, off+8)
	}
	if p+maxSeg*mlx5DataSegSize > len(buf) {
		tmp := (len(buf) - p) >> 4
		st, done := m.copyToScat(buf, p, src, size, tmp)
		if st == rdma.WCSuccess {
			return rdma.WCSuccess
		}
		maxSeg -= tmp
		size -= done
		if done > len(src) {
			return rdma.WCLocLenErr
		}
		src = src[done:]
		p = 0
	}
	st, _ := m.copyToScat(buf, p, src, size, maxSeg)
	return st
}
