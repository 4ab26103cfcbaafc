package abi

// RDMA netlink (include/uapi/rdma/rdma_netlink.h), used to map a device
// name to its uverbs character device and driver id, the way rdma-core's
// ibdev_nl.c does. Messages are an nlmsghdr followed directly by nlattrs
// (no genetlink header); attribute payloads are host-endian.

// NetlinkRDMA is the NETLINK_RDMA protocol number.
const NetlinkRDMA = 20

// RDMA_NL_NLDEV client and its commands; the message type is
// RDMA_NL_GET_TYPE(client, op) = client<<10 + op.
const (
	RDMANLNldev            = 5
	RDMANldevCmdGet        = 1
	RDMANldevCmdGetChardev = 15
)

// RDMANLType is RDMA_NL_GET_TYPE.
func RDMANLType(client, op uint16) uint16 { return client<<10 + op }

// RDMA_NLDEV_ATTR_* ids used here.
const (
	RDMANldevAttrDevIndex       = 1  // u32
	RDMANldevAttrDevName        = 2  // string
	RDMANldevAttrChardevType    = 69 // string
	RDMANldevAttrChardevName    = 70 // string
	RDMANldevAttrChardevABI     = 71 // u64
	RDMANldevAttrChardev        = 72 // u64, huge_encode_dev form
	RDMANldevAttrUverbsDriverID = 73 // the kernel puts a u32
)
