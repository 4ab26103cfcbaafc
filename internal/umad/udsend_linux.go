package umad

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-rdma/rdmacm/cm/engine"
	"github.com/go-rdma/rdmacm/mad"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
	"github.com/go-rdma/rdmacm/uverbs"
)

// UDSend is a Transport that receives through umad but sends its MADs from
// a UD QP of its own, with one address handle per destination.
//
// Why: on RoCE, every ib_umad write creates an address handle with
// rdma_create_user_ah, which resolves the destination MAC through
// rdma_resolve_ip and waits for the addr workqueue to complete it: a
// kernel thread round trip for every MAD. The kernel CM resolves the MAC
// once per connection (cm_init_av_by_path). An AH made here with
// CREATE_AH resolves it once per destination (and again after ahTTL).
//
// On the wire the MADs leave from this QP instead of QP 1, with the GSI
// Q_Key, for the QP the engine addresses: always the peer's QP 1, as the
// Linux CM does for every CM MAD, responses included (cm_alloc_msg and
// cm_alloc_response_msg create their send buffers for remote QPN 1; the
// engine's replyAddr). Neither looks at the source QP. Setting the controlled Q_Key 0x80010000
// on a QP needs CAP_NET_RAW, as umad access does in practice.
//
// A send the UD path cannot take (a zero GID, a P_Key index other than 0,
// a full AH table) goes through umad; after a UD failure (a post error or
// an error completion) every later send does.
type UDSend struct {
	Transport // receives, and sends what the UD path does not take

	mu     sync.Mutex
	x      *uverbs.Context
	pd     *uverbs.PD
	cq     *uverbs.CQ
	qp     *uverbs.QP
	port   uint8
	ahs    map[ahKey]*udAH
	posted []*udAH // AH of each send not yet completed, in posting order
	wc     [16]uverbs.WC
	failed error

	// UDSends and UMADSends count the MADs each path took; AHs counts
	// the address handles created (MAC resolutions).
	UDSends, UMADSends, AHs atomic.Uint64
}

// ahKey is what an AH for MADs depends on. Not the flow label: the
// rdma_cm gives every RoCE v2 connection its own (from its ports, for
// ECMP entropy in the UDP source port), and keying on it would resolve
// the MAC once per connection again. MADs from the UD QP carry flow label
// 0, so rxe takes their UDP source port from the QP number.
type ahKey struct {
	gid          rdma.GID
	sgidIndex    uint8
	hopLimit     uint8
	trafficClass uint8
	sl           uint8
}

type udAH struct {
	ah       *uverbs.AH
	created  time.Time
	retired  bool
	inflight int
}

const (
	udSendDepth = 64
	// maxUDAHs bounds the AH table; sends to further destinations go
	// through umad until an entry expires.
	maxUDAHs = 256
	// ahTTL is how long an AH's resolved MAC is trusted. The kernel CM
	// resolves once per connection; a burst of connections to one peer
	// shares one resolution, and a moved peer is found again within it.
	ahTTL = 2 * time.Second
)

// NewUDSend opens dev (a uverbs device whose data path this package has:
// rxe) and creates a UD QP on port with the GSI Q_Key. It fails when the
// device, the data path or the Q_Key is not available; the caller then
// keeps t as it is.
func NewUDSend(t Transport, dev uverbs.Device, port uint8) (*UDSend, error) {
	x, err := uverbs.OpenDevice(dev, nil)
	if err != nil {
		return nil, fmt.Errorf("umad: UD sends: %w", err)
	}
	s := &UDSend{Transport: t, x: x, port: port, ahs: map[ahKey]*udAH{}}
	if err := s.setup(); err != nil {
		x.Close()
		return nil, fmt.Errorf("umad: UD sends on %s port %d: %w", dev.Name, port, err)
	}
	return s, nil
}

func (s *UDSend) setup() error {
	var err error
	if s.pd, err = s.x.AllocPD(); err != nil {
		return err
	}
	if s.cq, err = s.x.CreateCQ(udSendDepth, nil, 0); err != nil {
		return err
	}
	s.qp, err = s.pd.CreateQP(uverbs.QPInit{Type: qp.UD, SendCQ: s.cq, RecvCQ: s.cq, SignalAll: true,
		Cap: qp.Cap{MaxSendWR: udSendDepth, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1, MaxInlineData: mad.MADSize}})
	if err != nil {
		return err
	}
	if !s.qp.HasDataPath() {
		return fmt.Errorf("%w: no data path for provider %s", ErrNotSupported, s.x.Provider())
	}
	if s.qp.Cap().MaxInlineData < mad.MADSize {
		return fmt.Errorf("%w: %d inline bytes", ErrNotSupported, s.qp.Cap().MaxInlineData)
	}
	if err := s.qp.Modify(&qp.Attr{State: qp.Init, Port: s.port, QKey: gsiQKey}, qp.MaskState|qp.MaskPKeyIndex|qp.MaskPort|qp.MaskQKey); err != nil {
		return err
	}
	if err := s.qp.Modify(&qp.Attr{State: qp.RTR}, qp.MaskState); err != nil {
		return err
	}
	return s.qp.Modify(&qp.Attr{State: qp.RTS}, qp.MaskState|qp.MaskSQPSN)
}

// Num is the number of the UD QP the MADs leave from.
func (s *UDSend) Num() uint32 { return s.qp.Num() }

// Failed is why the UD path stopped taking sends, or nil.
func (s *UDSend) Failed() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}

// errUMADOnly: this send needs umad; the UD path stays in use.
var errUMADOnly = errors.New("umad: send needs umad")

// Send sends m to the peer's QP 1 from the UD QP, or through umad when
// the UD path cannot take it.
func (s *UDSend) Send(to engine.Addr, m []byte) error {
	if len(m) < mad.MADSize {
		return fmt.Errorf("umad: send: %d-byte MAD", len(m))
	}
	s.mu.Lock()
	err := errUMADOnly
	if s.failed == nil {
		if err = s.sendUD(to, m[:mad.MADSize]); err != nil && !errors.Is(err, errUMADOnly) {
			s.failed = err
		}
	}
	s.mu.Unlock()
	if err == nil {
		s.UDSends.Add(1)
		return nil
	}
	s.UMADSends.Add(1)
	return s.Transport.Send(to, m)
}

func (s *UDSend) sendUD(to engine.Addr, m []byte) error {
	if to.GID == (rdma.GID{}) || to.PKeyIndex != 0 || (to.Port != 0 && to.Port != s.port) {
		return errUMADOnly
	}
	if err := s.reap(); err != nil {
		return err
	}
	a, err := s.ah(to)
	if err != nil {
		return err
	}
	wr := []uverbs.SendWR{{Opcode: uverbs.OpSend, Flags: uverbs.SendSignaled | uverbs.SendInline, InlineData: m,
		AH: a.ah, RemoteQPN: to.QPN, RemoteQKey: gsiQKey}}
	err = s.qp.PostSend(wr)
	if errors.Is(err, uverbs.ErrQueueFull) {
		// Completions arrive as the kernel sends; take them and retry once.
		if err = s.reap(); err == nil {
			err = s.qp.PostSend(wr)
		}
		if errors.Is(err, uverbs.ErrQueueFull) {
			return errUMADOnly
		}
	}
	if err != nil {
		return err
	}
	a.inflight++
	s.posted = append(s.posted, a)
	return nil
}

// reap takes the send completions (in posting order on one QP) and
// destroys retired AHs no send still uses. An error completion is an
// error: the QP has gone to the error state.
func (s *UDSend) reap() error {
	for len(s.posted) > 0 {
		n, err := s.cq.Poll(s.wc[:])
		if err != nil {
			return err
		}
		for i := range n {
			if s.wc[i].Status != rdma.WCSuccess {
				return fmt.Errorf("umad: UD send completion: %v", s.wc[i].Status)
			}
			a := s.posted[0]
			s.posted = s.posted[1:]
			if a.inflight--; a.retired && a.inflight == 0 {
				_ = a.ah.Close()
			}
		}
		if n < len(s.wc) {
			break
		}
	}
	return nil
}

// ah returns a live AH for to, creating it (the kernel resolves the MAC)
// when there is none or the one there is older than ahTTL.
func (s *UDSend) ah(to engine.Addr) (*udAH, error) {
	k := ahKey{gid: to.GID, sgidIndex: to.SGIDIndex, hopLimit: to.HopLimit, trafficClass: to.TrafficClass, sl: to.SL}
	now := time.Now()
	if a, ok := s.ahs[k]; ok {
		if now.Sub(a.created) < ahTTL {
			return a, nil
		}
		s.retire(k, a)
	}
	if len(s.ahs) >= maxUDAHs {
		for k2, a := range s.ahs {
			if now.Sub(a.created) >= ahTTL {
				s.retire(k2, a)
			}
		}
		if len(s.ahs) >= maxUDAHs {
			return nil, errUMADOnly
		}
	}
	ah, err := s.pd.CreateAH(qp.AH{IsGlobal: true, PortNum: s.port, SL: to.SL,
		GRH: qp.GRH{DGID: to.GID, SGIDIndex: to.SGIDIndex, HopLimit: to.HopLimit, TrafficClass: to.TrafficClass}})
	if err != nil {
		// No route or neighbour: umad reports the same to the engine,
		// whose retransmissions try again.
		return nil, fmt.Errorf("%w: %w", errUMADOnly, err)
	}
	s.AHs.Add(1)
	a := &udAH{ah: ah, created: now}
	s.ahs[k] = a
	return a, nil
}

func (s *UDSend) retire(k ahKey, a *udAH) {
	delete(s.ahs, k)
	a.retired = true
	if a.inflight == 0 {
		_ = a.ah.Close()
	}
}

// Close closes the UD QP's device context and the umad transport.
func (s *UDSend) Close() error {
	s.mu.Lock()
	s.failed = errClosed
	err := s.x.Close()
	s.mu.Unlock()
	return errors.Join(s.Transport.Close(), err)
}
