package uverbs

import (
	"encoding/binary"
	"fmt"

	"github.com/go-rdma/rdmacm/rdma"
)

// atomicWQE is _mlx5_post_send's loop body for one atomic WR, wrs[nreq],
// out of writeWQEs' loop (whose one opcode test sends it here, so that
// the other opcodes pay nothing for atomics): the opcode's range, the
// checks of checkAtomicWR, then libmlx5's in its order (overflow, SGE
// count), the ctrl segment's second half, atomics_enabled, the remote
// address and atomic segments (set_raddr_seg, set_atomic_seg) and the
// data segment. It returns the WQE's size (16-byte units) and offset, or
// why it refused the WR.
func (m *mlx5QP) atomicWQE(wr *SendWR, nreq uint32) (size, ctrl, stop int) {
	sq := &m.sq
	op := wr.Opcode
	if uint(op) >= uint(len(mlx5IBOpcode)) {
		return 0, 0, stopOpcode
	}
	if checkAtomicWR(m.q, wr) != nil {
		return 0, 0, stopAtomicArg // before libmlx5's checks: nothing is written
	}
	if m.overflow(sq, nreq, m.q.sendCQ) {
		return 0, 0, stopOverflow
	}
	if len(wr.SGEs) > sq.stateMaxGS {
		return 0, 0, stopSGEs
	}
	fm := m.signalBits | m.fmCache
	if wr.Flags&SendFence != 0 && mlx5Mutant != mutantFence {
		fm = m.signalBits | mlx5WQECtrlFence
		if mlx5Mutant == mutantFenceSigAll {
			fm = mlx5WQECtrlFence // mutation: sig_all lost
		}
	}
	m.fmCache = 0 // next_fence, consumed
	if wr.Flags&SendSignaled != 0 && mlx5Mutant != mutantSignaled {
		fm |= mlx5WQECtrlCQUpdate
	}
	if wr.Flags&SendSolicited != 0 {
		fm |= mlx5WQECtrlSolicited
	}
	curPost := sq.curPost
	idx := curPost & (sq.wqeCnt - 1)
	c := int(idx) << mlx5SendWQEShift
	w := (*[mlx5SendWQEBB]byte)(m.sqBuf[c : c+mlx5SendWQEBB])
	binary.BigEndian.PutUint32(w[8:], uint32(fm)) // signature, rsvd = 0; fm_ce_se
	binary.BigEndian.PutUint32(w[12:], 0)         // no immediate
	if !m.atomics {
		return 0, 0, stopAtomicCap // after the ctrl segment's second half, as libmlx5
	}
	binary.BigEndian.PutUint64(w[16:], wr.RemoteAddr) // set_raddr_seg
	binary.BigEndian.PutUint32(w[24:], wr.RKey)
	binary.BigEndian.PutUint32(w[28:], 0)
	if mlx5Mutant == mutantAtomicRKey {
		binary.BigEndian.PutUint32(w[24:], 0)
	}
	// set_atomic_seg: swap_add, then compare for compare-and-swap only (a
	// fetch-and-add leaves the slot's old bytes there, as libmlx5).
	if op == OpAtomicCompareSwap {
		binary.BigEndian.PutUint64(w[32:], wr.Swap)
		binary.BigEndian.PutUint64(w[40:], wr.CompareAdd)
		if mlx5Mutant == mutantAtomicOrder {
			binary.BigEndian.PutUint64(w[32:], wr.CompareAdd)
			binary.BigEndian.PutUint64(w[40:], wr.Swap)
		}
	} else {
		binary.BigEndian.PutUint64(w[32:], wr.CompareAdd)
		if mlx5Mutant == mutantAtomicFA {
			binary.BigEndian.PutUint64(w[40:], 0)
		}
	}
	s := &wr.SGEs[0] // set_data_ptr_seg (checkAtomicWR: one SGE of 8 bytes)
	binary.BigEndian.PutUint32(w[48:], s.Length)
	binary.BigEndian.PutUint32(w[52:], s.LKey)
	if mlx5Mutant == mutantLKey {
		binary.BigEndian.PutUint32(w[52:], 0)
	}
	binary.BigEndian.PutUint64(w[56:], s.Addr)
	sz := (mlx5CtrlSize + mlx5RaddrSize + mlx5AtomicSize + mlx5DataSegSize) / 16
	sq.curPost = m.finishWQE(w, idx, curPost, op, wr.ID, sz, nreq)
	return sz, c, 0
}

// atomicErr is the error of an atomic WR (wrs[i] of n) that atomicWQE
// refused: err from checkAtomicWR or errAtomicCap, which carries its own
// sentinel and errno.
func (m *mlx5QP) atomicErr(i, n int, err error) error {
	return &rdma.OpError{Pkg: "uverbs", Op: fmt.Sprintf("post send WR %d of %d on QP %#x", i+1, n, m.q.num), Device: m.p.x.dev.Name, Err: err}
}
