package abi

// The rdma_cm user ABI ("ucma", include/uapi/rdma/rdma_user_cm.h, ABI
// version 4): every command is one write() to /dev/infiniband/rdma_cm of
// an 8-byte header followed by the command struct. Responses are written
// by the kernel to the user pointer carried in the command. All fields are
// host-endian apart from sockaddr ports and addresses and the fields noted
// below. Layouts are checked against the C header in ucma_layout_test.go.

import (
	"structs"
)

// UcmaABIVersion is the only ucma ABI this package speaks
// (RDMA_USER_CM_ABI_VERSION; /sys/class/misc/rdma_cm/abi_version).
const UcmaABIVersion = 4

// UcmaDevicePath is the rdma_cm misc device.
const UcmaDevicePath = "/dev/infiniband/rdma_cm"

// UcmaABIVersionPaths returns the sysfs files holding the ucma ABI
// version, newest kernel layout first.
func UcmaABIVersionPaths() []string {
	return []string{
		"/sys/class/misc/rdma_cm/abi_version",
		"/sys/class/infiniband_ucma/abi_version",
	}
}

// ucma command numbers (enum RDMA_USER_CM_CMD_*).
const (
	UcmaCmdCreateID     uint32 = 0
	UcmaCmdDestroyID    uint32 = 1
	UcmaCmdBindIP       uint32 = 2
	UcmaCmdResolveIP    uint32 = 3
	UcmaCmdResolveRoute uint32 = 4
	UcmaCmdQueryRoute   uint32 = 5
	UcmaCmdConnect      uint32 = 6
	UcmaCmdListen       uint32 = 7
	UcmaCmdAccept       uint32 = 8
	UcmaCmdReject       uint32 = 9
	UcmaCmdDisconnect   uint32 = 10
	UcmaCmdInitQPAttr   uint32 = 11
	UcmaCmdGetEvent     uint32 = 12
	UcmaCmdGetOption    uint32 = 13 // not implemented by the kernel: ENOSYS
	UcmaCmdSetOption    uint32 = 14
	UcmaCmdNotify       uint32 = 15
	UcmaCmdJoinIPMcast  uint32 = 16
	UcmaCmdLeaveMcast   uint32 = 17
	UcmaCmdMigrateID    uint32 = 18
	UcmaCmdQuery        uint32 = 19
	UcmaCmdBind         uint32 = 20
	UcmaCmdResolveAddr  uint32 = 21
	UcmaCmdJoinMcast    uint32 = 22
)

// Port spaces (enum rdma_ucm_port_space; IBTA Annex A11 service ID bytes
// 4 and 5).
const (
	UcmaPSIPoIB uint16 = 0x0002
	UcmaPSIB    uint16 = 0x013F
	UcmaPSTCP   uint16 = 0x0106
	UcmaPSUDP   uint16 = 0x0111
)

// QUERY options (RDMA_USER_CM_QUERY_*).
const (
	UcmaQueryAddr uint32 = 0
	UcmaQueryPath uint32 = 1
	UcmaQueryGID  uint32 = 2
)

// SET_OPTION levels and names (RDMA_OPTION_*).
const (
	UcmaOptionLevelID uint32 = 0
	UcmaOptionLevelIB uint32 = 1

	UcmaOptionIDTOS        uint32 = 0 // u8
	UcmaOptionIDReuseAddr  uint32 = 1 // int
	UcmaOptionIDAFOnly     uint32 = 2 // int
	UcmaOptionIDAckTimeout uint32 = 3 // u8
	UcmaOptionIBPath       uint32 = 1 // array of ib_path_rec_data
)

// Multicast join flags (RDMA_MC_JOIN_FLAG_*).
const (
	UcmaMcJoinFullMember         uint16 = 0
	UcmaMcJoinSendOnlyFullMember uint16 = 1
)

// Reject reasons the kernel accepts in REJECT (ucma_reject): 0 is turned
// into 28; anything else but 28 and 35 is EINVAL.
const (
	UcmaRejectConsumerDefined          uint8 = 28
	UcmaRejectVendorOptionNotSupported uint8 = 35
)

// Event types (enum rdma_cm_event_type).
const (
	UcmaEventAddrResolved     uint32 = 0
	UcmaEventAddrError        uint32 = 1
	UcmaEventRouteResolved    uint32 = 2
	UcmaEventRouteError       uint32 = 3
	UcmaEventConnectRequest   uint32 = 4
	UcmaEventConnectResponse  uint32 = 5
	UcmaEventConnectError     uint32 = 6
	UcmaEventUnreachable      uint32 = 7
	UcmaEventRejected         uint32 = 8
	UcmaEventEstablished      uint32 = 9
	UcmaEventDisconnected     uint32 = 10
	UcmaEventDeviceRemoval    uint32 = 11
	UcmaEventMulticastJoin    uint32 = 12
	UcmaEventMulticastError   uint32 = 13
	UcmaEventAddrChange       uint32 = 14
	UcmaEventTimewaitExit     uint32 = 15
	UcmaEventAddrInfoResolved uint32 = 16
	UcmaEventAddrInfoError    uint32 = 17
	UcmaEventUser             uint32 = 18
	UcmaEventInternal         uint32 = 19
)

// UcmaMaxPrivateData is RDMA_MAX_PRIVATE_DATA, the size of every private
// data array in the ABI (the CM message limits are smaller).
const UcmaMaxPrivateData = 256

// Address family numbers used in the sockaddrs the ABI carries.
const (
	AFInet  uint16 = 2
	AFInet6 uint16 = 10
	AFIB    uint16 = 27
)

// Sizes of the sockaddrs the ABI carries.
const (
	SizeofSockaddrIn      = 16
	SizeofSockaddrIn6     = 28
	SizeofSockaddrIB      = 48
	SizeofSockaddrStorage = 128
)

// UcmaCmdHdr is struct rdma_ucm_cmd_hdr. In and Out are byte counts:
// In is the payload length after the header, Out the response length.
type UcmaCmdHdr struct {
	_   structs.HostLayout
	Cmd uint32
	In  uint16
	Out uint16
}

// UcmaCreateID is struct rdma_ucm_create_id. The kernel drops every event
// of an ID whose UID is 0, so UID must not be 0.
type UcmaCreateID struct {
	_        structs.HostLayout
	UID      uint64
	Response uint64 // *UcmaCreateIDResp
	PS       uint16
	QPType   uint8 // used only with UcmaPSIB
	_        [5]uint8
}

// UcmaCreateIDResp is struct rdma_ucm_create_id_resp (also the response of
// the multicast joins).
type UcmaCreateIDResp struct {
	_  structs.HostLayout
	ID uint32
}

// UcmaDestroyID is struct rdma_ucm_destroy_id (also LEAVE_MCAST's command,
// with the multicast ID).
type UcmaDestroyID struct {
	_        structs.HostLayout
	Response uint64 // *UcmaDestroyIDResp
	ID       uint32
	_        uint32
}

// UcmaDestroyIDResp is struct rdma_ucm_destroy_id_resp.
type UcmaDestroyIDResp struct {
	_              structs.HostLayout
	EventsReported uint32
}

// UcmaBindIP is struct rdma_ucm_bind_ip (the pre-AF_IB bind).
type UcmaBindIP struct {
	_        structs.HostLayout
	Response uint64 // unused
	Addr     [SizeofSockaddrIn6]byte
	ID       uint32
}

// UcmaBind is struct rdma_ucm_bind. AddrSize must equal the family's
// sockaddr size.
type UcmaBind struct {
	_        structs.HostLayout
	ID       uint32
	AddrSize uint16
	_        uint16
	Addr     [SizeofSockaddrStorage]byte
}

// UcmaResolveIP is struct rdma_ucm_resolve_ip.
type UcmaResolveIP struct {
	_         structs.HostLayout
	SrcAddr   [SizeofSockaddrIn6]byte
	DstAddr   [SizeofSockaddrIn6]byte
	ID        uint32
	TimeoutMS uint32
}

// UcmaResolveAddr is struct rdma_ucm_resolve_addr. SrcSize may be 0 (no
// source address); DstSize must match the destination's family.
type UcmaResolveAddr struct {
	_         structs.HostLayout
	ID        uint32
	TimeoutMS uint32
	SrcSize   uint16
	DstSize   uint16
	_         uint32
	SrcAddr   [SizeofSockaddrStorage]byte
	DstAddr   [SizeofSockaddrStorage]byte
}

// UcmaResolveRoute is struct rdma_ucm_resolve_route.
type UcmaResolveRoute struct {
	_         structs.HostLayout
	ID        uint32
	TimeoutMS uint32
}

// UcmaQuery is struct rdma_ucm_query, the command of QUERY and
// QUERY_ROUTE.
type UcmaQuery struct {
	_        structs.HostLayout
	Response uint64
	ID       uint32
	Option   uint32
}

// UcmaUserPathRec is struct ib_user_path_rec. DLID, SLID, FlowLabel and
// PKey are big-endian on every host (__be16/__be32).
type UcmaUserPathRec struct {
	_                      structs.HostLayout
	DGID                   [16]byte
	SGID                   [16]byte
	DLID                   uint16 // big-endian
	SLID                   uint16 // big-endian
	RawTraffic             uint32
	FlowLabel              uint32 // big-endian
	Reversible             uint32
	MTU                    uint32
	PKey                   uint16 `c:"pkey"` // big-endian
	HopLimit               uint8
	TrafficClass           uint8
	NumbPath               uint8
	SL                     uint8
	MTUSelector            uint8
	RateSelector           uint8
	Rate                   uint8
	PacketLifeTimeSelector uint8
	PacketLifeTime         uint8
	Preference             uint8
}

// UcmaQueryRouteResp is struct rdma_ucm_query_route_resp. NodeGUID holds
// the device GUID in network byte order although the header types it
// __aligned_u64.
type UcmaQueryRouteResp struct {
	_          structs.HostLayout
	NodeGUID   uint64
	IBRoute    [2]UcmaUserPathRec
	SrcAddr    [SizeofSockaddrIn6]byte
	DstAddr    [SizeofSockaddrIn6]byte
	NumPaths   uint32
	PortNum    uint8
	_          [3]uint8
	IBDevIndex uint32 `c:"ibdev_index"`
	_          uint32
}

// UcmaQueryAddrResp is struct rdma_ucm_query_addr_resp, the response of
// QUERY with UcmaQueryAddr and UcmaQueryGID. PKey is big-endian although
// the header types it __u16; NodeGUID is in network byte order.
type UcmaQueryAddrResp struct {
	_          structs.HostLayout
	NodeGUID   uint64
	PortNum    uint8
	_          uint8
	PKey       uint16 `c:"pkey"` // big-endian
	SrcSize    uint16
	DstSize    uint16
	SrcAddr    [SizeofSockaddrStorage]byte
	DstAddr    [SizeofSockaddrStorage]byte
	IBDevIndex uint32 `c:"ibdev_index"`
	_          uint32
}

// UcmaQueryPathResp is struct rdma_ucm_query_path_resp without its
// flexible array of UcmaPathRecData.
type UcmaQueryPathResp struct {
	_        structs.HostLayout
	NumPaths uint32
	_        uint32
}

// UcmaPathRecData is struct ib_path_rec_data: flags and a packed,
// big-endian SA PathRecord (IBTA 15.2.5.16).
type UcmaPathRecData struct {
	_       structs.HostLayout
	Flags   uint32
	_       uint32
	PathRec [64]byte
}

// ib_path_rec_data flags (IB_PATH_*).
const (
	UcmaPathGMP           uint32 = 1 << 0
	UcmaPathPrimary       uint32 = 1 << 1
	UcmaPathAlternate     uint32 = 1 << 2
	UcmaPathOutbound      uint32 = 1 << 3
	UcmaPathInbound       uint32 = 1 << 4
	UcmaPathInboundRev    uint32 = 1 << 5
	UcmaPathBidirectional uint32 = UcmaPathOutbound | UcmaPathInboundRev
)

// UcmaConnParam is struct rdma_ucm_conn_param. The kernel masks QPNum to
// 24 bits and uses QKey only for AF_IB IDs. CONNECT needs Valid = 1;
// ACCEPT with Valid = 0 only completes the active side (sends the RTU).
type UcmaConnParam struct {
	_                  structs.HostLayout
	QPNum              uint32
	QKey               uint32 `c:"qkey"`
	PrivateData        [UcmaMaxPrivateData]byte
	PrivateDataLen     uint8
	SRQ                uint8
	ResponderResources uint8
	InitiatorDepth     uint8
	FlowControl        uint8
	RetryCount         uint8
	RNRRetryCount      uint8
	Valid              uint8
}

// UcmaAHAttr is struct ib_uverbs_ah_attr as ucma carries it (its field
// order differs from the modify-QP ib_uverbs_qp_dest).
type UcmaAHAttr struct {
	_            structs.HostLayout
	DGID         [16]byte `c:"grh.dgid"`
	FlowLabel    uint32   `c:"grh.flow_label"`
	SGIDIndex    uint8    `c:"grh.sgid_index"`
	HopLimit     uint8    `c:"grh.hop_limit"`
	TrafficClass uint8    `c:"grh.traffic_class"`
	_            uint8
	DLID         uint16
	SL           uint8
	SrcPathBits  uint8
	StaticRate   uint8
	IsGlobal     uint8
	PortNum      uint8
	_            uint8
}

// UcmaUDParam is struct rdma_ucm_ud_param.
type UcmaUDParam struct {
	_              structs.HostLayout
	QPNum          uint32
	QKey           uint32 `c:"qkey"`
	AHAttr         UcmaAHAttr
	PrivateData    [UcmaMaxPrivateData]byte
	PrivateDataLen uint8
	_              [7]uint8
}

// UcmaECE is struct rdma_ucm_ece: the vendor ID and the options (sent in
// the CM MAD's AttributeModifier).
type UcmaECE struct {
	_        structs.HostLayout
	VendorID uint32
	AttrMod  uint32
}

// UcmaConnect is struct rdma_ucm_connect. The kernel reads ECE only when
// the command's In covers it.
type UcmaConnect struct {
	_         structs.HostLayout
	ConnParam UcmaConnParam
	ID        uint32
	_         uint32
	ECE       UcmaECE
}

// UcmaListen is struct rdma_ucm_listen. A backlog of 0 or above the
// sysctl net.rdma_ucm.max_backlog means that maximum.
type UcmaListen struct {
	_       structs.HostLayout
	ID      uint32
	Backlog uint32
}

// UcmaAccept is struct rdma_ucm_accept. UID becomes the ID's UID for all
// later events (the kernel drops events of a new ID until it is set).
type UcmaAccept struct {
	_         structs.HostLayout
	UID       uint64
	ConnParam UcmaConnParam
	ID        uint32
	_         uint32
	ECE       UcmaECE
}

// UcmaReject is struct rdma_ucm_reject.
type UcmaReject struct {
	_              structs.HostLayout
	ID             uint32
	PrivateDataLen uint8
	Reason         uint8
	_              [2]uint8
	PrivateData    [UcmaMaxPrivateData]byte
}

// UcmaDisconnect is struct rdma_ucm_disconnect.
type UcmaDisconnect struct {
	_  structs.HostLayout
	ID uint32
}

// UcmaInitQPAttr is struct rdma_ucm_init_qp_attr.
type UcmaInitQPAttr struct {
	_        structs.HostLayout
	Response uint64 // *UcmaQPAttr
	ID       uint32
	QPState  uint32
}

// UcmaQPAttr is struct ib_uverbs_qp_attr, the INIT_QP_ATTR response.
// QPAttrMask says which fields are meaningful (IB_QP_* bits).
type UcmaQPAttr struct {
	_                structs.HostLayout
	QPAttrMask       uint32
	QPState          uint32
	CurQPState       uint32
	PathMTU          uint32
	PathMigState     uint32
	QKey             uint32 `c:"qkey"`
	RQPSN            uint32 `c:"rq_psn"`
	SQPSN            uint32 `c:"sq_psn"`
	DestQPNum        uint32
	QPAccessFlags    uint32
	AHAttr           UcmaAHAttr
	AltAHAttr        UcmaAHAttr
	MaxSendWR        uint32
	MaxRecvWR        uint32
	MaxSendSGE       uint32
	MaxRecvSGE       uint32
	MaxInlineData    uint32
	PKeyIndex        uint16 `c:"pkey_index"`
	AltPKeyIndex     uint16 `c:"alt_pkey_index"`
	EnSQDAsyncNotify uint8
	SQDraining       uint8
	MaxRDAtomic      uint8
	MaxDestRDAtomic  uint8
	MinRNRTimer      uint8
	PortNum          uint8
	Timeout          uint8
	RetryCnt         uint8
	RNRRetry         uint8
	AltPortNum       uint8
	AltTimeout       uint8
	_                [5]uint8
}

// UcmaNotify is struct rdma_ucm_notify; Event is an ib_event_type (for
// example 4, IB_EVENT_COMM_EST).
type UcmaNotify struct {
	_     structs.HostLayout
	ID    uint32
	Event uint32
}

// UcmaJoinIPMcast is struct rdma_ucm_join_ip_mcast.
type UcmaJoinIPMcast struct {
	_        structs.HostLayout
	Response uint64 // *UcmaCreateIDResp
	UID      uint64
	Addr     [SizeofSockaddrIn6]byte
	ID       uint32
}

// UcmaJoinMcast is struct rdma_ucm_join_mcast.
type UcmaJoinMcast struct {
	_         structs.HostLayout
	Response  uint64 // *UcmaCreateIDResp
	UID       uint64
	ID        uint32
	AddrSize  uint16
	JoinFlags uint16
	Addr      [SizeofSockaddrStorage]byte
}

// UcmaGetEvent is struct rdma_ucm_get_event.
type UcmaGetEvent struct {
	_        structs.HostLayout
	Response uint64 // *UcmaEventResp
}

// UcmaEventResp is struct rdma_ucm_event_resp, the full 336-byte form
// whose ECE sits at offset 328. Param is the union of UcmaConnParam (for
// connected QP types) and UcmaUDParam (for UD); it starts at offset 20,
// so it is only 4-byte aligned, as are both union members.
type UcmaEventResp struct {
	_      structs.HostLayout
	UID    uint64
	ID     uint32
	Event  uint32
	Status int32
	Param  [SizeofUcmaUDParam]byte
	_      uint32
	ECE    UcmaECE
}

// UcmaGetEventMinOut is the smallest response the kernel accepts for
// GET_EVENT (older 32-bit layouts without the padding and ECE).
const UcmaGetEventMinOut = 324

// UcmaSetOption is struct rdma_ucm_set_option.
type UcmaSetOption struct {
	_       structs.HostLayout
	OptVal  uint64 `c:"optval"` // user pointer
	ID      uint32
	Level   uint32
	OptName uint32 `c:"optname"`
	OptLen  uint32 `c:"optlen"`
}

// UcmaMigrateID is struct rdma_ucm_migrate_id; it is written on the new
// channel's fd and FD is the old one.
type UcmaMigrateID struct {
	_        structs.HostLayout
	Response uint64 // *UcmaMigrateResp
	ID       uint32
	FD       uint32
}

// UcmaMigrateResp is struct rdma_ucm_migrate_resp.
type UcmaMigrateResp struct {
	_              structs.HostLayout
	EventsReported uint32
}

// Sizes of the ucma structs (sizeof in C, checked by the layout test).
const (
	SizeofUcmaCmdHdr         = 8
	SizeofUcmaCreateID       = 24
	SizeofUcmaDestroyID      = 16
	SizeofUcmaBindIP         = 40
	SizeofUcmaBind           = 136
	SizeofUcmaResolveIP      = 64
	SizeofUcmaResolveAddr    = 272
	SizeofUcmaResolveRoute   = 8
	SizeofUcmaQuery          = 16
	SizeofUcmaUserPathRec    = 64
	SizeofUcmaQueryRouteResp = 208
	SizeofUcmaQueryAddrResp  = 280
	SizeofUcmaQueryPathResp  = 8
	SizeofUcmaPathRecData    = 72
	SizeofUcmaConnParam      = 272
	SizeofUcmaAHAttr         = 32
	SizeofUcmaUDParam        = 304
	SizeofUcmaECE            = 8
	SizeofUcmaConnect        = 288
	SizeofUcmaListen         = 8
	SizeofUcmaAccept         = 296
	SizeofUcmaReject         = 264
	SizeofUcmaDisconnect     = 4
	SizeofUcmaInitQPAttr     = 16
	SizeofUcmaQPAttr         = 144
	SizeofUcmaNotify         = 8
	SizeofUcmaJoinIPMcast    = 48
	SizeofUcmaJoinMcast      = 152
	SizeofUcmaGetEvent       = 8
	SizeofUcmaEventResp      = 336
	SizeofUcmaSetOption      = 24
	SizeofUcmaMigrateID      = 16
	SizeofUcmaMigrateResp    = 4
	SizeofUcmaCreateIDResp   = 4
	SizeofUcmaDestroyIDResp  = 4
	OffsetofUcmaEventRespECE = 328
	OffsetofUcmaConnectECE   = 280
	OffsetofUcmaAcceptECE    = 288
	OffsetofUcmaConnectNoECE = 280 // offsetofend(rdma_ucm_connect, reserved)
	OffsetofUcmaAcceptNoECE  = 288 // offsetofend(rdma_ucm_accept, reserved)
)
