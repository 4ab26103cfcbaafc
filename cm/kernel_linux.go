//go:build linux

package cm

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/go-rdma/rdmacm/ece"
	"github.com/go-rdma/rdmacm/internal/abi"
	"github.com/go-rdma/rdmacm/internal/kcall"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
)

// kernel is the backend over the kernel's rdma_cm: commands are write()s
// to /dev/infiniband/rdma_cm (drivers/infiniband/core/ucma.c). The fd is
// non-blocking and registered with Go's netpoller; GET_EVENT answers
// EAGAIN when no event is queued and the fd polls readable when one is.
type kernel struct {
	f  *os.File
	rc syscall.RawConn // the event reader's, through the netpoller

	// Commands write to fd directly under cmdMu (shared), which close
	// takes exclusively before closing the file, so that no command
	// writes to a closed or reused descriptor. Through rc.Control, whose
	// callback escapes through the RawConn interface, every command
	// allocated its closures and the variables they capture (7 of the 10
	// allocations of an ID's create and destroy).
	fd       int
	cmdMu    sync.RWMutex
	cmdClose bool

	dlMu sync.Mutex
	gen  uint64

	resp abi.UcmaEventResp // GET_EVENT buffer of the one reader
	raws []rawEvent
}

func openKernel() (*kernel, error) {
	v, err := kcall.UcmaReadABIVersion()
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("cm: rdma_cm ABI version: %w (is rdma_ucm loaded?): %w", ErrNoDevice, err)
	case errors.Is(err, fs.ErrPermission):
		return nil, fmt.Errorf("cm: rdma_cm ABI version: %w: %w", ErrPermission, err)
	case err != nil:
		return nil, fmt.Errorf("cm: rdma_cm ABI version: %w", err)
	case v != abi.UcmaABIVersion:
		return nil, fmt.Errorf("cm: rdma_cm ABI version %d, want %d: %w", v, abi.UcmaABIVersion, ErrNotSupported)
	}
	return openUcma(abi.UcmaDevicePath, kcall.UcmaOpen)
}

// openUcma opens the rdma_cm node at path with open (kcall.UcmaOpen, a raw
// openat; tests inject errnos, since the host tests run as root and root
// ignores file modes).
func openUcma(path string, open func(path string, mode int, perm uint32) (int, error)) (*kernel, error) {
	fd, err := open(path, unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		switch {
		case err == unix.ENOENT || err == unix.ENODEV || err == unix.ENXIO:
			return nil, fmt.Errorf("cm: open %s: %w: %w", path, ErrNoDevice, err)
		case err == unix.EACCES || err == unix.EPERM:
			// The kernel creates the node mode 0666 (ucma.c ucma_misc);
			// a stricter mode from udev rules, or a device cgroup that
			// leaves it out (containers: EPERM), denies the open.
			return nil, fmt.Errorf("cm: open %s: %w: no read-write access to the node (check its mode and group, udev rules, and a container's device access): %w",
				path, ErrPermission, err)
		}
		return nil, fmt.Errorf("cm: open %s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("cm: %w", err)
	}
	// Two command pages: one for the commands, one for the event
	// reader's GET_EVENT (kcall.UcmaWarmScratch).
	kcall.UcmaWarmScratch(2)
	return &kernel{f: f, rc: rc, fd: fd}, nil
}

func (k *kernel) name() Backend { return BackendKernel }

func (k *kernel) close() error {
	k.cmdMu.Lock()
	k.cmdClose = true
	k.cmdMu.Unlock()
	return k.f.Close()
}

// exec runs one command (an abi.Ucma*Call) on the fd, again after EINTR.
func (k *kernel) exec(call func(fd int) error) error {
	k.cmdMu.RLock()
	defer k.cmdMu.RUnlock()
	if k.cmdClose {
		return fmt.Errorf("%w: %w", ErrClosed, os.ErrClosed)
	}
	for {
		if err := call(k.fd); err != unix.EINTR {
			return err
		}
	}
}

func (k *kernel) createID(uid uint64, ps rdma.PortSpace, t qp.QPType) (uint32, error) {
	cmd := abi.UcmaCreateID{UID: uid, PS: uint16(ps), QPType: uint8(t)}
	var resp abi.UcmaCreateIDResp
	err := k.exec(func(fd int) (err error) { resp, err = kcall.UcmaCreateIDCall(fd, &cmd); return err })
	if err != nil {
		return 0, err
	}
	return resp.ID, nil
}

func (k *kernel) destroyID(h uint32) (uint32, error) {
	var resp abi.UcmaDestroyIDResp
	err := k.exec(func(fd int) (err error) { resp, err = kcall.UcmaDestroyIDCall(fd, h); return err })
	if err != nil {
		return 0, err
	}
	return resp.EventsReported, nil
}

func (k *kernel) bind(h uint32, addr netip.AddrPort) error {
	cmd := abi.UcmaBind{ID: h}
	cmd.AddrSize = uint16(abi.PutSockaddr(cmd.Addr[:], addr))
	return k.exec(func(fd int) error { return kcall.UcmaBindCall(fd, &cmd) })
}

func timeoutMS(d time.Duration) uint32 {
	ms := d.Milliseconds()
	if ms <= 0 {
		ms = 1
	}
	if ms > 1<<31 {
		ms = 1 << 31
	}
	return uint32(ms)
}

func (k *kernel) resolveAddr(h uint32, src, dst netip.AddrPort, timeout time.Duration) error {
	cmd := abi.UcmaResolveAddr{ID: h, TimeoutMS: timeoutMS(timeout)}
	if src.Addr().IsValid() {
		cmd.SrcSize = uint16(abi.PutSockaddr(cmd.SrcAddr[:], src))
	}
	cmd.DstSize = uint16(abi.PutSockaddr(cmd.DstAddr[:], dst))
	return k.exec(func(fd int) error { return kcall.UcmaResolveAddrCall(fd, &cmd) })
}

func (k *kernel) resolveRoute(h uint32, timeout time.Duration) error {
	cmd := abi.UcmaResolveRoute{ID: h, TimeoutMS: timeoutMS(timeout)}
	return k.exec(func(fd int) error { return kcall.UcmaResolveRouteCall(fd, &cmd) })
}

func (k *kernel) queryAddr(h uint32) (AddrInfo, error) {
	var resp abi.UcmaQueryAddrResp
	if err := k.exec(func(fd int) (err error) { resp, err = kcall.UcmaQueryAddrCall(fd, h); return err }); err != nil {
		return AddrInfo{}, err
	}
	var ai AddrInfo
	ai.Src, _ = abi.ParseSockaddr(resp.SrcAddr[:])
	ai.Dst, _ = abi.ParseSockaddr(resp.DstAddr[:])
	binary.NativeEndian.PutUint64(ai.NodeGUID[:], resp.NodeGUID)
	ai.Port = resp.PortNum
	ai.HasDevice = resp.PortNum != 0
	ai.DeviceIndex = resp.IBDevIndex
	ai.PKey = beU16(resp.PKey)
	return ai, nil
}

// beU16 reads a big-endian u16 stored in a host-endian field.
func beU16(v uint16) uint16 {
	var b [2]byte
	binary.NativeEndian.PutUint16(b[:], v)
	return binary.BigEndian.Uint16(b[:])
}

func (k *kernel) queryPath(h uint32) ([]rdma.PathRecord, error) {
	const maxPaths = 2
	var recs []abi.UcmaPathRecData
	if err := k.exec(func(fd int) (err error) { recs, err = kcall.UcmaQueryPathCall(fd, h, maxPaths); return err }); err != nil {
		return nil, err
	}
	prs := make([]rdma.PathRecord, 0, len(recs))
	for i := range recs {
		pr := parseSAPathRecord(recs[i].PathRec[:])
		pr.Flags = recs[i].Flags
		prs = append(prs, pr)
	}
	return prs, nil
}

// parseSAPathRecord decodes a packed SA PathRecord (IBTA vol. 1
// §15.2.5.16, big-endian, 64 bytes).
func parseSAPathRecord(b []byte) rdma.PathRecord {
	var pr rdma.PathRecord
	copy(pr.DGID[:], b[8:24])
	copy(pr.SGID[:], b[24:40])
	pr.DLID = binary.BigEndian.Uint16(b[40:])
	pr.SLID = binary.BigEndian.Uint16(b[42:])
	w := binary.BigEndian.Uint32(b[44:])
	pr.FlowLabel = (w >> 8) & 0xfffff
	pr.HopLimit = uint8(w)
	pr.TrafficClass = b[48]
	pr.Reversible = b[49]&0x80 != 0
	pr.PKey = binary.BigEndian.Uint16(b[50:])
	pr.SL = uint8(binary.BigEndian.Uint16(b[52:]) & 0xf)
	pr.MTU = rdma.MTU(b[54] & 0x3f)
	pr.Rate = b[55] & 0x3f
	pr.PacketLifeTime = b[56] & 0x3f
	return pr
}

func (k *kernel) listen(h uint32, backlog int) error {
	if backlog < 0 {
		backlog = 0
	}
	cmd := abi.UcmaListen{ID: h, Backlog: uint32(backlog)}
	return k.exec(func(fd int) error { return kcall.UcmaListenCall(fd, &cmd) })
}

func putConnParam(dst *abi.UcmaConnParam, p *ConnParam) {
	dst.QPNum = p.QPNum
	dst.QKey = p.QKey
	n := copy(dst.PrivateData[:], p.PrivateData)
	dst.PrivateDataLen = uint8(n)
	dst.SRQ = b2u(p.SRQ)
	dst.ResponderResources = p.ResponderResources
	dst.InitiatorDepth = p.InitiatorDepth
	dst.FlowControl = b2u(p.FlowControl)
	dst.RetryCount = p.RetryCount
	dst.RNRRetryCount = p.RNRRetryCount
	dst.Valid = 1
}

func b2u(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

func checkPrivateData(p *ConnParam) error {
	if len(p.PrivateData) > 255 {
		return fmt.Errorf("%d bytes of private data, at most 255: %w", len(p.PrivateData), unix.EINVAL)
	}
	return nil
}

func (k *kernel) connect(h uint32, p *ConnParam, e ece.ECE) error {
	if err := checkPrivateData(p); err != nil {
		return err
	}
	cmd := new(abi.UcmaConnect)
	putConnParam(&cmd.ConnParam, p)
	cmd.ID = h
	cmd.ECE = abi.UcmaECE{VendorID: e.VendorID, AttrMod: e.Options}
	return k.exec(func(fd int) error { return kcall.UcmaConnectCall(fd, cmd) })
}

func (k *kernel) accept(h uint32, uid uint64, p *ConnParam, e ece.ECE) error {
	cmd := new(abi.UcmaAccept)
	cmd.ID = h
	if p != nil {
		if err := checkPrivateData(p); err != nil {
			return err
		}
		cmd.UID = uid
		putConnParam(&cmd.ConnParam, p)
		cmd.ECE = abi.UcmaECE{VendorID: e.VendorID, AttrMod: e.Options}
	}
	return k.exec(func(fd int) error { return kcall.UcmaAcceptCall(fd, cmd) })
}

func (k *kernel) reject(h uint32, pd []byte, reason uint8) error {
	cmd := new(abi.UcmaReject)
	cmd.ID = h
	cmd.Reason = reason
	cmd.PrivateDataLen = uint8(copy(cmd.PrivateData[:], pd))
	return k.exec(func(fd int) error { return kcall.UcmaRejectCall(fd, cmd) })
}

func (k *kernel) disconnect(h uint32) error {
	return k.exec(func(fd int) error { return kcall.UcmaDisconnectCall(fd, h) })
}

func (k *kernel) initQPAttr(h uint32, s qp.State) (qp.Attr, qp.Mask, error) {
	var resp abi.UcmaQPAttr
	if err := k.exec(func(fd int) (err error) { resp, err = kcall.UcmaInitQPAttrCall(fd, h, uint32(s)); return err }); err != nil {
		return qp.Attr{}, 0, err
	}
	return qpAttrFromUcma(&resp), qp.Mask(resp.QPAttrMask), nil
}

func ahFromUcma(a *abi.UcmaAHAttr) qp.AH {
	return qp.AH{
		GRH: qp.GRH{DGID: a.DGID, FlowLabel: a.FlowLabel, SGIDIndex: a.SGIDIndex,
			HopLimit: a.HopLimit, TrafficClass: a.TrafficClass},
		DLID: a.DLID, SL: a.SL, SrcPathBits: a.SrcPathBits, StaticRate: a.StaticRate,
		IsGlobal: a.IsGlobal != 0, PortNum: a.PortNum,
	}
}

func qpAttrFromUcma(r *abi.UcmaQPAttr) qp.Attr {
	return qp.Attr{
		State:            qp.State(r.QPState),
		CurState:         qp.State(r.CurQPState),
		EnSQDAsyncNotify: r.EnSQDAsyncNotify != 0,
		AccessFlags:      qp.Access(r.QPAccessFlags),
		PKeyIndex:        r.PKeyIndex,
		Port:             r.PortNum,
		QKey:             r.QKey,
		AH:               ahFromUcma(&r.AHAttr),
		PathMTU:          rdma.MTU(r.PathMTU),
		Timeout:          r.Timeout,
		RetryCnt:         r.RetryCnt,
		RNRRetry:         r.RNRRetry,
		RQPSN:            r.RQPSN,
		MaxRdAtomic:      r.MaxRDAtomic,
		AltPath: qp.AltPath{AH: ahFromUcma(&r.AltAHAttr), PKeyIndex: r.AltPKeyIndex,
			PortNum: r.AltPortNum, Timeout: r.AltTimeout},
		MinRNRTimer:     r.MinRNRTimer,
		SQPSN:           r.SQPSN,
		MaxDestRdAtomic: r.MaxDestRDAtomic,
		PathMigState:    qp.MigState(r.PathMigState),
		Cap: qp.Cap{MaxSendWR: r.MaxSendWR, MaxRecvWR: r.MaxRecvWR, MaxSendSGE: r.MaxSendSGE,
			MaxRecvSGE: r.MaxRecvSGE, MaxInlineData: r.MaxInlineData},
		DestQPN: r.DestQPNum,
	}
}

func (k *kernel) setOption(h uint32, level, name uint32, val []byte) error {
	if len(val) == 0 {
		return unix.EINVAL
	}
	return k.exec(func(fd int) error { return kcall.UcmaSetOptionCall(fd, h, level, name, val) })
}

func (k *kernel) notify(h uint32, event uint32) error {
	cmd := abi.UcmaNotify{ID: h, Event: event}
	return k.exec(func(fd int) error { return kcall.UcmaNotifyCall(fd, &cmd) })
}

func (k *kernel) join(h uint32, uid uint64, addr netip.Addr, sendOnly bool) (uint32, error) {
	cmd := abi.UcmaJoinMcast{UID: uid, ID: h}
	cmd.AddrSize = uint16(abi.PutSockaddr(cmd.Addr[:], netip.AddrPortFrom(addr, 0)))
	if sendOnly {
		cmd.JoinFlags = abi.UcmaMcJoinSendOnlyFullMember
	}
	var resp abi.UcmaCreateIDResp
	err := k.exec(func(fd int) (err error) { resp, err = kcall.UcmaJoinMcastCall(fd, &cmd); return err })
	if err != nil {
		return 0, err
	}
	return resp.ID, nil
}

func (k *kernel) leave(mc uint32) (uint32, error) {
	var resp abi.UcmaDestroyIDResp
	err := k.exec(func(fd int) (err error) { resp, err = kcall.UcmaLeaveMcastCall(fd, mc); return err })
	if err != nil {
		return 0, err
	}
	return resp.EventsReported, nil
}

// longAgo is a deadline in the past: it wakes a blocked read at once.
var longAgo = time.Unix(1, 0)

// readEvents waits until the fd is readable, then issues GET_EVENT until
// EAGAIN and hands each event to fn. Cancelling ctx sets a past read
// deadline; a generation counter keeps a late cancellation from touching
// the next reader's deadline.
func (k *kernel) readEvents(ctx context.Context, fn func(*rawEvent)) error {
	k.dlMu.Lock()
	k.gen++
	gen := k.gen
	k.dlMu.Unlock()
	dl, _ := ctx.Deadline()
	if err := k.f.SetReadDeadline(dl); err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() {
		k.dlMu.Lock()
		if k.gen == gen {
			_ = k.f.SetReadDeadline(longAgo)
		}
		k.dlMu.Unlock()
	})
	k.raws = k.raws[:0]
	var readErr error
	err := k.rc.Read(func(fd uintptr) bool {
		for {
			err := kcall.UcmaGetEventCall(int(fd), &k.resp)
			switch err {
			case nil:
				k.raws = append(k.raws, decodeEvent(&k.resp))
				continue
			case unix.EINTR:
				continue
			case unix.EAGAIN:
				return len(k.raws) > 0 // wait for readability if nothing came
			}
			readErr = err
			return true
		}
	})
	stop()
	k.dlMu.Lock()
	k.gen++
	k.dlMu.Unlock()
	for i := range k.raws {
		fn(&k.raws[i])
	}
	clear(k.raws)
	if err != nil {
		return err
	}
	return readErr
}

// decodeEvent copies a GET_EVENT response into a rawEvent, decoding the
// parameter union both ways.
func decodeEvent(r *abi.UcmaEventResp) rawEvent {
	ev := rawEvent{
		uid: r.UID, handle: r.ID, typ: EventType(r.Event), status: r.Status,
		ece: ece.ECE{VendorID: r.ECE.VendorID, Options: r.ECE.AttrMod},
	}
	c := r.Conn()
	ev.conn = ConnParam{
		PrivateData:        append([]byte(nil), c.PrivateData[:c.PrivateDataLen]...),
		ResponderResources: c.ResponderResources,
		InitiatorDepth:     c.InitiatorDepth,
		FlowControl:        c.FlowControl != 0,
		RetryCount:         c.RetryCount,
		RNRRetryCount:      c.RNRRetryCount,
		SRQ:                c.SRQ != 0,
		QPNum:              c.QPNum,
		QKey:               c.QKey,
	}
	u := r.UD()
	ev.ud = UDParam{
		QPNum:       u.QPNum,
		QKey:        u.QKey,
		AH:          ahFromUcma(&u.AHAttr),
		PrivateData: append([]byte(nil), u.PrivateData[:u.PrivateDataLen]...),
	}
	return ev
}
