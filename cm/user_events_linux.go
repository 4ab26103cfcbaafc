//go:build linux

package cm

import (
	"context"

	"golang.org/x/sys/unix"

	"github.com/go-rdma/rdmacm/cm/engine"
)

// The user backend's event queue and the mapping of engine (ib_cm)
// events to rdma_cm events (cma_ib_handler, cma_ib_req_handler).

func (u *user) queueLocked(ev rawEvent) {
	u.queue = append(u.queue, ev)
	select {
	case u.wake <- struct{}{}:
	default:
	}
}

func (u *user) readEvents(ctx context.Context, fn func(*rawEvent)) error {
	for {
		u.mu.Lock()
		if len(u.queue) > 0 {
			evs := u.queue
			u.queue = nil
			u.mu.Unlock()
			for i := range evs {
				fn(&evs[i])
			}
			return nil
		}
		closed := u.isClosed
		u.mu.Unlock()
		if closed {
			return ErrClosed
		}
		select {
		case <-u.wake:
		case <-u.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

const etimedout = -int32(unix.ETIMEDOUT)

// onEngineEvent turns an engine (ib_cm) event into an rdma_cm event as
// cma_ib_handler and cma_ib_req_handler do.
func (u *user) onEngineEvent(p *userPort, ev *engine.Event) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.isClosed {
		return
	}
	if ev.Type == engine.EventConnectRequest {
		u.requestLocked(p, ev)
		return
	}
	if ev.Type == engine.EventSIDRRequest {
		u.sidrRequestLocked(p, ev)
		return
	}
	h, ok := p.byEngine[ev.ID]
	x := u.ids[h]
	if !ok || x == nil || x.uid == 0 {
		return // destroyed, or a passive ID not accepted yet
	}
	r := rawEvent{uid: x.uid, handle: h, conn: connFromEngine(ev)}
	switch ev.Type {
	case engine.EventConnectReply:
		r.typ, r.ece = EventConnectResponse, ev.ECE
	case engine.EventEstablished:
		r.typ = EventEstablished
	case engine.EventRejected:
		r.typ, r.status = EventRejected, int32(ev.Reason)
	case engine.EventReqError, engine.EventRepError:
		r.typ, r.status = EventUnreachable, etimedout
	case engine.EventDreqError:
		r.status = etimedout
		fallthrough
	case engine.EventDisconnectRequest, engine.EventDisconnectReply:
		if x.disconnected {
			return
		}
		x.disconnected = true
		r.typ = EventDisconnected
	case engine.EventTimewaitExit:
		r.typ = EventTimewaitExit
	default:
		if !sidrEventLocked(x, ev, &r) {
			return
		}
	}
	u.queueLocked(r)
}

// requestLocked is cma_ib_req_handler: a new ID for the listener's
// request, reported to the listener's uid.
func (u *user) requestLocked(p *userPort, ev *engine.Event) {
	lh, ok := p.byEngine[ev.Listener]
	l := u.ids[lh]
	if !ok || l == nil {
		_ = ev // the listener is being destroyed; the engine's ID is released with it
		return
	}
	x := &userID{ps: l.ps, qpType: l.qpType, port: p, eid: ev.ID, hasConn: true,
		src: ev.Conn.Dst, dst: ev.Conn.Src, path: ev.Conn.Path, routed: true, tos: l.tos}
	if gid, ok := p.gidOf(ev.Conn.Path.SGID); ok {
		x.gid = gid
	}
	h := u.add(x)
	p.byEngine[ev.ID] = h
	u.queueLocked(rawEvent{uid: l.uid, handle: h, typ: EventConnectRequest, conn: connFromEngine(ev), ece: ev.ECE})
}

// connFromEngine fills rdma_conn_param as cma_set_req_event_data and
// cma_set_rep_event_data do (the engine already swapped the resources to
// this side's view).
func connFromEngine(ev *engine.Event) ConnParam {
	return ConnParam{
		PrivateData:        append([]byte(nil), ev.PrivateData...),
		ResponderResources: ev.Conn.ResponderResources,
		InitiatorDepth:     ev.Conn.InitiatorDepth,
		FlowControl:        ev.Conn.FlowControl,
		RetryCount:         ev.Conn.RetryCount,
		RNRRetryCount:      ev.Conn.RNRRetryCount,
		SRQ:                ev.Conn.SRQ,
		QPNum:              ev.Conn.RemoteQPN,
	}
}
