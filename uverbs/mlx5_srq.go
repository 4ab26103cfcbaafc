package uverbs

// mlx5 SRQs (libmlx5 verbs.c mlx5_create_srq, srq.c): the buffer of
// WQEs linked into a free list through their next segments, the doorbell
// record that carries the count of WQEs posted, receive completions that
// name the SRQ (through the QP's user index, or the SRQ number with
// cqe_version 0), and the WQE each completion frees back to the list's
// tail. unsafe: the doorbell record is memory the device reads, reached
// by pointer as in mlx5_qp.go.

import (
	"encoding/binary"
	"fmt"
	"sync"
	"unsafe"

	"github.com/go-rdma/rdmacm/internal/abi"
	"github.com/go-rdma/rdmacm/internal/barrier"
	"github.com/go-rdma/rdmacm/internal/unix"
	"github.com/go-rdma/rdmacm/rdma"
)

// mlx5SRQNextSeg is sizeof(struct mlx5_wqe_srq_next_seg): 2 reserved
// bytes, next_wqe_index (big-endian), signature and 11 reserved bytes,
// then the data segments.
const mlx5SRQNextSeg = 16

// mlx5SRQ is struct mlx5_srq for a basic SRQ.
type mlx5SRQ struct {
	p    *mlx5Provider
	s    *SRQ
	mu   barrier.SpinLock // srq->lock: post, and the frees of poll
	mem  []byte
	db   *[2]uint32 // db[0] is the record: be32(counter)
	wrid []uint64
	srqn uint32
	// max is the WQE count (a power of two) and tail the last WQE of the
	// free list the application sees; the wait queue, when the device
	// can hold one, links the WQEs after it (mlx5_alloc_srq_buf).
	max                  int
	maxGS                int
	wqeShift             uint
	head, tail           int
	waitqHead, waitqTail int
	counter              uint16
	inTable              bool
}

// mlx5SRQTable finds SRQs by number (mlx5_find_srq), for CQEs that name
// the SRQ (cqe_version 0).
type mlx5SRQTable struct {
	mu sync.RWMutex
	m  map[uint32]*mlx5SRQ
}

func (t *mlx5SRQTable) store(n uint32, s *mlx5SRQ) {
	t.mu.Lock()
	if t.m == nil {
		t.m = map[uint32]*mlx5SRQ{}
	}
	t.m[n] = s
	t.mu.Unlock()
}

func (t *mlx5SRQTable) find(n uint32) *mlx5SRQ {
	t.mu.RLock()
	s := t.m[n]
	t.mu.RUnlock()
	return s
}

func (t *mlx5SRQTable) clear(n uint32) {
	t.mu.Lock()
	delete(t.m, n)
	t.mu.Unlock()
}

// wqe is get_wqe: the offset of WQE n.
func (m *mlx5SRQ) wqe(n int) int { return n << m.wqeShift }

// setLinks is set_srq_buf_ll: WQEs start..end-1 each point at the next.
func (m *mlx5SRQ) setLinks(start, end int) {
	for i := start; i < end; i++ {
		be16put(m.mem[m.wqe(i)+2:], uint16(i+1))
	}
}

func be16put(b []byte, v uint16) { b[0], b[1] = byte(v>>8), byte(v) }

// srqData is mlx5_create_srq up to the command: the limits, the buffer
// with its free list (mlx5_alloc_srq_buf), the doorbell record and the
// driver data. The command asks for every WQE of the buffer (the wait
// queue's too, max - 1); Cap reports the free list's (tail).
func (p *mlx5Provider) srqData(s *SRQ, init *SRQInit) (in, out []byte, err error) {
	dev := p.x.dev.Name
	inval := func(why string, a ...any) error {
		return &rdma.OpError{Pkg: "uverbs", Op: "create SRQ", Device: dev, Err: fmt.Errorf("%w: %s: %w", ErrInvalidArgument, fmt.Sprintf(why, a...), unix.EINVAL)}
	}
	maxSRQWR := int(p.resp.MaxSRQRecvWR)
	if init.MaxWR > maxSRQWR {
		return nil, nil, inval("%d WRs (max_srq_recv_wr %d)", init.MaxWR, maxSRQWR)
	}
	if init.MaxSGE > p.maxRQDescSz/mlx5DataSegSize {
		return nil, nil, inval("%d SGEs (max_rq_desc_sz %d)", init.MaxSGE, p.maxRQDescSz)
	}
	m := &mlx5SRQ{p: p, s: s, maxGS: init.MaxSGE}
	orig := init.MaxWR
	maxWR := orig*2 + 1
	haveWQ := true
	if maxWR > maxSRQWR { // no room for a wait queue
		maxWR, haveWQ = orig+1, false
	}
	size := roundupPow2(max(32, mlx5SRQNextSeg+m.maxGS*mlx5DataSegSize))
	if size > int(p.maxRecvWR) { // as libmlx5 compares it
		return nil, nil, inval("receive WQE of %d bytes (max_recv_wr %d)", size, p.maxRecvWR)
	}
	m.maxGS = (size - mlx5SRQNextSeg) / mlx5DataSegSize
	m.wqeShift = ilog32(uint32(size - 1))
	m.max = roundupPow2(maxWR)
	if m.mem, err = mmapAnon(m.max * size); err != nil {
		return nil, nil, opErr("create SRQ buffer", dev, err)
	}
	m.head = 0
	m.tail = roundupPow2(orig+1) - 1
	m.waitqHead, m.waitqTail = -1, -1
	if haveWQ {
		m.waitqHead, m.waitqTail = m.tail+1, m.max-1
	}
	m.wrid = make([]uint64, m.max)
	m.setLinks(m.head, m.tail)
	if haveWQ {
		m.setLinks(m.waitqHead, m.waitqTail)
	}
	if m.db, err = p.allocDB(); err != nil {
		m.free()
		return nil, nil, opErr("create SRQ doorbell record", dev, err)
	}
	m.db[0] = 0
	cmd := abi.MLX5CreateSRQ{BufAddr: addrOf(m.mem), DBAddr: uint64(uintptr(unsafe.Pointer(m.db)))} // no MLX5_SRQ_SIGNATURE
	init.MaxSGE = m.maxGS
	init.MaxWR = m.max - 1
	s.drv = m
	return append([]byte(nil), abi.Bytes(&cmd)...), make([]byte, unsafe.Sizeof(abi.MLX5CreateSRQResp{})), nil
}

func (p *mlx5Provider) srqAbort(s *SRQ) {
	if m, ok := s.drv.(*mlx5SRQ); ok {
		m.free()
	}
	s.drv = nil
}

func (p *mlx5Provider) newSRQ(s *SRQ, out []byte) (srqOps, error) {
	m := s.drv.(*mlx5SRQ) // from srqData
	m.srqn = abi.Decode[abi.MLX5CreateSRQResp](out).SRQN
	s.num = m.srqn
	s.cap.MaxWR, s.cap.MaxSGE = m.tail, m.maxGS
	p.srqs.store(m.srqn, m)
	m.inTable = true
	return m, nil
}

// MODIFY_SRQ carries no mlx5 driver data.
func (p *mlx5Provider) modifySRQData(*SRQ) []byte { return nil }

// free releases what srqData allocated (the end of mlx5_destroy_srq).
func (m *mlx5SRQ) free() {
	if m.inTable {
		m.p.srqs.clear(m.srqn)
		m.inTable = false
	}
	if m.db != nil {
		m.p.freeDB(m.db)
		m.db = nil
	}
	if m.mem != nil {
		unix.Munmap(m.mem)
		m.mem = nil
	}
}

func (m *mlx5SRQ) close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.free()
	return nil
}

// postRecv is mlx5_post_srq_recv: each WR takes the WQE at the head of
// the free list; the doorbell record then carries the count of WQEs
// posted (16 bits, big-endian).
func (m *mlx5SRQ) postRecv(wrs []RecvWR) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mem == nil {
		return opError(fmt.Sprintf("post receive on SRQ %#x", m.srqn), m.p.x.dev.Name, ErrClosed)
	}
	var err error
	nreq := 0
	for ; nreq < len(wrs); nreq++ {
		wr := &wrs[nreq]
		if len(wr.SGEs) > m.maxGS {
			err = m.recvErr(nreq, len(wrs), ErrInvalidArgument, unix.EINVAL, fmt.Sprintf("%d SGEs (the SRQ takes %d)", len(wr.SGEs), m.maxGS))
			break
		}
		if m.head == m.tail {
			err = m.recvErr(nreq, len(wrs), ErrQueueFull, unix.ENOMEM, "SRQ full")
			break
		}
		m.wrid[m.head] = wr.ID
		next := m.wqe(m.head)
		m.head = int(be16(m.mem, next+2))
		scat := next + mlx5SRQNextSeg
		b := m.mem
		i := 0
		for ; i < len(wr.SGEs); i++ {
			s := &wr.SGEs[i]
			d := scat + i*mlx5DataSegSize
			putBE32(b, d, s.Length)
			putBE32(b, d+4, s.LKey)
			putBE64(b, d+8, s.Addr)
		}
		if i < m.maxGS && mlx5Mutant != mutantSRQTerm {
			d := scat + i*mlx5DataSegSize
			putBE32(b, d, 0)
			putBE32(b, d+4, mlx5InvalidLKey)
			putBE64(b, d+8, 0)
		}
	}
	if nreq > 0 {
		m.counter += uint16(nreq)
		if mlx5Mutant == mutantSRQDB {
			m.counter -= uint16(nreq - 1)
		}
		// Descriptors are written before the doorbell record.
		barrier.UDMAToDevice()
		m.db[0] = htobe32(uint32(m.counter))
	}
	return err
}

func (m *mlx5SRQ) recvErr(i, n int, base error, errno unix.Errno, why string) error {
	return &rdma.OpError{Pkg: "uverbs", Op: fmt.Sprintf("post receive WR %d of %d on SRQ %#x", i+1, n, m.srqn), Device: m.p.x.dev.Name,
		Err: fmt.Errorf("%w: %s: %w", base, why, errno)}
}

// freeWQE is mlx5_free_srq_wqe: a completed WQE goes back to the tail of
// the free list.
func (m *mlx5SRQ) freeWQE(ind int) {
	m.mu.Lock()
	if m.mem != nil && ind < m.max && mlx5Mutant != mutantSRQFree {
		be16put(m.mem[m.wqe(m.tail)+2:], uint16(ind))
		m.tail = ind
	}
	m.mu.Unlock()
}

// mlx5SRQOf is the mlx5 SRQ a QP was created on, or nil.
func mlx5SRQOf(q *QP) *mlx5SRQ {
	if q == nil || q.srq == nil {
		return nil
	}
	m, _ := q.srq.ops.(*mlx5SRQ)
	return m
}

// respSRQ is get_cur_rsc for a receive CQE: the QP (cqe_version 1, by
// user index; 0, by QP number) or, when the receive came from an SRQ,
// the SRQ (through the QP, or by the SRQ number the CQE carries with
// cqe_version 0). ok is false when neither is known (CQ_POLL_ERR).
func (c *mlx5CQ) respCtx(e []byte) (q *mlx5QP, s *mlx5SRQ, ok bool) {
	if c.p.cqeVersion != 0 {
		q = c.p.uidx.find(be32(e, cqeSRQNUIdx) & 0xffffff)
		if q == nil {
			return nil, nil, false
		}
		if q.q != nil && q.q.srq != nil {
			s = mlx5SRQOf(q.q)
			return q, s, s != nil
		}
		return q, nil, true
	}
	if n := be32(e, cqeSRQNUIdx) & 0xffffff; n != 0 {
		s = c.p.srqs.find(n)
		return nil, s, s != nil
	}
	q = c.p.qpns.find(be32(e, cqeSopDropQPN) & 0xffffff)
	return q, nil, q != nil
}

// srqResponder is handle_responder for a receive from an SRQ: the WQE
// the CQE's counter names, freed back to the list, then scatter-to-CQE
// into its buffers (mlx5_copy_to_recv_srq).
func (c *mlx5CQ) srqResponder(w *WC, e []byte, s *mlx5SRQ) rdma.WCStatus {
	w.ByteLen = be32(e, cqeByteCnt)
	ctr := int(be16(e, cqeWQECounter))
	if ctr >= len(s.wrid) {
		return rdma.WCGeneralErr
	}
	w.ID = s.wrid[ctr]
	s.freeWQE(ctr)
	var st rdma.WCStatus
	if e[cqeOpOwn]&mlx5InlineScatter32 != 0 {
		st = s.copyToRecv(ctr, c.buf, c.cqeOff(e), int(w.ByteLen))
	} else if e[cqeOpOwn]&mlx5InlineScatter64 != 0 {
		st = s.copyToRecv(ctr, c.buf, c.cqeOff(e)-mlx5CQESize, int(w.ByteLen))
	}
	if st != rdma.WCSuccess {
		return st
	}
	mlx5RespFields(w, e)
	return rdma.WCSuccess
}

// copyToRecv is mlx5_copy_to_recv_srq: size bytes of the CQE into the
// WQE's data segments, over 1 << (wqe_shift - 4) segments (libmlx5's
// bound, which counts the next segment's slot too, so a payload the
// segments do not hold reads one past the WQE). Where libmlx5 would copy
// through a NULL address or past the CQ buffer (a CQE longer than the
// WQE, which the HCA reports as an error instead), this answers
// IBV_WC_LOC_LEN_ERR.
func (s *mlx5SRQ) copyToRecv(idx int, cqbuf []byte, off, size int) rdma.WCStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mem == nil {
		return rdma.WCGeneralErr
	}
	src := cqeSrc(cqbuf, off)
	seg := s.wqe(idx) + mlx5SRQNextSeg
	done := 0
	for i := 0; i < 1<<(s.wqeShift-4); i++ {
		if seg+mlx5DataSegSize > len(s.mem) {
			break
		}
		c := min(size, int(be32(s.mem, seg)))
		if c > 0 {
			addr := binary.BigEndian.Uint64(s.mem[seg+8:])
			if addr == 0 || done+c > len(src) {
				return rdma.WCLocLenErr
			}
			copy(memAt(addr, c), src[done:done+c])
		}
		size -= c
		done += c
		if size <= 0 {
			return rdma.WCSuccess
		}
		seg += mlx5DataSegSize
	}
	return rdma.WCLocLenErr
}
