package uverbs

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/go-rdma/rdmacm/internal/abi"
	"github.com/go-rdma/rdmacm/internal/kcall"
	"github.com/go-rdma/rdmacm/internal/unix"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
)

// UserBuffer wraps memory the caller mapped (a file or memfd mapping, a
// MAP_HUGETLB or MAP_SHARED region, a hugetlbfs file) as a Buffer, so
// that RegMR, RegMRRange and RegMRIOVA register it. mem must start on a
// page boundary. The caller keeps the mapping until every MR over it is
// closed, and unmaps it itself: the Buffer's Close only forgets it (and
// fails while an MR still registers it).
//
// Go-heap memory (make, new, a Go array) is refused with an error
// matching ErrInvalidArgument: the garbage collector may move or free it
// while the NIC still reads and writes those pages. The check reads
// /proc/self/maps and is sound because the Go runtime maps its heap only
// with MAP_PRIVATE|MAP_ANONYMOUS: a shared or file-backed (memfd,
// hugetlb, tmpfs) mapping is never the runtime's. A private anonymous
// mapping is accepted only when the runtime names its own mappings
// ("[anon: Go: heap]", Go 1.25+ on kernels with CONFIG_ANON_VMA_NAME,
// unless GODEBUG=decoratemappings=0), so that an unnamed one is known to
// be the caller's; elsewhere such memory is refused (use AllocBuffer,
// which makes it, or a memfd).
func UserBuffer(mem []byte) (*Buffer, error) {
	if !unix.IsLinux {
		return nil, notOnThisOS("register caller memory")
	}
	page := uint64(kcall.PageSize())
	if len(mem) == 0 {
		return nil, fmt.Errorf("uverbs: %w: caller memory of 0 bytes", ErrInvalidArgument)
	}
	addr := abi.SlicePtr(mem)
	if addr%page != 0 {
		return nil, fmt.Errorf("uverbs: %w: caller memory at %#x is not page-aligned (%d-byte pages): register a mapping from its start", ErrInvalidArgument, addr, page)
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return nil, &rdma.OpError{Pkg: "uverbs", Op: "register caller memory", Err: err}
	}
	if err := checkMapped(maps, addr, addr+uint64(len(mem))); err != nil {
		return nil, fmt.Errorf("uverbs: %w: %w", ErrInvalidArgument, err)
	}
	return &Buffer{mem: mem, user: true}, nil
}

// vma is one line of /proc/self/maps.
type vma struct {
	start, end uint64
	shared     bool
	inode      uint64
	name       string // path, [heap], [anon: NAME], or empty
}

// parseMaps parses /proc/PID/maps text; malformed lines are skipped.
func parseMaps(b []byte) []vma {
	var out []vma
	for _, line := range bytes.Split(b, []byte{'\n'}) {
		f := strings.Fields(string(line))
		if len(f) < 5 {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		inode, err3 := strconv.ParseUint(f[4], 10, 64)
		if !ok || err1 != nil || err2 != nil || err3 != nil || len(f[1]) < 4 {
			continue
		}
		v := vma{start: start, end: end, shared: f[1][3] == 's', inode: inode}
		if len(f) > 5 {
			// The name is the rest of the line after the inode; it may
			// contain spaces ("[anon: Go: heap]", "/memfd:x (deleted)").
			s := string(line)
			i := strings.Index(s, f[5])
			v.name = strings.TrimSpace(s[i:])
		}
		out = append(out, v)
	}
	return out
}

// goMapping reports whether a VMA name is one the Go runtime gives.
func goMapping(name string) bool { return strings.HasPrefix(name, "[anon: Go:") }

// checkMapped checks that [start, end) is mapped throughout and is not
// the Go runtime's memory (see UserBuffer).
func checkMapped(maps []byte, start, end uint64) error {
	vmas := parseMaps(maps)
	named := false // the runtime names its mappings in this process
	for _, v := range vmas {
		if goMapping(v.name) {
			named = true
			break
		}
	}
	at := start
	for _, v := range vmas {
		if v.end <= at || v.start > at {
			continue
		}
		switch {
		case goMapping(v.name):
			return fmt.Errorf("%#x is Go-heap memory (%s), which the garbage collector may move or free: map it yourself (a memfd, MAP_HUGETLB) or use AllocBuffer", at, v.name)
		case v.shared || v.inode != 0 || strings.HasPrefix(v.name, "/"):
			// Shared or file-backed: never the runtime's.
		case strings.HasPrefix(v.name, "[") && !strings.HasPrefix(v.name, "[anon:"):
			return fmt.Errorf("%#x lies in %s, not in a mapping of the caller's", at, v.name)
		case !named:
			return fmt.Errorf("%#x is private anonymous memory, which this process cannot tell from the Go heap "+
				"(the runtime names its mappings only on kernels with CONFIG_ANON_VMA_NAME and without GODEBUG=decoratemappings=0): "+
				"use a memfd or MAP_SHARED mapping, or AllocBuffer", at)
		}
		at = v.end
		if at >= end {
			return nil
		}
	}
	return fmt.Errorf("%#x is not mapped (caller memory %#x+%d)", at, start, end-start)
}

// regMR registers length bytes of buf from offset (REG_MR), at iova when
// withIOVA, else at their address.
func (pd *PD) regMR(buf *Buffer, offset, length int, iova uint64, withIOVA bool, access qp.Access) (*MR, error) {
	x := pd.ctx
	if buf == nil || buf.mem == nil || offset < 0 || length <= 0 || offset+length > buf.Len() {
		return nil, &rdma.OpError{Pkg: "uverbs", Op: "register MR", Device: x.dev.Name, Err: fmt.Errorf("%w: range %d+%d of a %d-byte buffer", ErrInvalidArgument, offset, length, bufLen(buf))}
	}
	if access&(qp.AccessRemoteWrite|qp.AccessRemoteAtomic) != 0 && access&qp.AccessLocalWrite == 0 {
		return nil, &rdma.OpError{Pkg: "uverbs", Op: "register MR", Device: x.dev.Name, Err: fmt.Errorf("%w: remote write/atomic access needs local write (%v)", ErrInvalidArgument, access)}
	}
	if err := x.lockOpen("register MR"); err != nil {
		return nil, err
	}
	defer x.mu.Unlock()
	addr := buf.Addr() + uint64(offset)
	if !withIOVA {
		iova = addr
	}
	req := abi.UverbsRegMR{Start: addr, Length: uint64(length), HCAVa: iova, PDHandle: pd.handle, AccessFlags: uint32(access)}
	var resp abi.UverbsRegMRResp
	if err := x.exec(&cmd{num: abi.UverbsCmdRegMR, in: abi.Bytes(&req), respPtr: true, out: abi.Bytes(&resp)}); err != nil {
		var lim unix.Rlimit
		known := isPinErrno(err) && unix.Getrlimit(unix.RLIMIT_MEMLOCK, &lim) == nil
		return nil, regMRError(x.dev.Name, uint64(length), err, lim.Cur, known)
	}
	buf.regs.Add(1)
	mr := &MR{pd: pd, buf: buf, handle: resp.MRHandle, LKey: resp.LKey, RKey: resp.RKey, Addr: iova, Length: uint64(length), Access: access}
	x.mrs[mr] = struct{}{}
	return mr, nil
}

// RegMRIOVA registers length bytes of buf from offset, as the device
// addresses them at iova (libibverbs' ibv_reg_mr_iova2): SGEs and the
// peer's RDMA name the region by iova (MR.Addr), not by its virtual
// address. iova must have the address's offset within a page, the
// kernel's rule; another one fails with ErrInvalidArgument.
func (pd *PD) RegMRIOVA(buf *Buffer, offset, length int, iova uint64, access qp.Access) (*MR, error) {
	if buf != nil && buf.mem != nil && offset >= 0 && offset <= buf.Len() {
		page := uint64(kcall.PageSize())
		if addr := buf.Addr() + uint64(offset); (addr^iova)&(page-1) != 0 {
			return nil, &rdma.OpError{Pkg: "uverbs", Op: "register MR", Device: pd.ctx.dev.Name, Err: fmt.Errorf(
				"%w: IOVA %#x and address %#x differ in their offset within a %d-byte page", ErrInvalidArgument, iova, addr, page)}
		}
	}
	return pd.regMR(buf, offset, length, iova, true, access)
}

// RegDmabufMR registers length bytes from offset of the dma-buf fd (a GPU
// or other device buffer exported as a dma-buf), at iova in the device's
// address space (REG_DMABUF_MR, as libibverbs' ibv_reg_dmabuf_mr). The
// MR has no Buffer: the CPU does not address it through this package.
// offset and iova must have the same offset within a page. rxe has no
// dma-buf MRs (nor has rdma-core's rxe provider): there, and on kernels
// without the method, the error matches ErrNotSupported. The caller keeps
// fd open while the MR lives.
func (pd *PD) RegDmabufMR(fd int, offset, length, iova uint64, access qp.Access) (*MR, error) {
	x := pd.ctx
	const op = "register dmabuf MR"
	page := uint64(kcall.PageSize())
	if !x.nativeIoctl {
		// ENOTTY before any argument check, as libibverbs' ioctl answers on
		// such a kernel (it checks nothing itself; the kernel checks the
		// rest, with its own page size).
		return nil, opError(op, x.dev.Name, fmt.Errorf("%w: the kernel has no uverbs ioctl interface, which REG_DMABUF_MR needs (%w)", ErrNotSupported, unix.ENOTTY))
	}
	switch {
	case fd < 0 || length == 0 || offset+length < offset || iova+length < iova:
		return nil, &rdma.OpError{Pkg: "uverbs", Op: op, Device: x.dev.Name, Err: fmt.Errorf("%w: fd %d, %d bytes at offset %#x, IOVA %#x", ErrInvalidArgument, fd, length, offset, iova)}
	case (offset^iova)&(page-1) != 0:
		return nil, &rdma.OpError{Pkg: "uverbs", Op: op, Device: x.dev.Name, Err: fmt.Errorf(
			"%w: IOVA %#x and dmabuf offset %#x differ in their offset within a %d-byte page", ErrInvalidArgument, iova, offset, page)}
	case access&(qp.AccessRemoteWrite|qp.AccessRemoteAtomic) != 0 && access&qp.AccessLocalWrite == 0:
		return nil, &rdma.OpError{Pkg: "uverbs", Op: op, Device: x.dev.Name, Err: fmt.Errorf("%w: remote write/atomic access needs local write (%v)", ErrInvalidArgument, access)}
	}
	if x.prov.name() == "rxe" {
		return nil, notSupported(op, x.dev.Name, "rxe has no dma-buf memory regions")
	}
	if err := x.lockOpen(op); err != nil {
		return nil, err
	}
	defer x.mu.Unlock()
	var lkey, rkey [4]byte
	// The attributes in libibverbs' order (ibv_cmd_reg_dmabuf_mr).
	call := kcall.NewIoctl(abi.UverbsObjectMR, abi.UverbsMethodRegDmabufMR, x.driverID)
	h := call.IDR(abi.UverbsAttrRegDmabufMRHandle, 0)
	call.Out(abi.UverbsAttrRegDmabufMRRespLKey, lkey[:])
	call.Out(abi.UverbsAttrRegDmabufMRRespRKey, rkey[:])
	call.IDR(abi.UverbsAttrRegDmabufMRPDHandle, pd.handle)
	call.U64(abi.UverbsAttrRegDmabufMROffset, offset)
	call.U64(abi.UverbsAttrRegDmabufMRLength, length)
	call.U64(abi.UverbsAttrRegDmabufMRIOVA, iova)
	call.U32(abi.UverbsAttrRegDmabufMRFD, uint32(int32(fd)))
	call.U32(abi.UverbsAttrRegDmabufMRAccessFlags, uint32(access))
	if err := x.do(call); err != nil {
		return nil, opErr(op, x.dev.Name, err)
	}
	mr := &MR{pd: pd, handle: uint32(call.Data(h)), LKey: abi.Native.Uint32(lkey[:]), RKey: abi.Native.Uint32(rkey[:]),
		Addr: iova, Length: length, Access: access}
	x.mrs[mr] = struct{}{}
	return mr, nil
}

// ReregFlags say what MR.Rereg changes (libibverbs' IBV_REREG_MR_CHANGE_*).
type ReregFlags uint32

const (
	// ReregTranslation: new memory (buf, offset, length); the IOVA becomes
	// its address, as libibverbs' ibv_rereg_mr sets it.
	ReregTranslation = ReregFlags(abi.UverbsReregMRTrans)
	// ReregPD: move the MR to pd (of the same Context).
	ReregPD = ReregFlags(abi.UverbsReregMRPD)
	// ReregAccess: new access flags.
	ReregAccess = ReregFlags(abi.UverbsReregMRAccess)
)

// Rereg re-registers the MR in place (REREG_MR, as libibverbs'
// ibv_rereg_mr): with ReregTranslation over length bytes of buf from
// offset, with ReregPD in pd, with ReregAccess with access; arguments
// that flags do not name are ignored (pass nil, 0), and access must be 0
// without ReregAccess, as libibverbs requires. The keys may change: read
// LKey and RKey again. Do not post work requests that use the MR while
// Rereg runs. A dma-buf MR cannot be re-registered (ErrInvalidArgument).
// Where the kernel's driver lacks the change asked for the error
// matches ErrNotSupported (Linux 6.1's rxe re-registers nothing; mlx5
// does all three); after a failed ReregTranslation the kernel may have
// left the MR unusable: close it.
func (mr *MR) Rereg(flags ReregFlags, pd *PD, buf *Buffer, offset, length int, access qp.Access) error {
	x := mr.pd.ctx
	const op = "re-register MR"
	inval := func(format string, a ...any) error {
		return &rdma.OpError{Pkg: "uverbs", Op: op, Device: x.dev.Name, Err: fmt.Errorf("%w: "+format, append([]any{ErrInvalidArgument}, a...)...)}
	}
	switch {
	case flags == 0 || flags&^(ReregTranslation|ReregPD|ReregAccess) != 0:
		return inval("flags %#x (want a non-empty set of ReregTranslation, ReregPD, ReregAccess)", uint32(flags))
	case mr.buf == nil:
		return inval("a dma-buf MR cannot be re-registered")
	case flags&ReregTranslation != 0 && (buf == nil || buf.mem == nil || offset < 0 || length <= 0 || offset+length > buf.Len()):
		return inval("range %d+%d of a %d-byte buffer", offset, length, bufLen(buf))
	case access != 0 && flags&ReregAccess == 0:
		return inval("access %v without ReregAccess", access)
	case flags&ReregPD != 0 && (pd == nil || pd.ctx != x):
		return inval("the new PD must be one of the MR's device context")
	case flags&ReregAccess != 0 && access&(qp.AccessRemoteWrite|qp.AccessRemoteAtomic) != 0 && access&qp.AccessLocalWrite == 0:
		return inval("remote write/atomic access needs local write (%v)", access)
	}
	if err := x.lockOpen(op); err != nil {
		return err
	}
	defer x.mu.Unlock()
	req := abi.UverbsReregMR{MRHandle: mr.handle, Flags: uint32(flags), AccessFlags: uint32(access)}
	var addr uint64
	if flags&ReregTranslation != 0 {
		addr = buf.Addr() + uint64(offset)
		req.Start, req.Length, req.HCAVa = addr, uint64(length), addr
	}
	if flags&ReregPD != 0 {
		req.PDHandle = pd.handle
	}
	var resp abi.UverbsReregMRResp
	if err := x.exec(&cmd{num: abi.UverbsCmdReregMR, in: abi.Bytes(&req), respPtr: true, out: abi.Bytes(&resp)}); err != nil {
		return opErr(op, x.dev.Name, err)
	}
	mr.LKey, mr.RKey = resp.LKey, resp.RKey
	if flags&ReregPD != 0 {
		mr.pd = pd
	}
	if flags&ReregAccess != 0 {
		mr.Access = access
	}
	if flags&ReregTranslation != 0 {
		buf.regs.Add(1)
		mr.buf.regs.Add(-1)
		mr.buf, mr.Addr, mr.Length = buf, addr, uint64(length)
	}
	return nil
}
