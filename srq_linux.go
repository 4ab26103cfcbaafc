package rdmacm

import (
	"fmt"
	"math"
	"sync"

	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/uverbs"
)

// SRQ is a shared receive queue with its receive memory: slots receives of
// slotSize bytes each, which every endpoint given it (EndpointOptions.SRQ)
// receives into, in place of a receive queue of its own. A fan-in server's
// receive memory is then the SRQ's, whatever the number of connections.
//
// Like CQ, the device SRQ is made when the first endpoint is set up (the
// device is known only then): it registers slots*slotSize bytes and posts
// one receive per slot, before that endpoint's REQ or REP leaves. Every
// later endpoint must be on the same device and use the same
// EndpointOptions.Backend value, else Dial or Accept fails with
// ErrInvalidArgument.
//
// A slot's receive completes on the endpoints' shared RecvCQ (CQ.Next):
// WC.ID is the slot's offset, WC.QPNum names the endpoint, Data(wc) is the
// message. The slot stays the application's until PostRecv(int(wc.ID))
// gives it back. With every slot taken, a peer's send waits (RNR NAK, and
// the peer retries: EndpointOptions.RNRRetryCount) until one is back. The
// end of a connection flushes nothing of the SRQ: its receives serve the
// other endpoints.
type SRQ struct {
	slots, slotSize int

	mu     sync.Mutex // the fields below
	c      *channel
	pd     *uverbs.PD
	srq    *uverbs.SRQ
	mr     *MR
	users  int
	closed bool
}

// MaxSRQSlots bounds NewSRQ's slots; the device's own limit (its
// MaxSRQWR) is checked when the first endpoint binds the SRQ: beyond it
// that Dial or Accept fails with ErrInvalidArgument, and on a device
// without SRQs with ErrNotSupported.
const MaxSRQSlots = 1 << 24

// NewSRQ returns a shared receive queue of slots receives of slotSize
// bytes each; slotSize 0 posts zero-length receives, for immediate data
// only (Data is then nil). Close it after every endpoint that uses it.
func NewSRQ(slots, slotSize int) (*SRQ, error) {
	switch {
	case slots < 1 || slots > MaxSRQSlots:
		return nil, fmt.Errorf("rdmacm: NewSRQ: %d slots out of range 1..%d: %w", slots, MaxSRQSlots, ErrInvalidArgument)
	case slotSize < 0 || slotSize > 1<<30 || int64(slots)*int64(slotSize) > min(1<<40, math.MaxInt):
		return nil, fmt.Errorf("rdmacm: NewSRQ: %d slots of %d bytes out of range: %w", slots, slotSize, ErrInvalidArgument)
	}
	return &SRQ{slots: slots, slotSize: slotSize}, nil
}

// Slots and SlotSize are NewSRQ's arguments.
func (s *SRQ) Slots() int    { return s.slots }
func (s *SRQ) SlotSize() int { return s.slotSize }

// bind makes the device SRQ on pd (first use) or checks that pd is its
// device's, and counts the endpoint as a user.
func (s *SRQ) bind(c *channel, pd *uverbs.PD) (*uverbs.SRQ, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return nil, fmt.Errorf("rdmacm: shared receive queue: %w", ErrClosed)
	case s.pd != nil && (s.pd != pd || s.c != c):
		return nil, fmt.Errorf("rdmacm: shared receive queue is on another device or backend: %w", ErrInvalidArgument)
	case s.pd == nil:
		if err := s.create(pd); err != nil {
			return nil, err
		}
		c.acquire() // the device context lives as long as the SRQ
		s.c, s.pd = c, pd
	}
	s.users++
	return s.srq, nil
}

// create makes the SRQ (uverbs refuses sizes beyond the device's, and a
// device without SRQs), registers its memory and posts every slot.
func (s *SRQ) create(pd *uverbs.PD) (err error) {
	srq, err := pd.CreateSRQ(uverbs.SRQInit{MaxWR: s.slots, MaxSGE: 1})
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			srq.Close()
		}
	}()
	var mr *MR
	if s.slotSize > 0 {
		if mr, err = reg(pd, s.slots*s.slotSize, qp.AccessLocalWrite); err != nil {
			return err
		}
		defer func() {
			if err != nil {
				mr.Close()
			}
		}()
	}
	wrs := make([]uverbs.RecvWR, s.slots)
	for i := range wrs {
		wrs[i].ID = uint64(i * s.slotSize)
		if mr != nil {
			wrs[i].SGEs = []uverbs.SGE{mr.mr.SGE(i*s.slotSize, s.slotSize)}
		}
	}
	if err := srq.PostRecv(wrs); err != nil {
		return err
	}
	s.srq, s.mr = srq, mr
	return nil
}

// unbind is an endpoint's Close.
func (s *SRQ) unbind() {
	s.mu.Lock()
	s.users--
	s.mu.Unlock()
}

// slot checks that off is a slot's offset.
func (s *SRQ) slot(off uint64) error {
	if s.slotSize == 0 && off == 0 {
		return nil
	}
	if s.slotSize == 0 || off%uint64(s.slotSize) != 0 || off >= uint64(s.slots*s.slotSize) {
		return fmt.Errorf("rdmacm: %d is not the offset of one of the %d %d-byte slots of the shared receive queue: %w",
			off, s.slots, s.slotSize, ErrInvalidArgument)
	}
	return nil
}

// PostRecv gives the slot at off (a receive completion's WC.ID) back to
// the SRQ. Before any endpoint uses the SRQ it fails with
// ErrInvalidArgument, after Close with ErrClosed.
func (s *SRQ) PostRecv(off int) error {
	if off < 0 {
		return fmt.Errorf("rdmacm: slot offset %d: %w", off, ErrInvalidArgument)
	}
	if err := s.slot(uint64(off)); err != nil {
		return err
	}
	s.mu.Lock()
	srq, mr, closed := s.srq, s.mr, s.closed
	s.mu.Unlock()
	switch {
	case closed:
		return fmt.Errorf("rdmacm: shared receive queue: %w", ErrClosed)
	case srq == nil:
		return fmt.Errorf("rdmacm: shared receive queue: no endpoint uses it yet: %w", ErrInvalidArgument)
	}
	wr := uverbs.RecvWR{ID: uint64(off)}
	if mr != nil {
		wr.SGEs = []uverbs.SGE{mr.mr.SGE(off, s.slotSize)}
	}
	return srq.PostRecv([]uverbs.RecvWR{wr})
}

// Data is the message a receive completion of the SRQ delivered: its
// slot's first wc.ByteLen bytes, valid until the slot is posted again.
// It is nil for a zero-length slot, a failed completion, or a WC that is
// not one of this SRQ's.
func (s *SRQ) Data(wc WC) []byte {
	s.mu.Lock()
	mr := s.mr
	s.mu.Unlock()
	if mr == nil || wc.Status != WCSuccess || s.slot(wc.ID) != nil || int(wc.ByteLen) > s.slotSize {
		return nil
	}
	return mr.Bytes()[wc.ID : wc.ID+uint64(wc.ByteLen)]
}

// MR is the SRQ's receive memory, slots*slotSize bytes: the whole of what
// the endpoints on it register for receives. It is nil before the first
// endpoint binds the SRQ, and with slotSize 0. The SRQ owns it.
func (s *SRQ) MR() *MR {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mr
}

// Verbs is the device SRQ (nil before the first endpoint): an escape
// hatch into package uverbs, for SRQ.Arm and Query. The SRQ owns it.
func (s *SRQ) Verbs() *uverbs.SRQ {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.srq
}

// Close destroys the device SRQ, then deregisters and frees its memory.
// It fails with ErrBusy while an endpoint still uses the SRQ (close the
// endpoints first).
func (s *SRQ) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.users > 0 {
		return fmt.Errorf("rdmacm: shared receive queue: %d endpoints still use it: %w", s.users, ErrBusy)
	}
	if s.closed {
		return nil
	}
	s.closed = true
	if s.srq == nil {
		return nil
	}
	err := s.srq.Close()
	if s.mr != nil {
		if e := s.mr.Close(); err == nil {
			err = e
		}
	}
	s.c.release()
	s.srq, s.mr = nil, nil
	return err
}
