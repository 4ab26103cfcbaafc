package engine

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/go-rdma/rdmacm/ece"
	"github.com/go-rdma/rdmacm/mad"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
)

// ID names a connection, a listener or a SIDR exchange. For connections it
// is the local communication ID carried in the MADs.
type ID uint32

func (id ID) String() string { return fmt.Sprintf("%#08x", uint32(id)) }

// State is a CM state, numbered as the kernel's enum ib_cm_state (IBTA
// vol. 1 12.9.6 state diagrams).
type State uint8

const (
	StateIdle State = iota
	StateListen
	StateREQSent
	StateREQRcvd
	StateMRAREQSent
	StateMRAREQRcvd
	StateREPSent
	StateREPRcvd
	StateMRAREPSent
	StateMRAREPRcvd
	StateEstablished
	StateDREQSent
	StateDREQRcvd
	StateTimeWait
	StateSIDRREQSent
	StateSIDRREQRcvd
	numStates
)

var stateNames = [numStates]string{
	"IDLE", "LISTEN", "REQ_SENT", "REQ_RCVD", "MRA_REQ_SENT", "MRA_REQ_RCVD",
	"REP_SENT", "REP_RCVD", "MRA_REP_SENT", "MRA_REP_RCVD", "ESTABLISHED",
	"DREQ_SENT", "DREQ_RCVD", "TIMEWAIT", "SIDR_REQ_SENT", "SIDR_REQ_RCVD",
}

func (s State) String() string {
	if s < numStates {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// Addr is the far end of a MAD: the peer's GSI QP on one of our ports, as
// struct ib_user_mad_hdr carries it. For a received MAD it describes the
// sender; for an outgoing one, the destination.
type Addr struct {
	// Port is the local port, starting at 1.
	Port      uint8
	PKeyIndex uint16
	// GID is the peer's GID (RoCEv2: its IPv4-mapped or IPv6 address).
	// On an InfiniBand port it is the GRH's, and zero without a GRH:
	// a MAD has a GRH exactly when its Addr has a GID.
	GID rdma.GID
	// LID is the peer's LID (InfiniBand only): the source LID of a
	// received MAD, the destination LID of an outgoing one.
	LID uint16
	// QPN is the peer's QP: 1, the GSI QP, for every CM MAD Linux sends.
	QPN uint32
	// SGIDIndex is the local GID table index the MAD uses or matched.
	SGIDIndex uint8
	// HopLimit is the GRH's. On an InfiniBand port the engine sends a
	// MAD whose hop limit is 0 without a GRH (and so without a GID), as
	// a path's hop limit 0 means no GRH.
	HopLimit     uint8
	TrafficClass uint8
	SL           uint8
	// FlowLabel is 20 bits.
	FlowLabel uint32
}

// Path is the primary path of a connection (the sa_path_rec fields the CM
// uses). Local is this side.
type Path struct {
	// PathRecord holds the path proper. PKey is the partition key (RoCE:
	// 0xffff); with HopLimit > 1 the REQ carries the permissive LID
	// 0xffff instead of SLID and DLID, as cm_format_req does;
	// PacketLifeTime is the rdma_cm's on RoCE (18 in Linux 6.1,
	// CMA_IBOE_PACKET_LIFETIME; 16 in later kernels).
	rdma.PathRecord
	// Port is the local port, starting at 1.
	Port      uint8
	PKeyIndex uint16
	SGIDIndex uint8
	// RoCE marks a RoCE path: the QP always uses the GRH. It must say
	// what Config.InfiniBandPorts says of Port: false on an InfiniBand
	// port, where the path is LID-routed (DLID, SL; a GRH only with a
	// hop limit above 0) and the CM's MADs go to DLID.
	RoCE bool
}

// ConnectParams are the arguments of Connect (ib_cm_req_param plus the
// rdma_cm's addressing).
type ConnectParams struct {
	// Context is returned in every event of the connection.
	Context uint64
	// PortSpace, Src and Dst give rdma_cm IP addressing: the service ID
	// is mad.ServiceID(PortSpace, Dst.Port()) and the REQ private data
	// starts with the 36-byte IP header. With a zero PortSpace the REQ
	// uses ServiceID and PrivateData as they are (AF_IB).
	PortSpace rdma.PortSpace
	Src, Dst  netip.AddrPort
	ServiceID uint64
	Path      Path
	// QPType is qp.RC (the zero value means RC) or qp.UC.
	QPType             qp.QPType
	QPN                uint32
	ResponderResources uint8
	InitiatorDepth     uint8
	RetryCount         uint8
	RNRRetryCount      uint8
	FlowControl        bool
	SRQ                bool
	// PrivateData is the consumer's part: at most 56 bytes with IP
	// addressing, 92 without.
	PrivateData []byte
	ECE         ece.ECE
	// CMResponseTimeout and MaxCMRetries override the Config defaults
	// when not zero.
	CMResponseTimeout uint8
	MaxCMRetries      uint8
	// ManageQP makes the engine drive the QP as librdmacm does for a
	// library QP: it emits RESET→INIT now, and on the REP INIT→INIT,
	// INIT→RTR and RTR→RTS, then sends the RTU itself and reports
	// Established instead of ConnectReply.
	ManageQP bool
}

// AcceptParams are the arguments of Accept (ib_cm_rep_param).
type AcceptParams struct {
	QPN                uint32
	ResponderResources uint8
	InitiatorDepth     uint8
	RNRRetryCount      uint8
	FlowControl        bool
	SRQ                bool
	// PrivateData is at most 196 bytes.
	PrivateData []byte
	// ECE goes in the REP as given: package cm decides it.
	ECE ece.ECE
	// ManageQP makes the engine emit RESET→INIT, INIT→RTR and RTR→RTS
	// before the REP, as rdma_accept does for a library QP.
	ManageQP bool
}

// ListenParams are the arguments of Listen.
type ListenParams struct {
	Context uint64
	// PortSpace and Port make an rdma_cm IP listener: service ID
	// mad.ServiceID(PortSpace, Port), REQs must carry a valid IP header
	// whose destination is Addr (unless Addr is unspecified). Without a
	// PortSpace the listener matches ServiceID and takes any private data.
	PortSpace rdma.PortSpace
	Port      uint16
	Addr      netip.Addr
	// AFOnly restricts a wildcard Addr to its own family (0.0.0.0: IPv4
	// requests, ::: IPv6); without it a wildcard takes both, as the
	// rdma_cm's cma_match_private_data does.
	AFOnly    bool
	ServiceID uint64
	// QPType is what requests must ask for: RC or UC for REQ, UD for
	// SIDR_REQ. The zero value means RC.
	QPType qp.QPType
	// Backlog bounds the requests reported but not yet accepted or
	// rejected; more are dropped silently so the peer retries (ucma's
	// backlog, which makes cma_ib_req_handler return ENOMEM). 0 means no
	// bound.
	Backlog int
}

// SIDRParams are the arguments of ResolveSIDR (ib_cm_sidr_req_param).
type SIDRParams struct {
	Context   uint64
	PortSpace rdma.PortSpace
	Src, Dst  netip.AddrPort
	ServiceID uint64
	Path      Path
	// PrivateData: at most 180 bytes with IP addressing, 216 without.
	PrivateData []byte
	// Timeout and MaxRetries default to the rdma_cm's 4096 ms and 15.
	Timeout    time.Duration
	MaxRetries uint8
}

// SIDRReplyParams are the arguments of ReplySIDR (ib_cm_sidr_rep_param).
type SIDRReplyParams struct {
	Status      mad.SIDRStatus
	QPN         uint32
	QKey        uint32
	ECE         ece.ECE
	Info        []byte
	PrivateData []byte
}

// EventType is what happened. The names follow the kernel's
// ib_cm_event_type; the comments give the rdma_cm event each becomes.
type EventType uint8

const (
	// EventConnectRequest: a REQ arrived for a listener (CONNECT_REQUEST).
	EventConnectRequest EventType = iota + 1
	// EventConnectReply: the REP arrived (CONNECT_RESPONSE); call
	// Establish to send the RTU, or Reject.
	EventConnectReply
	// EventEstablished: the RTU arrived, the QP saw traffic (Notify), or
	// this side sent the RTU (ESTABLISHED).
	EventEstablished
	// EventRejected: a REJ arrived (REJECTED, status = Reason).
	EventRejected
	// EventReqError: the REQ was never answered (UNREACHABLE, ETIMEDOUT).
	EventReqError
	// EventRepError: the REP was never answered (UNREACHABLE, ETIMEDOUT).
	EventRepError
	// EventDisconnectRequest: a DREQ arrived (DISCONNECTED); call
	// Disconnect or Destroy to answer with a DREP.
	EventDisconnectRequest
	// EventDisconnectReply: the DREP arrived (DISCONNECTED).
	EventDisconnectReply
	// EventDreqError: the DREQ was never answered (DISCONNECTED,
	// ETIMEDOUT).
	EventDreqError
	// EventTimewaitExit: TimeWait is over (TIMEWAIT_EXIT).
	EventTimewaitExit
	// EventSIDRRequest: a SIDR_REQ arrived for a UD listener; answer with
	// ReplySIDR.
	EventSIDRRequest
	// EventSIDRReply: the SIDR_REP arrived.
	EventSIDRReply
	// EventSIDRError: the SIDR_REQ was never answered (UNREACHABLE).
	EventSIDRError
	numEventTypes
)

var eventNames = [numEventTypes]string{"", "CONNECT_REQUEST", "CONNECT_REPLY",
	"ESTABLISHED", "REJECTED", "REQ_ERROR", "REP_ERROR", "DISCONNECT_REQUEST",
	"DISCONNECT_REPLY", "DREQ_ERROR", "TIMEWAIT_EXIT", "SIDR_REQUEST",
	"SIDR_REPLY", "SIDR_ERROR"}

func (t EventType) String() string {
	if t > 0 && t < numEventTypes {
		return eventNames[t]
	}
	return fmt.Sprintf("EventType(%d)", uint8(t))
}

// Event is one thing to tell the user.
type Event struct {
	Type EventType
	ID   ID
	// Listener is the listener of EventConnectRequest and
	// EventSIDRRequest.
	Listener ID
	// Context is the Context of Connect, ResolveSIDR or (for passive IDs)
	// Listen.
	Context uint64
	// Reason, MessageRejected and ARI describe a REJ.
	Reason          mad.RejectReason
	MessageRejected mad.RejectedMessage
	ARI             []byte
	// PrivateData is the whole private data field of the message, after
	// the IP header when the message had one. It is valid until Advance.
	PrivateData []byte
	// ECE is what the peer's REQ or REP carried.
	ECE ece.ECE
	// Conn describes the peer's REQ (EventConnectRequest) or REP
	// (EventConnectReply), from this side's point of view.
	Conn ConnInfo
	// SIDR describes a SIDR_REP.
	SIDR SIDRInfo
}

// ConnInfo holds what a REQ or REP told this side.
type ConnInfo struct {
	// RemoteCommID is the peer's communication ID.
	RemoteCommID uint32
	ServiceID    uint64
	RemoteCAGUID uint64
	RemoteQPN    uint32
	// StartingPSN is the peer's starting PSN (this side's send PSN).
	StartingPSN uint32
	// ResponderResources and InitiatorDepth are swapped to this side's
	// view, as the kernel's cm_format_req_event and cm_format_rep_event do.
	ResponderResources uint8
	InitiatorDepth     uint8
	RetryCount         uint8
	RNRRetryCount      uint8
	FlowControl        bool
	SRQ                bool
	TransportType      mad.TransportServiceType
	TargetACKDelay     uint8
	// Path is the primary path rebuilt from the REQ (passive side). On
	// an InfiniBand port it is LID-routed (RoCE false): DLID is the
	// REQ's source LID and SLID the REQ's remote port LID, as
	// cm_format_path_lid_from_req takes them; HopLimit is the received
	// GRH's, 0 without one.
	Path Path
	// HasIP says the REQ carried an rdma_cm IP header: Src is the active
	// side, Dst this side.
	HasIP     bool
	PortSpace rdma.PortSpace
	Src, Dst  netip.AddrPort
}

// SIDRInfo holds what a SIDR_REQ or SIDR_REP carried.
type SIDRInfo struct {
	Status    mad.SIDRStatus
	QPN       uint32
	QKey      uint32
	ServiceID uint64
	PKey      uint16
	Info      []byte
	HasIP     bool
	Src, Dst  netip.AddrPort
}

// Outbound is one MAD to send.
type Outbound struct {
	To  Addr
	MAD [mad.MADSize]byte
	// Retry counts earlier sends of the same MAD (0: first send).
	Retry uint8
}

// QPTransition is a Modify QP the caller must apply to the QP of a
// connection whose QP the engine drives.
type QPTransition struct {
	ID       ID
	QPN      uint32
	Type     qp.QPType
	From, To qp.State
	Attr     qp.Attr
	Mask     qp.Mask
}

// StateChange records one transition (Config.RecordStates).
type StateChange struct {
	ID       ID
	From, To State
}

// Ready holds the engine's outputs since the last Advance.
type Ready struct {
	Messages      []Outbound
	Events        []Event
	QPTransitions []QPTransition
	StateChanges  []StateChange
	// Deadline is when Tick must next be called; zero when no timer is
	// armed.
	Deadline time.Time
}

// Source supplies the values a CM draws at random.
type Source interface {
	// CommID returns a candidate local communication ID; the engine skips
	// 0 and IDs in use.
	CommID() uint32
	// PSN returns a starting PSN; the engine keeps the low 24 bits.
	PSN() uint32
	// TID returns the transaction ID of a REQ, DREQ or SIDR_REQ sent by
	// the ID commID.
	TID(commID uint32) uint64
}

// Config configures an Engine. Zero values take the defaults noted.
type Config struct {
	// CAGUID is the node GUID sent as LocalCAGUID.
	CAGUID uint64
	// Source supplies IDs, TIDs and PSNs; required.
	Source Source
	// ACKDelay is the CA's local ACK delay (the device's
	// local_ca_ack_delay; rxe's is 15), sent as the REP's TargetACKDelay
	// and used in cm_ack_timeout.
	ACKDelay uint8
	// CMResponseTimeout is the REQ's CM response timeouts (default 20,
	// CMA_CM_RESPONSE_TIMEOUT).
	CMResponseTimeout uint8
	// MaxCMRetries is the REQ's max CM retries (default 15,
	// CMA_MAX_CM_RETRIES).
	MaxCMRetries uint8
	// MRAServiceTimeout is the service timeout of the rdma_cm's delayed
	// MRA (default 24, CMA_CM_MRA_SETTING).
	MRAServiceTimeout uint8
	// LocalGIDs, when not empty, are the GIDs of this CA: a REQ for
	// another GID is rejected with reason 12 (INVALID_GID) and the first
	// GID as ARI, as cm_req_handler does when the path has no local GID.
	LocalGIDs []rdma.GID
	// RecordStates fills Ready.StateChanges.
	RecordStates bool
	// MaxHalfOpen bounds each listener's half-open connections, as TCP's
	// SYN backlog bounds SYN_RECV sockets: passive IDs from the REQ (or
	// SIDR_REQ) until ESTABLISHED or the end of the attempt. 0 means
	// DefaultMaxHalfOpen; a negative value means no bound (the kernel's
	// CM bounds only requests not yet read: rdma_ucm's backlog). The
	// package documentation says what happens past it.
	MaxHalfOpen int
	// InfiniBandPorts lists the local ports whose link layer is
	// InfiniBand (the kernel's rdma_protocol_ib); every other port is
	// RoCE. On such a port a received REQ yields a LID-routed path and
	// every MAD to the peer goes to its LID, as ib_cm does there.
	InfiniBandPorts []uint8
}
