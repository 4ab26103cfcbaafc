package abi

// The multicast structs and constants, checked by TestLayoutAgainstCHeaders.

func init() {
	uverbsStructs = append(uverbsStructs,
		cStruct{"ib_uverbs_attach_mcast", UverbsAttachMcast{}},
		cStruct{"ib_uverbs_detach_mcast", UverbsAttachMcast{}})
	uverbsConsts = append(uverbsConsts,
		cConst{"IB_USER_VERBS_CMD_ATTACH_MCAST", int64(UverbsCmdAttachMcast)},
		cConst{"IB_USER_VERBS_CMD_DETACH_MCAST", int64(UverbsCmdDetachMcast)})
}
