package uverbs

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/go-rdma/rdmacm/internal/abi"
	"github.com/go-rdma/rdmacm/internal/kcall"
	"github.com/go-rdma/rdmacm/internal/unix"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
)

// PD is a protection domain.
type PD struct {
	ctx    *Context
	handle uint32
	once   sync.Once
	err    error
}

// AllocPD allocates a protection domain (ALLOC_PD).
func (x *Context) AllocPD() (*PD, error) {
	if err := x.lockOpen("allocate PD"); err != nil {
		return nil, err
	}
	defer x.mu.Unlock()
	var req abi.UverbsGetContext
	var resp abi.UverbsAllocPDResp
	if err := x.exec(&cmd{num: abi.UverbsCmdAllocPD, in: abi.Bytes(&req), respPtr: true, out: abi.Bytes(&resp), drvOut: x.prov.pdData()}); err != nil {
		return nil, opErr("allocate PD", x.dev.Name, err)
	}
	pd := &PD{ctx: x, handle: resp.PDHandle}
	x.pds[pd] = struct{}{}
	return pd, nil
}

// Context is the device context the PD belongs to.
func (pd *PD) Context() *Context { return pd.ctx }

// Close deallocates the PD (PD/DESTROY, or DEALLOC_PD). The kernel refuses
// (EBUSY) while QPs, MRs or AHs still use it.
func (pd *PD) Close() error {
	pd.once.Do(func() {
		x := pd.ctx
		err := x.destroy(abi.UverbsObjectPD, abi.UverbsMethodPDDestroy, abi.UverbsAttrDestroyPDHandle, pd.handle, nil, func() error {
			req := abi.UverbsDeallocPD{PDHandle: pd.handle}
			return x.exec(&cmd{num: abi.UverbsCmdDeallocPD, in: abi.Bytes(&req)})
		})
		pd.err = opErr("deallocate PD", x.dev.Name, err)
		x.mu.Lock()
		delete(x.pds, pd)
		x.mu.Unlock()
	})
	return pd.err
}

// destroy runs an object's DESTROY method (with an optional response
// buffer), falling back to the write command when the kernel lacks it.
func (x *Context) destroy(obj, method, attr uint16, handle uint32, resp []byte, fallback func() error) error {
	var err error = unix.ENOTTY
	if x.nativeIoctl {
		call := kcall.NewIoctl(obj, method, x.driverID)
		call.IDR(attr, handle)
		if resp != nil {
			call.Out(1, resp) // every *_DESTROY_*_RESP attribute is id 1
		}
		err = x.do(call)
	}
	if noMethod(err) {
		err = fallback()
	}
	return err
}

// Buffer is memory for registration, allocated with mmap outside the Go
// heap: page-aligned, never moved, never collected. Close unmaps it.
type Buffer struct {
	mem  []byte
	at   bool // mapped by AllocBufferAt, outside x/sys/unix's mmap table
	user bool // the caller's mapping (UserBuffer): Close leaves it mapped
	regs atomic.Int32
	mu   sync.Mutex
}

// AllocBuffer maps size bytes (rounded up to whole pages) of zeroed
// anonymous memory, excluded from fork (MADV_DONTFORK) as registered
// memory must be.
func AllocBuffer(size int) (*Buffer, error) {
	if !unix.IsLinux {
		return nil, notOnThisOS("alloc buffer")
	}
	if size <= 0 {
		return nil, fmt.Errorf("uverbs: %w: buffer size %d", ErrInvalidArgument, size)
	}
	page := kcall.PageSize()
	n := (size + page - 1) / page * page
	mem, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, &rdma.OpError{Pkg: "uverbs", Op: fmt.Sprintf("mmap %d bytes", n), Err: err}
	}
	_ = unix.Madvise(mem, unix.MADV_DONTFORK)
	return &Buffer{mem: mem[:size:n]}, nil
}

// Bytes is the buffer's memory; valid until Close.
func (b *Buffer) Bytes() []byte { return b.mem }

// Len is the usable length.
func (b *Buffer) Len() int { return len(b.mem) }

// Addr is the virtual address of the first byte.
func (b *Buffer) Addr() uint64 { return abi.SlicePtr(b.mem) }

// Close unmaps the buffer. It fails while an MR still registers it.
func (b *Buffer) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.mem == nil {
		return nil
	}
	if b.regs.Load() > 0 {
		return fmt.Errorf("uverbs: %w: buffer still registered by %d MR(s)", ErrInvalidArgument, b.regs.Load())
	}
	var err error
	if b.user {
		// The caller's: it unmaps it.
	} else if b.at {
		err = kcall.Munmap(b.mem[:cap(b.mem)])
	} else {
		err = unix.Munmap(b.mem[:cap(b.mem)])
	}
	b.mem = nil
	return err
}

// MR is a registered memory region.
type MR struct {
	pd     *PD
	buf    *Buffer
	handle uint32
	LKey   uint32
	RKey   uint32
	// Addr is the I/O virtual address that SGEs and the peer's RDMA name
	// the region by: its first byte's address, unless registered at
	// another IOVA (RegMRIOVA, RegDmabufMR).
	Addr   uint64
	Length uint64
	Access qp.Access
	once   sync.Once
	err    error
}

// RegMR registers all of buf with the given access flags (REG_MR; the
// I/O virtual address is the buffer's address). Remote write and atomic
// access need LocalWrite as well (IBTA vol. 1 §10.6.3.1).
func (pd *PD) RegMR(buf *Buffer, access qp.Access) (*MR, error) {
	return pd.RegMRRange(buf, 0, buf.Len(), access)
}

// RegMRRange registers length bytes of buf from offset.
func (pd *PD) RegMRRange(buf *Buffer, offset, length int, access qp.Access) (*MR, error) {
	return pd.regMR(buf, offset, length, 0, false, access)
}

// isPinErrno reports the errnos of a registration whose pages could not
// be pinned: ib_umem_get answers ENOMEM when the process's pinned pages
// would exceed RLIMIT_MEMLOCK (without CAP_IPC_LOCK), EPERM when that
// limit is 0 (older kernels' can_do_mlock check), and pinning itself may
// answer EAGAIN.
func isPinErrno(err error) bool {
	return errors.Is(err, unix.ENOMEM) || errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EPERM)
}

// regMRError is the error of a refused REG_MR of length bytes. When the
// pages could not be pinned and RLIMIT_MEMLOCK (memlock, in bytes; known
// false if it could not be read) is finite, it says what to raise. The
// errno stays reachable (errors.Is), and EPERM still matches
// ErrPermission.
func regMRError(dev string, length uint64, err error, memlock uint64, known bool) error {
	if !isPinErrno(err) || !known {
		return opErr("register MR", dev, err)
	}
	if memlock == unix.RLIM_INFINITY {
		// Not the limit: the memory itself could not be pinned.
		return &rdma.OpError{Pkg: "uverbs", Op: "register MR", Device: dev,
			Err: fmt.Errorf("%d bytes: cannot pin memory (RLIMIT_MEMLOCK is unlimited): %w", length, err)}
	}
	return &rdma.OpError{Pkg: "uverbs", Op: "register MR", Device: dev, Err: fmt.Errorf(
		"%d bytes: cannot pin memory: RLIMIT_MEMLOCK is %d bytes (ulimit -l shows %d) and counts every page this process has pinned; "+
			"raise it (ulimit -l unlimited, LimitMEMLOCK=infinity in a systemd unit, memlock in /etc/security/limits.conf, "+
			"or docker run --ulimit memlock=-1): %w",
		length, memlock, memlock/1024, err)}
}

func bufLen(b *Buffer) int {
	if b == nil {
		return 0
	}
	return b.Len()
}

// SGE returns a scatter/gather entry for length bytes at offset in the MR.
func (mr *MR) SGE(offset, length int) SGE {
	return SGE{Addr: mr.Addr + uint64(offset), Length: uint32(length), LKey: mr.LKey}
}

// Close deregisters the MR (MR/DESTROY, or DEREG_MR).
func (mr *MR) Close() error {
	mr.once.Do(func() {
		x := mr.pd.ctx
		err := x.destroy(abi.UverbsObjectMR, abi.UverbsMethodMRDestroy, abi.UverbsAttrDestroyMRHandle, mr.handle, nil, func() error {
			req := abi.UverbsDeregMR{MRHandle: mr.handle}
			return x.exec(&cmd{num: abi.UverbsCmdDeregMR, in: abi.Bytes(&req)})
		})
		mr.err = opErr("deregister MR", x.dev.Name, err)
		if err == nil && mr.buf != nil {
			mr.buf.regs.Add(-1)
		}
		x.mu.Lock()
		delete(x.mrs, mr)
		x.mu.Unlock()
	})
	return mr.err
}

// AH is an address handle for UD sends.
type AH struct {
	pd     *PD
	handle uint32
	// num is the provider's index for the AH in send WQEs (rxe ah_num).
	num  uint32
	Attr qp.AH
	once sync.Once
	err  error
}

// CreateAH creates an address handle (CREATE_AH). On RoCE the kernel
// resolves the destination MAC; Attr.IsGlobal must be set.
func (pd *PD) CreateAH(attr qp.AH) (*AH, error) {
	x := pd.ctx
	if err := x.lockOpen("create AH"); err != nil {
		return nil, err
	}
	defer x.mu.Unlock()
	req := abi.UverbsCreateAH{UserHandle: x.handle(), PDHandle: pd.handle, Attr: ahAttr(attr)}
	var resp abi.UverbsCreateAHResp
	drvOut, err := x.prov.ahData(attr)
	if err != nil {
		return nil, opErr("create AH", x.dev.Name, err)
	}
	if err := x.exec(&cmd{num: abi.UverbsCmdCreateAH, in: abi.Bytes(&req), respPtr: true, out: abi.Bytes(&resp), drvOut: drvOut}); err != nil {
		return nil, opErr("create AH", x.dev.Name, err)
	}
	ah := &AH{pd: pd, handle: resp.AHHandle, Attr: attr}
	x.prov.ahCreated(ah, drvOut)
	x.ahs[ah] = struct{}{}
	return ah, nil
}

func ahAttr(a qp.AH) abi.UverbsAHAttr {
	out := abi.UverbsAHAttr{
		DLID: a.DLID, SL: a.SL, SrcPathBits: a.SrcPathBits, StaticRate: a.StaticRate, PortNum: a.PortNum,
		GRH: abi.UverbsGlobalRoute{DGID: a.GRH.DGID, FlowLabel: a.GRH.FlowLabel, SGIDIndex: a.GRH.SGIDIndex, HopLimit: a.GRH.HopLimit, TrafficClass: a.GRH.TrafficClass},
	}
	if a.IsGlobal {
		out.IsGlobal = 1
	}
	return out
}

// Close destroys the AH (AH/DESTROY, or DESTROY_AH).
func (ah *AH) Close() error {
	ah.once.Do(func() {
		x := ah.pd.ctx
		err := x.destroy(abi.UverbsObjectAH, abi.UverbsMethodAHDestroy, abi.UverbsAttrDestroyAHHandle, ah.handle, nil, func() error {
			req := abi.UverbsDestroyAH{AHHandle: ah.handle}
			return x.exec(&cmd{num: abi.UverbsCmdDestroyAH, in: abi.Bytes(&req)})
		})
		ah.err = opErr("destroy AH", x.dev.Name, err)
		x.mu.Lock()
		delete(x.ahs, ah)
		x.mu.Unlock()
	})
	return ah.err
}
