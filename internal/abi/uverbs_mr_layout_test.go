package abi

// The MR registration structs and constants join the layout test's lists
// (TestLayoutAgainstCHeaders compiles them against the uapi headers).
func init() {
	uverbsStructs = append(uverbsStructs,
		cStruct{"ib_uverbs_rereg_mr", UverbsReregMR{}},
		cStruct{"ib_uverbs_rereg_mr_resp", UverbsReregMRResp{}},
	)
	uverbsConsts = append(uverbsConsts,
		cConst{"IB_USER_VERBS_CMD_REREG_MR", int64(UverbsCmdReregMR)},
		cConst{"UVERBS_METHOD_REG_DMABUF_MR", int64(UverbsMethodRegDmabufMR)},
		cConst{"UVERBS_ATTR_REG_DMABUF_MR_HANDLE", int64(UverbsAttrRegDmabufMRHandle)},
		cConst{"UVERBS_ATTR_REG_DMABUF_MR_PD_HANDLE", int64(UverbsAttrRegDmabufMRPDHandle)},
		cConst{"UVERBS_ATTR_REG_DMABUF_MR_OFFSET", int64(UverbsAttrRegDmabufMROffset)},
		cConst{"UVERBS_ATTR_REG_DMABUF_MR_LENGTH", int64(UverbsAttrRegDmabufMRLength)},
		cConst{"UVERBS_ATTR_REG_DMABUF_MR_IOVA", int64(UverbsAttrRegDmabufMRIOVA)},
		cConst{"UVERBS_ATTR_REG_DMABUF_MR_FD", int64(UverbsAttrRegDmabufMRFD)},
		cConst{"UVERBS_ATTR_REG_DMABUF_MR_ACCESS_FLAGS", int64(UverbsAttrRegDmabufMRAccessFlags)},
		cConst{"UVERBS_ATTR_REG_DMABUF_MR_RESP_LKEY", int64(UverbsAttrRegDmabufMRRespLKey)},
		cConst{"UVERBS_ATTR_REG_DMABUF_MR_RESP_RKEY", int64(UverbsAttrRegDmabufMRRespRKey)},
	)
}
