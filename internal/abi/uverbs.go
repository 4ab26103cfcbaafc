package abi

import "structs"

// The uverbs user ABI (include/uapi/rdma/ib_user_verbs.h, ABI version 6,
// and the ioctl ids of ib_user_ioctl_cmds.h / ib_user_ioctl_verbs.h).
// Struct names drop the ib_uverbs_ prefix for a Uverbs one; field names
// follow the C names (layout_test.go maps them and checks every offset).

// UverbsABIVersion is the uverbs ABI this package speaks
// (IB_USER_VERBS_ABI_VERSION; /sys/class/infiniband_verbs/abi_version).
const UverbsABIVersion = 6

// Write command numbers (enum ib_uverbs_write_cmds).
const (
	UverbsCmdGetContext        uint32 = 0
	UverbsCmdQueryDevice       uint32 = 1
	UverbsCmdQueryPort         uint32 = 2
	UverbsCmdAllocPD           uint32 = 3
	UverbsCmdDeallocPD         uint32 = 4
	UverbsCmdCreateAH          uint32 = 5
	UverbsCmdDestroyAH         uint32 = 8
	UverbsCmdRegMR             uint32 = 9
	UverbsCmdDeregMR           uint32 = 13
	UverbsCmdCreateCompChannel uint32 = 17
	UverbsCmdCreateCQ          uint32 = 18
	UverbsCmdDestroyCQ         uint32 = 20
	UverbsCmdPollCQ            uint32 = 21
	UverbsCmdReqNotifyCQ       uint32 = 23
	UverbsCmdCreateQP          uint32 = 24
	UverbsCmdQueryQP           uint32 = 25
	UverbsCmdModifyQP          uint32 = 26
	UverbsCmdDestroyQP         uint32 = 27
	UverbsCmdPostSend          uint32 = 28
	UverbsCmdPostRecv          uint32 = 29
)

// Extended write commands (enum ib_uverbs_ex_write_cmds), sent with
// UverbsCmdFlagExtended.
const (
	UverbsExCmdQueryDevice uint32 = 1
	UverbsExCmdModifyQP    uint32 = 26

	UverbsCmdFlagExtended uint32 = 0x80000000 // IB_USER_VERBS_CMD_FLAG_EXTENDED
)

// Objects (enum uverbs_default_objects).
const (
	UverbsObjectDevice      uint16 = 0
	UverbsObjectPD          uint16 = 1
	UverbsObjectCompChannel uint16 = 2
	UverbsObjectCQ          uint16 = 3
	UverbsObjectQP          uint16 = 4
	UverbsObjectAH          uint16 = 6
	UverbsObjectMR          uint16 = 7
	UverbsObjectAsyncEvent  uint16 = 16
)

// Methods (enum uverbs_methods_*).
const (
	UverbsMethodInvokeWrite     uint16 = 0 // DEVICE
	UverbsMethodQueryPort       uint16 = 2 // DEVICE
	UverbsMethodGetContext      uint16 = 3 // DEVICE
	UverbsMethodQueryGIDTable   uint16 = 5 // DEVICE
	UverbsMethodCQCreate        uint16 = 0 // CQ
	UverbsMethodCQDestroy       uint16 = 1 // CQ
	UverbsMethodQPCreate        uint16 = 0 // QP
	UverbsMethodQPDestroy       uint16 = 1 // QP
	UverbsMethodPDDestroy       uint16 = 0 // PD
	UverbsMethodAHDestroy       uint16 = 0 // AH
	UverbsMethodMRDestroy       uint16 = 1 // MR
	UverbsMethodAsyncEventAlloc uint16 = 0 // ASYNC_EVENT
)

// Attribute ids.
const (
	UverbsAttrUHWIn  uint16 = 0x1000 // UVERBS_ATTR_UHW_IN
	UverbsAttrUHWOut uint16 = 0x1001 // UVERBS_ATTR_UHW_OUT

	UverbsAttrCoreIn   uint16 = 0 // INVOKE_WRITE
	UverbsAttrCoreOut  uint16 = 1
	UverbsAttrWriteCmd uint16 = 2

	UverbsAttrQueryPortPortNum uint16 = 0
	UverbsAttrQueryPortResp    uint16 = 1

	UverbsAttrGetContextNumCompVectors uint16 = 0
	UverbsAttrGetContextCoreSupport    uint16 = 1

	UverbsAttrQueryGIDTableEntrySize      uint16 = 0
	UverbsAttrQueryGIDTableFlags          uint16 = 1
	UverbsAttrQueryGIDTableRespEntries    uint16 = 2
	UverbsAttrQueryGIDTableRespNumEntries uint16 = 3

	UverbsAttrCreateCQHandle      uint16 = 0
	UverbsAttrCreateCQCQE         uint16 = 1
	UverbsAttrCreateCQUserHandle  uint16 = 2
	UverbsAttrCreateCQCompChannel uint16 = 3
	UverbsAttrCreateCQCompVector  uint16 = 4
	UverbsAttrCreateCQFlags       uint16 = 5
	UverbsAttrCreateCQRespCQE     uint16 = 6
	UverbsAttrCreateCQEventFD     uint16 = 7

	UverbsAttrDestroyCQHandle uint16 = 0
	UverbsAttrDestroyCQResp   uint16 = 1

	UverbsAttrCreateQPHandle       uint16 = 0
	UverbsAttrCreateQPPDHandle     uint16 = 2
	UverbsAttrCreateQPSRQHandle    uint16 = 3
	UverbsAttrCreateQPSendCQHandle uint16 = 4
	UverbsAttrCreateQPRecvCQHandle uint16 = 5
	UverbsAttrCreateQPUserHandle   uint16 = 7
	UverbsAttrCreateQPCap          uint16 = 8
	UverbsAttrCreateQPType         uint16 = 9
	UverbsAttrCreateQPFlags        uint16 = 10
	UverbsAttrCreateQPEventFD      uint16 = 12
	UverbsAttrCreateQPRespCap      uint16 = 13
	UverbsAttrCreateQPRespQPNum    uint16 = 14

	UverbsAttrDestroyQPHandle uint16 = 0
	UverbsAttrDestroyQPResp   uint16 = 1

	UverbsAttrDestroyPDHandle uint16 = 0
	UverbsAttrDestroyAHHandle uint16 = 0
	UverbsAttrDestroyMRHandle uint16 = 0

	UverbsAttrAsyncEventAllocFDHandle uint16 = 0
)

// QP types (enum ib_uverbs_qp_type).
const (
	UverbsQPTRC uint8 = 2
	UverbsQPTUC uint8 = 3
	UverbsQPTUD uint8 = 4
)

// UverbsQPCreateSQSigAll is IB_UVERBS_QP_CREATE_SQ_SIG_ALL.
const UverbsQPCreateSQSigAll uint32 = 1 << 12

// GID types (enum ib_uverbs_gid_type).
const (
	UverbsGIDTypeIB     uint32 = 0
	UverbsGIDTypeRoCEv1 uint32 = 1
	UverbsGIDTypeRoCEv2 uint32 = 2
)

// RDMA driver ids (enum rdma_driver_id); the ioctl header must carry the
// device's id.
const (
	RDMADriverUnknown uint32 = 0
	RDMADriverMLX5    uint32 = 1
	RDMADriverRXE     uint32 = 14
	RDMADriverSIW     uint32 = 18
)

// Work request opcodes (enum ib_uverbs_wr_opcode).
const (
	UverbsWRRDMAWrite        uint32 = 0
	UverbsWRRDMAWriteWithImm uint32 = 1
	UverbsWRSend             uint32 = 2
	UverbsWRSendWithImm      uint32 = 3
	UverbsWRRDMARead         uint32 = 4
)

// Work completion opcodes (enum ib_uverbs_wc_opcode; the receive ones are
// from ib_verbs.h / verbs.h: IB_WC_RECV 128, IB_WC_RECV_RDMA_WITH_IMM 129).
const (
	UverbsWCSend            uint32 = 0
	UverbsWCRDMAWrite       uint32 = 1
	UverbsWCRDMARead        uint32 = 2
	UverbsWCRecv            uint32 = 128
	UverbsWCRecvRDMAWithImm uint32 = 129
)

// Access flags (enum ib_uverbs_access_flags).
const (
	UverbsAccessLocalWrite   uint32 = 1 << 0
	UverbsAccessRemoteWrite  uint32 = 1 << 1
	UverbsAccessRemoteRead   uint32 = 1 << 2
	UverbsAccessRemoteAtomic uint32 = 1 << 3
)

// UverbsCmdHdr is struct ib_uverbs_cmd_hdr; the legacy command's in_words
// and out_words count 4-byte words, header included in in_words.
type UverbsCmdHdr struct {
	_        structs.HostLayout
	Command  uint32
	InWords  uint16
	OutWords uint16
}

// UverbsExCmdHdr is struct ib_uverbs_ex_cmd_hdr; its word counts are in
// 8-byte units.
type UverbsExCmdHdr struct {
	_                structs.HostLayout
	Response         uint64
	ProviderInWords  uint16
	ProviderOutWords uint16
	CmdHdrReserved   uint32
}

// UverbsGetContext is struct ib_uverbs_get_context (also ALLOC_PD,
// QUERY_DEVICE and CREATE_COMP_CHANNEL: a lone response pointer).
type UverbsGetContext struct {
	_        structs.HostLayout
	Response uint64
}

// UverbsGetContextResp is struct ib_uverbs_get_context_resp.
type UverbsGetContextResp struct {
	_              structs.HostLayout
	AsyncFD        uint32
	NumCompVectors uint32
}

// UverbsQueryDeviceResp is struct ib_uverbs_query_device_resp (176 bytes).
// NodeGUID and SysImageGUID are __be64: raw network-order bytes.
type UverbsQueryDeviceResp struct {
	_                     structs.HostLayout
	FwVer                 uint64
	NodeGUID              [8]byte `c:"node_guid"`
	SysImageGUID          [8]byte `c:"sys_image_guid"`
	MaxMRSize             uint64
	PageSizeCap           uint64
	VendorID              uint32
	VendorPartID          uint32
	HwVer                 uint32
	MaxQP                 uint32
	MaxQPWR               uint32 `c:"max_qp_wr"`
	DeviceCapFlags        uint32
	MaxSGE                uint32
	MaxSGERd              uint32
	MaxCQ                 uint32
	MaxCQE                uint32
	MaxMR                 uint32
	MaxPD                 uint32
	MaxQPRdAtom           uint32
	MaxEERdAtom           uint32
	MaxResRdAtom          uint32
	MaxQPInitRdAtom       uint32
	MaxEEInitRdAtom       uint32
	AtomicCap             uint32
	MaxEE                 uint32
	MaxRdd                uint32
	MaxMW                 uint32
	MaxRawIPv6QP          uint32 `c:"max_raw_ipv6_qp"`
	MaxRawEthyQP          uint32
	MaxMcastGrp           uint32
	MaxMcastQPAttach      uint32
	MaxTotalMcastQPAttach uint32
	MaxAH                 uint32
	MaxFmr                uint32
	MaxMapPerFmr          uint32
	MaxSRQ                uint32
	MaxSRQWR              uint32 `c:"max_srq_wr"`
	MaxSRQSGE             uint32 `c:"max_srq_sge"`
	MaxPkeys              uint16
	LocalCAAckDelay       uint8 `c:"local_ca_ack_delay"`
	PhysPortCnt           uint8
	Reserved              [4]byte
}

// UverbsExQueryDevice is struct ib_uverbs_ex_query_device.
type UverbsExQueryDevice struct {
	_        structs.HostLayout
	CompMask uint32
	Reserved uint32
}

// UverbsOdpCaps is struct ib_uverbs_odp_caps.
type UverbsOdpCaps struct {
	_           structs.HostLayout
	GeneralCaps uint64
	RCOdpCaps   uint32 `c:"per_transport_caps.rc_odp_caps"`
	UCOdpCaps   uint32 `c:"per_transport_caps.uc_odp_caps"`
	UDOdpCaps   uint32 `c:"per_transport_caps.ud_odp_caps"`
	Reserved    uint32
}

// UverbsRSSCaps is struct ib_uverbs_rss_caps.
type UverbsRSSCaps struct {
	_                          structs.HostLayout
	SupportedQpts              uint32
	MaxRwqIndirectionTables    uint32
	MaxRwqIndirectionTableSize uint32
	Reserved                   uint32
}

// UverbsTMCaps is struct ib_uverbs_tm_caps.
type UverbsTMCaps struct {
	_              structs.HostLayout
	MaxRndvHdrSize uint32
	MaxNumTags     uint32
	Flags          uint32
	MaxOps         uint32
	MaxSGE         uint32
	Reserved       uint32
}

// UverbsCQModerationCaps is struct ib_uverbs_cq_moderation_caps.
type UverbsCQModerationCaps struct {
	_                     structs.HostLayout
	MaxCQModerationCount  uint16 `c:"max_cq_moderation_count"`
	MaxCQModerationPeriod uint16 `c:"max_cq_moderation_period"`
	Reserved              uint32
}

// UverbsExQueryDeviceResp is struct ib_uverbs_ex_query_device_resp (304
// bytes); ResponseLength says how much of it the kernel filled.
type UverbsExQueryDeviceResp struct {
	_                structs.HostLayout
	Base             UverbsQueryDeviceResp
	CompMask         uint32
	ResponseLength   uint32
	OdpCaps          UverbsOdpCaps
	TimestampMask    uint64
	HCACoreClock     uint64 `c:"hca_core_clock"`
	DeviceCapFlagsEx uint64
	RSSCaps          UverbsRSSCaps
	MaxWQTypeRQ      uint32 `c:"max_wq_type_rq"`
	RawPacketCaps    uint32
	TMCaps           UverbsTMCaps
	CQModerationCaps UverbsCQModerationCaps `c:"cq_moderation_caps"`
	MaxDMSize        uint64                 `c:"max_dm_size"`
	XRCOdpCaps       uint32                 `c:"xrc_odp_caps"`
	Reserved         uint32
}

// UverbsQueryPort is struct ib_uverbs_query_port.
type UverbsQueryPort struct {
	_        structs.HostLayout
	Response uint64
	PortNum  uint8
	Reserved [7]byte
}

// UverbsQueryPortResp is struct ib_uverbs_query_port_resp (40 bytes).
type UverbsQueryPortResp struct {
	_             structs.HostLayout
	PortCapFlags  uint32
	MaxMsgSz      uint32
	BadPkeyCntr   uint32
	QkeyViolCntr  uint32
	GIDTblLen     uint32
	PkeyTblLen    uint16
	LID           uint16
	SmLID         uint16 `c:"sm_lid"`
	State         uint8
	MaxMTU        uint8
	ActiveMTU     uint8
	LMC           uint8
	MaxVLNum      uint8 `c:"max_vl_num"`
	SmSL          uint8 `c:"sm_sl"`
	SubnetTimeout uint8
	InitTypeReply uint8
	ActiveWidth   uint8
	ActiveSpeed   uint8
	PhysState     uint8
	LinkLayer     uint8
	Flags         uint8
	Reserved      uint8
}

// UverbsQueryPortRespEx is struct ib_uverbs_query_port_resp_ex (48 bytes),
// the output of the DEVICE/QUERY_PORT method.
type UverbsQueryPortRespEx struct {
	_             structs.HostLayout
	LegacyResp    UverbsQueryPortResp
	PortCapFlags2 uint16
	Reserved      [6]byte
}

// UverbsAllocPDResp is struct ib_uverbs_alloc_pd_resp.
type UverbsAllocPDResp struct {
	_        structs.HostLayout
	PDHandle uint32
}

// UverbsDeallocPD is struct ib_uverbs_dealloc_pd.
type UverbsDeallocPD struct {
	_        structs.HostLayout
	PDHandle uint32
}

// UverbsRegMR is struct ib_uverbs_reg_mr.
type UverbsRegMR struct {
	_           structs.HostLayout
	Response    uint64
	Start       uint64
	Length      uint64
	HCAVa       uint64 `c:"hca_va"`
	PDHandle    uint32
	AccessFlags uint32
}

// UverbsRegMRResp is struct ib_uverbs_reg_mr_resp.
type UverbsRegMRResp struct {
	_        structs.HostLayout
	MRHandle uint32
	LKey     uint32 `c:"lkey"`
	RKey     uint32 `c:"rkey"`
}

// UverbsDeregMR is struct ib_uverbs_dereg_mr.
type UverbsDeregMR struct {
	_        structs.HostLayout
	MRHandle uint32
}

// UverbsCreateCompChannelResp is struct ib_uverbs_create_comp_channel_resp.
type UverbsCreateCompChannelResp struct {
	_  structs.HostLayout
	FD uint32
}

// UverbsCreateCQ is struct ib_uverbs_create_cq.
type UverbsCreateCQ struct {
	_           structs.HostLayout
	Response    uint64
	UserHandle  uint64
	CQE         uint32
	CompVector  uint32
	CompChannel int32
	Reserved    uint32
}

// UverbsCreateCQResp is struct ib_uverbs_create_cq_resp.
type UverbsCreateCQResp struct {
	_        structs.HostLayout
	CQHandle uint32
	CQE      uint32
}

// UverbsDestroyCQ is struct ib_uverbs_destroy_cq.
type UverbsDestroyCQ struct {
	_        structs.HostLayout
	Response uint64
	CQHandle uint32
	Reserved uint32
}

// UverbsDestroyCQResp is struct ib_uverbs_destroy_cq_resp.
type UverbsDestroyCQResp struct {
	_                   structs.HostLayout
	CompEventsReported  uint32
	AsyncEventsReported uint32
}

// UverbsPollCQ is struct ib_uverbs_poll_cq.
type UverbsPollCQ struct {
	_        structs.HostLayout
	Response uint64
	CQHandle uint32
	Ne       uint32
}

// UverbsWC is struct ib_uverbs_wc (48 bytes): a work completion from
// POLL_CQ, and the user-visible part of an rxe CQE. ImmData is the
// ex.imm_data union member (__be32: network order in memory).
type UverbsWC struct {
	_            structs.HostLayout
	WrID         uint64
	Status       uint32
	Opcode       uint32
	VendorErr    uint32
	ByteLen      uint32
	ImmData      [4]byte `c:"ex.imm_data"`
	QPNum        uint32  `c:"qp_num"`
	SrcQP        uint32  `c:"src_qp"`
	WCFlags      uint32  `c:"wc_flags"`
	PkeyIndex    uint16
	SLID         uint16 `c:"slid"`
	SL           uint8  `c:"sl"`
	DLIDPathBits uint8  `c:"dlid_path_bits"`
	PortNum      uint8
	Reserved     uint8
}

// UverbsPollCQResp is the fixed part of struct ib_uverbs_poll_cq_resp.
type UverbsPollCQResp struct {
	_        structs.HostLayout
	Count    uint32
	Reserved uint32
}

// UverbsReqNotifyCQ is struct ib_uverbs_req_notify_cq.
type UverbsReqNotifyCQ struct {
	_             structs.HostLayout
	CQHandle      uint32
	SolicitedOnly uint32
}

// UverbsGlobalRoute is struct ib_uverbs_global_route.
type UverbsGlobalRoute struct {
	_            structs.HostLayout
	DGID         [16]byte `c:"dgid"`
	FlowLabel    uint32
	SGIDIndex    uint8 `c:"sgid_index"`
	HopLimit     uint8
	TrafficClass uint8
	Reserved     uint8
}

// UverbsAHAttr is struct ib_uverbs_ah_attr.
type UverbsAHAttr struct {
	_           structs.HostLayout
	GRH         UverbsGlobalRoute `c:"grh"`
	DLID        uint16            `c:"dlid"`
	SL          uint8             `c:"sl"`
	SrcPathBits uint8
	StaticRate  uint8
	IsGlobal    uint8
	PortNum     uint8
	Reserved    uint8
}

// UverbsQPCap is struct ib_uverbs_qp_cap.
type UverbsQPCap struct {
	_             structs.HostLayout
	MaxSendWR     uint32 `c:"max_send_wr"`
	MaxRecvWR     uint32 `c:"max_recv_wr"`
	MaxSendSGE    uint32 `c:"max_send_sge"`
	MaxRecvSGE    uint32 `c:"max_recv_sge"`
	MaxInlineData uint32
}

// UverbsCreateQP is struct ib_uverbs_create_qp (56 bytes).
type UverbsCreateQP struct {
	_             structs.HostLayout
	Response      uint64
	UserHandle    uint64
	PDHandle      uint32
	SendCQHandle  uint32 `c:"send_cq_handle"`
	RecvCQHandle  uint32 `c:"recv_cq_handle"`
	SRQHandle     uint32 `c:"srq_handle"`
	MaxSendWR     uint32 `c:"max_send_wr"`
	MaxRecvWR     uint32 `c:"max_recv_wr"`
	MaxSendSGE    uint32 `c:"max_send_sge"`
	MaxRecvSGE    uint32 `c:"max_recv_sge"`
	MaxInlineData uint32
	SQSigAll      uint8 `c:"sq_sig_all"`
	QPType        uint8 `c:"qp_type"`
	IsSRQ         uint8 `c:"is_srq"`
	Reserved      uint8
}

// UverbsCreateQPResp is struct ib_uverbs_create_qp_resp (32 bytes).
type UverbsCreateQPResp struct {
	_             structs.HostLayout
	QPHandle      uint32
	QPN           uint32 `c:"qpn"`
	MaxSendWR     uint32 `c:"max_send_wr"`
	MaxRecvWR     uint32 `c:"max_recv_wr"`
	MaxSendSGE    uint32 `c:"max_send_sge"`
	MaxRecvSGE    uint32 `c:"max_recv_sge"`
	MaxInlineData uint32
	Reserved      uint32
}

// UverbsQPDest is struct ib_uverbs_qp_dest (note: field order differs from
// UverbsAHAttr).
type UverbsQPDest struct {
	_            structs.HostLayout
	DGID         [16]byte `c:"dgid"`
	FlowLabel    uint32
	DLID         uint16 `c:"dlid"`
	Reserved     uint16
	SGIDIndex    uint8 `c:"sgid_index"`
	HopLimit     uint8
	TrafficClass uint8
	SL           uint8 `c:"sl"`
	SrcPathBits  uint8
	StaticRate   uint8
	IsGlobal     uint8
	PortNum      uint8
}

// UverbsQueryQP is struct ib_uverbs_query_qp.
type UverbsQueryQP struct {
	_        structs.HostLayout
	Response uint64
	QPHandle uint32
	AttrMask uint32
}

// UverbsQueryQPResp is struct ib_uverbs_query_qp_resp (128 bytes).
type UverbsQueryQPResp struct {
	_               structs.HostLayout
	Dest            UverbsQPDest
	AltDest         UverbsQPDest
	MaxSendWR       uint32 `c:"max_send_wr"`
	MaxRecvWR       uint32 `c:"max_recv_wr"`
	MaxSendSGE      uint32 `c:"max_send_sge"`
	MaxRecvSGE      uint32 `c:"max_recv_sge"`
	MaxInlineData   uint32
	Qkey            uint32
	RQPSN           uint32 `c:"rq_psn"`
	SQPSN           uint32 `c:"sq_psn"`
	DestQPNum       uint32 `c:"dest_qp_num"`
	QPAccessFlags   uint32 `c:"qp_access_flags"`
	PkeyIndex       uint16
	AltPkeyIndex    uint16
	QPState         uint8 `c:"qp_state"`
	CurQPState      uint8 `c:"cur_qp_state"`
	PathMTU         uint8 `c:"path_mtu"`
	PathMigState    uint8
	SQDraining      uint8 `c:"sq_draining"`
	MaxRdAtomic     uint8
	MaxDestRdAtomic uint8
	MinRNRTimer     uint8 `c:"min_rnr_timer"`
	PortNum         uint8
	Timeout         uint8
	RetryCnt        uint8
	RNRRetry        uint8 `c:"rnr_retry"`
	AltPortNum      uint8
	AltTimeout      uint8
	SQSigAll        uint8 `c:"sq_sig_all"`
	Reserved        [5]byte
}

// UverbsModifyQP is struct ib_uverbs_modify_qp (112 bytes; the legacy
// command has no response).
type UverbsModifyQP struct {
	_                structs.HostLayout
	Dest             UverbsQPDest
	AltDest          UverbsQPDest
	QPHandle         uint32
	AttrMask         uint32
	Qkey             uint32
	RQPSN            uint32 `c:"rq_psn"`
	SQPSN            uint32 `c:"sq_psn"`
	DestQPNum        uint32 `c:"dest_qp_num"`
	QPAccessFlags    uint32 `c:"qp_access_flags"`
	PkeyIndex        uint16
	AltPkeyIndex     uint16
	QPState          uint8 `c:"qp_state"`
	CurQPState       uint8 `c:"cur_qp_state"`
	PathMTU          uint8 `c:"path_mtu"`
	PathMigState     uint8
	EnSQDAsyncNotify uint8 `c:"en_sqd_async_notify"`
	MaxRdAtomic      uint8
	MaxDestRdAtomic  uint8
	MinRNRTimer      uint8 `c:"min_rnr_timer"`
	PortNum          uint8
	Timeout          uint8
	RetryCnt         uint8
	RNRRetry         uint8 `c:"rnr_retry"`
	AltPortNum       uint8
	AltTimeout       uint8
	Reserved         [2]byte
}

// UverbsExModifyQP is struct ib_uverbs_ex_modify_qp (120 bytes).
type UverbsExModifyQP struct {
	_         structs.HostLayout
	Base      UverbsModifyQP
	RateLimit uint32
	Reserved  uint32
}

// UverbsExModifyQPResp is struct ib_uverbs_ex_modify_qp_resp.
type UverbsExModifyQPResp struct {
	_              structs.HostLayout
	CompMask       uint32
	ResponseLength uint32
}

// UverbsDestroyQP is struct ib_uverbs_destroy_qp.
type UverbsDestroyQP struct {
	_        structs.HostLayout
	Response uint64
	QPHandle uint32
	Reserved uint32
}

// UverbsDestroyQPResp is struct ib_uverbs_destroy_qp_resp.
type UverbsDestroyQPResp struct {
	_              structs.HostLayout
	EventsReported uint32
}

// UverbsSGE is struct ib_uverbs_sge.
type UverbsSGE struct {
	_      structs.HostLayout
	Addr   uint64
	Length uint32
	LKey   uint32 `c:"lkey"`
}

// UverbsSendWR is struct ib_uverbs_send_wr (56 bytes). The wr union
// (rdma, atomic or ud variant) is kept as raw bytes; the doorbell only
// needs the struct's size (wqe_size).
type UverbsSendWR struct {
	_         structs.HostLayout
	WrID      uint64
	NumSGE    uint32 `c:"num_sge"`
	Opcode    uint32
	SendFlags uint32
	ImmData   [4]byte  `c:"ex.imm_data"`
	WR        [32]byte `c:"wr"`
}

// UverbsPostSend is struct ib_uverbs_post_send; it is followed by
// wr_count send WRs and sge_count SGEs.
type UverbsPostSend struct {
	_        structs.HostLayout
	Response uint64
	QPHandle uint32
	WrCount  uint32
	SGECount uint32 `c:"sge_count"`
	WQESize  uint32 `c:"wqe_size"`
}

// UverbsPostSendResp is struct ib_uverbs_post_send_resp.
type UverbsPostSendResp struct {
	_     structs.HostLayout
	BadWR uint32 `c:"bad_wr"`
}

// UverbsRecvWR is struct ib_uverbs_recv_wr.
type UverbsRecvWR struct {
	_        structs.HostLayout
	WrID     uint64
	NumSGE   uint32 `c:"num_sge"`
	Reserved uint32
}

// UverbsCreateAH is struct ib_uverbs_create_ah (56 bytes).
type UverbsCreateAH struct {
	_          structs.HostLayout
	Response   uint64
	UserHandle uint64
	PDHandle   uint32
	Reserved   uint32
	Attr       UverbsAHAttr
}

// UverbsCreateAHResp is struct ib_uverbs_create_ah_resp.
type UverbsCreateAHResp struct {
	_        structs.HostLayout
	AHHandle uint32
}

// UverbsDestroyAH is struct ib_uverbs_destroy_ah.
type UverbsDestroyAH struct {
	_        structs.HostLayout
	AHHandle uint32
}

// UverbsAsyncEventDesc is struct ib_uverbs_async_event_desc, one read()
// of the async event fd.
type UverbsAsyncEventDesc struct {
	_         structs.HostLayout
	Element   uint64
	EventType uint32
	Reserved  uint32
}

// UverbsCompEventDesc is struct ib_uverbs_comp_event_desc, one read() of a
// completion channel.
type UverbsCompEventDesc struct {
	_        structs.HostLayout
	CQHandle uint64
}

// UverbsGIDEntry is struct ib_uverbs_gid_entry (32 bytes). GID holds the
// raw 16 GID bytes although C declares it as two u64.
type UverbsGIDEntry struct {
	_             structs.HostLayout
	GID           [16]byte `c:"gid"`
	GIDIndex      uint32   `c:"gid_index"`
	PortNum       uint32
	GIDType       uint32 `c:"gid_type"`
	NetdevIfindex uint32
}
