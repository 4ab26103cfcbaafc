package uverbs

import (
	"fmt"
	"strconv"

	"github.com/go-rdma/rdmacm/internal/unix"
	"github.com/go-rdma/rdmacm/qp"
)

// AtomicCap is the device's atomic capability (enum ibv_atomic_cap), in
// DeviceAttr.AtomicCap.
//
// An RC QP posts OpAtomicCompareSwap or OpAtomicFetchAdd with
// RemoteAddr and RKey naming 8 bytes of the peer's memory, registered
// with qp.AccessRemoteAtomic on a QP whose access flags allow remote
// atomics, and one SGE of exactly 8 bytes that receives the value the
// remote memory held before the operation. Fetch-and-add adds
// CompareAdd; compare-and-swap stores Swap if the memory equals
// CompareAdd. Both the remote operand and the returned value are in the
// host's byte order (the kernel reports ATOMIC_HCA for mlx5 only when
// the HCA answers in host order; rxe converts). The send completion is
// WCCompSwap or WCFetchAdd with ByteLen 8.
//
// PostSend refuses an atomic before it reaches the queue, with an error
// matching ErrNotSupported and unix.EOPNOTSUPP on a device whose
// AtomicCap is AtomicNone (libmlx5's check), or ErrInvalidArgument and
// unix.EINVAL: on a QP other than RC, a QP whose max_rd_atomic is 0
// (it could never issue one), a remote address not 8-byte aligned, or
// anything but one 8-byte, non-inline SGE.
type AtomicCap uint32

// Atomic capabilities.
const (
	// AtomicNone: the device has no atomic operations.
	AtomicNone AtomicCap = 0
	// AtomicHCA: atomics are atomic among the operations of this HCA
	// only, not against the host CPU's own atomics on the same memory.
	AtomicHCA AtomicCap = 1
	// AtomicGlob: atomics are atomic against the CPUs too.
	AtomicGlob AtomicCap = 2
)

func (c AtomicCap) String() string {
	switch c {
	case AtomicNone:
		return "ATOMIC_NONE"
	case AtomicHCA:
		return "ATOMIC_HCA"
	case AtomicGlob:
		return "ATOMIC_GLOB"
	}
	return "AtomicCap(" + strconv.Itoa(int(c)) + ")"
}

// checkAtomicWR is what every provider checks of an atomic WR beyond the
// device's capability: an RC QP that may issue atomics, an aligned remote
// address and one 8-byte SGE for the result. It returns nil or an error
// matching ErrInvalidArgument and unix.EINVAL.
func checkAtomicWR(q *QP, wr *SendWR) error {
	switch {
	case q.typ != qp.RC:
		return fmt.Errorf("%w: atomic on a %v QP (RC only): %w", ErrInvalidArgument, q.typ, unix.EINVAL)
	case q.maxRdAtomic.Load() == 0:
		return fmt.Errorf("%w: atomic on a QP whose max_rd_atomic is 0 (its initiator depth allows no outstanding atomic): %w", ErrInvalidArgument, unix.EINVAL)
	case wr.RemoteAddr&7 != 0:
		return fmt.Errorf("%w: atomic at remote address %#x, not 8-byte aligned: %w", ErrInvalidArgument, wr.RemoteAddr, unix.EINVAL)
	case wr.Flags&SendInline != 0:
		return fmt.Errorf("%w: atomic cannot be inline: %w", ErrInvalidArgument, unix.EINVAL)
	case len(wr.SGEs) != 1 || wr.SGEs[0].Length != 8:
		n := -1
		if len(wr.SGEs) == 1 {
			n = int(wr.SGEs[0].Length)
		}
		if n >= 0 {
			return fmt.Errorf("%w: atomic result SGE of %d bytes, want 8: %w", ErrInvalidArgument, n, unix.EINVAL)
		}
		return fmt.Errorf("%w: atomic with %d SGEs, want one 8-byte SGE for the result: %w", ErrInvalidArgument, len(wr.SGEs), unix.EINVAL)
	}
	return nil
}

// errAtomicCap is the error for an atomic on a device without atomics.
func errAtomicCap(dev string) error {
	return fmt.Errorf("%w: device %s has no atomic operations (atomic_cap ATOMIC_NONE): %w", ErrNotSupported, dev, unix.EOPNOTSUPP)
}
