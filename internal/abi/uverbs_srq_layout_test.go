package abi

// The SRQ structs and constants, checked by TestLayoutAgainstCHeaders.

func init() {
	uverbsStructs = append(uverbsStructs,
		cStruct{"ib_uverbs_create_srq", UverbsCreateSRQ{}},
		cStruct{"ib_uverbs_create_srq_resp", UverbsCreateSRQResp{}},
		cStruct{"ib_uverbs_modify_srq", UverbsModifySRQ{}},
		cStruct{"ib_uverbs_query_srq", UverbsQuerySRQ{}},
		cStruct{"ib_uverbs_query_srq_resp", UverbsQuerySRQResp{}},
		cStruct{"ib_uverbs_destroy_srq", UverbsDestroySRQ{}},
		cStruct{"ib_uverbs_destroy_srq_resp", UverbsDestroySRQResp{}},
		cStruct{"rxe_create_srq_resp", RxeCreateSRQResp{}},
		cStruct{"rxe_modify_srq_cmd", RxeModifySRQCmd{}},
		cStruct{"mlx5_ib_create_srq", MLX5CreateSRQ{}},
		cStruct{"mlx5_ib_create_srq_resp", MLX5CreateSRQResp{}})
	uverbsConsts = append(uverbsConsts,
		cConst{"IB_USER_VERBS_CMD_CREATE_SRQ", int64(UverbsCmdCreateSRQ)},
		cConst{"IB_USER_VERBS_CMD_MODIFY_SRQ", int64(UverbsCmdModifySRQ)},
		cConst{"IB_USER_VERBS_CMD_QUERY_SRQ", int64(UverbsCmdQuerySRQ)},
		cConst{"IB_USER_VERBS_CMD_DESTROY_SRQ", int64(UverbsCmdDestroySRQ)},
		cConst{"UVERBS_OBJECT_SRQ", int64(UverbsObjectSRQ)},
		cConst{"UVERBS_METHOD_SRQ_CREATE", int64(UverbsMethodSRQCreate)},
		cConst{"UVERBS_METHOD_SRQ_DESTROY", int64(UverbsMethodSRQDestroy)},
		cConst{"UVERBS_ATTR_CREATE_SRQ_HANDLE", int64(UverbsAttrCreateSRQHandle)},
		cConst{"UVERBS_ATTR_CREATE_SRQ_PD_HANDLE", int64(UverbsAttrCreateSRQPDHandle)},
		cConst{"UVERBS_ATTR_CREATE_SRQ_USER_HANDLE", int64(UverbsAttrCreateSRQUserHandle)},
		cConst{"UVERBS_ATTR_CREATE_SRQ_MAX_WR", int64(UverbsAttrCreateSRQMaxWR)},
		cConst{"UVERBS_ATTR_CREATE_SRQ_MAX_SGE", int64(UverbsAttrCreateSRQMaxSGE)},
		cConst{"UVERBS_ATTR_CREATE_SRQ_LIMIT", int64(UverbsAttrCreateSRQLimit)},
		cConst{"UVERBS_ATTR_CREATE_SRQ_TYPE", int64(UverbsAttrCreateSRQType)},
		cConst{"UVERBS_ATTR_CREATE_SRQ_EVENT_FD", int64(UverbsAttrCreateSRQEventFD)},
		cConst{"UVERBS_ATTR_CREATE_SRQ_RESP_MAX_WR", int64(UverbsAttrCreateSRQRespMaxWR)},
		cConst{"UVERBS_ATTR_CREATE_SRQ_RESP_MAX_SGE", int64(UverbsAttrCreateSRQRespMaxSGE)},
		cConst{"UVERBS_ATTR_CREATE_SRQ_RESP_SRQ_NUM", int64(UverbsAttrCreateSRQRespSRQNum)},
		cConst{"UVERBS_ATTR_DESTROY_SRQ_HANDLE", int64(UverbsAttrDestroySRQHandle)},
		cConst{"UVERBS_ATTR_DESTROY_SRQ_RESP", int64(UverbsAttrDestroySRQResp)},
		cConst{"IB_UVERBS_SRQT_BASIC", UverbsSRQTBasic},
		cConst{"MLX5_SRQ_FLAG_SIGNATURE", int64(MLX5SRQFlagSignature)})
}
