package uverbs

// The mlx5 provider (ConnectX-4 Lx/5/6 Dx/7, BlueField-2/3): a pure-Go
// port of rdma-core v44.0 providers/mlx5 for RC, UC and UD QPs with the
// default (non-extended) verbs, producing the commands, driver data and
// memory bytes libmlx5 produces with its default environment. Files:
// mlx5.go (context, UARs, doorbell records, user indices, AHs, ECE),
// mlx5_cq.go (CQ buffer, poll, arm, clean), mlx5_qp.go (QP sizing,
// buffers, post send/recv, doorbells).
//
// unsafe: the work queues, CQ rings, doorbell records and UAR pages are
// mmap'd memory outside the Go heap that the device reads and writes;
// they are accessed through unsafe pointers (as in rxe.go), with the
// util/udma_barrier.h barriers of internal/abi.
//
// libmlx5 v44 defaults mirrored here (env unset; line numbers v44.0):
//   - Context request (mlx5.c mlx5_alloc_context 2572, get_total_uuars
//     600, get_num_low_lat_uuars 653): total_num_bfregs = max(16,
//     page/4K*2) aligned to 2 (16 on 4K pages); num_low_latency_bfregs =
//     max(4, total-12) (4); max_cqe_version 1; lib_caps 4K_UAR|DYN_UAR;
//     flags DEVX; comp_mask 0. mlx5_cmd_get_context (735) tries the full
//     32-byte request, then 24 bytes (up to lib_caps), then 16 (up to
//     max_cqe_version), on any error; if all fail, the three again
//     without DEVX (2596).
//   - After the context (mlx5_set_context 2375): static UARs when
//     tot_bfregs != 0: tot_bfregs/(uars_per_page*2) pages mapped in index
//     order at ((0<<8)|i)*page (regular WC; NC first only with
//     MLX5_SHUT_UP_BF), bfreg bfi = (i*uars_per_page+j)*4+k at page +
//     4K*j + 0x800 + k*bf_reg_size, BlueFlame size bf_reg_size/2 except
//     bfreg 0 (2486). Core clock page (cmd 5) and clock info page (cmd 7,
//     index 0) mapped read-only when the response announces them
//     (2519–2524). mlx5_query_device_ctx (verbs.c 4005): DEVX
//     QUERY_HCA_CAP (general, current) then EX_QUERY_DEVICE with the
//     104-byte mlx5_ib_query_device_resp when cmds_supp_uhw has
//     QUERY_DEVICE; QUERY_PORT for ports 1..min(2, num_ports); then the
//     singleton NC UAR (verbs.c 480): UAR_OBJ_ALLOC type NC + mmap when
//     the kernel has dynamic UARs (tot_bfregs == 0). CQ doorbells go to
//     the NC UAR page if there is one, else to UAR page 0 (2553).
//   - Dynamic UARs (verbs.c mlx5_get_qp_uar 375): per QP, a dedicated
//     bfreg while fewer than num_low_latency_bfregs (4) were allocated,
//     then shared bfregs up to total-low_lat (12), then the least used
//     shared one; each UAR_OBJ_ALLOC (type BF) adds uars_per_page*2
//     bfregs (mlx5_insert_dyn_uuars 260); create-QP carries
//     bfreg_index = page_id with MLX5_QP_FLAG_UAR_PAGE_INDEX.
//   - Doorbell records (dbrec.c): page-sized pages of cache_line_size
//     slots, newest page with a free slot first, lowest free slot.
//   - CQ (verbs.c create_cq 947, cq.c mlx5_alloc_cq_buf 1929): ncqe =
//     roundup_pow2(cqe+1) (EINVAL above 2^24), 64-byte CQEs (128 with
//     MLX5_CQE_SIZE=128, get_cqe_size; other values EINVAL), buffer
//     page-aligned, every op_own = INVALID<<4, command cqe = ncqe-1,
//     driver data buf_addr/db_addr/cqe_size and, with the NC UAR,
//     flags UAR_PAGE_INDEX + uar_page_index = its page_id.
//   - QP (verbs.c create_qp 2271, sizing 1463–1808): default send ops
//     (RC/UC: all incl. BIND_MW/LOCAL_INV → 192-byte overhead; UD: SEND,
//     SEND_IMM, TSO → ctrl+datagram 64), SCATTER_CQE flag on, no
//     signature, uidx from the first free user index when cqe_version 1
//     (else 0xffffff), ece_options 0x10000000 with ECE, RQ at offset 0.
//   - Post send/recv, poll and arm follow qp.c _mlx5_post_send 803,
//     post_send_db 753, mlx5_post_recv 3819, cq.c mlx5_parse_cqe 726,
//     mlx5_arm_cq 1728 (see mlx5_qp.go and mlx5_cq.go).

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
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

// libmlx5 constants (mlx5-abi.h, mlx5.h, mlx5dv.h of rdma-core).
const (
	mlx5NumNonFPBfregsPerUAR = 2      // MLX5_NUM_NON_FP_BFREGS_PER_UAR
	mlx5NumBfregsPerUAR      = 4      // NUM_BFREGS_PER_UAR
	mlx5MaxUARs              = 1 << 8 // MLX5_MAX_UARS
	mlx5MaxBfregs            = mlx5MaxUARs * mlx5NumNonFPBfregsPerUAR
	mlx5DefTotUUARs          = 8 * mlx5NumNonFPBfregsPerUAR // MLX5_DEF_TOT_UUARS
	mlx5MedBfregsTshold      = 12                           // MLX5_MED_BFREGS_TSHOLD
	mlx5DefLowLatUUARs       = 4                            // get_num_low_lat_uuars default
	mlx5AdapterPageSize      = 4096                         // MLX5_ADAPTER_PAGE_SIZE
	mlx5BFOffset             = 0x800                        // MLX5_BF_OFFSET
	mlx5MaxPortsNum          = 2                            // MLX5_MAX_PORTS_NUM
	mlx5ECEVersion1          = abi.MLX5ECEVersion1
	mlx5TableShift           = 12 // MLX5_UIDX_TABLE_SHIFT / MLX5_QP_TABLE_SHIFT
	mlx5TableMask            = 1<<mlx5TableShift - 1
	mlx5TableSize            = 1 << (24 - mlx5TableShift)
)

// mlx5BF is one blue-flame register (struct mlx5_bf): reg is where the
// doorbell/BlueFlame writes go; offset toggles between the two halves.
type mlx5BF struct {
	reg     unsafe.Pointer
	mu      sync.Mutex // need_lock: shared bfregs (mmio_wc_spinlock)
	lock    bool
	offset  uint32
	bufSize uint32
	uuarn   uint32
	// dynamic UARs
	uar       *mlx5DynUAR
	pageID    uint32
	dedicated bool
	shared    bool
	count     uint32
	// first marks the bfreg mlx5_alloc_dyn_uar returned for its page
	// (the one whose length is set): only freeing it frees the page.
	first bool
}

// mlx5DynUAR is one UAR_OBJ_ALLOC'd page (mlx5_alloc_dyn_uar).
type mlx5DynUAR struct {
	mem    []byte
	handle uint32
	pageID uint32
	offset uint64
}

type mlx5Provider struct {
	x    *Context
	resp abi.MLX5AllocUcontextResp
	// eceSupported mirrors MLX5_CTX_FLAGS_ECE_SUPPORTED: the kernel set
	// MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_ECE in the context response.
	eceSupported bool

	pageSize       int
	totUUARs       int // request total_num_bfregs, then tot_bfregs
	lowLatUUARs    int
	cacheLine      int
	bfRegSize      uint32
	maxSQDescSz    int
	maxRQDescSz    int
	maxSendWqebb   uint32
	maxRecvWR      uint32
	cqeVersion     uint8
	cmdsSuppUhw    uint8
	atomicCap      AtomicCap // from the open-time query; NONE if it failed
	numPorts       int
	numUARsPerPage int
	noKernDynUAR   bool

	uars      [][]byte // static UAR pages
	bfs       []mlx5BF // static bfregs
	ncUAR     *mlx5DynUAR
	cqUARReg  unsafe.Pointer
	clockPage []byte
	clockInfo []byte

	linkLayer [mlx5MaxPortsNum]LinkLayer
	portFlags [mlx5MaxPortsNum]uint8

	dynMu          sync.Mutex
	dedicated      []*mlx5BF // dyn_uar_qp_dedicated_list
	sharedList     []*mlx5BF // dyn_uar_qp_shared_list
	allocDedicated int
	allocShared    int
	maxDedicated   int
	maxShared      int

	dbMu    sync.Mutex
	dbAvail []*mlx5DBPage // dbr_available_pages, head first
	dbAll   []*mlx5DBPage

	uidx mlx5RsnTable // cqe_version 1: by user index
	qpns mlx5RsnTable // cqe_version 0: by QP number
	srqs mlx5SRQTable // cqe_version 0: SRQs by number

	ahMu sync.RWMutex
	avs  []*mlx5AV // indexed by AH.num
}

func (*mlx5Provider) name() string { return "mlx5" }

// The mlx5 driver ABI (MLX5_IB_UVERBS_ABI_VERSION) is 1.
func (*mlx5Provider) checkABI(dev Device) error {
	return abiRange(dev, "mlx5", abi.MLX5UverbsABIVersion, abi.MLX5UverbsABIVersion)
}

// hasECE follows the context bit (MLX5_CTX_FLAGS_ECE_SUPPORTED).
func (p *mlx5Provider) hasECE() bool { return p.eceSupported }

// uarCounts is get_uar_info: total and low-latency bfregs to request.
func mlx5UARCounts(pageSize int) (tot, lowLat int) {
	tot = max(pageSize/mlx5AdapterPageSize*mlx5NumNonFPBfregsPerUAR, mlx5DefTotUUARs)
	tot = (tot + mlx5NumNonFPBfregsPerUAR - 1) / mlx5NumNonFPBfregsPerUAR * mlx5NumNonFPBfregsPerUAR
	lowLat = max(mlx5DefLowLatUUARs, tot-mlx5MedBfregsTshold)
	return tot, lowLat
}

// contextData returns the GET_CONTEXT attempts in libmlx5's order
// (mlx5_alloc_context + mlx5_cmd_get_context).
func (p *mlx5Provider) contextData() (ins [][]byte, out []byte) {
	if p.pageSize == 0 {
		p.pageSize = kcall.PageSize()
		if mlx5Mutant == mutantPage4K {
			p.pageSize = 4096
		}
	}
	p.totUUARs, p.lowLatUUARs = mlx5UARCounts(p.pageSize)
	req := abi.MLX5AllocUcontextReqV2{
		TotalNumBfregs: uint32(p.totUUARs), NumLowLatencyBfregs: uint32(p.lowLatUUARs),
		MaxCQEVersion: 1, LibCaps: abi.MLX5LibCap4KUAR | abi.MLX5LibCapDynUAR, Flags: abi.MLX5AllocUctxDEVX,
	}
	full := append([]byte(nil), abi.Bytes(&req)...)
	req.Flags = 0
	noDevx := append([]byte(nil), abi.Bytes(&req)...)
	offLibCaps := int(unsafe.Offsetof(req.LibCaps))
	offCQEVer := int(unsafe.Offsetof(req.MaxCQEVersion))
	ins = [][]byte{full, full[:offLibCaps], full[:offCQEVer], noDevx, noDevx[:offLibCaps], noDevx[:offCQEVer]}
	return ins, make([]byte, unsafe.Sizeof(abi.MLX5AllocUcontextResp{}))
}

func (p *mlx5Provider) parseContextResp(out []byte) {
	r := abi.Decode[abi.MLX5AllocUcontextResp](out)
	p.resp = r
	p.eceSupported = r.CompMask&abi.MLX5AllocUcontextRespMaskECE != 0
	p.bfRegSize = r.BfRegSize
	p.cacheLine = int(r.CacheLineSize)
	p.maxSQDescSz, p.maxRQDescSz = int(r.MaxSQDescSz), int(r.MaxRQDescSz)
	p.maxSendWqebb, p.maxRecvWR = r.MaxSendWqebb, r.MaxRecvWR
	p.numPorts = int(r.NumPorts)
	p.cqeVersion, p.cmdsSuppUhw = r.CQEVersion, r.CmdsSuppUhw
	if p.pageSize == 0 {
		p.pageSize = kcall.PageSize()
	}
	// adjust_uar_info: an old kernel reports neither.
	if r.LogUARSize == 0 && r.NumUARsPerPage == 0 {
		p.numUARsPerPage = 1
	} else {
		p.numUARsPerPage = int(r.NumUARsPerPage)
	}
	if p.totUUARs == 0 {
		p.totUUARs, p.lowLatUUARs = mlx5UARCounts(p.pageSize)
	}
}

// contextCreated is mlx5_set_context after the command.
func (p *mlx5Provider) contextCreated(x *Context, out []byte) error {
	p.x = x
	p.parseContextResp(out)
	r := &p.resp
	// Input checks libmlx5 does not make (it would divide by zero or
	// index out of bounds): refuse instead of panicking.
	if p.cacheLine <= 0 || p.cacheLine > p.pageSize || p.cacheLine&(p.cacheLine-1) != 0 {
		return opErr("mlx5 context", x.dev.Name, fmt.Errorf("%w: cache_line_size %d", ErrInvalidArgument, p.cacheLine))
	}
	if p.numUARsPerPage <= 0 || p.numUARsPerPage*mlx5AdapterPageSize > p.pageSize {
		return opErr("mlx5 context", x.dev.Name, fmt.Errorf("%w: num_uars_per_page %d", ErrInvalidArgument, p.numUARsPerPage))
	}
	if r.TotBfregs != 0 {
		p.totUUARs = int(r.TotBfregs)
		p.noKernDynUAR = true
		if err := p.mapStaticUARs(); err != nil {
			p.close()
			return opErr("mlx5 map UAR", x.dev.Name, err)
		}
	} else {
		p.maxDedicated = p.lowLatUUARs
		p.maxShared = p.totUUARs - p.lowLatUUARs
	}
	if r.CompMask&abi.MLX5AllocUcontextRespMaskCoreClockOff != 0 {
		// mlx5_map_internal_clock: failure is only a warning.
		p.clockPage, _ = kcall.Mmap(x.fd, int64(p.pageSize)*(abi.MLX5MmapCoreClock<<abi.MLX5MmapCmdShift), p.pageSize, unix.PROT_READ, unix.MAP_SHARED)
	}
	if r.ClockInfoVersions&(1<<abi.MLX5ClockInfoV1) != 0 {
		p.clockInfo, _ = kcall.Mmap(x.fd, int64(p.pageSize)*(abi.MLX5MmapClockInfo<<abi.MLX5MmapCmdShift|abi.MLX5ClockInfoV1), p.pageSize, unix.PROT_READ, unix.MAP_SHARED)
	}
	if p.cqeVersion > 1 {
		p.close()
		return opErr("mlx5 context", x.dev.Name, fmt.Errorf("%w: cqe_version %d", ErrNotSupported, p.cqeVersion))
	}
	p.queryDeviceCtx()
	for j := 0; j < min(mlx5MaxPortsNum, p.numPorts); j++ {
		if pa, err := x.QueryPort(j + 1); err == nil {
			p.linkLayer[j] = pa.LinkLayer
			p.portFlags[j] = b2u(pa.GRHRequired)
		}
	}
	// mlx5_set_singleton_nc_uar.
	if !p.noKernDynUAR {
		if u, err := p.allocDynUAR(abi.MLX5UAPIUARAllocNC); err == nil {
			p.ncUAR = u
		}
	}
	switch {
	case p.ncUAR != nil:
		p.cqUARReg = unsafe.Pointer(&p.ncUAR.mem[0])
	case len(p.uars) > 0:
		p.cqUARReg = unsafe.Pointer(&p.uars[0][0])
	}
	return nil
}

// mapStaticUARs maps the kernel's static UAR pages and lays out the
// bfregs (mlx5_set_context 2486–2516).
func (p *mlx5Provider) mapStaticUARs() error {
	perPage := p.numUARsPerPage * mlx5NumNonFPBfregsPerUAR
	pages := p.totUUARs / perPage
	gross := p.totUUARs / mlx5NumNonFPBfregsPerUAR * mlx5NumBfregsPerUAR
	if pages > mlx5MaxUARs || p.totUUARs > mlx5MaxBfregs {
		return fmt.Errorf("%w: tot_bfregs %d", ErrInvalidArgument, p.totUUARs)
	}
	if int(p.bfRegSize)*mlx5NumBfregsPerUAR+mlx5BFOffset > mlx5AdapterPageSize {
		return fmt.Errorf("%w: bf_reg_size %d", ErrInvalidArgument, p.bfRegSize)
	}
	for i := 0; i < pages; i++ {
		off := int64(p.pageSize) * int64(abi.MLX5MmapRegularPages<<abi.MLX5MmapCmdShift|i)
		mem, err := kcall.Mmap(p.x.fd, off, p.pageSize, unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			return fmt.Errorf("mmap UAR page %d (offset %#x): %w", i, off, err)
		}
		p.uars = append(p.uars, mem)
	}
	p.bfs = make([]mlx5BF, gross)
	for i := 0; i < pages; i++ {
		for j := 0; j < p.numUARsPerPage; j++ {
			for k := 0; k < mlx5NumBfregsPerUAR; k++ {
				bfi := (i*p.numUARsPerPage+j)*mlx5NumBfregsPerUAR + k
				if bfi >= len(p.bfs) {
					continue
				}
				bf := &p.bfs[bfi]
				bf.reg = unsafe.Pointer(&p.uars[i][mlx5AdapterPageSize*j+mlx5BFOffset+k*int(p.bfRegSize)])
				bf.lock = p.needUUARLock(bfi)
				if bfi != 0 {
					bf.bufSize = p.bfRegSize / 2
				}
				bf.uuarn = uint32(bfi)
			}
		}
	}
	return nil
}

// needUUARLock is need_uuar_lock (mlx5.c 670).
func (p *mlx5Provider) needUUARLock(n int) bool {
	if n == 0 {
		return false
	}
	i := n/2 + n%2
	return i < p.totUUARs-p.lowLatUUARs
}

// queryDeviceCtx is mlx5_query_device_ctx: the DEVX general HCA caps,
// then EX_QUERY_DEVICE with the mlx5 driver response. Failures are
// ignored, as there. The QoS/crypto/caps-2 follow-up queries that
// libmlx5 makes when the general caps announce them are not mirrored.
func (p *mlx5Provider) queryDeviceCtx() {
	x := p.x
	var in [abi.MLX5QueryHCACapInLen]byte
	out := make([]byte, abi.MLX5QueryHCACapOutLen)
	binary.BigEndian.PutUint16(in[0:], abi.MLX5CmdOpQueryHCACap)
	binary.BigEndian.PutUint16(in[6:], 0<<1|1) // GENERAL_DEVICE, HCA_CAP_OPMOD_GET_CUR
	if x.nativeIoctl {
		call := kcall.NewIoctl(abi.MLX5IBObjectDEVX, abi.MLX5IBMethodDEVXOther, x.driverID)
		call.In(abi.MLX5IBAttrDEVXOtherCmdIn, in[:])
		call.Out(abi.MLX5IBAttrDEVXOtherCmdOut, out)
		_ = x.do(call)
	}
	var req abi.UverbsExQueryDevice
	var resp abi.UverbsExQueryDeviceResp
	var drvOut []byte
	if p.cmdsSuppUhw&abi.MLX5UserCmdsSuppUhwQueryDevice != 0 {
		drvOut = make([]byte, abi.MLX5QueryDeviceRespSize)
	}
	err := x.exec(&cmd{num: abi.UverbsExCmdQueryDevice, ex: true, in: abi.Bytes(&req), out: abi.Bytes(&resp), drvOut: drvOut})
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		var legacy abi.UverbsGetContext
		err = x.exec(&cmd{num: abi.UverbsCmdQueryDevice, in: abi.Bytes(&legacy), respPtr: true, out: abi.Bytes(&resp.Base)})
	}
	if err == nil {
		p.atomicCap = AtomicCap(resp.Base.AtomicCap) // ctx->atomic_cap
	}
}

// allocDynUAR is mlx5_alloc_dyn_uar on a kernel with dynamic UARs:
// UAR_OBJ_ALLOC, then mmap of the returned offset and length.
func (p *mlx5Provider) allocDynUAR(typ uint64) (*mlx5DynUAR, error) {
	x := p.x
	var off, length [8]byte
	var pageID [4]byte
	call := kcall.NewIoctl(abi.MLX5IBObjectUAR, abi.MLX5IBMethodUARObjAlloc, x.driverID)
	h := call.IDR(abi.MLX5IBAttrUARObjAllocHandle, 0)
	call.Const(abi.MLX5IBAttrUARObjAllocType, typ)
	call.Out(abi.MLX5IBAttrUARObjAllocMmapOffset, off[:])
	call.Out(abi.MLX5IBAttrUARObjAllocMmapLength, length[:4])
	call.Out(abi.MLX5IBAttrUARObjAllocPageID, pageID[:])
	if err := x.do(call); err != nil {
		return nil, err
	}
	u := &mlx5DynUAR{handle: uint32(call.Data(h)), offset: abi.Native.Uint64(off[:]), pageID: abi.Native.Uint32(pageID[:])}
	n := int(abi.Native.Uint32(length[:4]))
	var err error
	if n >= mlx5AdapterPageSize && n <= 1<<20 {
		u.mem, err = kcall.Mmap(x.fd, int64(u.offset), n, unix.PROT_WRITE, unix.MAP_SHARED)
	} else {
		err = fmt.Errorf("%w: UAR length %d", ErrInvalidArgument, n)
	}
	if err != nil {
		p.destroyDynUAR(u)
		return nil, err
	}
	return u, nil
}

// destroyDynUAR is mlx5_free_uar: munmap, then UAR_OBJ_DESTROY.
func (p *mlx5Provider) destroyDynUAR(u *mlx5DynUAR) {
	if u.mem != nil {
		kcall.Munmap(u.mem)
		u.mem = nil
	}
	call := kcall.NewIoctl(abi.MLX5IBObjectUAR, abi.MLX5IBMethodUARObjDestroy, p.x.driverID)
	call.IDR(abi.MLX5IBAttrUARObjDestroyHandle, u.handle)
	_ = p.x.do(call)
}

// insertDynUUARs is mlx5_insert_dyn_uuars for a QP UAR (BF type): one
// bfreg per non-fast-path register of every 4K UAR in the page.
func (p *mlx5Provider) insertDynUUARs(u *mlx5DynUAR, dedicated bool) {
	n := p.numUARsPerPage * mlx5NumNonFPBfregsPerUAR
	for j := 0; j < n; j++ {
		inPage, inUAR := j/mlx5NumNonFPBfregsPerUAR, j%mlx5NumNonFPBfregsPerUAR
		off := inPage*mlx5AdapterPageSize + mlx5BFOffset + inUAR*int(p.bfRegSize)
		if off+int(p.bfRegSize) > len(u.mem) {
			continue
		}
		bf := &mlx5BF{reg: unsafe.Pointer(&u.mem[off]), bufSize: p.bfRegSize / 2, uuarn: 1, uar: u,
			pageID: u.pageID + uint32(inPage), dedicated: dedicated, shared: !dedicated, lock: !dedicated, first: j == 0}
		if dedicated {
			p.dedicated = append(p.dedicated, bf)
			p.allocDedicated++
		} else {
			p.sharedList = append(p.sharedList, bf)
			p.allocShared++
		}
	}
}

// getQPUAR is mlx5_get_qp_uar (dynamic UARs only).
func (p *mlx5Provider) getQPUAR() (*mlx5BF, error) {
	if p.bfRegSize == 0 {
		if p.ncUAR == nil {
			return nil, fmt.Errorf("%w: no UAR for the QP", ErrNotSupported)
		}
		return &mlx5BF{reg: unsafe.Pointer(&p.ncUAR.mem[mlx5BFOffset]), pageID: p.ncUAR.pageID, uar: p.ncUAR}, nil
	}
	p.dynMu.Lock()
	defer p.dynMu.Unlock()
	for {
		if len(p.dedicated) > 0 {
			bf := p.dedicated[0]
			p.dedicated = p.dedicated[1:]
			return bf, nil
		}
		if p.allocDedicated < p.maxDedicated {
			u, err := p.allocDynUAR(abi.MLX5UAPIUARAllocBF)
			if err != nil {
				return nil, err
			}
			p.insertDynUUARs(u, true)
			continue
		}
		if p.allocShared < p.maxShared {
			u, err := p.allocDynUAR(abi.MLX5UAPIUARAllocBF)
			if err != nil {
				return nil, err
			}
			p.insertDynUUARs(u, false)
		}
		var bf *mlx5BF
		for _, e := range p.sharedList {
			if bf == nil || e.count < bf.count {
				bf = e
			}
		}
		if bf == nil {
			return nil, fmt.Errorf("%w: no shared bfreg", ErrNotSupported)
		}
		bf.count++
		return bf, nil
	}
}

// putQPUAR is mlx5_put_qp_uar.
func (p *mlx5Provider) putQPUAR(bf *mlx5BF) {
	if bf == nil || (!bf.dedicated && !bf.shared) {
		return
	}
	p.dynMu.Lock()
	if bf.dedicated {
		p.dedicated = append(p.dedicated, bf)
	} else {
		bf.count--
	}
	p.dynMu.Unlock()
}

// close is mlx5_free_context: static UARs and clock pages unmapped, then
// the dynamic UARs freed (clean_dyn_uars).
func (p *mlx5Provider) close() error {
	for _, m := range p.uars {
		kcall.Munmap(m)
	}
	p.uars = nil
	if p.clockPage != nil {
		kcall.Munmap(p.clockPage)
		p.clockPage = nil
	}
	if p.clockInfo != nil {
		kcall.Munmap(p.clockInfo)
		p.clockInfo = nil
	}
	// clean_dyn_uars: the pages of the bfregs on the dedicated list, in
	// list order (QPs put theirs back at the tail), then the shared list,
	// then the NC UAR. mlx5_free_uar acts only on a page's first bfreg.
	// A page none of whose first bfreg is listed (its QP still open)
	// stays mapped, as in libmlx5; the kernel frees it with the context.
	for _, list := range [][]*mlx5BF{p.dedicated, p.sharedList} {
		for _, bf := range list {
			if bf.first && bf.uar != nil && bf.uar != p.ncUAR {
				p.destroyDynUAR(bf.uar)
			}
		}
	}
	if p.ncUAR != nil {
		p.destroyDynUAR(p.ncUAR)
	}
	p.dedicated, p.sharedList, p.ncUAR = nil, nil, nil
	p.dbMu.Lock()
	for _, pg := range p.dbAll {
		unix.Munmap(pg.mem)
	}
	p.dbAll, p.dbAvail = nil, nil
	p.dbMu.Unlock()
	return nil
}

// mmapAnon maps n bytes (whole pages) of zeroed anonymous memory, excluded
// from fork (libmlx5 mlx5_alloc_buf: posix_memalign + ibv_dontfork_range).
func mmapAnon(n int) ([]byte, error) {
	page := kcall.PageSize()
	n = (n + page - 1) / page * page
	mem, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, err
	}
	_ = unix.Madvise(mem, unix.MADV_DONTFORK)
	return mem, nil
}

// Doorbell records (dbrec.c).

type mlx5DBPage struct {
	mem    []byte
	numDB  int
	useCnt int
	free   []uint64
}

// allocDB is mlx5_alloc_dbrec: the first available page (the most
// recently added or refilled), its lowest free cache-line slot.
func (p *mlx5Provider) allocDB() (*[2]uint32, error) {
	p.dbMu.Lock()
	defer p.dbMu.Unlock()
	var pg *mlx5DBPage
	if len(p.dbAvail) > 0 {
		pg = p.dbAvail[0]
	} else {
		mem, err := mmapAnon(p.pageSize)
		if err != nil {
			return nil, err
		}
		n := p.pageSize / p.cacheLine
		pg = &mlx5DBPage{mem: mem, numDB: n, free: make([]uint64, (n+63)/64)}
		for i := range pg.free {
			pg.free[i] = ^uint64(0)
		}
		p.dbAll = append(p.dbAll, pg)
		p.dbAvail = append([]*mlx5DBPage{pg}, p.dbAvail...) // list_add: head
	}
	pg.useCnt++
	if pg.useCnt == pg.numDB {
		p.dbAvail = removePage(p.dbAvail, pg)
	}
	i := 0
	for pg.free[i] == 0 {
		i++
	}
	j := bits.TrailingZeros64(pg.free[i])
	pg.free[i] &^= 1 << j
	off := (i*64 + j) * p.cacheLine
	return (*[2]uint32)(unsafe.Pointer(&pg.mem[off])), nil
}

func removePage(l []*mlx5DBPage, pg *mlx5DBPage) []*mlx5DBPage {
	for i, e := range l {
		if e == pg {
			return append(l[:i:i], l[i+1:]...)
		}
	}
	return l
}

// freeDB is mlx5_free_db.
func (p *mlx5Provider) freeDB(db *[2]uint32) {
	if db == nil {
		return
	}
	p.dbMu.Lock()
	defer p.dbMu.Unlock()
	a := uintptr(unsafe.Pointer(db))
	for _, pg := range p.dbAll {
		base := uintptr(unsafe.Pointer(&pg.mem[0]))
		if a < base || a >= base+uintptr(len(pg.mem)) {
			continue
		}
		i := int(a-base) / p.cacheLine
		pg.free[i/64] |= 1 << (i % 64)
		if pg.useCnt == pg.numDB {
			p.dbAvail = append([]*mlx5DBPage{pg}, p.dbAvail...)
		}
		pg.useCnt--
		if pg.useCnt == 0 {
			p.dbAvail = removePage(p.dbAvail, pg)
			p.dbAll = removePage(p.dbAll, pg)
			unix.Munmap(pg.mem)
		}
		return
	}
}

// mlx5RsnTable is the uidx_table / qp_table: two levels of 4096 entries,
// read lock-free by poll (atomic pointers) and written under mu.
type mlx5RsnTable struct {
	mu     sync.Mutex
	tables [mlx5TableSize]atomic.Pointer[mlx5RsnLeaf]
	refcnt [mlx5TableSize]int
}

type mlx5RsnLeaf [mlx5TableMask + 1]atomic.Pointer[mlx5QP]

// store is mlx5_store_uidx: the first free index of the first table
// with fewer than 4095 entries (get_free_uidx).
func (t *mlx5RsnTable) store(q *mlx5QP) (uint32, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tind := 0
	for tind < mlx5TableSize && t.refcnt[tind] >= mlx5TableMask {
		tind++
	}
	if tind == mlx5TableSize {
		return 0, false
	}
	leaf := t.tables[tind].Load()
	if t.refcnt[tind] == 0 {
		leaf = new(mlx5RsnLeaf)
		t.tables[tind].Store(leaf)
	}
	i := 0
	for i < mlx5TableMask+1 && leaf[i].Load() != nil {
		i++
	}
	t.refcnt[tind]++
	leaf[i].Store(q)
	return uint32(tind<<mlx5TableShift | i), true
}

// storeAt is mlx5_store_qp (by QP number, cqe_version 0).
func (t *mlx5RsnTable) storeAt(n uint32, q *mlx5QP) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tind := int(n>>mlx5TableShift) % mlx5TableSize
	if t.refcnt[tind] == 0 {
		t.tables[tind].Store(new(mlx5RsnLeaf))
	}
	t.refcnt[tind]++
	t.tables[tind].Load()[n&mlx5TableMask].Store(q)
}

// clear is mlx5_clear_uidx / mlx5_clear_qp.
func (t *mlx5RsnTable) clear(n uint32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tind := int(n>>mlx5TableShift) % mlx5TableSize
	if t.refcnt[tind] == 0 {
		return
	}
	t.refcnt[tind]--
	if t.refcnt[tind] == 0 {
		t.tables[tind].Store(nil)
	} else {
		t.tables[tind].Load()[n&mlx5TableMask].Store(nil)
	}
}

// find is mlx5_find_uidx / mlx5_find_qp; n is a 24-bit CQE field.
func (t *mlx5RsnTable) find(n uint32) *mlx5QP {
	leaf := t.tables[(n>>mlx5TableShift)%mlx5TableSize].Load()
	if leaf == nil {
		return nil
	}
	return leaf[n&mlx5TableMask].Load()
}

// Address handles (verbs.c mlx5_create_ah 3153).

// mlx5AV is struct mlx5_wqe_av (48 bytes), kept in WQE byte order.
type mlx5AV [48]byte

// ib_to_mlx5_rate_table (verbs.c 3103).
var mlx5RateTable = [...]uint8{0, 0, 7, 8, 9, 10, 11, 12, 13, 14, 15, 11, 13, 15, 0, 9, 15, 0, 0, 9, 13, 0, 0}

// pdData is the room for struct mlx5_alloc_pd_resp's pdn, which
// libmlx5 asks for (mlx5_alloc_pd) and this package does not use.
func (*mlx5Provider) pdData() []byte { return make([]byte, 4) }

// ahData is the start of mlx5_create_ah: a port out of range, or an AH
// without a GRH on a RoCE port or on one that requires a GRH, fails
// before the kernel sees it.
func (p *mlx5Provider) ahData(a qp.AH) ([]byte, error) {
	port := int(a.PortNum)
	if port < 1 || port > min(p.numPorts, mlx5MaxPortsNum) {
		return nil, fmt.Errorf("%w: port %d", ErrInvalidArgument, port)
	}
	if !a.IsGlobal && (p.linkLayer[port-1] == LinkEthernet || p.portFlags[port-1] != 0) {
		return nil, fmt.Errorf("%w: an AH without a GRH on port %d, which needs one", ErrInvalidArgument, port)
	}
	if p.linkLayer[port-1] == LinkEthernet {
		if err := p.gidTypeErr(port, int(a.GRH.SGIDIndex)); err != nil {
			return nil, err
		}
	}
	return make([]byte, unsafe.Sizeof(abi.MLX5CreateAHResp{})), nil
}

// ahCreated builds the address vector from the attributes and the
// CREATE_AH response's dmac (RoCE), and gives the AH its index.
func (p *mlx5Provider) ahCreated(ah *AH, out []byte) {
	a := &ah.Attr
	var av mlx5AV
	port := int(a.PortNum)
	isEth := false
	if port >= 1 && port <= mlx5MaxPortsNum {
		isEth = p.linkLayer[port-1] == LinkEthernet
	}
	var rate uint8
	if int(a.StaticRate) < len(mlx5RateTable) {
		rate = mlx5RateTable[a.StaticRate]
	}
	var grh uint32
	if isEth {
		if p.gidIsRoCEv2(port, int(a.GRH.SGIDIndex)) {
			binary.BigEndian.PutUint16(av[14:], mlx5UDPSport(a.GRH.FlowLabel))
		}
		av[12] = rate<<4 | (a.SL&7)<<1
		if mlx5Mutant == mutantAVSL {
			av[12] = rate<<4 | a.SL&7
		}
	} else {
		av[13] = a.SrcPathBits & 0x7f
		binary.BigEndian.PutUint16(av[14:], a.DLID)
		grh = 1
		av[12] = rate<<4 | a.SL&0xf
	}
	if a.IsGlobal {
		av[26] = a.GRH.TrafficClass
		av[27] = a.GRH.HopLimit
		binary.BigEndian.PutUint32(av[28:], grh<<30|uint32(a.GRH.SGIDIndex)<<20|a.GRH.FlowLabel&0xfffff)
		switch mlx5Mutant {
		case mutantAVTC:
			av[26] = 0
		case mutantAVHop:
			av[27] = 0
		case mutantAVFlow:
			binary.BigEndian.PutUint32(av[28:], grh<<30|uint32(a.GRH.SGIDIndex)<<20|a.GRH.FlowLabel&0xffff)
		case mutantAVGRHLE:
			binary.LittleEndian.PutUint32(av[28:], grh<<30|uint32(a.GRH.SGIDIndex)<<20|a.GRH.FlowLabel&0xfffff)
		}
		copy(av[32:], a.GRH.DGID[:])
	}
	if isEth && len(out) >= 12 && mlx5Mutant != mutantAVRMAC {
		copy(av[20:26], out[4:10]) // resp.dmac
	}
	p.ahMu.Lock()
	ah.num = uint32(len(p.avs))
	p.avs = append(p.avs, &av)
	p.ahMu.Unlock()
}

// gidIsRoCEv2 is ibv_query_gid_type: the sysfs gid_attrs type.
func (p *mlx5Provider) gidIsRoCEv2(port, idx int) bool {
	if p.x == nil || p.x.dev.SysPath == "" {
		return false
	}
	b, err := os.ReadFile(filepath.Join(p.x.dev.SysPath, "ports", fmt.Sprint(port), "gid_attrs", "types", fmt.Sprint(idx)))
	return err == nil && strings.TrimSpace(string(b)) == "RoCE v2"
}

// gidTypeErr is where ibv_query_gid_type fails in mlx5_create_ah: a GID
// index without a type in sysfs on a port that has GID attributes, i.e.
// past the port's GID table. The kernel's QUERY_GID_ENTRY refuses it with
// EINVAL, libibverbs' sysfs fallback (write() mode) with EFAULT. An entry
// whose type cannot be read (EINVAL: an empty GID) is RoCE v1, as there.
func (p *mlx5Provider) gidTypeErr(port, idx int) error {
	if p.x == nil || p.x.dev.SysPath == "" {
		return nil
	}
	dir := filepath.Join(p.x.dev.SysPath, "ports", fmt.Sprint(port), "gid_attrs")
	_, err := os.ReadFile(filepath.Join(dir, "types", fmt.Sprint(idx)))
	if err == nil || errors.Is(err, unix.EINVAL) {
		return nil
	}
	if _, err := os.Stat(dir); err != nil {
		return nil // a kernel without GID attributes: every GID is v1
	}
	errno := unix.EFAULT
	if p.x.nativeIoctl {
		errno = unix.EINVAL
	}
	return fmt.Errorf("no type for GID %d of port %d: %w", idx, port, errno)
}

// mlx5UDPSport is mlx5_ah_set_udp_sport: ibv_flow_label_to_udp_sport of
// a non-zero flow label, else a random port in 0xC000..0xFFFF (random in
// libmlx5 too, so not byte-comparable).
func mlx5UDPSport(fl uint32) uint16 {
	fl &= 0xfffff
	if fl == 0 {
		return uint16(0xc000 + rand.IntN(0x4000))
	}
	lo, hi := fl&0x3fff, fl&0xfc000
	if mlx5Mutant != mutantAVSport {
		lo ^= hi >> 14
	}
	return uint16(lo | 0xc000)
}

func (p *mlx5Provider) av(num uint32) *mlx5AV {
	p.ahMu.RLock()
	defer p.ahMu.RUnlock()
	if int(num) < len(p.avs) {
		return p.avs[num]
	}
	return nil
}

// ECE (verbs.c mlx5_set_ece 1990, mlx5_query_ece 2015, mlx5_modify_qp).

// createQPCmd is the create-QP driver input before sizing: with ECE
// supported, ece_options asks for ECE version 1 (create_qp: "Create QP
// should start from ECE version 1 as a trigger").
func (p *mlx5Provider) createQPCmd() abi.MLX5CreateQP {
	var c abi.MLX5CreateQP
	if p.eceSupported && mlx5Mutant != mutantECECreate {
		c.ECEOptions = mlx5ECEVersion1
	}
	return c
}

// qpCreated records the firmware's ECE choice from the create response.
func (p *mlx5Provider) qpCreated(q *QP, out []byte) {
	resp := abi.Decode[abi.MLX5CreateQPResp](out)
	mlx5State(q).getECE = resp.ECEOptions
}

func mlx5State(q *QP) *mlx5QP {
	s, _ := q.drv.(*mlx5QP)
	if s == nil {
		s = &mlx5QP{q: q}
		q.drv = s
	}
	return s
}

// modifyQPData sends EX_MODIFY_QP with mlx5_ib_modify_qp.ece_options when
// SetECE left options to apply (mlx5_modify_qp: attr_mask & RATE_LIMIT
// or set_ece).
func (p *mlx5Provider) modifyQPData(q *QP, _ *qp.Attr, _ qp.Mask) (in, out []byte, ex bool) {
	s := mlx5State(q)
	if s.setECE == 0 || mlx5Mutant == mutantECEModify {
		return nil, nil, false
	}
	req := abi.MLX5ModifyQP{ECEOptions: s.setECE}
	return append([]byte(nil), abi.Bytes(&req)...), make([]byte, unsafe.Sizeof(abi.MLX5ModifyQPResp{})), true
}

// modifyQPDone: after a successful modify with ECE pending, get_ece takes
// the kernel's answer (0 when it wrote none) and set_ece is cleared; a
// move to RESET cleans the CQs and resets the queues; the new state
// gates posting (set_qp_operational_state).
func (p *mlx5Provider) modifyQPDone(q *QP, attr *qp.Attr, mask qp.Mask, out []byte) {
	s := mlx5State(q)
	if s.setECE != 0 {
		var resp abi.MLX5ModifyQPResp
		if len(out) > 0 {
			resp = abi.Decode[abi.MLX5ModifyQPResp](out)
		}
		s.getECE = resp.ECEOptions
		s.setECE = 0
	}
	if attr != nil && mask&qp.MaskState != 0 && s.p != nil {
		s.stateChanged(attr.State, true)
	}
}

// queryECE returns {0x15b3, options the device reported, 0}.
func (p *mlx5Provider) queryECE(q *QP) (ece.ECE, error) {
	return ece.ECE{VendorID: abi.MLX5VendorID, Options: mlx5State(q).getECE}, nil
}

// setECE requires comp_mask 0 and the Mellanox vendor id (EINVAL
// otherwise) and a context with ECE support (EOPNOTSUPP otherwise); it
// stores the options for the next modify and clears the reported ones.
func (p *mlx5Provider) setECE(q *QP, e ece.ECE) error {
	dev := q.pd.ctx.dev.Name
	if e.CompMask != 0 || e.VendorID != abi.MLX5VendorID {
		return &rdma.OpError{Pkg: "uverbs", Op: "set ECE", Device: dev, Err: fmt.Errorf("vendor %#x comp_mask %#x (mlx5 takes vendor %#x, comp_mask 0): %w", e.VendorID, e.CompMask, abi.MLX5VendorID, unix.EINVAL)}
	}
	if !p.eceSupported {
		return notSupported("set ECE", dev, "the device firmware has no ECE (context comp_mask lacks MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_ECE)")
	}
	s := mlx5State(q)
	s.setECE = e.Options
	if mlx5Mutant != mutantECEClear {
		s.getECE = 0
	}
	return nil
}

// mlx5PCIDevices is libmlx5's hca_table (rdma-core v44 mlx5.c): the PCI
// device ids of vendor 0x15b3 that the mlx5 provider drives, from
// Connect-IB to BlueField-4, virtual functions included.
var mlx5PCIDevices = [...]uint16{
	0x1011, 0x1012, // Connect-IB, VF
	0x1013, 0x1014, // ConnectX-4, VF
	0x1015, 0x1016, // ConnectX-4 Lx, VF
	0x1017, 0x1018, // ConnectX-5, VF
	0x1019, 0x101a, // ConnectX-5 Ex, VF
	0x101b, 0x101c, // ConnectX-6, VF
	0x101d,         // ConnectX-6 Dx
	0x101e,         // ConnectX family mlx5Gen VF
	0x101f,         // ConnectX-6 Lx
	0x1021,         // ConnectX-7
	0x1023,         // ConnectX-8
	0xa2d2, 0xa2d3, // BlueField (ConnectX-5), VF
	0xa2d6, // BlueField-2 (ConnectX-6 Dx)
	0xa2dc, // BlueField-3 (ConnectX-7)
	0xa2df, // BlueField-4 (ConnectX-8)
}

// isMLX5PCI reports a PCI id the mlx5 provider drives (vendor 0x15b3 and
// a device of hca_table).
func isMLX5PCI(vendor, device uint16) bool {
	if uint32(vendor) != abi.MLX5VendorID {
		return false
	}
	for _, d := range mlx5PCIDevices {
		if d == device {
			return true
		}
	}
	return false
}
