//go:build linux

package cm

import (
	"context"
	"io"
	"net/netip"
	"sync"
	"time"

	"github.com/go-rdma/rdmacm/cm/engine"
	"github.com/go-rdma/rdmacm/internal/umad"
	"github.com/go-rdma/rdmacm/mad"
	"github.com/go-rdma/rdmacm/mad/pcap"
	"github.com/go-rdma/rdmacm/mad/roce"
	"github.com/go-rdma/rdmacm/rdma"
)

// tracer writes every MAD that crosses a port's transport to a pcap file
// as the RoCEv2 frame rxe would put on the wire. The MAC addresses, the
// UDP source port and the IPv4 ID are chosen by the kernel, not known to
// user space; they are written as zeros, 0xC000 and 0.
type tracer struct {
	mu  sync.Mutex
	w   *pcap.Writer
	err error
}

func (t *tracer) write(src, dst rdma.GID, srcQP uint32, hop, tc uint8, m []byte) {
	f := roce.GSIFrame(m)
	f.SrcQP = srcQP
	f.SrcIP, f.DstIP = netip.AddrFrom16(src).Unmap(), netip.AddrFrom16(dst).Unmap()
	if hop != 0 {
		f.HopLimit = hop
	}
	f.TrafficClass, f.SrcPort = tc, 0xC000
	b, err := f.Marshal()
	t.mu.Lock()
	defer t.mu.Unlock()
	if err == nil && t.err == nil {
		err = t.w.WritePacket(time.Now(), b)
	}
	if err != nil && t.err == nil {
		t.err = err
	}
}

// tracedTransport taps one port's transport.
type tracedTransport struct {
	umad.Transport
	t *tracer
	p *userPort
}

func (tt *tracedTransport) local(idx uint8) rdma.GID {
	for _, g := range tt.p.port.GIDs {
		if g.Index == int(idx) {
			return g.GID
		}
	}
	return rdma.GID{}
}

// sourceQP is the QP the port's next MAD leaves from: its UD QP, or the
// GSI QP when umad sends it.
func (p *userPort) sourceQP() uint32 {
	if p.ud != nil && p.ud.Failed() == nil {
		return p.ud.Num()
	}
	return 1
}

func (tt *tracedTransport) Send(to engine.Addr, m []byte) error {
	tt.t.write(tt.local(to.SGIDIndex), to.GID, tt.p.sourceQP(), to.HopLimit, to.TrafficClass, m)
	return tt.Transport.Send(to, m)
}

func (tt *tracedTransport) Recv(ctx context.Context, buf []byte) (engine.Addr, int, error) {
	from, n, err := tt.Transport.Recv(ctx, buf)
	if err == nil && n >= mad.MADSize {
		tt.t.write(from.GID, tt.local(from.SGIDIndex), from.QPN, from.HopLimit, from.TrafficClass, buf[:n])
	}
	return from, n, err
}

func newTracer(w io.Writer) (*tracer, error) {
	pw, err := pcap.NewWriter(w, pcap.LinkTypeEthernet)
	if err != nil {
		return nil, errnoError("trace MADs", err)
	}
	return &tracer{w: pw}, nil
}
