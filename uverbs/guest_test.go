package uverbs

// Real-kernel tests. They run inside a vmtest guest with soft-RoCE (rxe0 on
// eth0, 192.0.2.1), started by the go test -exec runner:
//
//	go build -o bin/vmexec ./internal/vmtest/cmd/vmexec
//	CGO_ENABLED=0 go test -count=1 -p 1 -v -exec "$PWD/bin/vmexec" ./uverbs/
//
// On the host they skip (and fail when VMTEST=1 and CI=true).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/ece"
	"github.com/go-rdma/rdmacm/internal/leakcheck"
	"github.com/go-rdma/rdmacm/internal/unix"
	"github.com/go-rdma/rdmacm/internal/vmtest/guest"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
)

var interfaces = []Interface{InterfaceAuto, InterfaceWrite}

func guestDevice(t *testing.T) Device {
	t.Helper()
	guest.Require(t)
	dev, err := Discovery{}.Device("rxe0")
	if err != nil {
		t.Fatal(err)
	}
	return dev
}

func openGuest(t *testing.T, iface Interface) *Context {
	t.Helper()
	dev := guestDevice(t)
	x, err := OpenDevice(dev, &Options{Interface: iface})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := x.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	if x.Provider() != "rxe" {
		t.Fatalf("provider %q, driver id %d", x.Provider(), x.DriverID())
	}
	if want := iface == InterfaceAuto; x.UsesIoctl() != want {
		t.Fatalf("interface %v: UsesIoctl = %v", iface, x.UsesIoctl())
	}
	return x
}

func TestGuestDiscovery(t *testing.T) {
	dev := guestDevice(t)
	out, err := exec.Command("cat", "/sys/class/infiniband/rxe0/node_guid").Output()
	if err != nil {
		t.Fatal(err)
	}
	if dev.NodeGUID.String() != strings.TrimSpace(string(out)) || dev.NodeType != NodeCA || dev.Parent != "eth0" {
		t.Errorf("device %s guid %v type %v parent %q", dev.Name, dev.NodeGUID, dev.NodeType, dev.Parent)
	}
	if dev.Verbs.Name != "uverbs0" || !dev.Verbs.Present || dev.Verbs.Major != 231 || dev.Verbs.ABIVersion != 2 {
		t.Errorf("uverbs %+v", dev.Verbs)
	}
	if len(dev.UMAD) != 1 || !dev.UMAD[0].Present || dev.UMAD[0].Port != 1 {
		t.Errorf("umad %+v", dev.UMAD)
	}
	if !dev.RDMACM.Present || dev.RDMACM.ABIVersion != 4 {
		t.Errorf("rdma_cm %+v", dev.RDMACM)
	}
	if len(dev.Ports) != 1 {
		t.Fatalf("ports %+v", dev.Ports)
	}
	p := dev.Ports[0]
	if p.State != PortActive || p.LinkLayer != LinkEthernet || p.Netdev != "eth0" || p.ActiveMTU == 0 {
		t.Errorf("port %+v", p)
	}
	// Netlink names the same node and gives the driver id the ioctl
	// header needs (RDMA_DRIVER_RXE); the kernel sends it as a u32.
	nl, err := nlUverbsChardev("rxe0")
	if err != nil || nl.name != "uverbs0" || !nl.hasID || nl.driverID != 14 || nl.abi != 2 {
		t.Errorf("netlink chardev %+v, %v", nl, err)
	}
	if _, ok := roceV2IPv4(p.GIDs, guest.Local().Addr); !ok {
		t.Errorf("no RoCE v2 GID for %s: %+v", guest.Local().Addr, p.GIDs)
	}
	for _, g := range p.GIDs {
		t.Logf("gid %d %v %v %s", g.Index, g.GID, g.Type, g.Netdev)
	}
}

// roceV2IPv4 finds the RoCE v2 GID holding the IPv4 address addr.
func roceV2IPv4(gids []GIDEntry, addr string) (GIDEntry, bool) {
	ip := net.ParseIP(addr).To16()
	for _, g := range gids {
		if g.Type == GIDTypeRoCEv2 && bytes.Equal(g.GID[:], ip) {
			return g, true
		}
	}
	return GIDEntry{}, false
}

func TestGuestQuery(t *testing.T) {
	dev := guestDevice(t)
	for _, iface := range interfaces {
		t.Run(iface.String(), func(t *testing.T) {
			x := openGuest(t, iface)
			da, err := x.QueryDevice()
			if err != nil {
				t.Fatal(err)
			}
			if da.NodeGUID != dev.NodeGUID || da.PhysPortCnt != 1 || da.MaxQP == 0 || da.MaxCQE == 0 || !da.Extended {
				t.Errorf("device attr %+v", da)
			}
			pa, err := x.QueryPort(1)
			if err != nil {
				t.Fatal(err)
			}
			if pa.State != PortActive || pa.LinkLayer != LinkEthernet || pa.ActiveMTU != dev.Ports[0].ActiveMTU || pa.GIDTableLen == 0 || !pa.GRHRequired {
				t.Errorf("port attr %+v (discovery MTU %v)", pa, dev.Ports[0].ActiveMTU)
			}
			if _, err := x.QueryPort(9); err == nil {
				t.Error("port 9 answered")
			}
			gids, err := x.QueryGIDTable()
			if err != nil {
				t.Fatal(err)
			}
			sysfs := dev.Ports[0].GIDs
			if len(gids) != len(sysfs) {
				t.Fatalf("GID table: %d entries, sysfs %d\n%+v\n%+v", len(gids), len(sysfs), gids, sysfs)
			}
			for i := range gids {
				g, s := gids[i], sysfs[i]
				if g.Index != s.Index || g.GID != s.GID || g.Type != s.Type || g.Netdev != s.Netdev || g.Port != 1 {
					t.Errorf("entry %d: %+v, sysfs %+v", i, g, s)
				}
			}
			if iface == InterfaceAuto && gids[0].NetdevIndex == 0 {
				t.Error("ioctl GID table gave no ifindex")
			}
		})
	}
}

// rig is one PD with a buffer, an MR and a CQ on a channel.
type rig struct {
	x   *Context
	pd  *PD
	buf *Buffer
	mr  *MR
	ch  *CompChannel
	cq  *CQ
	gid GIDEntry
	mtu rdma.MTU
}

// udQP is a UD QP on the rig's CQ, in RTS with qkey.
func (r *rig) udQP(t *testing.T, qkey uint32) *QP {
	t.Helper()
	u, err := r.pd.CreateQP(QPInit{Type: qp.UD, SendCQ: r.cq, RecvCQ: r.cq, Cap: qp.Cap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct {
		a qp.Attr
		m qp.Mask
	}{
		{qp.Attr{State: qp.Init, Port: 1, QKey: qkey}, qp.MaskState | qp.MaskPKeyIndex | qp.MaskPort | qp.MaskQKey},
		{qp.Attr{State: qp.RTR}, qp.MaskState},
		{qp.Attr{State: qp.RTS}, qp.MaskState | qp.MaskSQPSN},
	} {
		if err := u.Modify(&s.a, s.m); err != nil {
			t.Fatal(err)
		}
	}
	return u
}

func newRig(t *testing.T, x *Context, size int) *rig {
	t.Helper()
	r := &rig{x: x}
	var err error
	if r.pd, err = x.AllocPD(); err != nil {
		t.Fatal(err)
	}
	if r.buf, err = AllocBuffer(size); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if r.mr != nil {
			r.mr.Close()
		}
		if err := r.buf.Close(); err != nil {
			t.Errorf("buffer close: %v", err)
		}
	})
	if r.mr, err = r.pd.RegMR(r.buf, qp.AccessLocalWrite|qp.AccessRemoteWrite|qp.AccessRemoteRead); err != nil {
		t.Fatal(err)
	}
	if r.ch, err = x.CreateCompChannel(); err != nil {
		t.Fatal(err)
	}
	if r.cq, err = x.CreateCQ(64, r.ch, 0); err != nil {
		t.Fatal(err)
	}
	gids, err := x.QueryGIDTable()
	if err != nil {
		t.Fatal(err)
	}
	var ok bool
	if r.gid, ok = roceV2IPv4(gids, guest.Local().Addr); !ok {
		t.Fatalf("no RoCE v2 IPv4 GID in %+v", gids)
	}
	pa, err := x.QueryPort(1)
	if err != nil {
		t.Fatal(err)
	}
	r.mtu = pa.ActiveMTU
	return r
}

func (r *rig) rcQP(t *testing.T, typ qp.QPType) *QP {
	t.Helper()
	q, err := r.pd.CreateQP(QPInit{Type: typ, SendCQ: r.cq, RecvCQ: r.cq, Cap: qp.Cap{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 2, MaxRecvSGE: 2, MaxInlineData: 64}})
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// connect moves a (RC or UC) QP to RTS towards remote QPN on gid.
func (r *rig) connect(t *testing.T, q *QP, remote uint32, psn uint32) {
	t.Helper()
	access := qp.AccessLocalWrite | qp.AccessRemoteWrite | qp.AccessRemoteRead
	if q.Type() == qp.UC {
		access = qp.AccessLocalWrite | qp.AccessRemoteWrite
	}
	init := qp.Attr{State: qp.Init, PKeyIndex: 0, Port: 1, AccessFlags: access}
	if err := q.Modify(&init, qp.MaskState|qp.MaskPKeyIndex|qp.MaskPort|qp.MaskAccessFlags); err != nil {
		t.Fatal(err)
	}
	rtr := qp.Attr{State: qp.RTR, PathMTU: r.mtu, DestQPN: remote, RQPSN: psn, MaxDestRdAtomic: 1, MinRNRTimer: 12,
		AH: qp.AH{IsGlobal: true, PortNum: 1, GRH: qp.GRH{DGID: r.gid.GID, SGIDIndex: uint8(r.gid.Index), HopLimit: 64}}}
	mask := qp.MaskState | qp.MaskAV | qp.MaskPathMTU | qp.MaskDestQPN | qp.MaskRQPSN
	if q.Type() == qp.RC {
		mask |= qp.MaskMaxDestRdAtomic | qp.MaskMinRNRTimer
	}
	if err := q.Modify(&rtr, mask); err != nil {
		t.Fatal(err)
	}
	rts := qp.Attr{State: qp.RTS, SQPSN: psn, Timeout: 14, RetryCnt: 7, RNRRetry: 7, MaxRdAtomic: 1}
	mask = qp.MaskState | qp.MaskSQPSN
	if q.Type() == qp.RC {
		mask |= qp.MaskTimeout | qp.MaskRetryCnt | qp.MaskRNRRetry | qp.MaskMaxQPRdAtomic
	}
	if err := q.Modify(&rts, mask); err != nil {
		t.Fatal(err)
	}
}

// waitWC polls cq until n completions arrived, sleeping on the channel in
// between (arm, poll again, wait) to exercise the event path.
func waitWC(t *testing.T, r *rig, n int) []WC {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var got []WC
	buf := make([]WC, 16)
	for len(got) < n {
		k, err := r.cq.Poll(buf)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, buf[:k]...)
		if k > 0 || len(got) >= n {
			continue
		}
		if err := r.cq.RequestNotify(false); err != nil {
			t.Fatal(err)
		}
		if k, _ = r.cq.Poll(buf); k > 0 { // completions that raced the arm
			got = append(got, buf[:k]...)
			continue
		}
		cqs, err := r.ch.Wait(ctx)
		if err != nil {
			t.Fatalf("waiting for %d completions (have %d): %v", n, len(got), err)
		}
		if len(cqs) != 1 || cqs[0] != r.cq {
			t.Fatalf("channel reported %v", cqs)
		}
	}
	for _, wc := range got {
		if wc.Status != rdma.WCSuccess {
			t.Fatalf("completion %+v: %v", wc, wc.Status)
		}
	}
	return got
}

func TestGuestObjectsAndTransitions(t *testing.T) {
	for _, iface := range interfaces {
		t.Run(iface.String(), func(t *testing.T) {
			x := openGuest(t, iface)
			r := newRig(t, x, 4096)
			for _, typ := range []qp.QPType{qp.RC, qp.UC} {
				a, b := r.rcQP(t, typ), r.rcQP(t, typ)
				r.connect(t, a, b.Num(), 100)
				got, err := a.Query(qp.MaskState | qp.MaskDestQPN | qp.MaskPathMTU | qp.MaskSQPSN)
				if err != nil {
					t.Fatal(err)
				}
				if got.State != qp.RTS || got.DestQPN != b.Num() || got.PathMTU != r.mtu || got.SQPSN != 100 || got.Cap.MaxSendWR < 16 {
					t.Errorf("%v query: %+v", typ, got)
				}
				if a.State() != qp.RTS || b.State() != qp.Reset {
					t.Errorf("states %v %v", a.State(), b.State())
				}
				// Validation happens before the syscall and names what is
				// missing.
				err = b.Modify(&qp.Attr{State: qp.RTR}, qp.MaskState)
				if !errors.Is(err, qp.ErrIllegalTransition) || !strings.Contains(err.Error(), "RESET") {
					t.Errorf("RESET→RTR: %v", err)
				}
				if err := a.Close(); err != nil {
					t.Fatal(err)
				}
				if err := b.Close(); err != nil {
					t.Fatal(err)
				}
			}
			// SQ_SIG_ALL travels as a create flag (ioctl) or sq_sig_all
			// (write) and reads back from QUERY_QP.
			sig, err := r.pd.CreateQP(QPInit{Type: qp.RC, SendCQ: r.cq, RecvCQ: r.cq, SignalAll: true, Cap: qp.Cap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}})
			if err != nil {
				t.Fatal(err)
			}
			if got, err := sig.Query(qp.MaskCap); err != nil || !got.SignalAll {
				t.Errorf("signal-all QP: %+v, %v", got, err)
			}
			if got, err := r.rcQP(t, qp.RC).Query(qp.MaskCap); err != nil || got.SignalAll {
				t.Errorf("plain QP signals all: %v", err)
			}

			// UD: RESET→INIT needs a Q_Key; then RTR, RTS, and an AH.
			u, err := r.pd.CreateQP(QPInit{Type: qp.UD, SendCQ: r.cq, RecvCQ: r.cq, Cap: qp.Cap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}})
			if err != nil {
				t.Fatal(err)
			}
			if err := u.Modify(&qp.Attr{State: qp.Init, Port: 1, QKey: 0x11111111}, qp.MaskState|qp.MaskPKeyIndex|qp.MaskPort|qp.MaskQKey); err != nil {
				t.Fatal(err)
			}
			if err := u.Modify(&qp.Attr{State: qp.RTR}, qp.MaskState); err != nil {
				t.Fatal(err)
			}
			if err := u.Modify(&qp.Attr{State: qp.RTS, SQPSN: 7}, qp.MaskState|qp.MaskSQPSN); err != nil {
				t.Fatal(err)
			}
			ah, err := r.pd.CreateAH(qp.AH{IsGlobal: true, PortNum: 1, GRH: qp.GRH{DGID: r.gid.GID, SGIDIndex: uint8(r.gid.Index), HopLimit: 64}})
			if err != nil {
				t.Fatal(err)
			}
			if ah.num == 0 {
				t.Error("rxe returned ah_num 0")
			}
			// The context closes the UD QP, the AH and everything else.
		})
	}
}

func TestGuestECENotSupported(t *testing.T) {
	x := openGuest(t, InterfaceAuto)
	r := newRig(t, x, 4096)
	q := r.rcQP(t, qp.RC)
	_, err := q.QueryECE()
	if !errors.Is(err, ErrNotSupported) || !errors.Is(err, unix.EOPNOTSUPP) {
		t.Errorf("QueryECE: %v", err)
	}
	err = q.SetECE(ece.ECE{VendorID: 0x15b3, Options: 1})
	if !errors.Is(err, ErrNotSupported) || !errors.Is(err, unix.EOPNOTSUPP) {
		t.Errorf("SetECE: %v", err)
	}
	t.Logf("rxe ECE: %v", err)
}

// TestGuestLoopbackRC moves data between two RC QPs of the same device
// with every opcode, checking the bytes and the completions.
func TestGuestLoopbackRC(t *testing.T) {
	for _, iface := range interfaces {
		t.Run(iface.String(), func(t *testing.T) {
			x := openGuest(t, iface)
			r := newRig(t, x, 3*4096)
			a, b := r.rcQP(t, qp.RC), r.rcQP(t, qp.RC)
			r.connect(t, a, b.Num(), 1)
			r.connect(t, b, a.Num(), 1)
			mem := r.buf.Bytes()
			// Layout: a's source at 0, b's receive area at 4096, a
			// read-target at 8192.
			fill := func(off, n int, seed byte) {
				for i := 0; i < n; i++ {
					mem[off+i] = seed + byte(i*7)
				}
			}
			check := func(what string, dst, src, n int) {
				t.Helper()
				if !bytes.Equal(mem[dst:dst+n], mem[src:src+n]) {
					t.Errorf("%s: data differs", what)
				}
			}
			recv := func(id uint64) {
				t.Helper()
				if err := b.PostRecv([]RecvWR{{ID: id, SGEs: []SGE{r.mr.SGE(4096, 4096)}}}); err != nil {
					t.Fatal(err)
				}
			}

			// SEND, two SGEs gathered into one receive.
			fill(0, 3000, 1)
			recv(10)
			if err := a.PostSend([]SendWR{{ID: 1, Opcode: OpSend, Flags: SendSignaled, SGEs: []SGE{r.mr.SGE(0, 1000), r.mr.SGE(1000, 2000)}}}); err != nil {
				t.Fatal(err)
			}
			wcs := waitWC(t, r, 2)
			byID := map[uint64]WC{}
			for _, wc := range wcs {
				byID[wc.ID] = wc
			}
			if byID[1].Opcode != rdma.WCSend || byID[10].Opcode != rdma.WCRecv || byID[10].ByteLen != 3000 || byID[10].QPNum != b.Num() {
				t.Errorf("send completions %+v", wcs)
			}
			check("send", 4096, 0, 3000)

			// SEND_WITH_IMM, inline from Go memory.
			recv(11)
			msg := []byte("inline payload from the Go heap")
			if err := a.PostSend([]SendWR{{ID: 2, Opcode: OpSendWithImm, Flags: SendSignaled | SendInline, InlineData: msg, Imm: 0xdeadbeef}}); err != nil {
				t.Fatal(err)
			}
			wcs = waitWC(t, r, 2)
			for _, wc := range wcs {
				if wc.ID == 11 && (wc.Flags&WCWithImm == 0 || wc.Imm != 0xdeadbeef || wc.ByteLen != uint32(len(msg))) {
					t.Errorf("imm receive %+v", wc)
				}
			}
			if !bytes.Equal(mem[4096:4096+len(msg)], msg) {
				t.Errorf("inline data: %q", mem[4096:4096+len(msg)])
			}

			// Inline SEND from registered memory (SGEs copied into the WQE).
			fill(0, 48, 9)
			recv(12)
			if err := a.PostSend([]SendWR{{ID: 3, Opcode: OpSend, Flags: SendSignaled | SendInline, SGEs: []SGE{r.mr.SGE(0, 48)}}}); err != nil {
				t.Fatal(err)
			}
			waitWC(t, r, 2)
			check("inline sge", 4096, 0, 48)

			// RDMA_WRITE (no receive consumed), then WRITE_WITH_IMM.
			fill(0, 4096, 3)
			if err := a.PostSend([]SendWR{{ID: 4, Opcode: OpRDMAWrite, Flags: SendSignaled, SGEs: []SGE{r.mr.SGE(0, 4096)}, RemoteAddr: r.mr.Addr + 4096, RKey: r.mr.RKey}}); err != nil {
				t.Fatal(err)
			}
			if wc := waitWC(t, r, 1); wc[0].Opcode != rdma.WCRDMAWrite || wc[0].ID != 4 {
				t.Errorf("write completion %+v", wc)
			}
			check("rdma write", 4096, 0, 4096)
			fill(0, 100, 5)
			recv(13)
			if err := a.PostSend([]SendWR{{ID: 5, Opcode: OpRDMAWriteWithImm, Flags: SendSignaled, SGEs: []SGE{r.mr.SGE(0, 100)}, RemoteAddr: r.mr.Addr + 4096, RKey: r.mr.RKey, Imm: 42}}); err != nil {
				t.Fatal(err)
			}
			for _, wc := range waitWC(t, r, 2) {
				if wc.ID == 13 && (wc.Opcode != rdma.WCRecvRDMAWithImm || wc.Imm != 42) {
					t.Errorf("write-imm receive %+v", wc)
				}
			}
			check("rdma write imm", 4096, 0, 100)

			// RDMA_READ of b's area into 8192.
			fill(4096, 2048, 7)
			if err := a.PostSend([]SendWR{{ID: 6, Opcode: OpRDMARead, Flags: SendSignaled, SGEs: []SGE{r.mr.SGE(8192, 2048)}, RemoteAddr: r.mr.Addr + 4096, RKey: r.mr.RKey}}); err != nil {
				t.Fatal(err)
			}
			if wc := waitWC(t, r, 1); wc[0].Opcode != rdma.WCRDMARead || wc[0].ByteLen != 2048 {
				t.Errorf("read completion %+v", wc)
			}
			check("rdma read", 8192, 4096, 2048)

			// A batch deeper than one doorbell: 12 signalled sends.
			for i := 0; i < 12; i++ {
				recv(uint64(100 + i))
			}
			batch := make([]SendWR, 12)
			for i := range batch {
				batch[i] = SendWR{ID: uint64(200 + i), Opcode: OpSend, Flags: SendSignaled, SGEs: []SGE{r.mr.SGE(0, 64)}}
			}
			if err := a.PostSend(batch); err != nil {
				t.Fatal(err)
			}
			waitWC(t, r, 24)

			// Every command went through the selected interface.
			if iface == InterfaceAuto && x.stats.writes.Load() != 0 || iface == InterfaceWrite && x.stats.ioctls.Load() != 0 {
				t.Errorf("%v: %d ioctls, %d write commands", iface, x.stats.ioctls.Load(), x.stats.writes.Load())
			}
			t.Logf("%v: %d ioctls, %d write commands", iface, x.stats.ioctls.Load(), x.stats.writes.Load())

			// Errors the provider catches before touching the ring.
			if err := a.PostSend([]SendWR{{Opcode: OpSend, Flags: SendInline, InlineData: make([]byte, 100000)}}); !errors.Is(err, ErrInvalidArgument) {
				t.Errorf("oversized inline: %v", err)
			}
		})
	}
}

// TestGuestLoopbackUD sends datagrams through an AH to a second UD QP.
func TestGuestLoopbackUD(t *testing.T) {
	x := openGuest(t, InterfaceAuto)
	r := newRig(t, x, 8192)
	a, b := r.udQP(t, 0x1234), r.udQP(t, 0x1234)
	ah, err := r.pd.CreateAH(qp.AH{IsGlobal: true, PortNum: 1, GRH: qp.GRH{DGID: r.gid.GID, SGIDIndex: uint8(r.gid.Index), HopLimit: 64}})
	if err != nil {
		t.Fatal(err)
	}
	mem := r.buf.Bytes()
	const dgram = "datagram through an address handle"
	copy(mem, dgram)
	// UD receives start with the 40-byte GRH.
	if err := b.PostRecv([]RecvWR{{ID: 1, SGEs: []SGE{r.mr.SGE(4096, 40+256)}}}); err != nil {
		t.Fatal(err)
	}
	if err := a.PostSend([]SendWR{{ID: 2, Opcode: OpSend, Flags: SendSignaled, SGEs: []SGE{r.mr.SGE(0, len(dgram))}, AH: ah, RemoteQPN: b.Num(), RemoteQKey: 0x1234}}); err != nil {
		t.Fatal(err)
	}
	for _, wc := range waitWC(t, r, 2) {
		if wc.ID == 1 && (wc.ByteLen != uint32(40+len(dgram)) || wc.SrcQP != a.Num() || wc.Flags&WCWithGRH == 0) {
			t.Errorf("UD receive %+v", wc)
		}
	}
	if got := string(mem[4096+40 : 4096+40+len(dgram)]); got != dgram {
		t.Errorf("UD payload %q", got)
	}
	if err := a.PostSend([]SendWR{{Opcode: OpRDMAWrite, AH: ah}}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("RDMA write on UD: %v", err)
	}
}

func TestGuestEventWaitsTakeContextAndClose(t *testing.T) {
	x := openGuest(t, InterfaceAuto)
	ch, err := x.CreateCompChannel()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := ch.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("channel wait: %v", err)
	}
	if _, err := x.AsyncEvents(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("async wait: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := ch.Wait(context.Background())
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	ch.Close()
	select {
	case err := <-done:
		if !errors.Is(err, ErrClosed) {
			t.Errorf("wait after close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not interrupt Wait")
	}
}

// envOpenChild makes the test binary only try to open rxe0 and print the
// error (run as an unprivileged child by TestGuestPermissionNamesNode).
const envOpenChild = "UVERBS_TEST_OPEN_CHILD"

// envMemlockChild makes the test binary register 1 MiB under a 64 KiB
// RLIMIT_MEMLOCK and print the error (TestGuestMemlockLimit).
const envMemlockChild = "UVERBS_TEST_MEMLOCK_CHILD"

func memlockChild() {
	lim := unix.Rlimit{Cur: 64 << 10, Max: 64 << 10}
	if err := unix.Setrlimit(unix.RLIMIT_MEMLOCK, &lim); err != nil {
		fmt.Printf("setrlimit: %v\n", err)
		return
	}
	x, err := Open("rxe0")
	if err != nil {
		fmt.Printf("open: %v\n", err)
		return
	}
	defer x.Close()
	pd, err := x.AllocPD()
	if err != nil {
		fmt.Printf("alloc PD: %v\n", err)
		return
	}
	buf, err := AllocBuffer(1 << 20)
	if err != nil {
		fmt.Printf("alloc buffer: %v\n", err)
		return
	}
	defer buf.Close()
	_, err = pd.RegMR(buf, qp.AccessLocalWrite)
	fmt.Printf("matches ENOMEM=%v: %v\n", errors.Is(err, unix.ENOMEM), err)
}

func TestMain(m *testing.M) {
	if os.Getenv(envMemlockChild) == "1" {
		memlockChild()
		os.Exit(0)
	}
	if os.Getenv(envOpenChild) == "1" {
		_, err := Open("rxe0")
		fmt.Printf("matches ErrPermission=%v EACCES=%v: %v\n", errors.Is(err, ErrPermission), errors.Is(err, unix.EACCES), err)
		os.Exit(0)
	}
	leakcheck.Main(m)
}

// TestGuestPermissionNamesNode makes the uverbs node root-only and opens
// it as user nobody: the error matches ErrPermission and EACCES and names
// the node.
func TestGuestPermissionNamesNode(t *testing.T) {
	dev := guestDevice(t)
	st, err := os.Stat(dev.Verbs.Path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dev.Verbs.Path, 0o600); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(dev.Verbs.Path, st.Mode().Perm())
	out := guest.RunAsNobody(t, envOpenChild)
	want := "matches ErrPermission=true EACCES=true: uverbs: open on rxe0 (" + dev.Verbs.Path + ")"
	if !strings.HasPrefix(string(out), want) {
		t.Errorf("child said %q, want prefix %q", out, want)
	}
	t.Logf("%s", out)
}

// TestGuestMemlockLimit registers 1 MiB as user nobody (no CAP_IPC_LOCK)
// with RLIMIT_MEMLOCK at 64 KiB: the kernel refuses to pin (ib_umem_get:
// ENOMEM) and the error names the limit and how to raise it.
func TestGuestMemlockLimit(t *testing.T) {
	guestDevice(t)
	out := guest.RunAsNobody(t, envMemlockChild)
	for _, want := range []string{"matches ENOMEM=true", "RLIMIT_MEMLOCK is 65536 bytes", "ulimit -l"} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("child said %q, want %q in it", out, want)
		}
	}
	t.Logf("%s", out)
}

// resourceCounts parses `rdma resource show` for rxe0.
func resourceCounts(t *testing.T) map[string]int {
	t.Helper()
	out, err := exec.Command("rdma", "resource", "show").CombinedOutput()
	if err != nil {
		t.Fatalf("rdma resource show: %v\n%s", err, out)
	}
	m := map[string]int{}
	for _, line := range strings.Split(string(out), "\n") {
		if !strings.Contains(line, "rxe0") {
			continue
		}
		for _, kv := range regexp.MustCompile(`([a-z_]+) (\d+)`).FindAllStringSubmatch(line, -1) {
			n, _ := strconv.Atoi(kv[2])
			m[kv[1]] = n
		}
	}
	if len(m) == 0 {
		t.Fatalf("no rxe0 line in:\n%s", out)
	}
	return m
}

// TestGuestNoLeaks creates and destroys every object 1,000 times and
// compares the kernel's resource counts before and after.
func TestGuestNoLeaks(t *testing.T) {
	dev := guestDevice(t)
	before := resourceCounts(t)
	const cycles = 1000
	for i := 0; i < cycles; i++ {
		iface := interfaces[i%2]
		x, err := OpenDevice(dev, &Options{Interface: iface})
		if err != nil {
			t.Fatalf("cycle %d: %v", i, err)
		}
		pd, err := x.AllocPD()
		if err != nil {
			t.Fatal(err)
		}
		buf, err := AllocBuffer(4096)
		if err != nil {
			t.Fatal(err)
		}
		mr, err := pd.RegMR(buf, qp.AccessLocalWrite)
		if err != nil {
			t.Fatal(err)
		}
		ch, err := x.CreateCompChannel()
		if err != nil {
			t.Fatal(err)
		}
		cq, err := x.CreateCQ(16, ch, 0)
		if err != nil {
			t.Fatal(err)
		}
		q, err := pd.CreateQP(QPInit{Type: qp.RC, SendCQ: cq, RecvCQ: cq, Cap: qp.Cap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			// The counts see our objects while they exist.
			during := resourceCounts(t)
			for _, k := range []string{"ctx", "pd", "mr", "cq", "qp"} {
				if during[k] != before[k]+1 {
					t.Errorf("with one of each open: %s %d, before %d", k, during[k], before[k])
				}
			}
			t.Logf("with one of each open: %v", during)
		}
		if i%2 == 0 {
			// Explicit order on even cycles; Context.Close on odd ones.
			for _, c := range []interface{ Close() error }{q, cq, ch, mr, pd} {
				if err := c.Close(); err != nil {
					t.Fatalf("cycle %d: %v", i, err)
				}
			}
		}
		if err := x.Close(); err != nil {
			t.Fatalf("cycle %d close: %v", i, err)
		}
		if err := buf.Close(); err != nil {
			t.Fatal(err)
		}
		if i == cycles/2 {
			mid := resourceCounts(t)
			t.Logf("after %d cycles: %v", i+1, mid)
		}
	}
	after := resourceCounts(t)
	t.Logf("rdma resource show, rxe0: before %v, after %d cycles %v", before, cycles, after)
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s: %d before, %d after", k, v, after[k])
		}
	}
	var fds []string
	if out, err := exec.Command("ls", "/proc/self/fd").Output(); err == nil {
		fds = strings.Fields(string(out))
	}
	if len(fds) > 20 {
		t.Errorf("%d open fds after the cycles", len(fds))
	}
}

// TestGuestPortEvents takes eth0 down and up and expects the async fd to
// report PORT_ERR then PORT_ACTIVE for port 1. It runs last: the link
// flaps.
func TestGuestPortEvents(t *testing.T) {
	x := openGuest(t, InterfaceAuto)
	if out, err := exec.Command("sh", "-c", "ip link set eth0 down && sleep 1 && ip link set eth0 up").CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var seen []AsyncEvent
	for !(len(seen) >= 2 && seen[len(seen)-1].Type == EventPortActive) {
		evs, err := x.AsyncEvents(ctx)
		if err != nil {
			t.Fatalf("events so far %v: %v", seen, err)
		}
		seen = append(seen, evs...)
	}
	if seen[0].Type != EventPortErr || seen[0].Element != 1 {
		t.Errorf("events %v", seen)
	}
	t.Logf("async events: %v", seen)
	// Wait for the port to be active again for whatever runs next.
	for i := 0; i < 50; i++ {
		if pa, err := x.QueryPort(1); err == nil && pa.State == PortActive {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Error("port not active again")
}

// uverbsMappings counts this process's mappings of a uverbs device
// (/proc/self/maps): rings and doorbells mapped from the context fd.
func uverbsMappings(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "/dev/infiniband/uverbs")
}

// TestGuestRxeRingsUnmapped: every rxe QP maps its two rings, and after
// Close none of the mappings is left.
func TestGuestRxeRingsUnmapped(t *testing.T) {
	x := openGuest(t, InterfaceAuto)
	r := newRig(t, x, 4096)
	before := uverbsMappings(t)
	const n = 20
	qps := make([]*QP, 0, n)
	for i := 0; i < n; i++ {
		q, err := r.pd.CreateQP(QPInit{Type: qp.RC, SendCQ: r.cq, RecvCQ: r.cq, Cap: qp.Cap{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 2, MaxRecvSGE: 2}})
		if err != nil {
			t.Fatal(err)
		}
		qps = append(qps, q)
	}
	if got := uverbsMappings(t); got != before+2*n {
		t.Errorf("%d uverbs mappings with %d QPs, %d before: want two per QP", got, n, before)
	}
	for _, q := range qps {
		if err := q.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if got := uverbsMappings(t); got != before {
		t.Errorf("%d uverbs mappings after closing the QPs, %d before", got, before)
	}
}

// rxeBenchQPs opens rxe0 in the guest with a PD and a 16-entry CQ for
// benchmarks that make RC QPs; the context closes when b ends.
func rxeBenchQPs(b *testing.B) (*Context, *PD, *CQ) {
	b.Helper()
	guest.Require(b)
	dev, err := Discovery{}.Device("rxe0")
	if err != nil {
		b.Fatal(err)
	}
	x, err := OpenDevice(dev, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { x.Close() })
	pd, err := x.AllocPD()
	if err != nil {
		b.Fatal(err)
	}
	cq, err := x.CreateCQ(16, nil, 0)
	if err != nil {
		b.Fatal(err)
	}
	return x, pd, cq
}

// medianOf is the middle value of v (the upper one of an even count),
// for the guest benchmarks' per-round figures; v is left as it was.
func medianOf(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
