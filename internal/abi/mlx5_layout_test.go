package abi

// The mlx5 data-path structs and constants, checked by
// TestLayoutAgainstCHeaders against /usr/include/rdma/mlx5-abi.h,
// mlx5_user_ioctl_cmds.h and mlx5_user_ioctl_verbs.h.

func init() {
	cHeaders = append(cHeaders, "rdma/mlx5_user_ioctl_cmds.h", "rdma/mlx5_user_ioctl_verbs.h")
	uverbsStructs = append(uverbsStructs,
		cStruct{"mlx5_ib_create_cq", MLX5CreateCQ{}},
		cStruct{"mlx5_ib_create_cq_resp", MLX5CreateCQResp{}},
		cStruct{"mlx5_ib_create_ah_resp", MLX5CreateAHResp{}},
		cStruct{"mlx5_ib_alloc_pd_resp", MLX5AllocPDResp{}})
	uverbsConsts = append(uverbsConsts,
		cConst{"MLX5_LIB_CAP_4K_UAR", int64(MLX5LibCap4KUAR)},
		cConst{"MLX5_LIB_CAP_DYN_UAR", int64(MLX5LibCapDynUAR)},
		cConst{"MLX5_IB_ALLOC_UCTX_DEVX", int64(MLX5AllocUctxDEVX)},
		cConst{"MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_CORE_CLOCK_OFFSET", int64(MLX5AllocUcontextRespMaskCoreClockOff)},
		cConst{"MLX5_USER_CMDS_SUPP_UHW_QUERY_DEVICE", int64(MLX5UserCmdsSuppUhwQueryDevice)},
		cConst{"MLX5_USER_CMDS_SUPP_UHW_CREATE_AH", int64(MLX5UserCmdsSuppUhwCreateAH)},
		cConst{"MLX5_IB_CLOCK_INFO_V1", MLX5ClockInfoV1},
		cConst{"MLX5_QP_FLAG_SIGNATURE", int64(MLX5QPFlagSignature)},
		cConst{"MLX5_QP_FLAG_SCATTER_CQE", int64(MLX5QPFlagScatterCQE)},
		cConst{"MLX5_QP_FLAG_BFREG_INDEX", int64(MLX5QPFlagBfregIndex)},
		cConst{"MLX5_QP_FLAG_UAR_PAGE_INDEX", int64(MLX5QPFlagUARPageIndex)},
		cConst{"MLX5_IB_CREATE_CQ_FLAGS_UAR_PAGE_INDEX", int64(MLX5CreateCQFlagsUARPageIx)},
		cConst{"MLX5_IB_MMAP_CORE_CLOCK", MLX5MmapCoreClock},
		cConst{"MLX5_IB_MMAP_ALLOC_WC", MLX5MmapAllocWC},
		cConst{"MLX5_IB_MMAP_CLOCK_INFO", MLX5MmapClockInfo},
		cConst{"MLX5_IB_UAPI_UAR_ALLOC_TYPE_BF", MLX5UAPIUARAllocBF},
		cConst{"MLX5_IB_UAPI_UAR_ALLOC_TYPE_NC", MLX5UAPIUARAllocNC},
		cConst{"MLX5_IB_OBJECT_DEVX", int64(MLX5IBObjectDEVX)},
		cConst{"MLX5_IB_OBJECT_UAR", int64(MLX5IBObjectUAR)},
		cConst{"MLX5_IB_METHOD_DEVX_OTHER", int64(MLX5IBMethodDEVXOther)},
		cConst{"MLX5_IB_ATTR_DEVX_OTHER_CMD_IN", int64(MLX5IBAttrDEVXOtherCmdIn)},
		cConst{"MLX5_IB_ATTR_DEVX_OTHER_CMD_OUT", int64(MLX5IBAttrDEVXOtherCmdOut)},
		cConst{"MLX5_IB_METHOD_UAR_OBJ_ALLOC", int64(MLX5IBMethodUARObjAlloc)},
		cConst{"MLX5_IB_METHOD_UAR_OBJ_DESTROY", int64(MLX5IBMethodUARObjDestroy)},
		cConst{"MLX5_IB_ATTR_UAR_OBJ_ALLOC_HANDLE", int64(MLX5IBAttrUARObjAllocHandle)},
		cConst{"MLX5_IB_ATTR_UAR_OBJ_ALLOC_TYPE", int64(MLX5IBAttrUARObjAllocType)},
		cConst{"MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_OFFSET", int64(MLX5IBAttrUARObjAllocMmapOffset)},
		cConst{"MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_LENGTH", int64(MLX5IBAttrUARObjAllocMmapLength)},
		cConst{"MLX5_IB_ATTR_UAR_OBJ_ALLOC_PAGE_ID", int64(MLX5IBAttrUARObjAllocPageID)},
		cConst{"MLX5_IB_ATTR_UAR_OBJ_DESTROY_HANDLE", int64(MLX5IBAttrUARObjDestroyHandle)},
		cConst{"sizeof(struct mlx5_ib_query_device_resp)", MLX5QueryDeviceRespSize},
		cConst{"MLX5_IB_UVERBS_ABI_VERSION", MLX5UverbsABIVersion})
}
