package main

import (
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/go-rdma/rdmacm/ece"
	"github.com/go-rdma/rdmacm/mad"
	"github.com/go-rdma/rdmacm/mad/roce"
)

// record is one decoded CM MAD: what -json prints, and what the text line
// is formatted from.
type record struct {
	// described is mad.Describe's line, printed under the text line with
	// -describe (not part of -json: that has every field already).
	described string

	File    string `json:",omitempty"`
	Frame   int
	Time    time.Time
	Packet  packetInfo
	Message string // "REQ", "REP", ...
	// AttributeID is the MAD header attribute.
	AttributeID uint16
	// ECE is set for the messages that carry one (REQ, REP, SIDR_REP).
	ECE *ece.ECE `json:",omitempty"`
	// Service is the service ID of REQ, SIDR_REQ and SIDR_REP.
	Service *serviceInfo `json:",omitempty"`
	// IPHeader is the rdma_cm header at the start of REQ or SIDR_REQ
	// private data, when the service ID is an rdma_cm one and it parses.
	IPHeader *mad.IPHeader `json:",omitempty"`
	// RejectReason is the name of a REJ's reason.
	RejectReason string `json:",omitempty"`
	// PrivateDataLen counts private data bytes up to the last non-zero
	// one (after the IP header, if any).
	PrivateDataLen int
	// MAD holds every field of the message: *mad.REQ, *mad.REP, ...
	MAD mad.Message

	view mad.View
}

type serviceInfo struct {
	ID        uint64
	PortSpace string `json:",omitempty"`
	Port      uint16
}

type packetInfo struct {
	SrcMAC       roce.MAC
	DstMAC       roce.MAC
	VLANs        []roce.VLANTag `json:",omitempty"`
	SrcIP        netip.Addr
	DstIP        netip.Addr
	TrafficClass uint8
	HopLimit     uint8
	FlowLabel    uint32 `json:",omitempty"`
	IPv4ID       uint16 `json:",omitempty"`
	DontFragment bool   `json:",omitempty"`
	UDPSrcPort   uint16
	UDPChecksum  uint16
	BTH          bthInfo
	DETH         dethInfo
	// ICRC as hash/crc32 computes it (on the wire least significant byte
	// first).
	ICRC uint32
}

type bthInfo struct {
	Opcode    uint8
	Solicited bool
	MigReq    bool
	PadCount  uint8
	TVer      uint8
	PKey      uint16
	FECN      bool
	BECN      bool
	DestQP    uint32
	AckReq    bool
	PSN       uint32
}

type dethInfo struct {
	QKey  uint32
	SrcQP uint32
}

func newPacketInfo(p roce.Packet) packetInfo {
	bth := p.BTH()
	deth, _ := p.DETH() // present: the packet passed MAD()
	return packetInfo{
		SrcMAC:       p.SrcMAC(),
		DstMAC:       p.DstMAC(),
		VLANs:        p.VLANTags(),
		SrcIP:        p.SrcIP(),
		DstIP:        p.DstIP(),
		TrafficClass: p.TrafficClass(),
		HopLimit:     p.HopLimit(),
		FlowLabel:    p.FlowLabel(),
		IPv4ID:       p.IPv4ID(),
		DontFragment: p.DontFragment(),
		UDPSrcPort:   p.UDPSrcPort(),
		UDPChecksum:  p.UDPChecksum(),
		BTH: bthInfo{
			Opcode: bth.Opcode(), Solicited: bth.Solicited(), MigReq: bth.MigReq(),
			PadCount: bth.PadCount(), TVer: bth.TVer(), PKey: bth.PKey(),
			FECN: bth.FECN(), BECN: bth.BECN(), DestQP: bth.DestQP(),
			AckReq: bth.AckReq(), PSN: bth.PSN(),
		},
		DETH: dethInfo{QKey: deth.QKey(), SrcQP: deth.SrcQP()},
		ICRC: p.ICRC(),
	}
}

func newRecord(p roce.Packet, v mad.View) *record {
	r := &record{
		Packet:      newPacketInfo(p),
		Message:     v.AttributeID().String(),
		AttributeID: uint16(v.AttributeID()),
		MAD:         v.DecodeMessage(),
		view:        v,
	}
	pd := func(b []byte) { r.PrivateDataLen = usedLen(b) }
	switch v := v.(type) {
	case mad.REQView:
		e := v.ECE()
		r.ECE = &e
		r.Service = newServiceInfo(v.ServiceID())
		r.IPHeader = ipHeader(v.ServiceID(), v.PrivateData())
		if r.IPHeader != nil {
			pd(v.PrivateData()[mad.IPHeaderSize:])
		} else {
			pd(v.PrivateData())
		}
	case mad.REPView:
		e := v.ECE()
		r.ECE = &e
		pd(v.PrivateData())
	case mad.SIDRREPView:
		e := v.ECE()
		r.ECE = &e
		r.Service = newServiceInfo(v.ServiceID())
		pd(v.PrivateData())
	case mad.SIDRREQView:
		r.Service = newServiceInfo(v.ServiceID())
		r.IPHeader = ipHeader(v.ServiceID(), v.PrivateData())
		if r.IPHeader != nil {
			pd(v.PrivateData()[mad.IPHeaderSize:])
		} else {
			pd(v.PrivateData())
		}
	case mad.REJView:
		r.RejectReason = v.Reason().String()
		pd(v.PrivateData())
	case mad.RTUView:
		pd(v.PrivateData())
	case mad.DREQView:
		pd(v.PrivateData())
	case mad.DREPView:
		pd(v.PrivateData())
	case mad.MRAView:
		pd(v.PrivateData())
	case mad.LAPView:
		pd(v.PrivateData())
	case mad.APRView:
		pd(v.PrivateData())
	}
	return r
}

func newServiceInfo(id uint64) *serviceInfo {
	s := &serviceInfo{ID: id}
	if ps, port, ok := mad.SplitServiceID(id); ok {
		s.PortSpace, s.Port = ps.String(), port
	}
	return s
}

// ipHeader returns the rdma_cm IP header of a REQ or SIDR_REQ whose
// service ID is an rdma_cm port-space one (AF_IB ids send none).
func ipHeader(serviceID uint64, pd []byte) *mad.IPHeader {
	if _, _, ok := mad.SplitServiceID(serviceID); !ok {
		return nil
	}
	v, err := mad.ParseIPHeader(pd)
	if err != nil {
		return nil
	}
	var h mad.IPHeader
	v.Decode(&h)
	return &h
}

// usedLen is the length of b without trailing zero bytes.
func usedLen(b []byte) int {
	n := len(b)
	for n > 0 && b[n-1] == 0 {
		n--
	}
	return n
}

func (s *serviceInfo) String() string {
	if s.PortSpace != "" {
		return fmt.Sprintf("%s:%d", s.PortSpace, s.Port)
	}
	return fmt.Sprintf("%#016x", s.ID)
}

func eceString(e ece.ECE) string {
	if e.VendorID == 0 && e.Options == 0 {
		return "none"
	}
	return fmt.Sprintf("%#x/%#08x", e.VendorID, e.Options)
}

// line formats the record for the text output (without the time).
func (r *record) line() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s.qp%d > %s.qp%d %s", r.Packet.SrcIP, r.Packet.DETH.SrcQP, r.Packet.DstIP, r.Packet.BTH.DestQP, r.Message)
	f := func(format string, args ...any) { fmt.Fprintf(&b, " "+format, args...) }
	ids := func(local, remote uint32) { f("lcid=0x%08x rcid=0x%08x", local, remote) }
	ipHdr := func() {
		if h := r.IPHeader; h != nil {
			// The destination port is the service ID's (cma_get_service_id).
			f("ip=%s>%s", netip.AddrPortFrom(h.Src, h.SrcPort), netip.AddrPortFrom(h.Dst, r.Service.Port))
		} else {
			f("ip=none")
		}
	}
	switch v := r.view.(type) {
	case mad.REQView:
		f("lcid=0x%08x qpn=0x%06x psn=0x%06x sid=%s", v.LocalCommID(), v.LocalQPN(), v.StartingPSN(), r.Service)
		if v.TransportServiceType() != mad.TransportRC {
			f("transport=%s", v.TransportServiceType())
		}
		f("ece=%s", eceString(*r.ECE))
		ipHdr()
	case mad.REPView:
		ids(v.LocalCommID(), v.RemoteCommID())
		f("qpn=0x%06x psn=0x%06x ece=%s", v.LocalQPN(), v.StartingPSN(), eceString(*r.ECE))
	case mad.RTUView:
		ids(v.LocalCommID(), v.RemoteCommID())
	case mad.REJView:
		ids(v.LocalCommID(), v.RemoteCommID())
		f("rejected=%s reason=%d (%s)", v.MessageRejected(), uint16(v.Reason()), v.Reason())
		if n := len(v.ARI()); n > 0 {
			f("ari=%x", v.ARI())
		}
	case mad.DREQView:
		ids(v.LocalCommID(), v.RemoteCommID())
		f("rqpn=0x%06x", v.RemoteQPNEECN())
	case mad.DREPView:
		ids(v.LocalCommID(), v.RemoteCommID())
	case mad.MRAView:
		ids(v.LocalCommID(), v.RemoteCommID())
		f("mraed=%s timeout=%d", v.MessageMRAed(), v.ServiceTimeout())
	case mad.SIDRREQView:
		f("reqid=0x%08x sid=%s pkey=%#04x", v.RequestID(), r.Service, v.PartitionKey())
		ipHdr()
	case mad.SIDRREPView:
		f("reqid=0x%08x status=%s qpn=0x%06x qkey=%#08x sid=%s ece=%s", v.RequestID(), v.Status(), v.QPN(), v.QKey(), r.Service, eceString(*r.ECE))
	case mad.LAPView:
		ids(v.LocalCommID(), v.RemoteCommID())
		f("rqpn=0x%06x", v.RemoteQPNEECN())
	case mad.APRView:
		ids(v.LocalCommID(), v.RemoteCommID())
		f("status=%s", v.Status())
	case mad.ClassPortInfoView:
		f("method=%s status=%#04x", v.Method(), v.Header().Status())
		return b.String()
	}
	f("pd=%d", r.PrivateDataLen)
	return b.String()
}
