//go:build linux

package mlx5sim

import (
	"fmt"

	"github.com/go-rdma/rdmacm/internal/abi"
	"golang.org/x/sys/unix"
)

// The mlx5_ib driver parts: ucontext (main.c mlx5_ib_alloc_ucontext,
// calc_total_bfregs, set_ucontext_resp), bfreg allocation (qp.c
// alloc_bfreg), UAR objects (MLX5_IB_METHOD_UAR_OBJ_ALLOC) and mmap
// (mlx5_ib_mmap, uar_mmap).

const (
	mlx5AllocUctxDevX = 1 << 0 // MLX5_IB_ALLOC_UCTX_DEVX
	mlx5LibCapDynUAR  = 1 << 1 // MLX5_LIB_CAP_DYN_UAR
	mlx5MaxBfregs     = 512 * 2
	mlx5MaxDynBfregs  = 1024 // MLX5_MAX_DYN_BFREGS
	mlx5BfRegSize     = 512  // 1 << log_bf_reg_size
	mlx5CQEVersion    = 1    // firmware cqe_version

	respMaskCoreClock = 1 << 0
	respMaskDumpFill  = 1 << 1
	respMaskECE       = 1 << 2
	dumpFillMkey      = 0x00000100
)

// mlx5AllocUcontext answers the driver part of GET_CONTEXT.
func (c *call) mlx5AllocUcontext() ([]byte, unix.Errno) {
	in := c.drvIn
	c.descf(" drv{%s}", descUcontextReq(in))
	// The retried open without DEVX is what gets compared; the first try
	// is a probe of firmware DEVX support.
	const minV2 = 16 // offsetof(struct mlx5_ib_alloc_ucontext_req_v2, max_cqe_version)
	if len(in) != 8 && len(in) < minV2 {
		return nil, unix.EINVAL
	}
	req := abi.Decode[abi.MLX5AllocUcontextReqV2](in)
	if req.Flags&^mlx5AllocUctxDevX != 0 {
		return nil, unix.EOPNOTSUPP
	}
	if req.CompMask != 0 || req.Reserved0 != 0 || req.Reserved1 != 0 || req.Reserved2 != 0 {
		return nil, unix.EOPNOTSUPP
	}
	u := c.c
	dyn := c.d.p.DynamicUAR && req.LibCaps&mlx5LibCapDynUAR != 0
	total := int(req.TotalNumBfregs)
	numDyn := 0
	// With MLX5_LIB_CAP_4K_UAR a system page holds PAGE_SIZE/4096 UARs
	// of two non-fast-path bfregs each (calc_total_bfregs; firmware with
	// uar_4k, whose num_of_uars_per_page the driver sets to that).
	uarsPerPage := 1
	if req.LibCaps&abi.MLX5LibCap4KUAR != 0 {
		uarsPerPage = int(c.d.pageSize() / 4096)
	}
	bfregsPerPage := 2 * uarsPerPage
	if !dyn {
		if total == 0 {
			return nil, unix.EINVAL
		}
		if total > mlx5MaxBfregs {
			return nil, unix.ENOMEM
		}
		total = (total + bfregsPerPage - 1) / bfregsPerPage * bfregsPerPage
		if int(req.NumLowLatencyBfregs) > total-1 {
			return nil, unix.EINVAL
		}
		numDyn = mlx5MaxDynBfregs
	}
	if req.Flags&mlx5AllocUctxDevX != 0 {
		// mlx5_ib_devx_create: no log_max_uctx in this firmware.
		c.skip = true
		return nil, unix.EINVAL
	}
	u.dynUAR = dyn
	u.lowLat = int(req.NumLowLatencyBfregs)
	if !dyn {
		u.staticPages = total / bfregsPerPage
		u.bfregCount = make([]int, total)
	} else {
		u.staticPages, u.bfregCount, total = 0, nil, 0
	}
	u.cqeVersion = min(mlx5CQEVersion, req.MaxCQEVersion)
	r := abi.MLX5AllocUcontextResp{
		QPTabSize: 1 << 18, BfRegSize: mlx5BfRegSize, TotBfregs: uint32(total), CacheLineSize: 64,
		MaxSQDescSz: 1024, MaxRQDescSz: 512, MaxSendWqebb: 1 << 15, MaxRecvWR: 1 << 15, MaxSRQRecvWR: 1 << 15,
		NumPorts: 1, CompMask: respMaskDumpFill, CQEVersion: u.cqeVersion,
		CmdsSuppUhw:  3, // MLX5_USER_CMDS_SUPP_UHW_QUERY_DEVICE | _CREATE_AH
		EthMinInline: 1, // MLX5_INLINE_MODE_NONE + 1
		LogUARSize:   12, NumUARsPerPage: uint32(c.d.pageSize() / 4096), NumDynBfregs: uint32(numDyn), DumpFillMkey: dumpFillMkey,
	}
	if !c.d.p.NoClock {
		// x86: core clock at offsetof(mlx5_init_seg, internal_timer_h) %
		// PAGE_SIZE = 0; clock info page version 1.
		r.CompMask |= respMaskCoreClock
		r.ClockInfoVersions = 1
	}
	if c.d.p.ECE {
		r.CompMask |= respMaskECE
	}
	n := min(len(abi.Bytes(&r)), c.drvOut.n)
	r.ResponseLength = uint32(n)
	return append([]byte(nil), abi.Bytes(&r)[:n]...), 0
}

func descUcontextReq(in []byte) string {
	r := abi.Decode[abi.MLX5AllocUcontextReqV2](in)
	return fmt.Sprintf("bfregs=%d lowlat=%d flags=%#x comp_mask=%#x max_cqe_version=%d rsv=%d/%d/%d lib_caps=%#x len=%d",
		r.TotalNumBfregs, r.NumLowLatencyBfregs, r.Flags, r.CompMask, r.MaxCQEVersion, r.Reserved0, r.Reserved1, r.Reserved2, r.LibCaps, len(in))
}

func (c *call) descContextResp(b []byte) {
	r := abi.Decode[abi.MLX5AllocUcontextResp](b)
	c.resf(" drv_out{tot_bfregs=%d bf_reg_size=%d cqe_version=%d comp_mask=%#x dyn_bfregs=%d len=%d}",
		r.TotBfregs, r.BfRegSize, r.CQEVersion, r.CompMask, r.NumDynBfregs, len(b))
}

// mlx5CreateCQ is struct mlx5_ib_create_cq.
type mlx5CreateCQ struct {
	BufAddr, DBAddr          uint64
	CQESize                  uint32
	CQECompEn, CQECompResFmt uint8
	Flags, UARPageIndex      uint16
	Reserved0                uint16
	Reserved1                uint32
}

func decodeCreateCQ(b []byte) mlx5CreateCQ {
	var p [32]byte
	copy(p[:], b)
	n := abi.Native
	return mlx5CreateCQ{BufAddr: n.Uint64(p[0:]), DBAddr: n.Uint64(p[8:]), CQESize: n.Uint32(p[16:]), CQECompEn: p[20],
		CQECompResFmt: p[21], Flags: n.Uint16(p[22:]), UARPageIndex: n.Uint16(p[24:]), Reserved0: n.Uint16(p[26:]), Reserved1: n.Uint32(p[28:])}
}

func (d *Device) descCreateCQDrv(name string, b []byte) string {
	u := decodeCreateCQ(b)
	buf := name + ".buf"
	if u.BufAddr == 0 {
		buf = "0"
	}
	return fmt.Sprintf("buf=%s db=%s cqe_size=%d comp=%d/%d flags=%#x uar_page=%s rsv=%d/%d len=%d",
		buf, d.dbName(u.DBAddr), u.CQESize, u.CQECompEn, u.CQECompResFmt, u.Flags, d.uarPageName(uint32(u.UARPageIndex), u.Flags&2 != 0), u.Reserved0, u.Reserved1, len(b))
}

func (d *Device) descCreateQPDrv(name string, b []byte) string {
	u := abi.Decode[abi.MLX5CreateQP](b)
	buf := name + ".buf"
	if u.BufAddr == 0 {
		buf = "0"
	}
	bf := fmt.Sprintf("%d", u.BfregIndex)
	if u.Flags&qpFlagUARPageIndex != 0 {
		bf = d.uarPageName(u.BfregIndex, true)
	}
	return fmt.Sprintf("buf=%s db=%s sq=%d rq=%d rq_shift=%d flags=%#x uidx=%d bfreg=%s sq_buf=%s ece=%#x dci=%d/%d rsv=%d len=%d",
		buf, d.dbName(u.DBAddr), u.SQWQECount, u.RQWQECount, u.RQWQEShift, u.Flags, u.UIdx, bf, d.ptrName(u.SQBufAddr),
		u.ECEOptions, u.LogNumConcurent, u.LogNumErrored, u.Reserved, len(b))
}

// uarPageName names a firmware UAR page id by the UAR object owning it
// (page ids differ between runs only if allocation order does).
func (d *Device) uarPageName(id uint32, used bool) string {
	if !used {
		return fmt.Sprintf("%d", id)
	}
	for _, o := range d.objs {
		if o.kind == "uar" && d.uarHolds(o, id) {
			if id != o.pageID {
				return fmt.Sprintf("%s+%d", o.name, id-o.pageID) // a 4K UAR of a larger system page
			}
			return o.name
		}
	}
	return fmt.Sprintf("?%#x", id)
}

func (c *call) uarByPage(id uint32) *object {
	for _, o := range c.c.handles {
		if o.kind == "uar" && c.d.uarHolds(o, id) {
			return o
		}
	}
	return nil
}

// uarHolds reports whether UAR object o's system page holds firmware UAR
// page id: with 4K UARs, a system page of PAGE_SIZE holds PAGE_SIZE/4096
// of them, from o.pageID on.
func (d *Device) uarHolds(o *object, id uint32) bool {
	return id >= o.pageID && uint64(id-o.pageID) < d.pageSize()/4096
}

// allocBfreg is qp.c alloc_bfreg: a free low-latency (high class) bfreg,
// else the least used medium one; bfreg 0 is never given (no BlueFlame).
func (u *uctx) allocBfreg() (int, unix.Errno) {
	if u.dynUAR {
		return 0, unix.EINVAL
	}
	maxB := len(u.bfregCount)
	med := max(maxB-u.lowLat-1, 0) // num_med_bfreg
	firstHi := med + 1
	for i := firstHi; i < maxB; i++ {
		if u.bfregCount[i] == 0 {
			u.bfregCount[i]++
			return i, 0
		}
	}
	if med == 0 {
		return 0, unix.ENOMEM
	}
	minIdx := 1
	for i := 1; i < firstHi; i++ {
		if u.bfregCount[i] < u.bfregCount[minIdx] {
			minIdx = i
		}
		if u.bfregCount[minIdx] == 0 {
			break
		}
	}
	u.bfregCount[minIdx]++
	return minIdx, 0
}

// ---- UAR objects (dynamic UARs) ----

const mmapOffsetStart = 9 // MLX5_IB_MMAP_OFFSET_START

// uarMmapOffset is mlx5_entry_to_mmap_offset for entry k of the
// [9<<16, ...) mmap range.
func (d *Device) uarMmapOffset(k int) uint64 {
	pg := uint64(mmapOffsetStart)<<16 | uint64(k)
	cmd, idx := pg>>16&0xffff, pg&0xffff
	return (idx>>8<<16 | cmd<<8 | idx&0xff) * d.pageSize()
}

func (c *call) ioctlUARAlloc() unix.Errno {
	t, _, e := c.ic.constv(0x1001)
	name := c.d.peek("dynuar")
	c.descf("UAR_OBJ_ALLOC %s type=%d", name, t)
	if e != 0 {
		return c.finish(e)
	}
	if t > 1 { // MLX5_IB_UAPI_UAR_ALLOC_TYPE_BF / _NC
		return c.finish(unix.EOPNOTSUPP)
	}
	k := 0
	for c.c.mmapEntries[k] != nil {
		k++
	}
	o := &object{kind: "uar", name: c.d.next("dynuar"), pageID: c.d.nextUARPage, mmapIdx: k, nc: t == 1}
	c.d.nextUARPage += uint32(c.d.pageSize() / 4096) // one system page of 4K UARs
	c.add(o)
	c.c.mmapEntries[k] = o
	var off [8]byte
	var length, page [4]byte
	abi.Native.PutUint64(off[:], c.d.uarMmapOffset(k))
	abi.Native.PutUint32(length[:], uint32(c.d.pageSize()))
	abi.Native.PutUint32(page[:], o.pageID)
	for _, e := range []unix.Errno{c.ic.out(0x1002, off[:]), c.ic.out(0x1003, length[:]), c.ic.out(0x1004, page[:]), c.ic.setData(0x1000, uint64(o.handle))} {
		if e != 0 {
			c.d.destroyObject(o)
			return c.finish(e)
		}
	}
	c.resf("handle=%d offset=%#x length=%d page_id=%#x", o.handle, c.d.uarMmapOffset(k), c.d.pageSize(), o.pageID)
	return c.finish(0)
}

func (c *call) ioctlUARDestroy() unix.Errno {
	h, _ := c.ic.data(0x1000)
	o := c.get("uar", uint32(h))
	c.descf("UAR_OBJ_DESTROY %s", nameOf(o))
	if o == nil {
		return c.finish(unix.ENOENT)
	}
	c.d.destroyObject(o)
	return c.finish(0)
}

// ---- mmap ----

// MLX5_IB_MMAP commands (mlx5-abi.h enum mlx5_ib_mmap_cmd).
const (
	mmapRegular   = 0
	mmapContig    = 1
	mmapWC        = 2
	mmapNC        = 3
	mmapCoreClock = 5
	mmapAllocWC   = 6
	mmapClockInfo = 7
	mmapDeviceMem = 8
	mmapCmdShift  = 8
	mmapCmdMask   = 0xff
	protWrite     = unix.PROT_WRITE
)

// Mmap answers mmap(addr, length, prot, MAP_SHARED, fd, offset) on a
// uverbs fd; the caller has already mapped anonymous shared memory at
// addr, which stands for the device page. It checks the offset the way
// mlx5_ib_mmap does.
func (d *Device) Mmap(mem Mem, fd int, addr, length, offset uint64, prot int) unix.Errno {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.ctxFor(fd)
	pageSize := d.pageSize()
	pgoff := offset / pageSize // vm_pgoff
	cmd := pgoff >> mmapCmdShift & mmapCmdMask
	idx := pgoff & 0xff
	ext := pgoff>>16<<8 | idx // get_extended_index
	line := fmt.Sprintf("MMAP off=%#x cmd=%d idx=%d len=%d prot=%#x", offset, cmd, ext, length, prot)
	fail := func(e unix.Errno) unix.Errno {
		d.emit(line + " -> " + errName(e))
		return e
	}
	if offset&(pageSize-1) != 0 {
		return fail(unix.EINVAL)
	}
	if !c.ready {
		return fail(unix.EINVAL)
	}
	m := &mapping{addr: addr, length: length}
	switch cmd {
	case mmapWC, mmapAllocWC, mmapNC, mmapRegular:
		// uar_mmap.
		if c.dynUAR || length != pageSize {
			return fail(unix.EINVAL)
		}
		i, maxIdx := int(idx), c.staticPages
		if cmd == mmapAllocWC {
			i, maxIdx = int(ext)+c.staticPages, c.staticPages+mlx5MaxDynBfregs/2
		}
		if i >= maxIdx {
			return fail(unix.EINVAL)
		}
		m.name = fmt.Sprintf("uar%d", i)
		if cmd == mmapNC {
			m.name += "nc"
		}
		m.reg = d.addWatched(nil, m.name, addr, int(pageSize))
	case mmapContig:
		return fail(unix.ENOSYS)
	case mmapCoreClock:
		if length != pageSize {
			return fail(unix.EINVAL)
		}
		if prot&protWrite != 0 {
			return fail(unix.EPERM)
		}
		m.name = "core_clock"
	case mmapClockInfo:
		// mlx5_ib_mmap_clock_info_page.
		if length != pageSize {
			return fail(unix.EINVAL)
		}
		if idx != 0 { // MLX5_IB_CLOCK_INFO_V1
			return fail(unix.EOPNOTSUPP)
		}
		if prot&protWrite != 0 {
			return fail(unix.EPERM)
		}
		if d.p.NoClock {
			return fail(unix.EOPNOTSUPP)
		}
		m.name = "clock_info"
	default:
		// mlx5_ib_mmap_offset: an rdma_user_mmap entry (dynamic UARs).
		if cmd != mmapOffsetStart {
			return fail(unix.EINVAL)
		}
		o := c.mmapEntries[int(ext)]
		if o == nil || o.released && o.mapped == 0 {
			return fail(unix.EINVAL)
		}
		if length != pageSize {
			return fail(unix.EINVAL)
		}
		o.mapped++
		m.uar = o
		m.name = o.name
		m.reg = d.addWatched(nil, o.name, addr, int(pageSize))
	}
	c.maps[addr] = m
	d.emit(fmt.Sprintf("%s %s -> ok", line, m.name))
	return 0
}

// Munmap answers munmap of a mapping Mmap made.
func (d *Device) Munmap(mem Mem, addr, length uint64) unix.Errno {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range d.ctxs {
		m := c.maps[addr]
		if m == nil {
			continue
		}
		delete(c.maps, addr)
		if m.reg != nil {
			d.dropRegion(m.reg)
		}
		if o := m.uar; o != nil {
			o.mapped--
			if o.released && o.mapped == 0 {
				delete(c.mmapEntries, o.mmapIdx)
			}
		}
		d.emit(fmt.Sprintf("MUNMAP %s len=%d", m.name, length))
		return 0
	}
	d.emit(fmt.Sprintf("~ MUNMAP unknown len=%d", length))
	return 0
}
