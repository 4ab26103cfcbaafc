package abi

import "structs"

// Memory registration beyond REG_MR: re-registration (the REREG_MR write
// command) and dmabuf MRs (the MR object's REG_DMABUF_MR ioctl method).

// UverbsCmdReregMR is IB_USER_VERBS_CMD_REREG_MR.
const UverbsCmdReregMR uint32 = 11

// REREG_MR flags (the kernel's enum ib_mr_rereg_flags, which libibverbs'
// IBV_REREG_MR_CHANGE_* repeat).
const (
	UverbsReregMRTrans  uint32 = 1 << 0 // IB_MR_REREG_TRANS: new address range
	UverbsReregMRPD     uint32 = 1 << 1 // IB_MR_REREG_PD
	UverbsReregMRAccess uint32 = 1 << 2 // IB_MR_REREG_ACCESS
)

// UverbsReregMR is struct ib_uverbs_rereg_mr.
type UverbsReregMR struct {
	_           structs.HostLayout
	Response    uint64
	MRHandle    uint32
	Flags       uint32
	Start       uint64
	Length      uint64
	HCAVa       uint64 `c:"hca_va"`
	PDHandle    uint32
	AccessFlags uint32
}

// UverbsReregMRResp is struct ib_uverbs_rereg_mr_resp.
type UverbsReregMRResp struct {
	_    structs.HostLayout
	LKey uint32 `c:"lkey"`
	RKey uint32 `c:"rkey"`
}

// UverbsMethodRegDmabufMR is UVERBS_METHOD_REG_DMABUF_MR (object MR).
const UverbsMethodRegDmabufMR uint16 = 4

// Attributes of REG_DMABUF_MR (enum uverbs_attrs_reg_dmabuf_mr_cmd_attr_ids).
const (
	UverbsAttrRegDmabufMRHandle      uint16 = 0 // NEW MR handle
	UverbsAttrRegDmabufMRPDHandle    uint16 = 1
	UverbsAttrRegDmabufMROffset      uint16 = 2 // u64: offset into the dmabuf
	UverbsAttrRegDmabufMRLength      uint16 = 3 // u64
	UverbsAttrRegDmabufMRIOVA        uint16 = 4 // u64
	UverbsAttrRegDmabufMRFD          uint16 = 5 // u32 PTR_IN, not an fd attribute
	UverbsAttrRegDmabufMRAccessFlags uint16 = 6 // FLAGS_IN
	UverbsAttrRegDmabufMRRespLKey    uint16 = 7 // u32 out
	UverbsAttrRegDmabufMRRespRKey    uint16 = 8 // u32 out
)
