package qp

import "github.com/go-rdma/rdmacm/rdma"

// GRH holds the Global Route Header fields of an address vector
// (struct ib_uverbs_global_route; IBTA vol. 1 §8.3).
type GRH struct {
	// DGID is the destination GID.
	DGID rdma.GID
	// FlowLabel is 20 bits.
	FlowLabel uint32
	// SGIDIndex selects the source GID in the port's GID table.
	SGIDIndex uint8
	// HopLimit is the IPv6-style hop limit (RoCEv2: the IP TTL).
	HopLimit uint8
	// TrafficClass is the GRH traffic class (RoCEv2: the IP DSCP/ECN byte).
	TrafficClass uint8
}

// AH is an address vector: where a QP sends to (struct ib_uverbs_ah_attr
// and ib_uverbs_qp_dest; the IBTA verbs address vector).
type AH struct {
	GRH GRH
	// DLID is the destination LID (0 on RoCE).
	DLID uint16
	// SL is the service level, 4 bits.
	SL uint8
	// SrcPathBits are the low LID bits added to the port's base LID (LMC).
	SrcPathBits uint8
	// StaticRate is an enum ibv_rate value; 0 means the port's rate.
	StaticRate uint8
	// IsGlobal says GRH is used. RoCE needs it set.
	IsGlobal bool
	// PortNum is the local port, starting at 1.
	PortNum uint8
}

// Cap holds the work queue sizes (struct ibv_qp_cap). Modify QP carries
// them only with MaskCap, which no RC/UC/UD transition allows.
type Cap struct {
	MaxSendWR     uint32
	MaxRecvWR     uint32
	MaxSendSGE    uint32
	MaxRecvSGE    uint32
	MaxInlineData uint32
}

// AltPath is the alternate path for automatic path migration, applied with
// MaskAltPath (IBTA vol. 1 automatic path migration).
type AltPath struct {
	AH        AH
	PKeyIndex uint16
	// PortNum must equal AH.PortNum (kernel uverbs modify_qp).
	PortNum uint8
	// Timeout is the local ACK timeout of the alternate path, 5 bits.
	Timeout uint8
}

// Attr holds the QP attributes of a Modify QP (struct ibv_qp_attr in Go
// terms). Only the fields selected by the accompanying Mask are applied.
type Attr struct {
	// State is the requested next state (MaskState).
	State State
	// CurState is the state the caller asserts the QP is in (MaskCurState).
	CurState State
	// EnSQDAsyncNotify asks for an event when SQD drains (MaskEnSQDAsyncNotify).
	EnSQDAsyncNotify bool
	// AccessFlags are the remote operations the QP accepts (MaskAccessFlags).
	AccessFlags Access
	// PKeyIndex indexes the port's P_Key table (MaskPKeyIndex).
	PKeyIndex uint16
	// Port is the local port, starting at 1 (MaskPort).
	Port uint8
	// QKey is the UD/GSI Q_Key (MaskQKey). A value with bit 31 set needs
	// CAP_NET_RAW in the kernel.
	QKey uint32
	// AH is the primary address vector (MaskAV).
	AH AH
	// PathMTU is the path MTU (MaskPathMTU).
	PathMTU rdma.MTU
	// Timeout is the local ACK timeout, 4.096 µs × 2^Timeout; 0 means
	// infinite; 5 bits (MaskTimeout).
	Timeout uint8
	// RetryCnt is the transport retry count, 3 bits (MaskRetryCnt).
	RetryCnt uint8
	// RNRRetry is the RNR retry count, 3 bits; 7 means infinite (MaskRNRRetry).
	RNRRetry uint8
	// RQPSN is the first PSN the receive queue expects, 24 bits (MaskRQPSN).
	RQPSN uint32
	// MaxRdAtomic is the number of outstanding RDMA reads and atomics this
	// QP may initiate (MaskMaxQPRdAtomic).
	MaxRdAtomic uint8
	// AltPath is the alternate path (MaskAltPath).
	AltPath AltPath
	// MinRNRTimer is the RNR NAK timer code, 5 bits (MaskMinRNRTimer;
	// IBTA RNR timer encoding: 0 means 655.36 ms, 1 means 0.01 ms).
	MinRNRTimer uint8
	// SQPSN is the first PSN the send queue uses, 24 bits (MaskSQPSN).
	SQPSN uint32
	// MaxDestRdAtomic is the number of incoming RDMA reads and atomics
	// this QP serves at once (MaskMaxDestRdAtomic).
	MaxDestRdAtomic uint8
	// PathMigState is the migration state (MaskPathMigState).
	PathMigState MigState
	// Cap resizes the work queues (MaskCap).
	Cap Cap
	// DestQPN is the remote QP number, 24 bits (MaskDestQPN).
	DestQPN uint32
	// RateLimit is the packet pacing rate in kbit/s (MaskRateLimit;
	// EX_MODIFY_QP only).
	RateLimit uint32
}
