package abi

import "structs"

// The uverbs ioctl interface (include/uapi/rdma/rdma_user_ioctl_cmds.h): one
// ioctl number whose argument is an ib_uverbs_ioctl_hdr followed by an
// array of ib_uverbs_attr, processed by the kernel's uverbs_ioctl.c.

// RDMAVerbsIoctl is RDMA_VERBS_IOCTL, _IOWR(0x1b, 1, struct
// ib_uverbs_ioctl_hdr). _IOWR has the same value under the generic and the
// powerpc/mips ioctl encodings, so one constant serves every GOARCH.
const RDMAVerbsIoctl = 0xC0181B01

// IoctlHdr is struct ib_uverbs_ioctl_hdr (24 bytes).
type IoctlHdr struct {
	_         structs.HostLayout
	Length    uint16
	ObjectID  uint16
	MethodID  uint16
	NumAttrs  uint16
	Reserved1 uint64
	DriverID  uint32
	Reserved2 uint32
}

// IoctlAttr is struct ib_uverbs_attr (16 bytes). Data is a pointer, an
// inline value, an object handle or an fd depending on the attribute type.
type IoctlAttr struct {
	_        structs.HostLayout
	AttrID   uint16
	Len      uint16
	Flags    uint16
	AttrData uint16 `c:"attr_data"`
	Data     uint64
}

// ib_uverbs_attr flags (enum uverbs_attrs_flags).
const (
	AttrFMandatory   = 1 << 0 // UVERBS_ATTR_F_MANDATORY
	AttrFValidOutput = 1 << 1 // UVERBS_ATTR_F_VALID_OUTPUT, set by the kernel
)
