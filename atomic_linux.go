package rdmacm

import (
	"fmt"

	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/uverbs"
)

// RegAtomic allocates and registers size bytes the peer may use as the
// target of atomics, and read and write (local write, remote read,
// write and atomic).
func (ep *Endpoint) RegAtomic(size int) (*MR, error) { return reg(ep.pd, size, atomicAccess) }

// RegAtomic on a Listener: see Listener.RegMsgs. One MR registered here
// is a counter every accepted endpoint's peer can update.
func (l *Listener) RegAtomic(size int) (*MR, error) { return l.reg(size, atomicAccess) }

const atomicAccess = qp.AccessLocalWrite | qp.AccessRemoteRead | qp.AccessRemoteWrite | qp.AccessRemoteAtomic

// PostCompareSwap compares the 8 bytes at the start of dst with compare
// and, if they are equal, stores swap there; the value dst held lands in
// m at off (8 bytes). Whether the swap happened is whether that value
// equals compare.
//
// dst is memory the peer registered with RegAtomic, its address 8-byte
// aligned (else ErrInvalidArgument, before anything is posted); the
// endpoint's QP serves atomics whenever it has responder resources, as
// librdmacm's. Both the target and the result are in the host's byte
// order: binary.NativeEndian.Uint64(m.Bytes()[off:]) reads the result
// once WaitSend returns the completion (Opcode WCCompSwap, ByteLen 8, ID
// off). Atomics are atomic against each other on the target's device,
// from every connection, not against the target host's CPUs
// (uverbs.AtomicHCA); a device without atomics fails the post with
// ErrNotSupported.
func (ep *Endpoint) PostCompareSwap(m *MR, off int, dst RemoteBuf, compare, swap uint64) error {
	return ep.postAtomic(m, off, dst, uverbs.OpAtomicCompareSwap, compare, swap)
}

// PostFetchAdd adds add to the 8 bytes at the start of dst (wrapping at
// 2^64); the value dst held before lands in m at off (8 bytes). The
// completion's Opcode is WCFetchAdd; otherwise as PostCompareSwap.
func (ep *Endpoint) PostFetchAdd(m *MR, off int, dst RemoteBuf, add uint64) error {
	return ep.postAtomic(m, off, dst, uverbs.OpAtomicFetchAdd, add, 0)
}

func (ep *Endpoint) postAtomic(m *MR, off int, dst RemoteBuf, op uverbs.Opcode, compareAdd, swap uint64) error {
	if m == nil {
		return fmt.Errorf("rdmacm: an atomic without memory for its result: %w", ErrInvalidArgument)
	}
	sge, err := m.sge(off, AtomicLen)
	if err != nil {
		return err
	}
	if dst.Len < AtomicLen {
		return fmt.Errorf("rdmacm: atomic on a %d-byte remote buffer (%v), want at least %d: %w", dst.Len, dst, AtomicLen, ErrInvalidArgument)
	}
	if dst.Addr%AtomicLen != 0 {
		return fmt.Errorf("rdmacm: atomic at remote address %#x, not 8-byte aligned: %w", dst.Addr, ErrInvalidArgument)
	}
	wr := uverbs.SendWR{ID: uint64(off), Opcode: op, Flags: uverbs.SendSignaled, SGEs: []uverbs.SGE{sge},
		RemoteAddr: dst.Addr, RKey: dst.RKey, CompareAdd: compareAdd, Swap: swap}
	if err := ep.qp.PostSend([]uverbs.SendWR{wr}); err != nil {
		return err
	}
	ep.p.posted[sendQ].Add(1)
	return nil
}
