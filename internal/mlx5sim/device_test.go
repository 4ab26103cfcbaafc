//go:build linux

package mlx5sim

import (
	"strings"
	"testing"

	"github.com/go-rdma/rdmacm/internal/abi"
	"golang.org/x/sys/unix"
)

const testFD = 7

func TestGetContextIoctl(t *testing.T) {
	d := New(DefaultProfile())
	m := newFakeMem()
	// libibverbs' has_ioctl_write probe: INVOKE_WRITE of QUERY_DEVICE
	// without buffers must fail with ENOSPC.
	p := newIoc(m, 0, 0)
	p.constv(abi.UverbsAttrWriteCmd, uint64(abi.UverbsCmdQueryDevice))
	if e := p.do(t, d, testFD); e != unix.ENOSPC {
		t.Fatalf("probe: %v, want ENOSPC", e)
	}
	// With DEVX: no firmware uctx support, EINVAL (libmlx5 retries).
	req := abi.MLX5AllocUcontextReqV2{TotalNumBfregs: 16, NumLowLatencyBfregs: 4, MaxCQEVersion: 1, Flags: 1, LibCaps: 3}
	c := newIoc(m, 0, 3)
	c.out(0, 4)
	c.in(uhwIn, abi.Bytes(&req))
	c.out(uhwOut, 72)
	if e := c.do(t, d, testFD); e != unix.EINVAL {
		t.Fatalf("GET_CONTEXT with DEVX: %v, want EINVAL", e)
	}
	// Driver id must be mlx5's.
	r := openCtx(t, d, m, testFD, 3)
	if r.TotBfregs != 16 || r.BfRegSize != 512 || r.CQEVersion != 1 || r.NumUARsPerPage != 1 || r.LogUARSize != 12 {
		t.Errorf("context resp %+v", r)
	}
	if r.CompMask&abi.MLX5AllocUcontextRespMaskECE == 0 || r.CompMask&1 == 0 || r.ResponseLength != 72 {
		t.Errorf("comp_mask %#x response_length %d", r.CompMask, r.ResponseLength)
	}
	// A second GET_CONTEXT on the same fd fails.
	c = newIoc(m, 0, 3)
	c.out(0, 4)
	if e := c.do(t, d, testFD); e != unix.EINVAL {
		t.Errorf("second GET_CONTEXT: %v", e)
	}
	tr := strings.Join(d.Trace(), "\n")
	for _, want := range []string{"~ QUERY_DEVICE core_in=0 core_out=0 -> ENOSPC @invoke", "~ GET_CONTEXT ctx0 drv{bfregs=16 lowlat=4 flags=0x1", "GET_CONTEXT ctx0 drv{bfregs=16 lowlat=4 flags=0x0 comp_mask=0x0 max_cqe_version=1 rsv=0/0/0 lib_caps=0x3 len=32} -> ok nvec=8 drv_out{tot_bfregs=16"} {
		if !strings.Contains(tr, want) {
			t.Errorf("trace lacks %q:\n%s", want, tr)
		}
	}
}

func TestGetContextValidOutput(t *testing.T) {
	d := New(DefaultProfile())
	m := newFakeMem()
	req := abi.MLX5AllocUcontextReqV2{TotalNumBfregs: 16, NumLowLatencyBfregs: 4, MaxCQEVersion: 1}
	c := newIoc(m, 0, 3)
	nv := c.out(0, 4)
	c.in(uhwIn, abi.Bytes(&req))
	o := c.out(uhwOut, 72)
	if e := c.do(t, d, testFD); e != 0 {
		t.Fatal(e)
	}
	if c.attrs[nv].Flags&abi.AttrFValidOutput == 0 || c.attrs[o].Flags&abi.AttrFValidOutput == 0 {
		t.Errorf("VALID_OUTPUT not set: %+v", c.attrs)
	}
	if ne.Uint32(c.outBytes(nv)) != numCompVectors {
		t.Errorf("num_comp_vectors %d", ne.Uint32(c.outBytes(nv)))
	}
	// Wrong driver id: EINVAL before anything else.
	bad := newIoc(m, 0, 2)
	bad.constv(0, 1)
	bad.out(1, 48)
	h := abi.IoctlHdr{Length: 24 + 32, ObjectID: 0, MethodID: 2, NumAttrs: 2, DriverID: abi.RDMADriverRXE}
	b := append([]byte(nil), abi.Bytes(&h)...)
	for i := range bad.attrs {
		b = append(b, abi.Bytes(&bad.attrs[i])...)
	}
	if _, _, e := d.Ioctl(m, testFD, abi.RDMAVerbsIoctl, m.put(b), -1); e != unix.EINVAL {
		t.Errorf("driver id rxe: %v", e)
	}
}

func TestGetContextWriteOnly(t *testing.T) {
	p := DefaultProfile()
	p.WriteOnly = true
	d := New(p)
	m := newFakeMem()
	c := newIoc(m, 0, 3)
	c.out(0, 4)
	if e := c.do(t, d, testFD); e != unix.ENOTTY {
		t.Fatalf("ioctl on write-only device: %v", e)
	}
	req := abi.MLX5AllocUcontextReqV2{TotalNumBfregs: 16, NumLowLatencyBfregs: 4, MaxCQEVersion: 1, LibCaps: 3}
	buf, n, resp := wr(m, 0, make([]byte, 8), abi.Bytes(&req), 8, 72)
	ret, used, e := d.Write(m, testFD, buf, uint64(n), 42)
	if e != 0 || ret != int64(n) || !used {
		t.Fatalf("GET_CONTEXT write: ret %d used %v e %v", ret, used, e)
	}
	out := m.bytes(resp, 80)
	if ne.Uint32(out) != 42 || ne.Uint32(out[4:]) != numCompVectors {
		t.Errorf("core resp % x", out[:8])
	}
	r := abi.Decode[abi.MLX5AllocUcontextResp](out[8:])
	if r.TotBfregs != 16 || r.ResponseLength != 72 {
		t.Errorf("drv resp %+v", r)
	}
	// Bad in_words: EINVAL.
	buf, n, _ = wr(m, 3, make([]byte, 8), nil, 4, 4)
	if _, _, e := d.Write(m, testFD, buf, uint64(n+4), -1); e != unix.EINVAL && e != unix.EFAULT {
		t.Errorf("bad count: %v", e)
	}
}

// allocPD runs ALLOC_PD (write) and returns the handle.
func allocPD(t *testing.T, d *Device, m *fakeMem) uint32 {
	t.Helper()
	buf, n, resp := wr(m, 3, make([]byte, 8), nil, 4, 4)
	if _, _, e := d.Write(m, testFD, buf, uint64(n), -1); e != 0 {
		t.Fatalf("ALLOC_PD: %v", e)
	}
	return ne.Uint32(m.bytes(resp, 4))
}

// createCQ runs CQ_CREATE (ioctl) with a buffer and doorbell in fake
// memory; it returns the handle, the buffer address and the cqn.
func createCQ(t *testing.T, d *Device, m *fakeMem, cqe uint32, flags uint16, uarPage uint16) (uint32, uint64, uint32) {
	t.Helper()
	ncqe := 1
	for ncqe < int(cqe)+1 {
		ncqe <<= 1
	}
	buf := m.alloc(ncqe * 64)
	db := m.alloc(4096)
	drv := make([]byte, 32)
	ne.PutUint64(drv, buf)
	ne.PutUint64(drv[8:], db)
	ne.PutUint32(drv[16:], 64)
	ne.PutUint16(drv[22:], flags)
	ne.PutUint16(drv[24:], uarPage)
	c := newIoc(m, 3, 0)
	h := c.add(0, 0, 0)
	c.u32(1, cqe)
	c.add(2, 8, 0x1234)
	c.u32(4, 0)
	rc := c.out(6, 4)
	c.in(uhwIn, drv)
	o := c.out(uhwOut, 8)
	if e := c.do(t, d, testFD); e != 0 {
		t.Fatalf("CQ_CREATE: %v\n%s", e, strings.Join(d.Trace(), "\n"))
	}
	if got := ne.Uint32(c.outBytes(rc)); got != uint32(ncqe-1) {
		t.Errorf("resp cqe %d want %d", got, ncqe-1)
	}
	return uint32(c.attrs[h].Data), buf, ne.Uint32(c.outBytes(o))
}

func TestCreateCQ(t *testing.T) {
	d := New(DefaultProfile())
	m := newFakeMem()
	openCtx(t, d, m, testFD, 3)
	pd := allocPD(t, d, m)
	h, _, cqn := createCQ(t, d, m, 15, 0, 0)
	if pd != 0 || h != 1 || cqn != 0x400 {
		t.Errorf("pd %d cq handle %d cqn %#x", pd, h, cqn)
	}
	_, _, cqn2 := createCQ(t, d, m, 1, 0, 0)
	if cqn2 != 0x401 {
		t.Errorf("second cqn %#x", cqn2)
	}
	tr := strings.Join(d.Trace(), "\n")
	want := "CREATE_CQ cq0 cqe=15 vector=0 channel=- flags=0x0 drv{buf=cq0.buf db=dbpage0+0x0 cqe_size=64 comp=0/0 flags=0x0 uar_page=0 rsv=0/0 len=32} -> ok handle=1 cqe=15 cqn=0x400 @ioctl"
	if !strings.Contains(tr, want) {
		t.Errorf("trace lacks %q:\n%s", want, tr)
	}
	// Bad cqe_size.
	drv := make([]byte, 32)
	ne.PutUint64(drv, m.alloc(4096))
	ne.PutUint64(drv[8:], m.alloc(64))
	ne.PutUint32(drv[16:], 32)
	c := newIoc(m, 3, 0)
	c.add(0, 0, 0)
	c.u32(1, 3)
	c.add(2, 8, 1)
	c.u32(4, 0)
	c.out(6, 4)
	c.in(uhwIn, drv)
	if e := c.do(t, d, testFD); e != unix.EINVAL {
		t.Errorf("cqe_size 32: %v", e)
	}
	// Dynamic UARs: a CQ without a UAR page index is refused.
	dp := DefaultProfile()
	dp.DynamicUAR = true
	d2 := New(dp)
	m2 := newFakeMem()
	if r := openCtx(t, d2, m2, testFD, 3); r.TotBfregs != 0 || r.NumDynBfregs != 0 {
		t.Errorf("dynamic context %+v", r)
	}
	drv2 := make([]byte, 32)
	ne.PutUint64(drv2, m2.alloc(4096))
	ne.PutUint64(drv2[8:], m2.alloc(64))
	ne.PutUint32(drv2[16:], 64)
	c = newIoc(m2, 3, 0)
	c.add(0, 0, 0)
	c.u32(1, 3)
	c.add(2, 8, 1)
	c.u32(4, 0)
	c.out(6, 4)
	c.in(uhwIn, drv2)
	if e := c.do(t, d2, testFD); e != unix.EINVAL {
		t.Errorf("dynamic CQ without UAR: %v", e)
	}
}

// createQP runs the legacy CREATE_QP write; it returns handle, qpn and the
// mlx5 response.
func createQP(t *testing.T, d *Device, m *fakeMem, pd, cq uint32, ece uint32) (uint32, uint32, abi.MLX5CreateQPResp) {
	t.Helper()
	core := abi.UverbsCreateQP{PDHandle: pd, SendCQHandle: cq, RecvCQHandle: cq, MaxSendWR: 16, MaxRecvWR: 8, MaxSendSGE: 1, MaxRecvSGE: 1, QPType: abi.UverbsQPTRC}
	drv := abi.MLX5CreateQP{BufAddr: m.alloc(8*16 + 16*64), DBAddr: m.alloc(4096) + 0x40, SQWQECount: 16, RQWQECount: 8, RQWQEShift: 4, Flags: 2, UIdx: 0, ECEOptions: ece}
	buf, n, resp := wr(m, 24, abi.Bytes(&core), abi.Bytes(&drv), 32, 40)
	if _, _, e := d.Write(m, testFD, buf, uint64(n), -1); e != 0 {
		t.Fatalf("CREATE_QP: %v\n%s", e, strings.Join(d.Trace(), "\n"))
	}
	out := m.bytes(resp, 72)
	r := abi.Decode[abi.UverbsCreateQPResp](out)
	if r.MaxSendWR != 16 || r.MaxRecvWR != 8 {
		t.Errorf("caps echo %+v", r)
	}
	return r.QPHandle, r.QPN, abi.Decode[abi.MLX5CreateQPResp](out[32:])
}

func TestCreateQP(t *testing.T) {
	d := New(DefaultProfile())
	m := newFakeMem()
	openCtx(t, d, m, testFD, 3)
	pd := allocPD(t, d, m)
	cq, _, _ := createCQ(t, d, m, 15, 0, 0)
	_, qpn, r := createQP(t, d, m, pd, cq, abi.MLX5ECEVersion1)
	// 16 static bfregs, 4 low latency: the first QP gets bfreg 12,
	// reported as 12/2*4 + 0 = 24 (adjust_bfregn).
	if qpn != 0x100 || r.BfregIndex != 24 || r.ECEOptions != abi.MLX5ECEVersion1 {
		t.Errorf("qpn %#x resp %+v", qpn, r)
	}
	_, qpn2, r2 := createQP(t, d, m, pd, cq, 0)
	if qpn2 != 0x101 || r2.BfregIndex != 25 || r2.ECEOptions != 0 {
		t.Errorf("second qpn %#x resp %+v", qpn2, r2)
	}
	// The CQ is in use: destroying it fails with EBUSY.
	core := make([]byte, 16)
	ne.PutUint32(core[8:], cq)
	buf, n, _ := wr(m, 20, core, nil, 8, 0)
	if _, _, e := d.Write(m, testFD, buf, uint64(n), -1); e != unix.EBUSY {
		t.Errorf("DESTROY_CQ in use: %v", e)
	}
	tr := strings.Join(d.Trace(), "\n")
	if !strings.Contains(tr, "CREATE_QP qp0 type=rc pd=pd0 scq=cq0 rcq=cq0 srq=- caps=16/8/1/1/0 sigall=0 flags=0x0 drv{buf=qp0.buf db=dbpage1+0x40 sq=16 rq=8 rq_shift=4 flags=0x2 uidx=0 bfreg=0 sq_buf=0 ece=0x10000000") {
		t.Errorf("trace:\n%s", tr)
	}
	// Without ECE in the firmware, ece_options is refused.
	p := DefaultProfile()
	p.ECE = false
	d2 := New(p)
	m2 := newFakeMem()
	if r := openCtx(t, d2, m2, testFD, 3); r.CompMask&abi.MLX5AllocUcontextRespMaskECE != 0 {
		t.Errorf("ece=0 comp_mask %#x", r.CompMask)
	}
}

func TestModifyQPECE(t *testing.T) {
	d := New(DefaultProfile())
	m := newFakeMem()
	openCtx(t, d, m, testFD, 3)
	pd := allocPD(t, d, m)
	cq, _, _ := createCQ(t, d, m, 15, 0, 0)
	qp, _, _ := createQP(t, d, m, pd, cq, abi.MLX5ECEVersion1)
	mod := abi.UverbsExModifyQP{}
	mod.Base.QPHandle = qp
	mod.Base.AttrMask = maskState | maskPkey | maskPort | maskAccess
	mod.Base.QPState = 1
	mod.Base.PortNum = 1
	drv := abi.MLX5ModifyQP{ECEOptions: 0x10000001}
	body := append(append([]byte(nil), abi.Bytes(&mod)...), abi.Bytes(&drv)...)
	resp := m.alloc(8 + 16)
	h := abi.UverbsCmdHdr{Command: exFlag | 26, InWords: 120 / 8, OutWords: 1}
	ex := abi.UverbsExCmdHdr{Response: resp, ProviderInWords: 2, ProviderOutWords: 2}
	b := append(append(append([]byte(nil), abi.Bytes(&h)...), abi.Bytes(&ex)...), body...)
	ret, _, e := d.Write(m, testFD, m.put(b), uint64(len(b)), -1)
	if e != 0 || ret != int64(len(b)) {
		t.Fatalf("EX_MODIFY_QP: %d %v\n%s", ret, e, strings.Join(d.Trace(), "\n"))
	}
	out := m.bytes(resp, 24)
	if ne.Uint32(out[4:]) != 8 || ne.Uint32(out[8:]) != 12 || ne.Uint32(out[16:]) != 0x10000001 {
		t.Errorf("modify resp % x", out)
	}
	// INIT -> RTS is not a valid transition.
	mod.Base.AttrMask = maskState
	mod.Base.QPState = 3
	buf, n, _ := wr(m, 26, abi.Bytes(&mod.Base), nil, 0, 0)
	if _, _, e := d.Write(m, testFD, buf, uint64(n), -1); e != unix.EINVAL {
		t.Errorf("INIT->RTS: %v", e)
	}
}

func TestMmapOffsets(t *testing.T) {
	d := New(DefaultProfile())
	m := newFakeMem()
	page := m.alloc(4096)
	if e := d.Mmap(m, testFD, page, 4096, 0, unix.PROT_WRITE); e != unix.EINVAL {
		t.Errorf("mmap before GET_CONTEXT: %v", e)
	}
	openCtx(t, d, m, testFD, 3)
	for _, tc := range []struct {
		off    uint64
		length uint64
		prot   int
		want   unix.Errno
	}{
		{0, 4096, unix.PROT_WRITE, 0},                  // regular UAR page 0
		{7 * 4096, 4096, unix.PROT_WRITE, 0},           // last of 8 static pages
		{8 * 4096, 4096, unix.PROT_WRITE, unix.EINVAL}, // past the static pages
		{0, 8192, unix.PROT_WRITE, unix.EINVAL},        // one page only
		{3 << 8 * 4096, 4096, unix.PROT_WRITE, 0},      // non-cached page 0
		{1 << 8 * 4096, 4096, unix.PROT_WRITE, unix.ENOSYS},
		{5 << 8 * 4096, 4096, unix.PROT_READ, 0}, // core clock
		{5 << 8 * 4096, 4096, unix.PROT_READ | unix.PROT_WRITE, unix.EPERM},
		{7 << 8 * 4096, 4096, unix.PROT_READ, 0},                   // clock info v1
		{(7<<8 | 1) * 4096, 4096, unix.PROT_READ, unix.EOPNOTSUPP}, // clock info v2
		{6 << 8 * 4096, 4096, unix.PROT_WRITE, 0},                  // legacy dynamic bfreg page 0
		{9 << 8 * 4096, 4096, unix.PROT_WRITE, unix.EINVAL},        // no such mmap entry
		{8 << 8 * 4096, 4096, unix.PROT_WRITE, unix.EINVAL},        // device memory: none
		{100, 4096, unix.PROT_WRITE, unix.EINVAL},
	} {
		if e := d.Mmap(m, testFD, m.alloc(int(tc.length)), tc.length, tc.off, tc.prot); e != tc.want {
			t.Errorf("mmap off %#x len %d prot %d: %v, want %v", tc.off, tc.length, tc.prot, e, tc.want)
		}
	}

	// Dynamic UARs: the offset comes from UAR_OBJ_ALLOC.
	p := DefaultProfile()
	p.DynamicUAR = true
	d2 := New(p)
	m2 := newFakeMem()
	openCtx(t, d2, m2, testFD, 3)
	if e := d2.Mmap(m2, testFD, m2.alloc(4096), 4096, 0, unix.PROT_WRITE); e != unix.EINVAL {
		t.Errorf("static UAR page with dynamic UARs: %v", e)
	}
	c := newIoc(m2, objUAR, 0x1000)
	h := c.add(0x1000, 0, 0)
	c.constv(0x1001, 1)
	off := c.out(0x1002, 8)
	ln := c.out(0x1003, 4)
	pg := c.out(0x1004, 4)
	if e := c.do(t, d2, testFD); e != 0 {
		t.Fatalf("UAR_OBJ_ALLOC: %v", e)
	}
	o := ne.Uint64(c.outBytes(off))
	if o != 0x900000 || ne.Uint32(c.outBytes(ln)) != 4096 || ne.Uint32(c.outBytes(pg)) != 0x20 {
		t.Errorf("UAR alloc offset %#x len %d page %#x", o, ne.Uint32(c.outBytes(ln)), ne.Uint32(c.outBytes(pg)))
	}
	if e := d2.Mmap(m2, testFD, m2.alloc(4096), 4096, o, unix.PROT_WRITE); e != 0 {
		t.Errorf("mmap dynamic UAR: %v", e)
	}
	// A CQ on that NC UAR page.
	_, _, cqn := createCQ(t, d2, m2, 7, 2, 0x20)
	if cqn != 0x400 {
		t.Errorf("cqn %#x", cqn)
	}
	if d2.uarMmapOffset(0x100) != (1<<16|9<<8)<<12 {
		t.Errorf("uarMmapOffset(0x100) = %#x", d2.uarMmapOffset(0x100))
	}
	dc := newIoc(m2, objUAR, 0x1001)
	dc.add(0x1000, 0, c.attrs[h].Data)
	if e := dc.do(t, d2, testFD); e != 0 {
		t.Errorf("UAR_OBJ_DESTROY: %v", e)
	}
}

func TestCQEOwnership(t *testing.T) {
	d := New(DefaultProfile())
	m := newFakeMem()
	openCtx(t, d, m, testFD, 3)
	pd := allocPD(t, d, m)
	cq, buf, _ := createCQ(t, d, m, 3, 0, 0) // 4 CQEs
	_, qpn, _ := createQP(t, d, m, pd, cq, 0)
	d.Snapshot(m, "L3: cq c1 3")
	d.Snapshot(m, "L4: qp q1 rc c1 c1")
	for i := 0; i < 10; i++ {
		line := "cqe c1 op=resp_send qp=q1 counter=0 bytes=16"
		if i%2 == 1 {
			line = "cqe cq0 op=req qp=qp0 counter=3"
		}
		if e := d.Exec(m, line); e != 0 {
			t.Fatalf("exec %q: %v\n%s", line, e, strings.Join(d.Trace(), "\n"))
		}
		slot := i % 4
		cqe := m.bytes(buf+uint64(slot*64), 64)
		owner := byte(i/4) & 1
		op := byte(2)
		if i%2 == 1 {
			op = 0
		}
		if cqe[63] != op<<4|owner {
			t.Errorf("cqe %d: op_own %#x, want %#x", i, cqe[63], op<<4|owner)
		}
		if got := be32(cqe[56:]) & 0xffffff; got != qpn {
			t.Errorf("cqe %d: qpn %#x", i, got)
		}
	}
	if e := d.Exec(m, "cqe c1 op=resp_send qp=q1 counter=0 scatter=32 data=0102"); e != 0 {
		t.Fatal(e)
	}
	cqe := m.bytes(buf+2*64, 64)
	if cqe[0] != 1 || cqe[1] != 2 || cqe[63] != 2<<4|inlineScatter32 { // RESP_SEND, owner 0
		t.Errorf("scatter cqe % x", cqe)
	}
	for _, bad := range []string{"cqe nope op=req qp=q1", "cqe c1 op=bogus qp=q1", "cqe c1 op=req qp=q9", "cqe c1 op=req qp=q1 counter=x", "foo"} {
		if e := d.Exec(m, bad); e == 0 {
			t.Errorf("exec %q succeeded", bad)
		}
	}
}

func be32(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

func TestSnapshotChangesOnly(t *testing.T) {
	d := New(DefaultProfile())
	m := newFakeMem()
	openCtx(t, d, m, testFD, 3)
	createCQ(t, d, m, 3, 0, 0)
	d.Snapshot(m, "A")
	n := len(d.Trace())
	d.Snapshot(m, "B")
	tr := d.Trace()[n:]
	if len(tr) != 2 || !strings.HasPrefix(tr[1], "  unchanged 2 regions hash=") {
		t.Errorf("unchanged snapshot:\n%s", strings.Join(tr, "\n"))
	}
	buf := d.lookup("cq", "cq0").cqBuf
	m.Write(buf+64, []byte{0xaa})
	n = len(d.Trace())
	d.Snapshot(m, "C")
	tr = d.Trace()[n:]
	if len(tr) != 3 || tr[1] != "  cq0.buf+0x0040: aa00000000000000 0000000000000000 0000000000000000 0000000000000000 0000000000000000 0000000000000000 0000000000000000 0000000000000000" {
		t.Errorf("changed snapshot:\n%s", strings.Join(tr, "\n"))
	}
}

func TestCompare(t *testing.T) {
	c := []string{"~ QUERY_PORT port=1 -> ok @ioctl", "ALLOC_PD pd0 -> ok @invoke", "snap L1", "rec poll n=1"}
	g := []string{"ALLOC_PD pd0 -> ok @write", "~ QUERY_PORT port=1 -> ok @write", "snap L1", "rec poll n=1"}
	if err := Compare(c, g); err != nil {
		t.Errorf("Compare: %v", err)
	}
	if err := CompareIface(c, g); err == nil {
		t.Errorf("CompareIface: equal")
	}
	g[3] = "rec poll n=2"
	err := Compare(c, g)
	if err == nil || !strings.Contains(err.Error(), "- rec poll n=1") || !strings.Contains(err.Error(), "+ rec poll n=2") {
		t.Errorf("Compare diff: %v", err)
	}
}

func TestParseProfile(t *testing.T) {
	p, err := ParseProfile("profile uar=static ece=0 devid=0x101b iface=write clock=0")
	if err != nil || p.DynamicUAR || p.ECE || p.DevID != 0x101b || !p.WriteOnly || !p.NoClock {
		t.Errorf("%+v %v", p, err)
	}
	if q, err := ParseProfile("uar=dynamic"); err != nil || !q.DynamicUAR || q.WriteOnly {
		t.Errorf("uar=dynamic: %+v %v", q, err)
	}
	if _, err := ParseProfile("profile uar=dynamic iface=write"); err == nil || !strings.Contains(err.Error(), "ioctl") {
		t.Errorf("dynamic UARs without ioctl: %v, want a refusal naming the ioctl interface", err)
	}
	if q, err := ParseProfile(p.String()); err != nil || q != p {
		t.Errorf("round trip %+v %v", q, err)
	}
	if _, err := ParseProfile("profile uar=huge"); err == nil {
		t.Error("uar=huge accepted")
	}
	if p, _ := ParseProfile("profile"); p != DefaultProfile() {
		t.Errorf("defaults %+v", p)
	}
}

func TestFence(t *testing.T) {
	d := New(DefaultProfile())
	m := newFakeMem()
	openCtx(t, d, m, testFD, 3)
	createCQ(t, d, m, 3, 0, 0)
	cq := d.lookup("cq", "cq0")
	d.Snapshot(m, "A")
	mark := len(d.Trace())
	after := func() []string { tr := d.Trace()[mark:]; mark = len(d.Trace()); return tr }

	// A doorbell record store shows at the next fence; the CQ buffer is
	// not watched.
	m.Write(cq.cqDB, []byte{0, 0, 0, 1})
	m.Write(cq.cqBuf+64, []byte{0xaa})
	d.Fence(m, "sfence")
	want := []string{"fence sfence", "  cq0.db+0x0000: 0000000100000000"}
	if tr := after(); strings.Join(tr, "\n") != strings.Join(want, "\n") {
		t.Errorf("first fence:\n%s\nwant:\n%s", strings.Join(tr, "\n"), strings.Join(want, "\n"))
	}
	// Reported once: the baseline moved.
	d.Fence(m, "lfence")
	if tr := after(); len(tr) != 1 || tr[0] != "fence lfence" {
		t.Errorf("unchanged fence:\n%s", strings.Join(tr, "\n"))
	}
	m.Write(cq.cqDB+4, []byte{0, 0, 0, 2})
	d.Fence(m, "mfence")
	want = []string{"fence mfence", "  cq0.db+0x0000: 0000000100000002"}
	if tr := after(); strings.Join(tr, "\n") != strings.Join(want, "\n") {
		t.Errorf("second fence:\n%s\nwant:\n%s", strings.Join(tr, "\n"), strings.Join(want, "\n"))
	}
	// The snapshot's baseline is its own: it shows everything since A,
	// fences or not.
	d.Snapshot(m, "B")
	tr := after()
	if len(tr) != 4 || tr[1] != "  cq0.buf+0x0040: aa00000000000000 0000000000000000 0000000000000000 0000000000000000 0000000000000000 0000000000000000 0000000000000000 0000000000000000" ||
		tr[2] != "  cq0.db+0x0000: 0000000100000002" {
		t.Errorf("snapshot after fences:\n%s", strings.Join(tr, "\n"))
	}
	// A snapshot moves the fence baseline too.
	d.Fence(m, "sfence")
	if tr := after(); len(tr) != 1 {
		t.Errorf("fence after snapshot:\n%s", strings.Join(tr, "\n"))
	}
}

func TestDropFences(t *testing.T) {
	tr := []string{"snap L1: send q", "  qp0.db+0x0000: 01", "fence sfence", "  qp0.db+0x0000: 02", "  uar0+0x0800: 03", "fence lfence", "rec poll n=0", "  x"}
	got := strings.Join(DropFences(tr), "|")
	if want := "snap L1: send q|  qp0.db+0x0000: 01|rec poll n=0|  x"; got != want {
		t.Errorf("DropFences: %s, want %s", got, want)
	}
}
