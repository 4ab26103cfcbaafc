package hwtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/go-rdma/rdmacm/rdma"
	"time"

	"github.com/go-rdma/rdmacm/ece"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/uverbs"
	"golang.org/x/sys/unix"
)

// av is the address vector to port 1's own GID (loopback).
func (tg *target) av() qp.AH {
	ah := qp.AH{IsGlobal: true, PortNum: 1, GRH: qp.GRH{DGID: tg.gid.GID, SGIDIndex: uint8(tg.gid.Index), HopLimit: 64}}
	if tg.ib {
		ah.DLID = tg.lid
	}
	return ah
}

// connectRC moves an RC QP to RTS towards remote on the loopback path.
func (tg *target) connectRC(q *uverbs.QP, remote, psn uint32) error {
	access := qp.AccessLocalWrite | qp.AccessRemoteWrite | qp.AccessRemoteRead
	if err := q.Modify(&qp.Attr{State: qp.Init, Port: 1, AccessFlags: access},
		qp.MaskState|qp.MaskPKeyIndex|qp.MaskPort|qp.MaskAccessFlags); err != nil {
		return fmt.Errorf("RESET→INIT: %w", err)
	}
	rtr := qp.Attr{State: qp.RTR, PathMTU: tg.mtu, DestQPN: remote, RQPSN: psn, MaxDestRdAtomic: 1, MinRNRTimer: 12, AH: tg.av()}
	if err := q.Modify(&rtr, qp.MaskState|qp.MaskAV|qp.MaskPathMTU|qp.MaskDestQPN|qp.MaskRQPSN|qp.MaskMaxDestRdAtomic|qp.MaskMinRNRTimer); err != nil {
		return fmt.Errorf("INIT→RTR: %w", err)
	}
	rts := qp.Attr{State: qp.RTS, SQPSN: psn, Timeout: 14, RetryCnt: 7, RNRRetry: 7, MaxRdAtomic: 1}
	if err := q.Modify(&rts, qp.MaskState|qp.MaskSQPSN|qp.MaskTimeout|qp.MaskRetryCnt|qp.MaskRNRRetry|qp.MaskMaxQPRdAtomic); err != nil {
		return fmt.Errorf("RTR→RTS: %w", err)
	}
	return nil
}

var rcCap = qp.Cap{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 2, MaxRecvSGE: 2, MaxInlineData: 64}

// verbsChecks runs the control path on both interfaces, then the data path.
func (r *runner) verbsChecks(ctx context.Context, tg *target) {
	for _, iface := range []uverbs.Interface{uverbs.InterfaceAuto, uverbs.InterfaceWrite} {
		r.check(ctx, "verbs objects ("+iface.String()+")", func(ctx context.Context) (string, error) {
			return tg.objects(iface)
		})
	}
	r.dataPath(ctx, tg)
}

// objects opens the device and creates, moves, queries and destroys one of
// each object.
func (tg *target) objects(iface uverbs.Interface) (string, error) {
	x, err := uverbs.OpenDevice(tg.dev, &uverbs.Options{Interface: iface})
	if err != nil {
		return "", fmt.Errorf("open: %w", err)
	}
	defer x.Close()
	via := "write"
	if x.UsesIoctl() {
		via = "ioctl"
	}
	if iface == uverbs.InterfaceWrite && x.UsesIoctl() {
		return "", errors.New("write-only mode uses ioctl")
	}
	pd, err := x.AllocPD()
	if err != nil {
		return "", fmt.Errorf("alloc PD: %w", err)
	}
	buf, err := uverbs.AllocBuffer(4096)
	if err != nil {
		return "", fmt.Errorf("buffer: %w", err)
	}
	defer buf.Close()
	mr, err := pd.RegMR(buf, qp.AccessLocalWrite|qp.AccessRemoteWrite|qp.AccessRemoteRead)
	if err != nil {
		return "", fmt.Errorf("reg MR: %w", err)
	}
	ch, err := x.CreateCompChannel()
	if err != nil {
		return "", fmt.Errorf("create comp channel: %w", err)
	}
	cq, err := x.CreateCQ(16, ch, 0)
	if err != nil {
		return "", fmt.Errorf("create CQ: %w", err)
	}
	q, err := pd.CreateQP(uverbs.QPInit{Type: qp.RC, SendCQ: cq, RecvCQ: cq, Cap: rcCap})
	if err != nil {
		return "", fmt.Errorf("create RC QP: %w", err)
	}
	// A QP connected to itself is a legal RC peer.
	if err := tg.connectRC(q, q.Num(), 100); err != nil {
		return "", fmt.Errorf("modify QP %#x: %w", q.Num(), err)
	}
	got, err := q.Query(qp.MaskState | qp.MaskDestQPN | qp.MaskPathMTU | qp.MaskSQPSN)
	if err != nil {
		return "", fmt.Errorf("query QP: %w", err)
	}
	if got.State != qp.RTS || got.DestQPN != q.Num() || got.PathMTU != tg.mtu || got.SQPSN != 100 {
		return "", fmt.Errorf("query QP: state %v dest %#x MTU %v SQ PSN %d, want RTS %#x %v 100", got.State, got.DestQPN, got.PathMTU, got.SQPSN, q.Num(), tg.mtu)
	}
	for _, c := range []struct {
		what string
		f    func() error
	}{{"destroy QP", q.Close}, {"destroy CQ", cq.Close}, {"destroy channel", ch.Close}, {"dereg MR", mr.Close}, {"dealloc PD", pd.Close}} {
		if err := c.f(); err != nil {
			return "", fmt.Errorf("%s: %w", c.what, err)
		}
	}
	return fmt.Sprintf("%s commands: PD, MR 4 KiB (lkey %#x), CQ %d entries on a channel, RC QP %#x RESET→INIT→RTR→RTS (query: %v, MTU %d), all destroyed",
		via, mr.LKey, cq.Size(), q.Num(), got.State, got.PathMTU.Bytes()), nil
}

// loop is the data-path rig: two RC QPs connected to each other through
// port 1's GID, one MR over three pages (a's source at 0, b's area at
// 4096, a read target at 8192), one CQ on a channel.
type loop struct {
	tg   *target
	x    *uverbs.Context
	pd   *uverbs.PD
	buf  *uverbs.Buffer
	mr   *uverbs.MR
	ch   *uverbs.CompChannel
	cq   *uverbs.CQ
	a, b *uverbs.QP
}

func (tg *target) newLoop() (l *loop, err error) {
	l = &loop{tg: tg}
	defer func() {
		if err != nil {
			l.close()
		}
	}()
	if l.x, err = uverbs.OpenDevice(tg.dev, nil); err != nil {
		return nil, fmt.Errorf("open: %w", err)
	}
	if l.pd, err = l.x.AllocPD(); err != nil {
		return nil, fmt.Errorf("alloc PD: %w", err)
	}
	if l.buf, err = uverbs.AllocBuffer(3 * 4096); err != nil {
		return nil, fmt.Errorf("buffer: %w", err)
	}
	if l.mr, err = l.pd.RegMR(l.buf, qp.AccessLocalWrite|qp.AccessRemoteWrite|qp.AccessRemoteRead); err != nil {
		return nil, fmt.Errorf("reg MR: %w", err)
	}
	if l.ch, err = l.x.CreateCompChannel(); err != nil {
		return nil, fmt.Errorf("comp channel: %w", err)
	}
	if l.cq, err = l.x.CreateCQ(64, l.ch, 0); err != nil {
		return nil, fmt.Errorf("create CQ: %w", err)
	}
	if l.a, err = l.pd.CreateQP(uverbs.QPInit{Type: qp.RC, SendCQ: l.cq, RecvCQ: l.cq, Cap: rcCap}); err != nil {
		return nil, fmt.Errorf("create QP: %w", err)
	}
	if l.b, err = l.pd.CreateQP(uverbs.QPInit{Type: qp.RC, SendCQ: l.cq, RecvCQ: l.cq, Cap: rcCap}); err != nil {
		return nil, fmt.Errorf("create QP: %w", err)
	}
	if !l.a.HasDataPath() {
		return l, skipf("no data path for provider %s", tg.provider)
	}
	if err = tg.connectRC(l.a, l.b.Num(), 1); err != nil {
		return nil, fmt.Errorf("QP a: %w", err)
	}
	if err = tg.connectRC(l.b, l.a.Num(), 1); err != nil {
		return nil, fmt.Errorf("QP b: %w", err)
	}
	return l, nil
}

func (l *loop) close() {
	if l.x != nil {
		l.x.Close() // QPs, CQ, channel, MR, PD
		l.x = nil
	}
	if l.buf != nil {
		l.buf.Close()
		l.buf = nil
	}
}

func (l *loop) fill(off, n int, seed byte) {
	m := l.buf.Bytes()
	for i := 0; i < n; i++ {
		m[off+i] = seed + byte(i*7)
	}
}

func (l *loop) same(what string, dst, src, n int) error {
	m := l.buf.Bytes()
	if !bytes.Equal(m[dst:dst+n], m[src:src+n]) {
		for i := 0; i < n; i++ {
			if m[dst+i] != m[src+i] {
				return fmt.Errorf("%s: data differs at byte %d of %d (%#x, want %#x)", what, i, n, m[dst+i], m[src+i])
			}
		}
	}
	return nil
}

func (l *loop) recv(id uint64, off, n int) error {
	return l.b.PostRecv([]uverbs.RecvWR{{ID: id, SGEs: []uverbs.SGE{l.mr.SGE(off, n)}}})
}

// wait collects n successful completions, sleeping on the channel when the
// CQ is empty (arm, poll again, wait).
func (l *loop) wait(ctx context.Context, n int) (map[uint64]uverbs.WC, error) {
	got := map[uint64]uverbs.WC{}
	buf := make([]uverbs.WC, 16)
	for len(got) < n {
		k, err := l.cq.Poll(buf)
		if err != nil {
			return got, err
		}
		if k == 0 {
			if err := l.cq.RequestNotify(false); err != nil {
				return got, err
			}
			if k, err = l.cq.Poll(buf); err != nil {
				return got, err
			}
			if k == 0 {
				if _, err := l.ch.Wait(ctx); err != nil {
					return got, fmt.Errorf("waiting for %d completions (have %d): %w", n, len(got), err)
				}
				continue
			}
		}
		for _, wc := range buf[:k] {
			if wc.Status != rdma.WCSuccess {
				return got, fmt.Errorf("completion of WR %d: %v (vendor error %#x)", wc.ID, wc.Status, wc.VendorErr)
			}
			got[wc.ID] = wc
		}
	}
	return got, nil
}

// dataPath runs the loopback data-path checks on one rig.
func (r *runner) dataPath(ctx context.Context, tg *target) {
	var l *loop
	var setupErr error
	r.check(ctx, "RC loopback connect", func(context.Context) (string, error) {
		l, setupErr = tg.newLoop()
		if setupErr != nil {
			return "", setupErr
		}
		return fmt.Sprintf("QPs %#x and %#x connected through GID index %d", l.a.Num(), l.b.Num(), tg.gid.Index), nil
	})
	ops := []struct {
		name string
		f    func(ctx context.Context, l *loop) (string, error)
	}{
		{"RC SEND/RECV", opSend},
		{"RC RDMA WRITE", opWrite},
		{"RC RDMA WRITE_WITH_IMM", opWriteImm},
		{"RC RDMA READ", opRead},
		{"RC inline SEND", opInline},
		{"completion channel wait", opChannel},
		{"UD loopback via AH", opUD},
	}
	for _, op := range ops {
		r.check(ctx, op.name, func(ctx context.Context) (string, error) {
			var skip skipError
			switch {
			case errors.As(setupErr, &skip):
				return "", setupErr
			case setupErr != nil || l == nil:
				return "", errors.New("not run: RC loopback connect failed")
			case r.abandoned:
				return "", errors.New("not run: an earlier check timed out")
			}
			return op.f(ctx, l)
		})
	}
	if l != nil && !r.abandoned {
		l.close()
	}
}

func opSend(ctx context.Context, l *loop) (string, error) {
	l.fill(0, 3000, 1)
	if err := l.recv(10, 4096, 4096); err != nil {
		return "", err
	}
	if err := l.a.PostSend([]uverbs.SendWR{{ID: 1, Opcode: uverbs.OpSend, Flags: uverbs.SendSignaled,
		SGEs: []uverbs.SGE{l.mr.SGE(0, 1000), l.mr.SGE(1000, 2000)}}}); err != nil {
		return "", err
	}
	wcs, err := l.wait(ctx, 2)
	if err != nil {
		return "", err
	}
	if rc := wcs[10]; rc.Opcode != rdma.WCRecv || rc.ByteLen != 3000 || rc.QPNum != l.b.Num() {
		return "", fmt.Errorf("receive completion %+v", rc)
	}
	if sc := wcs[1]; sc.Opcode != rdma.WCSend {
		return "", fmt.Errorf("send completion %+v", sc)
	}
	return "3000 bytes in 2 SGEs, data checked", l.same("send", 4096, 0, 3000)
}

func opWrite(ctx context.Context, l *loop) (string, error) {
	l.fill(0, 4096, 3)
	if err := l.a.PostSend([]uverbs.SendWR{{ID: 4, Opcode: uverbs.OpRDMAWrite, Flags: uverbs.SendSignaled,
		SGEs: []uverbs.SGE{l.mr.SGE(0, 4096)}, RemoteAddr: l.mr.Addr + 4096, RKey: l.mr.RKey}}); err != nil {
		return "", err
	}
	wcs, err := l.wait(ctx, 1)
	if err != nil {
		return "", err
	}
	if wc := wcs[4]; wc.Opcode != rdma.WCRDMAWrite {
		return "", fmt.Errorf("completion %+v", wc)
	}
	return "4096 bytes, data checked", l.same("rdma write", 4096, 0, 4096)
}

func opWriteImm(ctx context.Context, l *loop) (string, error) {
	l.fill(0, 100, 5)
	if err := l.recv(13, 4096, 16); err != nil {
		return "", err
	}
	if err := l.a.PostSend([]uverbs.SendWR{{ID: 5, Opcode: uverbs.OpRDMAWriteWithImm, Flags: uverbs.SendSignaled,
		SGEs: []uverbs.SGE{l.mr.SGE(0, 100)}, RemoteAddr: l.mr.Addr + 4096, RKey: l.mr.RKey, Imm: 0x2a}}); err != nil {
		return "", err
	}
	wcs, err := l.wait(ctx, 2)
	if err != nil {
		return "", err
	}
	if wc := wcs[13]; wc.Opcode != rdma.WCRecvRDMAWithImm || wc.Flags&uverbs.WCWithImm == 0 || wc.Imm != 0x2a {
		return "", fmt.Errorf("receive completion %+v", wc)
	}
	return "100 bytes + immediate 0x2a, data checked", l.same("rdma write with imm", 4096, 0, 100)
}

func opRead(ctx context.Context, l *loop) (string, error) {
	l.fill(4096, 2048, 7)
	if err := l.a.PostSend([]uverbs.SendWR{{ID: 6, Opcode: uverbs.OpRDMARead, Flags: uverbs.SendSignaled,
		SGEs: []uverbs.SGE{l.mr.SGE(8192, 2048)}, RemoteAddr: l.mr.Addr + 4096, RKey: l.mr.RKey}}); err != nil {
		return "", err
	}
	wcs, err := l.wait(ctx, 1)
	if err != nil {
		return "", err
	}
	if wc := wcs[6]; wc.Opcode != rdma.WCRDMARead || wc.ByteLen != 2048 {
		return "", fmt.Errorf("completion %+v", wc)
	}
	return "2048 bytes, data checked", l.same("rdma read", 8192, 4096, 2048)
}

func opInline(ctx context.Context, l *loop) (string, error) {
	msg := []byte("inline payload from the Go heap")
	if err := l.recv(11, 4096, 4096); err != nil {
		return "", err
	}
	if err := l.a.PostSend([]uverbs.SendWR{{ID: 2, Opcode: uverbs.OpSendWithImm, Flags: uverbs.SendSignaled | uverbs.SendInline,
		InlineData: msg, Imm: 0xdeadbeef}}); err != nil {
		return "", err
	}
	wcs, err := l.wait(ctx, 2)
	if err != nil {
		return "", err
	}
	if wc := wcs[11]; wc.Flags&uverbs.WCWithImm == 0 || wc.Imm != 0xdeadbeef || wc.ByteLen != uint32(len(msg)) {
		return "", fmt.Errorf("receive completion %+v", wc)
	}
	if got := l.buf.Bytes()[4096 : 4096+len(msg)]; !bytes.Equal(got, msg) {
		return "", fmt.Errorf("received %q", got)
	}
	return fmt.Sprintf("%d bytes inline with immediate, data checked", len(msg)), nil
}

// opChannel arms the CQ, sends, and waits on the channel with a deadline
// before polling.
func opChannel(ctx context.Context, l *loop) (string, error) {
	buf := make([]uverbs.WC, 4)
	if k, err := l.cq.Poll(buf); err != nil || k != 0 {
		return "", fmt.Errorf("CQ not empty before the test: %d, %v", k, err)
	}
	// An idle wait ends with its context.
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if err := l.cq.RequestNotify(false); err != nil {
		return "", fmt.Errorf("arm: %w", err)
	}
	if _, err := l.ch.Wait(short); !errors.Is(err, context.DeadlineExceeded) {
		return "", fmt.Errorf("wait on an idle channel: %v, want a deadline error", err)
	}
	if err := l.recv(20, 4096, 64); err != nil {
		return "", err
	}
	start := time.Now()
	if err := l.a.PostSend([]uverbs.SendWR{{ID: 21, Opcode: uverbs.OpSend, Flags: uverbs.SendSignaled, SGEs: []uverbs.SGE{l.mr.SGE(0, 64)}}}); err != nil {
		return "", err
	}
	cqs, err := l.ch.Wait(ctx)
	if err != nil {
		return "", fmt.Errorf("wait: %w", err)
	}
	if len(cqs) != 1 || cqs[0] != l.cq {
		return "", fmt.Errorf("channel reported %d CQs", len(cqs))
	}
	lat := time.Since(start)
	if _, err := l.wait(ctx, 2); err != nil {
		return "", err
	}
	return fmt.Sprintf("idle wait ended by its deadline; armed CQ reported after %v; 2 completions polled", FormatDuration(lat)), nil
}

func opUD(ctx context.Context, l *loop) (string, error) {
	mk := func() (*uverbs.QP, error) {
		u, err := l.pd.CreateQP(uverbs.QPInit{Type: qp.UD, SendCQ: l.cq, RecvCQ: l.cq, Cap: qp.Cap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}})
		if err != nil {
			return nil, fmt.Errorf("create UD QP: %w", err)
		}
		for _, s := range []struct {
			a qp.Attr
			m qp.Mask
		}{
			{qp.Attr{State: qp.Init, Port: 1, QKey: 0x1234}, qp.MaskState | qp.MaskPKeyIndex | qp.MaskPort | qp.MaskQKey},
			{qp.Attr{State: qp.RTR}, qp.MaskState},
			{qp.Attr{State: qp.RTS}, qp.MaskState | qp.MaskSQPSN},
		} {
			if err := u.Modify(&s.a, s.m); err != nil {
				u.Close()
				return nil, fmt.Errorf("UD QP to %v: %w", s.a.State, err)
			}
		}
		return u, nil
	}
	a, err := mk()
	if err != nil {
		return "", err
	}
	defer a.Close()
	b, err := mk()
	if err != nil {
		return "", err
	}
	defer b.Close()
	ah, err := l.pd.CreateAH(l.tg.av())
	if err != nil {
		return "", fmt.Errorf("create AH: %w", err)
	}
	defer ah.Close()
	const dgram = "datagram through an address handle"
	copy(l.buf.Bytes(), dgram)
	// A UD receive starts with the 40-byte GRH.
	if err := b.PostRecv([]uverbs.RecvWR{{ID: 31, SGEs: []uverbs.SGE{l.mr.SGE(4096, 40+256)}}}); err != nil {
		return "", err
	}
	if err := a.PostSend([]uverbs.SendWR{{ID: 32, Opcode: uverbs.OpSend, Flags: uverbs.SendSignaled,
		SGEs: []uverbs.SGE{l.mr.SGE(0, len(dgram))}, AH: ah, RemoteQPN: b.Num(), RemoteQKey: 0x1234}}); err != nil {
		return "", err
	}
	wcs, err := l.wait(ctx, 2)
	if err != nil {
		return "", err
	}
	if wc := wcs[31]; wc.ByteLen != uint32(40+len(dgram)) || wc.SrcQP != a.Num() || wc.Flags&uverbs.WCWithGRH == 0 {
		return "", fmt.Errorf("receive completion %+v", wc)
	}
	if got := string(l.buf.Bytes()[4096+40 : 4096+40+len(dgram)]); got != dgram {
		return "", fmt.Errorf("received %q", got)
	}
	return fmt.Sprintf("UD QP %#x → %#x, %d bytes + GRH, data checked", a.Num(), b.Num(), len(dgram)), nil
}

// eceCheck queries and sets ECE on an RC QP where the provider has ECE;
// elsewhere it checks that both calls answer "not supported" and skips.
func (r *runner) eceCheck(ctx context.Context, tg *target) {
	r.check(ctx, "ECE query/set", func(context.Context) (string, error) {
		x, err := uverbs.OpenDevice(tg.dev, nil)
		if err != nil {
			return "", fmt.Errorf("open: %w", err)
		}
		defer x.Close()
		pd, err := x.AllocPD()
		if err != nil {
			return "", fmt.Errorf("alloc PD: %w", err)
		}
		cq, err := x.CreateCQ(4, nil, 0)
		if err != nil {
			if !x.HasECE() {
				return "", skipf("provider %s has no ECE (and CQs fail: %v)", tg.provider, err)
			}
			return "", fmt.Errorf("create CQ: %w", err)
		}
		q, err := pd.CreateQP(uverbs.QPInit{Type: qp.RC, SendCQ: cq, RecvCQ: cq, Cap: qp.Cap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}})
		if err != nil {
			return "", fmt.Errorf("create QP: %w", err)
		}
		if !x.HasECE() {
			_, qerr := q.QueryECE()
			serr := q.SetECE(ece.ECE{VendorID: ece.VendorMellanox, Options: 0x30000001})
			if !errors.Is(qerr, uverbs.ErrNotSupported) || !errors.Is(serr, uverbs.ErrNotSupported) {
				return "", fmt.Errorf("HasECE is false but QueryECE: %v, SetECE: %v", qerr, serr)
			}
			return "", skipf("provider %s has no ECE: QueryECE and SetECE answer not supported (as libibverbs)", tg.provider)
		}
		e, err := q.QueryECE()
		if err != nil {
			return "", fmt.Errorf("QueryECE: %w", err)
		}
		if err := q.SetECE(ece.ECE{Options: e.Options}); !errors.Is(err, unix.EOPNOTSUPP) {
			return "", fmt.Errorf("SetECE with vendor 0: %v, want EOPNOTSUPP", err)
		}
		if err := q.SetECE(e); err != nil {
			return "", fmt.Errorf("SetECE(%s): %w", fmtECE(e), err)
		}
		if err := q.Modify(&qp.Attr{State: qp.Init, Port: 1, AccessFlags: qp.AccessRemoteWrite},
			qp.MaskState|qp.MaskPKeyIndex|qp.MaskPort|qp.MaskAccessFlags); err != nil {
			return "", fmt.Errorf("RESET→INIT after SetECE: %w", err)
		}
		after, err := q.QueryECE()
		if err != nil {
			return "", fmt.Errorf("QueryECE after INIT: %w", err)
		}
		return fmt.Sprintf("QueryECE %s; SetECE of it accepted (vendor 0 refused); after INIT %s", fmtECE(e), fmtECE(after)), nil
	})
}

func fmtECE(e ece.ECE) string { return fmt.Sprintf("%#x:%#x", e.VendorID, e.Options) }
