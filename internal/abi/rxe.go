package abi

import "structs"

// The soft-RoCE (rxe) provider ABI (include/uapi/rdma/rdma_user_rxe.h):
// driver data in create responses, the layout of the queues the kernel
// shares through mmap of the uverbs fd, and the WQEs written into them.

// RxeUverbsABIVersion is the rxe driver ABI (RXE_UVERBS_ABI_VERSION;
// /sys/class/infiniband_verbs/uverbsN/abi_version).
const RxeUverbsABIVersion = 2

// RxeMmapInfo is struct mminfo: where to mmap a queue (a cookie offset on
// the uverbs fd) and its size.
type RxeMmapInfo struct {
	_      structs.HostLayout
	Offset uint64
	Size   uint32
	Pad    uint32
}

// RxeCreateCQResp is struct rxe_create_cq_resp (UHW_OUT of CQ create).
type RxeCreateCQResp struct {
	_  structs.HostLayout
	MI RxeMmapInfo `c:"mi"`
}

// RxeCreateQPResp is struct rxe_create_qp_resp (UHW_OUT of QP create).
type RxeCreateQPResp struct {
	_    structs.HostLayout
	RQMI RxeMmapInfo `c:"rq_mi"`
	SQMI RxeMmapInfo `c:"sq_mi"`
}

// RxeCreateAHResp is struct rxe_create_ah_resp: the kernel AH index that
// UD send WQEs carry in wr.ud.ah_num.
type RxeCreateAHResp struct {
	_        structs.HostLayout
	AHNum    uint32 `c:"ah_num"`
	Reserved uint32
}

// RxeSGE is struct rxe_sge.
type RxeSGE struct {
	_      structs.HostLayout
	Addr   uint64
	Length uint32
	LKey   uint32 `c:"lkey"`
}

// RxeSendWR is struct rxe_send_wr (144 bytes). The wr union is raw bytes
// written through the RxeWR* offsets, which are relative to the start of
// the struct.
type RxeSendWR struct {
	_         structs.HostLayout
	WrID      uint64
	Reserved  uint32
	Opcode    uint32
	SendFlags uint32
	ImmData   [4]byte   `c:"ex.imm_data"` // __be32, network order
	WR        [120]byte `c:"wr"`
}

// Offsets inside RxeSendWR of the wr union members used here.
const (
	RxeWRRDMARemoteAddr   = 24 // wr.rdma.remote_addr
	RxeWRRDMARKey         = 32 // wr.rdma.rkey
	RxeWRUDRemoteQPN      = 24 // wr.ud.remote_qpn
	RxeWRUDRemoteQKey     = 28 // wr.ud.remote_qkey
	RxeWRUDPKeyIndex      = 32 // wr.ud.pkey_index
	RxeWRUDAHNum          = 36 // wr.ud.ah_num
	RxeWRAtomicRemoteAddr = 24 // wr.atomic.remote_addr
	RxeWRAtomicCompareAdd = 32 // wr.atomic.compare_add
	RxeWRAtomicSwap       = 40 // wr.atomic.swap
	RxeWRAtomicRKey       = 48 // wr.atomic.rkey
)

// RxeDMAInfo is the fixed part of struct rxe_dma_info; the SGEs or the
// inline data follow it.
type RxeDMAInfo struct {
	_         structs.HostLayout
	Length    uint32
	Resid     uint32
	CurSGE    uint32 `c:"cur_sge"`
	NumSGE    uint32 `c:"num_sge"`
	SGEOffset uint32 `c:"sge_offset"`
	Reserved  uint32
}

// RxeSendWQE is the fixed part (208 bytes) of struct rxe_send_wqe, one
// send queue slot; dma.sge[] or dma.inline_data[] follows.
type RxeSendWQE struct {
	_           structs.HostLayout
	WR          RxeSendWR `c:"wr"`
	Status      uint32
	State       uint32
	IOVA        uint64 `c:"iova"`
	Mask        uint32
	FirstPSN    uint32 `c:"first_psn"`
	LastPSN     uint32 `c:"last_psn"`
	AckLength   uint32
	SSN         uint32 `c:"ssn"`
	HasRdAtomic uint32
	DMA         RxeDMAInfo `c:"dma"`
}

// RxeRecvWQE is the fixed part (40 bytes) of struct rxe_recv_wqe, one
// receive queue slot; dma.sge[] follows.
type RxeRecvWQE struct {
	_        structs.HostLayout
	WrID     uint64
	Reserved uint32
	Padding  uint32
	DMA      RxeDMAInfo `c:"dma"`
}

// RxeQueueBuf is the 384-byte header of struct rxe_queue_buf, the start of
// every mapped rxe queue. The two indices sit on their own cache lines.
type RxeQueueBuf struct {
	_             structs.HostLayout
	Log2ElemSize  uint32 `c:"log2_elem_size"`
	IndexMask     uint32
	Pad1          [30]uint32 `c:"pad_1"`
	ProducerIndex uint32
	Pad2          [31]uint32 `c:"pad_2"`
	ConsumerIndex uint32
	Pad3          [31]uint32 `c:"pad_3"`
}

// Offsets in a mapped rxe queue.
const (
	RxeQueueProducerOff = 128 // producer_index
	RxeQueueConsumerOff = 256 // consumer_index
	RxeQueueDataOff     = 384 // data[]
)
