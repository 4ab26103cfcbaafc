//go:build linux

package uverbs

import (
	"bytes"
	"errors"
	"os"
	"testing"

	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
	"golang.org/x/sys/unix"
)

// TestGuestCallerMemory registers a memfd mapping at an IOVA far from its
// address on rxe and RDMA-WRITEs into it over an RC loopback: the data
// lands at the IOVA's offset. A dma-buf MR is ErrNotSupported on rxe, and
// MR.Rereg does what the kernel's rxe does (or says it does not).
func TestGuestCallerMemory(t *testing.T) {
	x := openGuest(t, InterfaceAuto)
	r := newRig(t, x, 4096)
	page := os.Getpagesize()
	fd, err := unix.MemfdCreate("uverbs-guest", unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Ftruncate(fd, int64(4*page)); err != nil {
		t.Fatal(err)
	}
	mem, err := unix.Mmap(fd, 0, 4*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	ub, err := UserBuffer(mem)
	if err != nil {
		t.Fatal(err)
	}
	const iova = 0x5a5a00000000
	umr, err := r.pd.RegMRIOVA(ub, page, 2*page, iova, qp.AccessLocalWrite|qp.AccessRemoteWrite|qp.AccessRemoteRead)
	if err != nil {
		t.Fatal(err)
	}
	defer umr.Close()
	if umr.Addr != iova {
		t.Fatalf("MR.Addr %#x, want the IOVA %#x", umr.Addr, uint64(iova))
	}
	if err := ub.Close(); err == nil {
		t.Error("Close of a registered UserBuffer succeeded")
	}

	a, b := r.rcQP(t, qp.RC), r.rcQP(t, qp.RC)
	defer a.Close()
	defer b.Close()
	r.connect(t, a, b.Num(), 1)
	r.connect(t, b, a.Num(), 1)
	src := r.buf.Bytes()
	for i := range 256 {
		src[i] = byte(i*3 + 1)
	}
	// IOVA+100 is mem[page+100:]: the MR starts one page into the mapping.
	if err := a.PostSend([]SendWR{{ID: 1, Opcode: OpRDMAWrite, Flags: SendSignaled, SGEs: []SGE{r.mr.SGE(0, 256)},
		RemoteAddr: iova + 100, RKey: umr.RKey}}); err != nil {
		t.Fatal(err)
	}
	waitWC(t, r, 1)
	if !bytes.Equal(mem[page+100:page+356], src[:256]) {
		t.Errorf("the write did not land at the IOVA's offset")
	}
	if bytes.ContainsFunc(mem[:page+100], func(r rune) bool { return r != 0 }) || bytes.ContainsFunc(mem[page+356:], func(r rune) bool { return r != 0 }) {
		t.Errorf("bytes outside the write changed")
	}
	// A local SGE addresses the MR by its IOVA too: read it back.
	if err := a.PostSend([]SendWR{{ID: 2, Opcode: OpRDMARead, Flags: SendSignaled, SGEs: []SGE{r.mr.SGE(1024, 256)},
		RemoteAddr: iova + 100, RKey: umr.RKey}}); err != nil {
		t.Fatal(err)
	}
	waitWC(t, r, 1)
	if !bytes.Equal(src[1024:1280], src[:256]) {
		t.Errorf("the read back differs")
	}

	_, err = r.pd.RegDmabufMR(fd, 0, uint64(page), 0, qp.AccessLocalWrite)
	if !errors.Is(err, ErrNotSupported) || !errors.Is(err, unix.EOPNOTSUPP) {
		t.Errorf("dma-buf MR on rxe: %v, want ErrNotSupported", err)
	}
	t.Logf("dma-buf MR on rxe: %v", err)

	// Rereg: what this kernel's rxe takes (Linux 6.1's: nothing, so
	// ErrNotSupported), and the MR still works after a refusal.
	pd2, err := x.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	defer pd2.Close()
	for _, c := range []struct {
		name  string
		flags ReregFlags
		pd    *PD
		buf   *Buffer
		n     int
		acc   qp.Access
	}{
		{"access", ReregAccess, nil, nil, 0, qp.AccessLocalWrite},
		{"pd", ReregPD, pd2, nil, 0, 0},
		{"translation", ReregTranslation, nil, r.buf, 4096, 0},
	} {
		err := umr.Rereg(c.flags, c.pd, c.buf, 0, c.n, c.acc)
		t.Logf("rereg %s: %v (lkey %#x rkey %#x)", c.name, err, umr.LKey, umr.RKey)
		if err != nil && !errors.Is(err, ErrNotSupported) {
			t.Errorf("rereg %s: %v, want success or ErrNotSupported", c.name, err)
		}
	}
	if umr.pd == r.pd {
		if err := a.PostSend([]SendWR{{ID: 3, Opcode: OpRDMAWrite, Flags: SendSignaled, SGEs: []SGE{r.mr.SGE(0, 16)},
			RemoteAddr: umr.Addr, RKey: umr.RKey}}); err != nil {
			t.Fatal(err)
		}
		if wc := waitWC(t, r, 1); wc[0].Status != rdma.WCSuccess {
			t.Errorf("write after the refused reregs: %v", wc[0].Status)
		}
	}
}
