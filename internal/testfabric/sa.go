package testfabric

import (
	"github.com/go-rdma/rdmacm/mad/sa"
	"github.com/go-rdma/rdmacm/rdma"
)

// SubnetAdmin answers PathRecord queries for the fabric's nodes as an
// InfiniBand SA does: node i has LID i+1 (Node.LID on an InfiniBand
// fabric), every path is within the subnet (hop limit 0, so a REQ
// carries the LIDs), and the path's SL, MTU, rate and packet lifetime
// are the SubnetAdmin's.
type SubnetAdmin struct {
	f              *Fabric
	SL             uint8
	MTU            rdma.MTU
	Rate           uint8
	PacketLifeTime uint8
	// Answered counts the queries answered (any status).
	Answered int
}

// SubnetAdmin returns an SA for f's nodes with the defaults of a
// ConnectX-class EDR subnet: SL 0, MTU 4096, 100 Gb/s (rate 14), packet
// lifetime 16.
func (f *Fabric) SubnetAdmin() *SubnetAdmin {
	return &SubnetAdmin{f: f, MTU: rdma.MTU4096, Rate: 14, PacketLifeTime: 16}
}

// LID is node n's LID.
func (s *SubnetAdmin) LID(n *Node) uint16 { return uint16(n.Index + 1) }

// Path is the record the SA gives for the path from src to dst in
// partition pkey.
func (s *SubnetAdmin) Path(src, dst *Node, pkey uint16) sa.PathRecord {
	return sa.PathRecord{PathRecord: rdma.PathRecord{
		SGID: src.GID, DGID: dst.GID, SLID: s.LID(src), DLID: s.LID(dst),
		Reversible: true, PKey: pkey, SL: s.SL, MTU: s.MTU, Rate: s.Rate, PacketLifeTime: s.PacketLifeTime},
		MTUSelector: sa.Exactly, RateSelector: sa.Exactly, PacketLifeTimeSelector: sa.Exactly}
}

// Answer returns the SA's response to the query in b; a MAD that is
// not a PathRecord query gets none, as an SA drops it.
func (s *SubnetAdmin) Answer(b []byte) (out [sa.MADSize]byte, ok bool) {
	v, err := sa.ParseQuery(b)
	if err != nil {
		return out, false
	}
	var q sa.Query
	v.Decode(&q)
	r := sa.Response{TransactionID: q.TransactionID, Method: sa.MethodGetResp}
	if q.Method == sa.MethodGetTable {
		r.Method = sa.MethodGetTableResp
	}
	src, okS := s.f.nodeByGID(q.Record.SGID)
	dst, okD := s.f.nodeByGID(q.Record.DGID)
	switch {
	case q.CompMask&(sa.CompDGID|sa.CompSGID) != sa.CompDGID|sa.CompSGID:
		r.Status = sa.StatusInsufficientComponents << 8
	case !okS || !okD:
		r.Status = sa.StatusNoRecords << 8
	default:
		pkey := uint16(0xffff)
		if q.CompMask&sa.CompPKey != 0 {
			pkey = q.Record.PKey
		}
		p := s.Path(s.f.Nodes[src], s.f.Nodes[dst], pkey)
		p.ServiceID = q.Record.ServiceID
		if q.CompMask&sa.CompTrafficClass != 0 {
			p.TrafficClass = q.Record.TrafficClass
		}
		r.Records = []sa.PathRecord{p}
	}
	if _, err := r.MarshalTo(out[:]); err != nil {
		s.f.Errors = append(s.f.Errors, err)
		return out, false
	}
	s.Answered++
	return out, true
}
