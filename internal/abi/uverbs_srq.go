package abi

import "structs"

// Shared receive queues: the write commands (CREATE_SRQ, MODIFY_SRQ,
// QUERY_SRQ, DESTROY_SRQ), the SRQ object's ioctl methods, and the rxe and
// mlx5 driver data (include/uapi/rdma/ib_user_verbs.h,
// ib_user_ioctl_cmds.h, rdma_user_rxe.h, mlx5-abi.h).

// SRQ write commands (enum ib_uverbs_write_cmds).
const (
	UverbsCmdCreateSRQ  uint32 = 32
	UverbsCmdModifySRQ  uint32 = 33
	UverbsCmdQuerySRQ   uint32 = 34
	UverbsCmdDestroySRQ uint32 = 35
)

// UverbsObjectSRQ and its methods (enum uverbs_methods_srq).
const (
	UverbsObjectSRQ        uint16 = 5
	UverbsMethodSRQCreate  uint16 = 0
	UverbsMethodSRQDestroy uint16 = 1
)

// UVERBS_METHOD_SRQ_CREATE and _DESTROY attributes.
const (
	UverbsAttrCreateSRQHandle     uint16 = 0
	UverbsAttrCreateSRQPDHandle   uint16 = 1
	UverbsAttrCreateSRQUserHandle uint16 = 4
	UverbsAttrCreateSRQMaxWR      uint16 = 5
	UverbsAttrCreateSRQMaxSGE     uint16 = 6
	UverbsAttrCreateSRQLimit      uint16 = 7
	UverbsAttrCreateSRQType       uint16 = 9
	UverbsAttrCreateSRQEventFD    uint16 = 10
	UverbsAttrCreateSRQRespMaxWR  uint16 = 11
	UverbsAttrCreateSRQRespMaxSGE uint16 = 12
	UverbsAttrCreateSRQRespSRQNum uint16 = 13

	UverbsAttrDestroySRQHandle uint16 = 0
	UverbsAttrDestroySRQResp   uint16 = 1
)

// UverbsSRQTBasic is IB_UVERBS_SRQT_BASIC (enum ib_uverbs_srq_type).
const UverbsSRQTBasic = 0

// MODIFY_SRQ attribute mask bits (enum ib_srq_attr_mask).
const (
	UverbsSRQMaxWR uint32 = 1 << 0
	UverbsSRQLimit uint32 = 1 << 1
)

// UverbsCreateSRQ is struct ib_uverbs_create_srq.
type UverbsCreateSRQ struct {
	_          structs.HostLayout
	Response   uint64
	UserHandle uint64
	PDHandle   uint32
	MaxWR      uint32 `c:"max_wr"`
	MaxSGE     uint32 `c:"max_sge"`
	SRQLimit   uint32 `c:"srq_limit"`
}

// UverbsCreateSRQResp is struct ib_uverbs_create_srq_resp.
type UverbsCreateSRQResp struct {
	_         structs.HostLayout
	SRQHandle uint32 `c:"srq_handle"`
	MaxWR     uint32 `c:"max_wr"`
	MaxSGE    uint32 `c:"max_sge"`
	SRQN      uint32 `c:"srqn"`
}

// UverbsModifySRQ is struct ib_uverbs_modify_srq.
type UverbsModifySRQ struct {
	_         structs.HostLayout
	SRQHandle uint32 `c:"srq_handle"`
	AttrMask  uint32
	MaxWR     uint32 `c:"max_wr"`
	SRQLimit  uint32 `c:"srq_limit"`
}

// UverbsQuerySRQ is struct ib_uverbs_query_srq.
type UverbsQuerySRQ struct {
	_         structs.HostLayout
	Response  uint64
	SRQHandle uint32 `c:"srq_handle"`
	Reserved  uint32
}

// UverbsQuerySRQResp is struct ib_uverbs_query_srq_resp.
type UverbsQuerySRQResp struct {
	_        structs.HostLayout
	MaxWR    uint32 `c:"max_wr"`
	MaxSGE   uint32 `c:"max_sge"`
	SRQLimit uint32 `c:"srq_limit"`
	Reserved uint32
}

// UverbsDestroySRQ is struct ib_uverbs_destroy_srq.
type UverbsDestroySRQ struct {
	_         structs.HostLayout
	Response  uint64
	SRQHandle uint32 `c:"srq_handle"`
	Reserved  uint32
}

// UverbsDestroySRQResp is struct ib_uverbs_destroy_srq_resp.
type UverbsDestroySRQResp struct {
	_              structs.HostLayout
	EventsReported uint32
}

// RxeCreateSRQResp is struct rxe_create_srq_resp: where to map the SRQ's
// receive ring, and the SRQ number.
type RxeCreateSRQResp struct {
	_        structs.HostLayout
	MI       RxeMmapInfo `c:"mi"`
	SRQNum   uint32      `c:"srq_num"`
	Reserved uint32
}

// RxeModifySRQCmd is struct rxe_modify_srq_cmd: the address where the
// kernel writes a resized ring's struct mminfo (every user modify carries
// it, or the kernel refuses the udata).
type RxeModifySRQCmd struct {
	_            structs.HostLayout
	MmapInfoAddr uint64
}

// MLX5CreateSRQ is struct mlx5_ib_create_srq (UHW_IN of SRQ create).
type MLX5CreateSRQ struct {
	_         structs.HostLayout
	BufAddr   uint64
	DBAddr    uint64 `c:"db_addr"`
	Flags     uint32
	Reserved0 uint32
	UIdx      uint32 `c:"uidx"`
	Reserved1 uint32
}

// MLX5CreateSRQResp is struct mlx5_ib_create_srq_resp.
type MLX5CreateSRQResp struct {
	_        structs.HostLayout
	SRQN     uint32 `c:"srqn"`
	Reserved uint32
}

// MLX5SRQFlagSignature is MLX5_SRQ_FLAG_SIGNATURE.
const MLX5SRQFlagSignature uint32 = 1 << 0
