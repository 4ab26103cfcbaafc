package abi

import (
	"structs"
	"unsafe"
)

// The user MAD interface, /dev/infiniband/umadN (include/uapi/rdma/
// ib_user_mad.h; drivers/infiniband/core/user_mad.c). Only what a CM needs:
// REGISTER_AGENT2 and the 64-byte MAD header. REGISTER_AGENT2 turns on the
// P_Key-index header by itself, so ENABLE_PKEY (an _IO, whose number differs
// on powerpc and mips) is never needed, and closing the fd unregisters.

// UmadABIVersion is IB_USER_MAD_ABI_VERSION (sysfs
// /sys/class/infiniband_mad/abi_version).
const UmadABIVersion = 5

// UmadRegisterAgent2 is IB_USER_MAD_REGISTER_AGENT2,
// _IOWR(0x1b, 4, struct ib_user_mad_reg_req2). _IOWR encodes the same way
// under the generic, powerpc and mips ioctl layouts.
const UmadRegisterAgent2 = 0xC0281B04

// UmadUserRMPP is IB_USER_MAD_USER_RMPP, the only REGISTER_AGENT2 flag.
const UmadUserRMPP = 1 << 0

// UmadHdr is struct ib_user_mad_hdr (64 bytes), which precedes every MAD
// read from or written to the device. Qpn, QKey, LID and FlowLabel are
// big-endian on the wire of the ABI (__be32/__be16); the other fields are
// host-endian.
type UmadHdr struct {
	_            structs.HostLayout
	ID           uint32
	Status       uint32
	TimeoutMs    uint32 `c:"timeout_ms"`
	Retries      uint32
	Length       uint32
	QPN          [4]byte `c:"qpn"`
	QKey         [4]byte `c:"qkey"`
	LID          [2]byte `c:"lid"`
	SL           uint8
	PathBits     uint8
	GRHPresent   uint8 `c:"grh_present"`
	GIDIndex     uint8 `c:"gid_index"`
	HopLimit     uint8
	TrafficClass uint8
	GID          [16]byte `c:"gid"`
	FlowLabel    [4]byte  `c:"flow_label"`
	PKeyIndex    uint16   `c:"pkey_index"`
	Reserved     [6]uint8
}

// UmadHdrSize is sizeof(struct ib_user_mad_hdr).
const UmadHdrSize = int(unsafe.Sizeof(UmadHdr{}))

// UmadRegReq2 is struct ib_user_mad_reg_req2 (40 bytes).
type UmadRegReq2 struct {
	_                structs.HostLayout
	ID               uint32
	QPN              uint32 `c:"qpn"`
	MgmtClass        uint8
	MgmtClassVersion uint8
	Res              uint16
	Flags            uint32
	MethodMask       [2]uint64
	OUI              uint32 `c:"oui"`
	RMPPVersion      uint8  `c:"rmpp_version"`
	Reserved         [3]uint8
}
