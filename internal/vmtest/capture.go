package vmtest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/go-rdma/rdmacm/internal/vmtest/agent"
)

// CMFilter is the tcpdump filter for RoCEv2 packets to QP1 (the GSI QP that
// carries CM MADs): UDP destination port 4791 (IBTA A17.2), and the BTH
// destination QP (bytes 5-7 of the UDP payload) equal to 1.
const CMFilter = "udp dst port 4791 and udp[12:4] & 0x00ffffff = 1"

// CaptureSnaplen keeps whole CM packets (14+20+8+12+8+256+4 = 322 bytes).
const CaptureSnaplen = 512

// Capture is a tcpdump running in a guest, writing a pcap into the share.
type Capture struct {
	HostPath string // the pcap on the host
	m        *Machine
	p        *agent.Process
}

// StartCapture starts tcpdump on the guest's eth0 with filter (CMFilter if
// empty), writing SHARE/captures/name, and returns once it is listening.
func (m *Machine) StartCapture(ctx context.Context, name, filter string) (*Capture, error) {
	if filter == "" {
		filter = CMFilter
	}
	host := filepath.Join(m.Share, "captures", name)
	if err := os.MkdirAll(filepath.Dir(host), 0o755); err != nil {
		return nil, err
	}
	os.Remove(host)
	p, err := m.StartCmd(ctx, agent.Cmd{
		// --immediate-mode: no TPACKET_V3 block buffering, so packets reach
		// the file (-U: flushed per packet) before Stop's SIGTERM.
		Args:    []string{"tcpdump", "--immediate-mode", "-i", "eth0", "-n", "-U", "-s", fmt.Sprint(CaptureSnaplen), "-w", m.GuestPath(host), filter},
		Timeout: 10 * time.Minute,
	})
	if err != nil {
		return nil, err
	}
	if err := p.WaitOutput(ctx, "listening on"); err != nil {
		p.Stop(context.Background())
		return nil, m.failure(err)
	}
	return &Capture{HostPath: host, m: m, p: p}, nil
}

// Stop ends tcpdump (SIGTERM: it flushes the file) and returns the pcap's
// host path.
func (c *Capture) Stop(ctx context.Context) (string, error) {
	// Let the last packets land: wait until the file stops growing.
	var last int64 = -1
	for range 25 {
		fi, err := os.Stat(c.HostPath)
		if err == nil && fi.Size() == last {
			break
		}
		if err == nil {
			last = fi.Size()
		}
		time.Sleep(200 * time.Millisecond)
	}
	r, err := c.p.Stop(ctx)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(c.HostPath); err != nil {
		return "", fmt.Errorf("tcpdump in guest %s wrote no %s: %v\n%s", c.m.Name, c.HostPath, err, r.Stderr)
	}
	return c.HostPath, nil
}

// CM attribute IDs (IBTA 12.6, Table 97 "CM attributes").
var cmAttrNames = map[uint16]string{
	0x0010: "REQ", 0x0011: "MRA", 0x0012: "REJ", 0x0013: "REP", 0x0014: "RTU",
	0x0015: "DREQ", 0x0016: "DREP", 0x0017: "SIDR_REQ", 0x0018: "SIDR_REP", 0x0019: "LAP", 0x001a: "APR",
}

// CMPacket is one CM MAD from a capture.
type CMPacket struct {
	Time     time.Time
	SrcIP    [4]byte
	DstIP    [4]byte
	DestQP   uint32
	SrcQP    uint32 // from the DETH
	QKey     uint32
	Class    uint8
	Method   uint8
	AttrID   uint16
	AttrMod  uint32
	MAD      []byte // the 256-byte MAD
	AttrName string // REQ, REP, ... or "0x...."
}

// RejectReason is the REJ reason (REJ data bytes 10-11, MAD bytes 34-35).
func (p *CMPacket) RejectReason() uint16 { return binary.BigEndian.Uint16(p.MAD[34:]) }

// ECEVendorID returns the 24-bit vendor ID of a REQ (MAD bytes 29-31) or a
// REP (bytes 39, 43 and 47, high to low), the placement the kernel's
// ibta_vol1_c12.h gives them.
func (p *CMPacket) ECEVendorID() (uint32, bool) {
	switch p.AttrID {
	case 0x0010:
		return binary.BigEndian.Uint32(p.MAD[28:]) & 0x00ffffff, true
	case 0x0013:
		return uint32(p.MAD[39])<<16 | uint32(p.MAD[43])<<8 | uint32(p.MAD[47]), true
	}
	return 0, false
}

// ReadCMCapture parses a little- or big-endian microsecond pcap of
// Ethernet/IPv4/UDP/RoCEv2 frames and returns the CM MADs in it.
func ReadCMCapture(path string) ([]CMPacket, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseCMCapture(b)
}

func parseCMCapture(b []byte) ([]CMPacket, error) {
	if len(b) < 24 {
		return nil, errors.New("pcap: short file header")
	}
	var bo binary.ByteOrder
	switch binary.LittleEndian.Uint32(b) {
	case 0xa1b2c3d4:
		bo = binary.LittleEndian
	case 0xd4c3b2a1:
		bo = binary.BigEndian
	default:
		return nil, fmt.Errorf("pcap: bad magic %#x (want microsecond pcap)", binary.LittleEndian.Uint32(b))
	}
	if lt := bo.Uint32(b[20:]); lt != 1 {
		return nil, fmt.Errorf("pcap: link type %d, want 1 (Ethernet)", lt)
	}
	var out []CMPacket
	for off := 24; off < len(b); {
		if len(b)-off < 16 {
			return nil, io.ErrUnexpectedEOF
		}
		sec, usec, incl := bo.Uint32(b[off:]), bo.Uint32(b[off+4:]), int(bo.Uint32(b[off+8:]))
		off += 16
		if incl > len(b)-off {
			return nil, io.ErrUnexpectedEOF
		}
		frame := b[off : off+incl]
		off += incl
		p, ok := parseRoCEFrame(frame)
		if !ok {
			continue
		}
		p.Time = time.Unix(int64(sec), int64(usec)*1000).UTC()
		out = append(out, p)
	}
	return out, nil
}

// parseRoCEFrame decodes Ethernet/IPv4/UDP:4791/BTH/DETH/MAD.
func parseRoCEFrame(f []byte) (CMPacket, bool) {
	var p CMPacket
	if len(f) < 14+20 || binary.BigEndian.Uint16(f[12:]) != 0x0800 {
		return p, false
	}
	ip := f[14:]
	ihl := int(ip[0]&0x0f) * 4
	if ip[0]>>4 != 4 || ihl < 20 || ip[9] != 17 || len(ip) < ihl+8 {
		return p, false
	}
	copy(p.SrcIP[:], ip[12:16])
	copy(p.DstIP[:], ip[16:20])
	udp := ip[ihl:]
	if binary.BigEndian.Uint16(udp[2:]) != 4791 {
		return p, false
	}
	roce := udp[8:]
	const bth, deth, mad = 12, 8, 256
	if len(roce) < bth+deth+mad {
		return p, false
	}
	p.DestQP = binary.BigEndian.Uint32(roce[4:]) & 0x00ffffff
	p.QKey = binary.BigEndian.Uint32(roce[bth:])
	p.SrcQP = binary.BigEndian.Uint32(roce[bth+4:]) & 0x00ffffff
	p.MAD = roce[bth+deth : bth+deth+mad]
	p.Class, p.Method = p.MAD[1], p.MAD[3]
	p.AttrID = binary.BigEndian.Uint16(p.MAD[16:])
	p.AttrMod = binary.BigEndian.Uint32(p.MAD[20:])
	p.AttrName = cmAttrNames[p.AttrID]
	if p.Class != 0x07 || p.AttrName == "" {
		p.AttrName = fmt.Sprintf("class %#x attr %#04x", p.Class, p.AttrID)
	}
	return p, true
}
