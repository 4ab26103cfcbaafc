package umad

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/go-rdma/rdmacm/cm/engine"
	"github.com/go-rdma/rdmacm/internal/abi"
	"github.com/go-rdma/rdmacm/internal/kcall"
	"github.com/go-rdma/rdmacm/mad"
	"github.com/go-rdma/rdmacm/rdma"
)

// gsiQKey is the GSI QP's Q_Key (IBTA 13.5.3.3). Current kernels ignore
// the header's value and use it anyway.
const gsiQKey = 0x80010000

// maxMAD bounds a received MAD (OPA MADs are 2048 bytes).
const maxMAD = 2048

// Port is a umad device with a CM agent registered on it.
type Port struct {
	f     *os.File
	agent uint32
	port  uint8
	rc    syscall.RawConn
	rmu   sync.Mutex // one Recv at a time: rbuf and the context watch
	rbuf  [abi.UmadHdrSize + maxMAD]byte
	// watched is the Done channel of the context the read deadline
	// follows; a receive loop passes the same context every time, so the
	// watch (a context.AfterFunc) is set up once, not per MAD.
	watched   <-chan struct{}
	stopWatch func() bool
	wmu       sync.Mutex
	wbuf      [abi.UmadHdrSize + mad.MADSize]byte
}

// Open opens a umad device (e.g. /dev/infiniband/umad0) and registers the
// CM agent: class 0x07, version 2, method Send, QP 1. The device's port
// number (sysfs) goes into every received address.
func Open(dev string) (*Port, error) {
	req := abi.UmadRegReq2{QPN: 1, MgmtClass: mad.ClassCM, MgmtClassVersion: mad.CMClassVersion}
	req.MethodMask[0] = 1 << uint(mad.MethodSend)
	p, err := openAgent(dev, &req)
	if pe := (*os.PathError)(nil); errors.As(err, &pe) {
		return nil, fmt.Errorf("umad: %w", err)
	}
	if errors.Is(err, unix.EINVAL) {
		return nil, fmt.Errorf("umad: register CM agent on %s: %w", dev, ErrKernelCM)
	}
	if err != nil {
		return nil, fmt.Errorf("umad: register CM agent on %s: %w", dev, err)
	}
	return p, nil
}

// openAgent opens dev and registers the agent req describes.
func openAgent(dev string, req *abi.UmadRegReq2) (*Port, error) {
	fd, err := unix.Open(dev, unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dev, Err: err}
	}
	if err := kcall.UmadRegisterAgent2Call(fd, req); err != nil {
		unix.Close(fd)
		return nil, err
	}
	p := &Port{f: os.NewFile(uintptr(fd), dev), agent: req.ID, port: 1}
	rc, err := p.f.SyscallConn()
	if err != nil {
		p.f.Close()
		return nil, err
	}
	p.rc = rc
	if n, err := readSysInt(filepath.Join("/sys/class/infiniband_mad", filepath.Base(dev), "port")); err == nil {
		p.port = uint8(n)
	}
	return p, nil
}

// Close unregisters the agent and closes the device; a blocked Recv
// returns ErrClosed.
func (p *Port) Close() error { return p.f.Close() }

// Send writes one CM MAD to the peer's GSI QP. It sets no MAD-layer
// timeout or retries: the engine resends itself (a Send method MAD never
// gets a response-method answer, so a MAD-layer timeout would always
// expire). The kernel replaces the TID's upper 32 bits with its agent's.
func (p *Port) Send(to engine.Addr, m []byte) error {
	if len(m) < mad.MADSize {
		return fmt.Errorf("umad: send: %d-byte MAD", len(m))
	}
	p.wmu.Lock()
	defer p.wmu.Unlock()
	h := sendHeader(p.agent, to)
	copy(p.wbuf[:], abi.Bytes(&h))
	copy(p.wbuf[abi.UmadHdrSize:], m[:mad.MADSize])
	if err := p.write(p.wbuf[:]); err != nil {
		if err == errClosed {
			return err
		}
		return fmt.Errorf("umad: send: %w", err)
	}
	return nil
}

// write writes one ib_user_mad header and MAD. ib_umad_write can sleep
// (it allocates and resolves the address handle), so the write takes the
// scheduler's path (kcall.Write), under the file's reference so Close
// cannot recycle the fd meanwhile; EAGAIN waits for writability. After
// Close it returns errClosed.
func (p *Port) write(b []byte) error {
	var n int
	var werr error
	err := p.rc.Write(func(fd uintptr) bool {
		n, werr = kcall.Write(int(fd), b)
		return werr != unix.EAGAIN
	})
	if err == nil {
		err = werr
	}
	if err == nil && n != len(b) {
		err = fmt.Errorf("short write: %d of %d bytes", n, len(b))
	}
	if errors.Is(err, os.ErrClosed) {
		return errClosed
	}
	return err
}

// Recv reads one MAD into buf (at least 256 bytes) and returns the
// sender's address and the MAD's length. It blocks until a MAD arrives,
// ctx ends, or Close is called.
func (p *Port) Recv(ctx context.Context, buf []byte) (engine.Addr, int, error) {
	p.rmu.Lock()
	defer p.rmu.Unlock()
	if done := ctx.Done(); done != p.watched || done == nil {
		if p.stopWatch != nil {
			p.stopWatch()
		}
		if dl, ok := ctx.Deadline(); ok {
			_ = p.f.SetReadDeadline(dl)
		} else {
			_ = p.f.SetReadDeadline(time.Time{})
		}
		p.watched = done
		p.stopWatch = context.AfterFunc(ctx, func() { _ = p.f.SetReadDeadline(time.Unix(1, 0)) })
	}
	// A raw read in the netpoller's callback (see Send), EAGAIN parks.
	var n int
	var rerr error
	err := p.rc.Read(func(fd uintptr) bool {
		n, rerr = kcall.Read(int(fd), p.rbuf[:])
		return rerr != unix.EAGAIN
	})
	if err == nil {
		err = rerr
	}
	if err != nil {
		if ctx.Err() != nil {
			return engine.Addr{}, 0, ctx.Err()
		}
		if errors.Is(err, os.ErrClosed) {
			return engine.Addr{}, 0, errClosed
		}
		return engine.Addr{}, 0, fmt.Errorf("umad: receive: %w", err)
	}
	a, m, err := parseRecv(p.rbuf[:n], p.port)
	if err != nil {
		return engine.Addr{}, 0, err
	}
	return a, copy(buf, m), nil
}

// sendHeader is the ib_user_mad header Send puts before a CM MAD for to:
// the agent, the peer's GSI QP and the GSI Q_Key, its address fields (QPN,
// Q_Key, LID and flow label big-endian, the rest host-endian), and a GRH
// whenever there is a GID.
func sendHeader(agent uint32, to engine.Addr) abi.UmadHdr {
	h := abi.UmadHdr{ID: agent, SL: to.SL, GIDIndex: to.SGIDIndex, HopLimit: to.HopLimit,
		TrafficClass: to.TrafficClass, GID: to.GID, PKeyIndex: to.PKeyIndex}
	binary.BigEndian.PutUint32(h.QPN[:], to.QPN)
	binary.BigEndian.PutUint32(h.QKey[:], gsiQKey)
	binary.BigEndian.PutUint16(h.LID[:], to.LID)
	binary.BigEndian.PutUint32(h.FlowLabel[:], to.FlowLabel)
	if to.GID != (rdma.GID{}) {
		h.GRHPresent = 1 // required on RoCE: the AH needs a GRH
	}
	return h
}

// parseRecv decodes one read from the umad device, an ib_user_mad header
// followed by the MAD: the sender's address (port is the device's port)
// and the MAD, a subslice of raw. A non-zero header status is a send the
// kernel handed back (*SendError).
func parseRecv(raw []byte, port uint8) (engine.Addr, []byte, error) {
	if len(raw) < abi.UmadHdrSize {
		return engine.Addr{}, nil, fmt.Errorf("umad: receive: %d bytes", len(raw))
	}
	h := abi.Decode[abi.UmadHdr](raw[:abi.UmadHdrSize])
	if h.Status != 0 {
		return engine.Addr{}, nil, &SendError{Status: h.Status}
	}
	a := engine.Addr{
		Port: port, PKeyIndex: h.PKeyIndex, LID: binary.BigEndian.Uint16(h.LID[:]),
		QPN: binary.BigEndian.Uint32(h.QPN[:]), SGIDIndex: h.GIDIndex, HopLimit: h.HopLimit,
		TrafficClass: h.TrafficClass, SL: h.SL, FlowLabel: binary.BigEndian.Uint32(h.FlowLabel[:]) & 0xfffff,
	}
	if h.GRHPresent != 0 {
		a.GID = h.GID
	}
	return a, raw[abi.UmadHdrSize:], nil
}

func readSysInt(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// FindDevice returns the umad device of an RDMA device's port, from
// /sys/class/infiniband_mad/umadN/{ibdev,port}.
func FindDevice(ibdev string, port int) (string, error) {
	ents, err := os.ReadDir("/sys/class/infiniband_mad")
	if err != nil {
		return "", fmt.Errorf("umad: %w", err)
	}
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "umad") {
			continue
		}
		dir := filepath.Join("/sys/class/infiniband_mad", e.Name())
		b, err := os.ReadFile(filepath.Join(dir, "ibdev"))
		if err != nil || strings.TrimSpace(string(b)) != ibdev {
			continue
		}
		if n, err := readSysInt(filepath.Join(dir, "port")); err == nil && n == port {
			return filepath.Join("/dev/infiniband", e.Name()), nil
		}
	}
	return "", fmt.Errorf("umad: no umad device for %s port %d", ibdev, port)
}

// LocalGID finds the RoCE v2 GID of addr in an RDMA port's GID table
// (/sys/class/infiniband/DEV/ports/N/gids and gid_attrs/types) and returns
// it with its index.
func LocalGID(ibdev string, port int, addr netip.Addr) (rdma.GID, uint8, error) {
	want := rdma.GIDFromAddr(addr)
	dir := filepath.Join("/sys/class/infiniband", ibdev, "ports", strconv.Itoa(port))
	for i := range 256 {
		b, err := os.ReadFile(filepath.Join(dir, "gids", strconv.Itoa(i)))
		if err != nil {
			break
		}
		a, err := netip.ParseAddr(strings.TrimSpace(string(b)))
		if err != nil || rdma.GIDFromAddr(a) != want {
			continue
		}
		t, err := os.ReadFile(filepath.Join(dir, "gid_attrs", "types", strconv.Itoa(i)))
		if err == nil && strings.TrimSpace(string(t)) == "RoCE v2" {
			return want, uint8(i), nil
		}
	}
	return rdma.GID{}, 0, fmt.Errorf("umad: no RoCE v2 GID for %v on %s port %d", addr, ibdev, port)
}
