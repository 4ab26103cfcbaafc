package uverbs

// The command layer against a regular file standing in for the uverbs fd:
// ioctls on it fail with ENOTTY (so native methods fall back to write
// commands), and the write() commands land in the file, where their
// encoding is checked at the offsets of ib_user_verbs.h.

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-rdma/rdmacm/ece"
	"github.com/go-rdma/rdmacm/internal/unix"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
)

func fileContext(t *testing.T) (*Context, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "uverbs")
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	x := &Context{dev: Device{Name: "file0"}, fd: fd, prov: genericProvider{}, nativeIoctl: true,
		ahs: map[*AH]struct{}{}, mrs: map[*MR]struct{}{},
		cqs: map[uint64]*CQ{}, channels: map[*CompChannel]struct{}{}, pds: map[*PD]struct{}{}}
	return x, path
}

// written returns what the commands wrote so far and truncates the file.
func written(t *testing.T, x *Context, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	unix.Ftruncate(x.fd, 0)
	unix.Seek(x.fd, 0, 0)
	return b
}

func TestLegacyWriteEncodingAndFallback(t *testing.T) {
	x, path := fileContext(t)
	pd, err := x.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	// ALLOC_PD: hdr {3, in_words 4, out_words 1}, then the response
	// pointer (the "kernel" never answers, so the handle reads 0).
	b := written(t, x, path)
	if len(b) != 16 || ne.Uint32(b[0:]) != 3 || ne.Uint16(b[4:]) != 4 || ne.Uint16(b[6:]) != 1 || ne.Uint64(b[8:]) == 0 {
		t.Fatalf("ALLOC_PD % x", b)
	}
	// PD/DESTROY gets ENOTTY from the file: DEALLOC_PD {4, 3, 0} + handle.
	pd.handle = 0x55
	if err := pd.Close(); err != nil {
		t.Fatal(err)
	}
	b = written(t, x, path)
	if len(b) != 12 || ne.Uint32(b[0:]) != 4 || ne.Uint16(b[4:]) != 3 || ne.Uint16(b[6:]) != 0 || ne.Uint32(b[8:]) != 0x55 {
		t.Fatalf("DEALLOC_PD % x", b)
	}
	if x.stats.ioctls.Load() != 1 || x.stats.writes.Load() != 2 {
		t.Errorf("%d ioctls, %d writes", x.stats.ioctls.Load(), x.stats.writes.Load())
	}
}

func TestExtendedWriteEncoding(t *testing.T) {
	x, path := fileContext(t)
	if _, err := x.QueryDevice(); err != nil {
		t.Fatal(err)
	}
	// EX_QUERY_DEVICE: hdr {0x80000001, in_words 1, out_words 38} in
	// 8-byte units, ex_hdr {response, 0, 0, 0}, then {comp_mask, reserved}.
	b := written(t, x, path)
	if len(b) != 32 || ne.Uint32(b[0:]) != 0x80000001 || ne.Uint16(b[4:]) != 1 || ne.Uint16(b[6:]) != 38 ||
		ne.Uint64(b[8:]) == 0 || ne.Uint32(b[16:]) != 0 || ne.Uint64(b[24:]) != 0 {
		t.Fatalf("EX_QUERY_DEVICE % x", b)
	}
}

func TestModifyQPEncoding(t *testing.T) {
	x, path := fileContext(t)
	q := &QP{pd: &PD{ctx: x}, handle: 9, typ: qp.RC, state: qp.Init, port: 1}
	a := qp.Attr{State: qp.RTR, PathMTU: rdma.MTU1024, DestQPN: 0x123456, RQPSN: 0xabcdef, MaxDestRdAtomic: 1, MinRNRTimer: 12,
		AH: qp.AH{IsGlobal: true, PortNum: 1, GRH: qp.GRH{DGID: [16]byte{0: 0xfe, 15: 1}, SGIDIndex: 1, HopLimit: 64}}}
	mask := qp.MaskState | qp.MaskAV | qp.MaskPathMTU | qp.MaskDestQPN | qp.MaskRQPSN | qp.MaskMaxDestRdAtomic | qp.MaskMinRNRTimer
	if err := q.Modify(&a, mask); err != nil {
		t.Fatal(err)
	}
	// MODIFY_QP {26, in_words 30, out_words 0} + ib_uverbs_modify_qp.
	b := written(t, x, path)
	if len(b) != 120 || ne.Uint32(b[0:]) != 26 || ne.Uint16(b[4:]) != 30 || ne.Uint16(b[6:]) != 0 {
		t.Fatalf("MODIFY_QP header % x", b[:8])
	}
	m := b[8:]
	// dest: dgid 0, flow_label 16, dlid 20, sgid_index 24, hop_limit 25,
	// is_global 30, port_num 31; then
	// qp_handle 64, attr_mask 68, rq_psn 76, dest_qp_num 84, qp_state 96,
	// path_mtu 98, max_dest_rd_atomic 102, min_rnr_timer 103.
	if m[0] != 0xfe || m[15] != 1 || m[24] != 1 || m[25] != 64 || m[30] != 1 || m[31] != 1 ||
		ne.Uint32(m[64:]) != 9 || ne.Uint32(m[68:]) != uint32(mask) || ne.Uint32(m[76:]) != 0xabcdef ||
		ne.Uint32(m[84:]) != 0x123456 || m[96] != 2 || m[98] != 3 || m[102] != 1 || m[103] != 12 {
		t.Errorf("modify_qp % x", m)
	}
	if q.State() != qp.RTR {
		t.Errorf("state %v", q.State())
	}
	// A request the state table refuses never reaches the fd.
	err := q.Modify(&qp.Attr{State: qp.RTS}, qp.MaskState)
	if !errors.Is(err, qp.ErrMissingAttr) || len(written(t, x, path)) != 0 {
		t.Errorf("RTR→RTS without SQ_PSN: %v", err)
	}
	// One sentence, one prefix: the QP, the state asked for, the device,
	// then qp's reason without its own prefix.
	if want := "uverbs: modify QP 0x0 to RTS on file0: RC RTR→RTS: missing "; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %q, want it to start with %q", err, want)
	}
	// With ECE options pending (mlx5 SetECE) the modify becomes
	// EX_MODIFY_QP {0x8000001a, in_words 15, out_words 1} with ex_hdr
	// provider_in/out_words 2 and mlx5_ib_modify_qp (ece_options at 12)
	// after the 120-byte core.
	p := &mlx5Provider{eceSupported: true}
	x.prov = p
	if err := p.setECE(q, ece.ECE{VendorID: 0x15b3, Options: 0x30000001}); err != nil {
		t.Fatal(err)
	}
	rts := qp.Attr{State: qp.RTS, SQPSN: 1, Timeout: 14, RetryCnt: 7, RNRRetry: 7, MaxRdAtomic: 1}
	if err := q.Modify(&rts, qp.MaskState|qp.MaskSQPSN|qp.MaskTimeout|qp.MaskRetryCnt|qp.MaskRNRRetry|qp.MaskMaxQPRdAtomic); err != nil {
		t.Fatal(err)
	}
	b = written(t, x, path)
	if len(b) != 8+16+120+16 || ne.Uint32(b[0:]) != 0x8000001a || ne.Uint16(b[4:]) != 15 || ne.Uint16(b[6:]) != 1 ||
		ne.Uint64(b[8:]) == 0 || ne.Uint16(b[16:]) != 2 || ne.Uint16(b[18:]) != 2 || ne.Uint32(b[24+64:]) != 9 ||
		ne.Uint32(b[24+120+12:]) != 0x30000001 {
		t.Errorf("EX_MODIFY_QP with mlx5 ECE: % x", b)
	}
}

func TestClosedContextRefusesNewObjects(t *testing.T) {
	x, _ := fileContext(t)
	fd2, _ := unix.Dup(x.fd)
	x.fd = fd2
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := x.AllocPD(); !errors.Is(err, ErrClosed) {
		t.Errorf("AllocPD after Close: %v", err)
	}
	if err := x.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}
