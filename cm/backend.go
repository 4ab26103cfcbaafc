package cm

import (
	"context"
	"net/netip"
	"time"

	"github.com/go-rdma/rdmacm/ece"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
)

// backend is the small surface a connection manager implementation
// provides: kernel (kernel_linux.go) over the kernel's rdma_cm (ucma), and
// user (user_*linux.go) over our CM engine (cm/engine) on umad.
// Everything above it (IDs, the ECE ordering state machine, library QPs,
// event dispatch) is shared. Open picks one (channel.go).
//
// IDs are named by a backend handle; uid is the value events carry back
// (never 0: the kernel drops events of an ID whose uid is 0). Errors are
// errnos (unix.Errno) or wrap them; the caller adds context.
type backend interface {
	name() Backend
	createID(uid uint64, ps rdma.PortSpace, t qp.QPType) (handle uint32, err error)
	// destroyID returns how many events of the ID were handed out.
	destroyID(h uint32) (eventsReported uint32, err error)
	bind(h uint32, addr netip.AddrPort) error
	// resolveAddr: src may be the zero AddrPort.
	resolveAddr(h uint32, src, dst netip.AddrPort, timeout time.Duration) error
	resolveRoute(h uint32, timeout time.Duration) error
	queryAddr(h uint32) (AddrInfo, error)
	queryPath(h uint32) ([]rdma.PathRecord, error)
	listen(h uint32, backlog int) error
	connect(h uint32, p *ConnParam, e ece.ECE) error
	// accept with p == nil completes the active side (sends the RTU).
	accept(h uint32, uid uint64, p *ConnParam, e ece.ECE) error
	reject(h uint32, privateData []byte, reason uint8) error
	disconnect(h uint32) error
	initQPAttr(h uint32, s qp.State) (qp.Attr, qp.Mask, error)
	setOption(h uint32, level, name uint32, val []byte) error
	notify(h uint32, event uint32) error
	join(h uint32, uid uint64, addr netip.Addr, sendOnly bool) (mcHandle uint32, err error)
	leave(mcHandle uint32) (eventsReported uint32, err error)
	// readEvents blocks until at least one event is available (or ctx
	// ends, or close is called), then hands each available event to fn
	// until none is left.
	readEvents(ctx context.Context, fn func(*rawEvent)) error
	close() error
}

// rawEvent is an event as a backend reports it, before dispatch. The
// backend fills both parameter forms; dispatch picks by the ID's QP type.
type rawEvent struct {
	uid    uint64
	handle uint32
	typ    EventType
	status int32
	conn   ConnParam
	ud     UDParam
	ece    ece.ECE
}

// AddrInfo describes an ID's addresses and device (QUERY ADDR).
type AddrInfo struct {
	Src, Dst netip.AddrPort
	// NodeGUID is the device's node GUID, network byte order.
	NodeGUID rdma.GUID
	// DeviceIndex is the kernel's RDMA device index (netlink
	// RDMA_NLDEV_ATTR_DEV_INDEX); valid when HasDevice.
	DeviceIndex uint32
	HasDevice   bool
	Port        uint8
	PKey        uint16
}
