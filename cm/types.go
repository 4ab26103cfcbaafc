package cm

import (
	"fmt"
	"net/netip"

	"github.com/go-rdma/rdmacm/ece"
	"github.com/go-rdma/rdmacm/internal/unix"
	"github.com/go-rdma/rdmacm/mad"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
)

// qpType is the QP type the kernel uses for the port space (ucma
// ucma_get_qp_type).
func psQPType(ps rdma.PortSpace, ib qp.QPType) (qp.QPType, bool) {
	switch ps {
	case rdma.PortSpaceTCP:
		return qp.RC, true
	case rdma.PortSpaceUDP, rdma.PortSpaceIPoIB:
		return qp.UD, true
	case rdma.PortSpaceIB:
		if ib == 0 {
			return qp.RC, true
		}
		return ib, ib == qp.RC || ib == qp.UD || ib == qp.UC
	}
	return 0, false
}

// EventType is an rdma_cm event (enum rdma_cm_event_type).
type EventType uint32

// The 20 rdma_cm event types.
const (
	EventAddrResolved     EventType = 0
	EventAddrError        EventType = 1
	EventRouteResolved    EventType = 2
	EventRouteError       EventType = 3
	EventConnectRequest   EventType = 4
	EventConnectResponse  EventType = 5
	EventConnectError     EventType = 6
	EventUnreachable      EventType = 7
	EventRejected         EventType = 8
	EventEstablished      EventType = 9
	EventDisconnected     EventType = 10
	EventDeviceRemoval    EventType = 11
	EventMulticastJoin    EventType = 12
	EventMulticastError   EventType = 13
	EventAddrChange       EventType = 14
	EventTimewaitExit     EventType = 15
	EventAddrInfoResolved EventType = 16
	EventAddrInfoError    EventType = 17
	EventUser             EventType = 18
	EventInternal         EventType = 19
	numEventTypes         EventType = 20
)

var eventNames = [numEventTypes]string{
	"RDMA_CM_EVENT_ADDR_RESOLVED",
	"RDMA_CM_EVENT_ADDR_ERROR",
	"RDMA_CM_EVENT_ROUTE_RESOLVED",
	"RDMA_CM_EVENT_ROUTE_ERROR",
	"RDMA_CM_EVENT_CONNECT_REQUEST",
	"RDMA_CM_EVENT_CONNECT_RESPONSE",
	"RDMA_CM_EVENT_CONNECT_ERROR",
	"RDMA_CM_EVENT_UNREACHABLE",
	"RDMA_CM_EVENT_REJECTED",
	"RDMA_CM_EVENT_ESTABLISHED",
	"RDMA_CM_EVENT_DISCONNECTED",
	"RDMA_CM_EVENT_DEVICE_REMOVAL",
	"RDMA_CM_EVENT_MULTICAST_JOIN",
	"RDMA_CM_EVENT_MULTICAST_ERROR",
	"RDMA_CM_EVENT_ADDR_CHANGE",
	"RDMA_CM_EVENT_TIMEWAIT_EXIT",
	"RDMA_CM_EVENT_ADDRINFO_RESOLVED",
	"RDMA_CM_EVENT_ADDRINFO_ERROR",
	"RDMA_CM_EVENT_USER",
	"RDMA_CM_EVENT_INTERNAL",
}

// String returns the name rdma_event_str(3) gives the event.
func (t EventType) String() string {
	if t < numEventTypes {
		return eventNames[t]
	}
	return "UNKNOWN EVENT"
}

// Known reports whether t is one of the 20 event types.
func (t EventType) Known() bool { return t < numEventTypes }

// MaxResources asks Connect and Accept for the device's maximum
// responder resources or initiator depth (librdmacm RDMA_MAX_RESP_RES and
// RDMA_MAX_INIT_DEPTH). It needs a library QP or a device known to the ID.
const MaxResources uint8 = 0xff

// Defaults and sentinels of the ConnParam given to Connect and Accept. A
// zero field there means librdmacm's default (what rdma_connect and
// rdma_accept use for a NULL conn_param), so a ConnParam set only to
// carry private data or a QP number keeps the defaults; the sentinels
// ask for a real 0.
const (
	// DefaultRetryCount and DefaultRNRRetryCount are the retry counts a
	// zero RetryCount or RNRRetryCount means (RNR 7: retry forever).
	DefaultRetryCount    uint8 = 7
	DefaultRNRRetryCount uint8 = 7
	// RetryNone in RetryCount or RNRRetryCount asks for a retry count of
	// 0 (its low three bits, all the CM carries, are 0).
	RetryNone uint8 = 0xf8
	// ResourcesNone in ResponderResources or InitiatorDepth asks for 0
	// RDMA reads and atomics. 0xfe is above every device's maximum, so no
	// real request is lost.
	ResourcesNone uint8 = 0xfe
)

// ConnParam holds the parameters of Connect and Accept, and those the peer
// sent in an event (struct rdma_conn_param). Given to Connect or Accept,
// a zero ResponderResources, InitiatorDepth, RetryCount or RNRRetryCount
// means librdmacm's default (MaxResources, MaxResources,
// DefaultRetryCount, DefaultRNRRetryCount), exactly as a nil *ConnParam
// does; ResourcesNone and RetryNone ask for 0. In events and in
// RequestParam and ConnParam the fields are the values on the wire, 0
// meaning 0.
type ConnParam struct {
	// PrivateData goes in the REQ, REP or REJ (at most 56 bytes in a REQ
	// of an IP port space, 196 in a REP). In events it is the whole CM
	// field, zero-padded: the peer's length is not carried.
	PrivateData []byte
	// ResponderResources is the number of RDMA reads and atomics the QP
	// serves at once; InitiatorDepth the number it issues. In events they
	// are the peer's values swapped to this side's point of view. Given
	// to Connect or Accept, 0 means MaxResources and ResourcesNone 0.
	ResponderResources uint8
	InitiatorDepth     uint8
	FlowControl        bool
	// RetryCount and RNRRetryCount are 3 bits each (7 = retry forever for
	// RNR). Given to Connect or Accept, 0 means 7 (DefaultRetryCount,
	// DefaultRNRRetryCount) and RetryNone 0.
	RetryCount    uint8
	RNRRetryCount uint8
	SRQ           bool
	// QPNum is the number of an external QP (the application's own).
	// With a library QP (CreateQP) it is taken from that QP.
	QPNum uint32
	// QKey is used only for AF_IB IDs.
	QKey uint32
	// DeclineECE makes Accept answer without ECE (vendor 0, options 0),
	// explicitly, when the REQ offered ECE and the external QP does not
	// use it. It conflicts with SetLocalECE.
	DeclineECE bool
}

// UDParam holds the parameters of a UD event (struct rdma_ud_param): the
// remote QP and how to reach it.
type UDParam struct {
	QPNum       uint32
	QKey        uint32
	AH          qp.AH
	PrivateData []byte
}

// Event is one rdma_cm event. It and its PrivateData belong to the caller
// until Ack; after Ack neither may be used.
type Event struct {
	Type EventType
	// Status is the rdma_cm's status (the user backend reports the same
	// values): 0, a negative errno for error events, or the REJ reason
	// for EventRejected. Err interprets it.
	Status int32
	// ID is the ID the event is for; for EventConnectRequest it is the
	// new, passive ID.
	ID *ID
	// Listener is the listening ID of an EventConnectRequest.
	Listener *ID
	// Conn holds the peer's connection parameters (connected QP types).
	Conn ConnParam
	// UD holds the peer's UD parameters (UD QP types and multicast).
	UD UDParam
	// ECE is what the peer's REQ (EventConnectRequest) or REP
	// (EventConnectResponse) carried; zero otherwise.
	ECE ece.ECE
	// Multicast is the group of EventMulticastJoin/EventMulticastError.
	Multicast *Multicast

	ch    *Channel
	acked bool
	// peer is the active ID's destination when the event arrived, for
	// the error of a failed connect.
	peer netip.AddrPort
}

// Err returns the event's status as an error: nil for success, a
// *RejectError for EventRejected, and otherwise an error that names the
// event and matches its sentinel (ErrTimeout, ErrNoRoute, ...) and errno.
func (e *Event) Err() error {
	err := e.err()
	if _, ok := err.(*RejectError); ok || err == nil {
		return err
	}
	if _, ok := err.(*SIDRError); ok {
		return err
	}
	// Not errfmt.Wrap: the status names its sentinel itself (ENODEV in
	// ADDR_ERROR is ErrNoRoute, not ErrNoDevice), and it has no prefix.
	return fmt.Errorf("cm: %v: %w", e.Type, err)
}

// err is Err without the package prefix and the event's name, for
// callers that name the operation instead.
func (e *Event) err() error {
	switch e.Type {
	case EventRejected:
		pd := e.Conn.PrivateData
		if e.ID != nil && e.ID.udp {
			pd = e.UD.PrivateData
		}
		return &RejectError{Reason: mad.RejectReason(e.Status), PrivateData: append([]byte(nil), pd...), Addr: e.peer}
	case EventUnreachable:
		if e.Status > 0 && e.ID != nil && e.ID.udp {
			// A SIDR_REP's status, not an errno (cma_sidr_rep_handler).
			return &SIDRError{Status: mad.SIDRStatus(e.Status), PrivateData: append([]byte(nil), e.UD.PrivateData...), Addr: e.peer}
		}
		return e.wrap(ErrTimeout)
	case EventConnectError:
		return e.wrap(ErrConnect)
	case EventDisconnected:
		return e.wrap(ErrDisconnected)
	case EventDeviceRemoval:
		return e.wrap(ErrNoDevice)
	}
	if e.Status == 0 {
		return nil
	}
	errno := statusErrno(e.Status)
	if errno == unix.ENODEV && (e.Type == EventAddrError || e.Type == EventRouteError) {
		// The destination resolved, but through a netdev without an
		// RDMA device (cma_acquire_dev_by_src_ip).
		return &eventError{ErrNoRoute, errno}
	}
	return &eventError{rdma.ErrnoSentinel(errno), errno}
}

// wrap is the event's sentinel and, if any, its errno.
func (e *Event) wrap(sentinel error) error {
	if e.Status == 0 {
		return &eventError{sentinel, 0}
	}
	return &eventError{sentinel, statusErrno(e.Status)}
}

func (e *Event) String() string {
	return fmt.Sprintf("%v status=%d", e.Type, e.Status)
}
