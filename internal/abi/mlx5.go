package abi

import "structs"

// The mlx5 provider ABI parts this library uses (include/uapi/rdma/
// mlx5-abi.h): the context request/response (for the ECE capability bit)
// and the ece_options of create-QP and modify-QP. Layout-tested only;
// nothing here has run on mlx5 hardware.

// MLX5AllocUcontextRespMaskECE is MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_ECE: the
// firmware supports ECE.
const MLX5AllocUcontextRespMaskECE uint32 = 1 << 2

// MLX5VendorID is PCI_VENDOR_ID_MELLANOX, the ECE vendor id mlx5 uses.
const MLX5VendorID uint32 = 0x15b3

// MLX5ECEVersion1 is the ece_options value the rdma-core mlx5 provider
// sends in create-QP when the context supports ECE (requests ECE version
// 1; rdma-core providers/mlx5/verbs.c, not a uapi constant).
const MLX5ECEVersion1 uint32 = 0x10000000

// MLX5AllocUcontextReqV2 is struct mlx5_ib_alloc_ucontext_req_v2.
type MLX5AllocUcontextReqV2 struct {
	_                   structs.HostLayout
	TotalNumBfregs      uint32
	NumLowLatencyBfregs uint32
	Flags               uint32
	CompMask            uint32
	MaxCQEVersion       uint8 `c:"max_cqe_version"`
	Reserved0           uint8
	Reserved1           uint16
	Reserved2           uint32
	LibCaps             uint64
}

// MLX5AllocUcontextResp is struct mlx5_ib_alloc_ucontext_resp (72 bytes).
type MLX5AllocUcontextResp struct {
	_                  structs.HostLayout
	QPTabSize          uint32 `c:"qp_tab_size"`
	BfRegSize          uint32
	TotBfregs          uint32
	CacheLineSize      uint32
	MaxSQDescSz        uint16 `c:"max_sq_desc_sz"`
	MaxRQDescSz        uint16 `c:"max_rq_desc_sz"`
	MaxSendWqebb       uint32
	MaxRecvWR          uint32 `c:"max_recv_wr"`
	MaxSRQRecvWR       uint32 `c:"max_srq_recv_wr"`
	NumPorts           uint16
	FlowActionFlags    uint16
	CompMask           uint32
	ResponseLength     uint32
	CQEVersion         uint8 `c:"cqe_version"`
	CmdsSuppUhw        uint8
	EthMinInline       uint8
	ClockInfoVersions  uint8
	HCACoreClockOffset uint64 `c:"hca_core_clock_offset"`
	LogUARSize         uint32 `c:"log_uar_size"`
	NumUARsPerPage     uint32 `c:"num_uars_per_page"`
	NumDynBfregs       uint32
	DumpFillMkey       uint32
}

// MLX5CreateQP is struct mlx5_ib_create_qp (56 bytes), the create-QP
// driver input; SQBufAddr is the union with access_key.
type MLX5CreateQP struct {
	_               structs.HostLayout
	BufAddr         uint64
	DBAddr          uint64 `c:"db_addr"`
	SQWQECount      uint32 `c:"sq_wqe_count"`
	RQWQECount      uint32 `c:"rq_wqe_count"`
	RQWQEShift      uint32 `c:"rq_wqe_shift"`
	Flags           uint32
	UIdx            uint32 `c:"uidx"`
	BfregIndex      uint32
	SQBufAddr       uint64 `c:"sq_buf_addr"`
	ECEOptions      uint32 `c:"ece_options"`
	LogNumConcurent uint8  `c:"dci_streams.log_num_concurent"`
	LogNumErrored   uint8  `c:"dci_streams.log_num_errored"`
	Reserved        uint16
}

// MLX5CreateQPResp is struct mlx5_ib_create_qp_resp (40 bytes).
type MLX5CreateQPResp struct {
	_          structs.HostLayout
	BfregIndex uint32
	ECEOptions uint32 `c:"ece_options"`
	CompMask   uint32
	Tirn       uint32
	Tisn       uint32
	Rqn        uint32
	Sqn        uint32
	Reserved1  uint32
	TirICMAddr uint64 `c:"tir_icm_addr"`
}

// MLX5ModifyQP is struct mlx5_ib_modify_qp (16 bytes), the EX_MODIFY_QP
// driver input.
type MLX5ModifyQP struct {
	_             structs.HostLayout
	CompMask      uint32
	MaxBurstSz    uint32 `c:"burst_info.max_burst_sz"`
	TypicalPktSz  uint16 `c:"burst_info.typical_pkt_sz"`
	BurstReserved uint16 `c:"burst_info.reserved"`
	ECEOptions    uint32 `c:"ece_options"`
}

// MLX5ModifyQPResp is struct mlx5_ib_modify_qp_resp (16 bytes).
type MLX5ModifyQPResp struct {
	_              structs.HostLayout
	ResponseLength uint32
	Dctn           uint32
	ECEOptions     uint32 `c:"ece_options"`
	Reserved       uint32
}
