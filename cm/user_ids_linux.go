//go:build linux

package cm

import (
	"errors"
	"math/rand/v2"
	"net/netip"
	"time"

	"golang.org/x/sys/unix"

	"github.com/go-rdma/rdmacm/cm/engine"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
	"github.com/go-rdma/rdmacm/uverbs"
)

// The user backend's ID table: handles, IDs and their listens, binding
// and ephemeral ports (cma_get_port), creation and destruction.

// userID is the backend's view of one rdma_cm ID.
type userID struct {
	uid    uint64
	ps     rdma.PortSpace
	qpType qp.QPType

	src, dst netip.AddrPort
	port     *userPort // nil until bound to an address or resolved
	gid      uverbs.GIDEntry
	path     engine.Path
	routed   bool

	eid     engine.ID // the connection, once Connect or a REQ made one
	hasConn bool
	listens []userListen

	tos                  uint8
	tosSet               bool
	ackTimeout           uint8
	ackTimeoutSet, reuse bool
	// afOnly restricts a wildcard listener to the family it was bound with.
	afOnly       bool
	disconnected bool // DISCONNECTED was reported (cma_comp_exch CONNECT → DISCONNECT)
}

type userListen struct {
	p   *userPort
	eid engine.ID
}

// get returns the ID of handle h; u.mu must be held.
func (u *user) get(h uint32) (*userID, error) {
	if u.isClosed {
		return nil, unix.EBADF
	}
	x := u.ids[h]
	if x == nil {
		return nil, unix.ENOENT
	}
	return x, nil
}

func (u *user) createID(uid uint64, ps rdma.PortSpace, t qp.QPType) (uint32, error) {
	if t == qp.UD || ps == rdma.PortSpaceIB {
		return 0, unix.EOPNOTSUPP
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.isClosed {
		return 0, unix.EBADF
	}
	return u.add(&userID{uid: uid, ps: ps, qpType: t}), nil
}

func (u *user) add(x *userID) uint32 {
	for {
		u.next++
		if u.next != 0 && u.ids[u.next] == nil {
			u.ids[u.next] = x
			return u.next
		}
	}
}

func (u *user) destroyID(h uint32) (uint32, error) {
	u.mu.Lock()
	x, err := u.get(h)
	if err != nil {
		u.mu.Unlock()
		return 0, err
	}
	delete(u.ids, h)
	u.unbindLocked(h, x)
	listens, conn, hasConn, p := x.listens, x.eid, x.hasConn, x.port
	for _, l := range listens {
		delete(l.p.byEngine, l.eid)
	}
	if hasConn {
		delete(p.byEngine, conn)
	}
	u.mu.Unlock()
	// The engine answers for the ID as ib_destroy_cm_id does: a REJ, a
	// DREQ or the pending DREP (cm_destroy_id).
	var errs []error
	for _, l := range listens {
		errs = append(errs, l.p.d.Do(func(e *engine.Engine, now time.Time) error { return e.Destroy(now, l.eid) }))
	}
	if hasConn {
		errs = append(errs, p.d.Do(func(e *engine.Engine, now time.Time) error { return e.Destroy(now, conn) }))
	}
	return 0, errors.Join(errs...)
}

func (u *user) unbindLocked(h uint32, x *userID) {
	if !x.src.IsValid() {
		return
	}
	hs := u.bound[x.src.Port()]
	for i, b := range hs {
		if b == h {
			hs = append(hs[:i], hs[i+1:]...)
			break
		}
	}
	if len(hs) == 0 {
		delete(u.bound, x.src.Port())
	} else {
		u.bound[x.src.Port()] = hs
	}
}

// bindLocked binds x to addr, choosing an ephemeral port for port 0, as
// cma_get_port does (EADDRINUSE for a port in use without REUSEADDR).
func (u *user) bindLocked(h uint32, x *userID, addr netip.AddrPort) error {
	if x.src.IsValid() {
		return unix.EINVAL
	}
	a := addr.Addr().Unmap().WithZone("")
	if !a.IsValid() {
		// The zero address and :: mean every device, IPv4 and IPv6: the
		// engine's wildcard listener takes both families unless AFOnly.
		a = netip.IPv4Unspecified()
	}
	if !a.IsUnspecified() {
		p, g, ok := u.portOf(a)
		if !ok {
			return unix.ENODEV // cma_acquire_dev_by_src_ip: no RDMA port has the address
		}
		x.port, x.gid = p, g
	}
	port := addr.Port()
	if port == 0 {
		var ok bool
		if port, ok = u.ephemeral(); !ok {
			return unix.EADDRNOTAVAIL
		}
	} else if !x.reuse {
		for _, o := range u.bound[port] {
			if oa := u.ids[o].src.Addr(); oa.IsUnspecified() || a.IsUnspecified() || oa == a {
				return unix.EADDRINUSE
			}
		}
	}
	x.src = netip.AddrPortFrom(a, port)
	u.bound[port] = append(u.bound[port], h)
	return nil
}

// ephemeral picks a free port from Linux's default ip_local_port_range.
func (u *user) ephemeral() (uint16, bool) {
	const lo, hi = 32768, 60999
	start := lo + rand.IntN(hi-lo+1)
	for i := range hi - lo + 1 {
		p := uint16(lo + (start-lo+i)%(hi-lo+1))
		if len(u.bound[p]) == 0 {
			return p, true
		}
	}
	return 0, false
}

func (u *user) bind(h uint32, addr netip.AddrPort) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	x, err := u.get(h)
	if err != nil {
		return err
	}
	return u.bindLocked(h, x, addr)
}
