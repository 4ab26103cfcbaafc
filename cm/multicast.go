package cm

import (
	"context"
	"fmt"
	"net/netip"
	"sync"

	"github.com/go-rdma/rdmacm/qp"
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

func (m *Multicast) onEvent(ev *Event) {
	if ev.Type == EventMulticastJoin {
		m.mu.Lock()
		m.ah = ev.UD.AH
		m.mu.Unlock()
	}
}

// JoinMulticast joins the group addr on a UD ID whose address is resolved
// or bound (rdma_join_multicast_ex). sendOnly joins as a send-only full
// member. A synchronous ID waits for EventMulticastJoin.
//
// Not ported: attaching a library QP to the group (ibv_attach_mcast);
// attach the QP with the verbs layer using the group's AH.
func (id *ID) JoinMulticast(ctx context.Context, addr netip.Addr, sendOnly bool, context any) (*Multicast, error) {
	if !id.udp {
		return nil, fmt.Errorf("cm: join multicast group: %w: the ID is not UD", ErrInvalidState)
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
	_, err := c.b.leave(m.handle)
	return errnoError("LeaveMulticast", err)
}
