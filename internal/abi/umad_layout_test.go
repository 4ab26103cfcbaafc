package abi

// The umad structs and constants, checked by TestLayoutAgainstCHeaders
// against /usr/include/rdma/ib_user_mad.h and rdma_user_ioctl.h.

import "testing"

func init() {
	cHeaders = append(cHeaders, "rdma/ib_user_mad.h")
	uverbsStructs = append(uverbsStructs,
		cStruct{"ib_user_mad_hdr", UmadHdr{}},
		cStruct{"ib_user_mad_reg_req2", UmadRegReq2{}})
	uverbsConsts = append(uverbsConsts,
		cConst{"IB_USER_MAD_ABI_VERSION", UmadABIVersion},
		cConst{"IB_USER_MAD_REGISTER_AGENT2", UmadRegisterAgent2},
		cConst{"IB_USER_MAD_USER_RMPP", UmadUserRMPP},
		cConst{"sizeof(struct ib_user_mad)", int64(UmadHdrSize)})
}

func TestUmadSizes(t *testing.T) {
	if UmadHdrSize != 64 {
		t.Fatalf("ib_user_mad_hdr is %d bytes, want 64", UmadHdrSize)
	}
}
