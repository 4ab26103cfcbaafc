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

// The mlx5 data path ABI: create-CQ/AH/PD driver data, the UAR object
// ioctl, the DEVX general command, mmap offsets and flags
// (include/uapi/rdma/mlx5-abi.h, mlx5_user_ioctl_cmds.h,
// mlx5_user_ioctl_verbs.h).

// Context request and response bits.
const (
	MLX5LibCap4KUAR                       uint64 = 1 << 0 // MLX5_LIB_CAP_4K_UAR
	MLX5LibCapDynUAR                      uint64 = 1 << 1 // MLX5_LIB_CAP_DYN_UAR
	MLX5AllocUctxDEVX                     uint32 = 1 << 0 // MLX5_IB_ALLOC_UCTX_DEVX
	MLX5AllocUcontextRespMaskCoreClockOff uint32 = 1 << 0 // MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_CORE_CLOCK_OFFSET
	MLX5UserCmdsSuppUhwQueryDevice        uint8  = 1 << 0 // MLX5_USER_CMDS_SUPP_UHW_QUERY_DEVICE
	MLX5UserCmdsSuppUhwCreateAH           uint8  = 1 << 1 // MLX5_USER_CMDS_SUPP_UHW_CREATE_AH
	MLX5ClockInfoV1                              = 0      // MLX5_IB_CLOCK_INFO_V1
)

// Create-QP and create-CQ flags.
const (
	MLX5QPFlagSignature        uint32 = 1 << 0  // MLX5_QP_FLAG_SIGNATURE
	MLX5QPFlagScatterCQE       uint32 = 1 << 1  // MLX5_QP_FLAG_SCATTER_CQE
	MLX5QPFlagBfregIndex       uint32 = 1 << 3  // MLX5_QP_FLAG_BFREG_INDEX
	MLX5QPFlagUARPageIndex     uint32 = 1 << 10 // MLX5_QP_FLAG_UAR_PAGE_INDEX
	MLX5CreateCQFlagsUARPageIx uint16 = 1 << 1  // MLX5_IB_CREATE_CQ_FLAGS_UAR_PAGE_INDEX
)

// mmap commands: offset = ((cmd << 8) | index) * page size
// (enum mlx5_ib_mmap_cmd; libmlx5 get_uar_mmap_offset).
const (
	MLX5MmapCmdShift      = 8
	MLX5MmapRegularPages  = 0 // MLX5_MMAP_GET_REGULAR_PAGES_CMD (mlx5dv.h)
	MLX5MmapNCPages       = 3 // MLX5_MMAP_GET_NC_PAGES_CMD (mlx5dv.h)
	MLX5MmapCoreClock     = 5 // MLX5_IB_MMAP_CORE_CLOCK
	MLX5MmapAllocWC       = 6 // MLX5_IB_MMAP_ALLOC_WC
	MLX5MmapClockInfo     = 7 // MLX5_IB_MMAP_CLOCK_INFO
	MLX5UAPIUARAllocBF    = 0 // MLX5_IB_UAPI_UAR_ALLOC_TYPE_BF
	MLX5UAPIUARAllocNC    = 1 // MLX5_IB_UAPI_UAR_ALLOC_TYPE_NC
	MLX5UARObjAllocType   = 0
	mlx5IDNS              = 1 << 12 // UVERBS_ID_NS_SHIFT
	MLX5UverbsABIVersion  = 1
	MLX5QueryHCACapInLen  = 16   // DEVX_ST_SZ_BYTES(query_hca_cap_in)
	MLX5QueryHCACapOutLen = 4112 // DEVX_ST_SZ_BYTES(query_hca_cap_out)
	MLX5CmdOpQueryHCACap  = 0x100
)

// mlx5 ioctl objects, methods and attributes.
const (
	MLX5IBObjectDEVX uint16 = mlx5IDNS     // MLX5_IB_OBJECT_DEVX
	MLX5IBObjectUAR  uint16 = mlx5IDNS + 8 // MLX5_IB_OBJECT_UAR

	MLX5IBMethodDEVXOther     uint16 = mlx5IDNS     // MLX5_IB_METHOD_DEVX_OTHER
	MLX5IBAttrDEVXOtherCmdIn  uint16 = mlx5IDNS     // MLX5_IB_ATTR_DEVX_OTHER_CMD_IN
	MLX5IBAttrDEVXOtherCmdOut uint16 = mlx5IDNS + 1 // MLX5_IB_ATTR_DEVX_OTHER_CMD_OUT

	MLX5IBMethodUARObjAlloc   uint16 = mlx5IDNS     // MLX5_IB_METHOD_UAR_OBJ_ALLOC
	MLX5IBMethodUARObjDestroy uint16 = mlx5IDNS + 1 // MLX5_IB_METHOD_UAR_OBJ_DESTROY

	MLX5IBAttrUARObjAllocHandle     uint16 = mlx5IDNS     // MLX5_IB_ATTR_UAR_OBJ_ALLOC_HANDLE
	MLX5IBAttrUARObjAllocType       uint16 = mlx5IDNS + 1 // MLX5_IB_ATTR_UAR_OBJ_ALLOC_TYPE
	MLX5IBAttrUARObjAllocMmapOffset uint16 = mlx5IDNS + 2 // MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_OFFSET
	MLX5IBAttrUARObjAllocMmapLength uint16 = mlx5IDNS + 3 // MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_LENGTH
	MLX5IBAttrUARObjAllocPageID     uint16 = mlx5IDNS + 4 // MLX5_IB_ATTR_UAR_OBJ_ALLOC_PAGE_ID
	MLX5IBAttrUARObjDestroyHandle   uint16 = mlx5IDNS     // MLX5_IB_ATTR_UAR_OBJ_DESTROY_HANDLE
)

// MLX5CreateCQ is struct mlx5_ib_create_cq (32 bytes).
type MLX5CreateCQ struct {
	_                structs.HostLayout
	BufAddr          uint64
	DBAddr           uint64 `c:"db_addr"`
	CQESize          uint32 `c:"cqe_size"`
	CQECompEn        uint8  `c:"cqe_comp_en"`
	CQECompResFormat uint8  `c:"cqe_comp_res_format"`
	Flags            uint16
	UARPageIndex     uint16 `c:"uar_page_index"`
	Reserved0        uint16
	Reserved1        uint32
}

// MLX5CreateCQResp is struct mlx5_ib_create_cq_resp (8 bytes).
type MLX5CreateCQResp struct {
	_        structs.HostLayout
	CQN      uint32 `c:"cqn"`
	Reserved uint32
}

// MLX5CreateAHResp is struct mlx5_ib_create_ah_resp (16 bytes).
type MLX5CreateAHResp struct {
	_              structs.HostLayout
	ResponseLength uint32
	DMAC           [6]uint8 `c:"dmac"`
	Reserved       [6]uint8
}

// MLX5AllocPDResp is struct mlx5_ib_alloc_pd_resp.
type MLX5AllocPDResp struct {
	_   structs.HostLayout
	PDN uint32 `c:"pdn"`
}

// MLX5QueryDeviceRespSize is sizeof(struct mlx5_ib_query_device_resp),
// the EX_QUERY_DEVICE driver output libmlx5 asks for (its fields are not
// used by this package, only its length reaches the kernel).
const MLX5QueryDeviceRespSize = 104
