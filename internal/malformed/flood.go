package malformed

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"time"

	"github.com/go-rdma/rdmacm/mad"
	"github.com/go-rdma/rdmacm/mad/roce"
	"github.com/go-rdma/rdmacm/rdma"
)

// Flood builds the REQs of a flood from a node that never answers a REP:
// each is a well-formed rdma_cm REQ from src to a listener at dst:port
// (RoCE v2 path, TCP port space, an IPv4 rdma_cm header), with a random
// communication ID, CA GUID, QPN, PSN and source port, as a hostile or
// broken peer would send them.
type Flood struct {
	Src, Dst netip.Addr
	Port     uint16
	rng      *rand.Rand
	req      mad.REQ
}

// NewFlood returns a Flood drawing its random fields from seed.
func NewFlood(src, dst netip.Addr, port uint16, seed uint64) (*Flood, error) {
	if !src.Is4() || !dst.Is4() {
		return nil, fmt.Errorf("malformed: flood from %v to %v: IPv4 addresses only", src, dst)
	}
	f := &Flood{Src: src, Dst: dst, Port: port, rng: rand.New(rand.NewPCG(seed, 0xf100d))}
	f.req = mad.REQ{ServiceID: mad.ServiceID(rdma.PortSpaceTCP, port), ResponderResources: 1, InitiatorDepth: 1,
		RemoteCMResponseTimeout: 20, LocalCMResponseTimeout: 20, RetryCount: 7, RNRRetryCount: 7, MaxCMRetries: 15,
		PartitionKey: 0xffff, PathMTU: rdma.MTU1024,
		Primary: mad.Path{LocalLID: 0xffff, RemoteLID: 0xffff, LocalGID: rdma.GIDFromAddr(src), RemoteGID: rdma.GIDFromAddr(dst),
			HopLimit: 64, LocalACKTimeout: 19}}
	return f, nil
}

// Next writes the next REQ of the flood into b (256 bytes).
func (f *Flood) Next(b []byte) error {
	r := &f.req
	r.TransactionID = f.rng.Uint64()
	r.LocalCommID = f.rng.Uint32() | 1
	r.LocalCAGUID = f.rng.Uint64()
	r.LocalQPN = f.rng.Uint32()&0xffffff | 0x11
	r.StartingPSN = f.rng.Uint32() & 0xffffff
	h := mad.IPHeader{IPVersion: 4, SrcPort: uint16(f.rng.Uint32()) | 0x8000, Src: f.Src, Dst: f.Dst}
	if err := h.MarshalWithData(r.PrivateData[:], nil); err != nil {
		return err
	}
	_, err := r.MarshalTo(b)
	return err
}

// SendFlood sends n REQs of f to dst's GSI at rate per second (0: as fast
// as the socket takes them), and returns how many went out and how long
// that took.
func (s *Sender) SendFlood(f *Flood, n, rate int) (int, time.Duration, error) {
	b := make([]byte, mad.MADSize)
	dst := netip.AddrPortFrom(f.Dst, roce.UDPPort)
	start := time.Now()
	for i := range n {
		if rate > 0 {
			if d := time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(rate))); d > 0 {
				time.Sleep(d)
			}
		}
		if err := f.Next(b); err != nil {
			return i, time.Since(start), err
		}
		if err := s.Send(dst, Case{Name: "flood-req", Payload: b}); err != nil {
			return i, time.Since(start), err
		}
	}
	return n, time.Since(start), nil
}
