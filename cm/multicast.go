package cm

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"

	"github.com/go-rdma/rdmacm/internal/unix"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/uverbs"
)

// Multicast is a multicast group joined on a UD ID (rdma_join_multicast).
// EventMulticastJoin carries the group's address handle in Event.UD: the
// MGID, MLID and Q_Key to send to.
type Multicast struct {
	id       *ID
	uid      uint64
	handle   uint32
	addr     netip.Addr
	sendOnly bool

	mu sync.Mutex
	ah qp.AH
	// attached is the QP attached to the group at the join (a library
	// QP, not for send-only joins), detached again by Leave.
	attached *uverbs.QP
	// Context is the application's value for the group.
	Context any
}

// Addr returns the group's IP address.
func (m *Multicast) Addr() netip.Addr { return m.addr }

// AH returns the group's address vector once joined (MGID in
// AH.GRH.DGID, MLID in AH.DLID).
func (m *Multicast) AH() qp.AH {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ah
}

// onEvent records the group's AH and, as librdmacm's ucma_process_join
// does, attaches the ID's library QP unless the join is send-only; a
// failed attach turns the event into EventMulticastError.
func (m *Multicast) onEvent(ev *Event) {
	if ev.Type != EventMulticastJoin {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ah = ev.UD.AH
	if m.sendOnly || m.attached != nil {
		return
	}
	m.id.mu.Lock()
	var v *uverbs.QP
	if m.id.qp != nil {
		v = m.id.qp.Verbs
	}
	m.id.mu.Unlock()
	if v == nil {
		return
	}
	if err := v.AttachMcast(ev.UD.AH.GRH.DGID, ev.UD.AH.DLID); err != nil {
		ev.Type = EventMulticastError
		ev.Status = -int32(unix.EINVAL)
		var errno unix.Errno
		if errors.As(err, &errno) {
			ev.Status = -int32(errno)
		}
		return
	}
	m.attached = v
}

// JoinMulticast joins the group addr on a UD ID whose address is resolved
// or bound (rdma_join_multicast_ex). sendOnly joins as a send-only full
// member. A synchronous ID waits for EventMulticastJoin.
//
// A library QP (CreateQP) is attached to the group when the join
// completes, unless sendOnly, and detached by Leave (librdmacm does the
// same); an external QP is attached with uverbs.QP.AttachMcast using the
// group's AH. addr must be a multicast address (224.0.0.0/4 or ff00::/8):
// any other is refused with ErrInvalidArgument before the backend sees it.
func (id *ID) JoinMulticast(ctx context.Context, addr netip.Addr, sendOnly bool, context any) (*Multicast, error) {
	if !id.udp {
		return nil, fmt.Errorf("cm: join multicast group: %w: the ID is not UD", ErrInvalidState)
	}
	if !addr.IsMulticast() {
		return nil, fmt.Errorf("cm: join multicast group %v: not a multicast address: %w", addr, ErrInvalidArgument)
	}
	m := &Multicast{id: id, addr: addr, sendOnly: sendOnly, Context: context}
	c := id.ch
	c.mu.Lock()
	c.nextUID++
	m.uid = c.nextUID
	c.mcs[m.uid] = m
	c.mu.Unlock()
	// rdma_join_multicast needs a bound or resolved address
	// (cma_join_multicast: RDMA_CM_ADDR_BOUND or ADDR_RESOLVED).
	err := id.do("JoinMulticast", func(s *idState) error {
		if !s.in(StateAddrBound, StateAddrResolved, StateRouteResolved, StateEstablished) {
			return s.fail("JoinMulticast")
		}
		return nil
	}, func() error {
		h, err := c.b.join(id.handle, m.uid, addr, sendOnly)
		m.handle = h
		return err
	})
	if err != nil {
		c.mu.Lock()
		delete(c.mcs, m.uid)
		c.mu.Unlock()
		return nil, err
	}
	if !id.sync {
		return m, nil
	}
	if _, err := id.complete(ctx, "JoinMulticast", EventMulticastJoin); err != nil {
		_ = m.Leave()
		return nil, err
	}
	return m, nil
}

// Leave leaves the group (rdma_leave_multicast).
func (m *Multicast) Leave() error {
	c := m.id.ch
	c.mu.Lock()
	_, ok := c.mcs[m.uid]
	delete(c.mcs, m.uid)
	c.mu.Unlock()
	if !ok {
		return nil
	}
	m.mu.Lock()
	v := m.attached
	m.attached = nil
	m.mu.Unlock()
	var derr error
	if v != nil {
		// The QP may be gone already (destroying it detached it).
		if err := v.DetachMcast(m.ah.GRH.DGID, m.ah.DLID); err != nil && !errors.Is(err, ErrClosed) && !errors.Is(err, ErrInvalidArgument) {
			derr = err
		}
	}
	_, err := c.b.leave(m.handle)
	return errors.Join(derr, errnoError("LeaveMulticast", err))
}

// forgetMulticastLocked drops the groups of a destroyed ID: destroying an
// rdma_cm ID leaves its groups (cma_leave_mc_groups; the user backend's
// destroyID does the same), so no Leave will come for them. c.mu is held.
func (c *Channel) forgetMulticastLocked(id *ID) {
	for uid, m := range c.mcs {
		if m.id == id {
			delete(c.mcs, uid)
		}
	}
}
