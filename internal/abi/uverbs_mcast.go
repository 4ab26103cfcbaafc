package abi

import "structs"

// Multicast attach and detach of a UD QP: write commands without a
// response or driver data (rdma-core's ibv_cmd_attach_mcast), reached
// through INVOKE_WRITE or write().

// Multicast write command numbers (enum ib_uverbs_write_cmds).
const (
	UverbsCmdAttachMcast uint32 = 30
	UverbsCmdDetachMcast uint32 = 31
)

// UverbsAttachMcast is struct ib_uverbs_attach_mcast (24 bytes); DETACH_MCAST
// takes the same layout (struct ib_uverbs_detach_mcast).
type UverbsAttachMcast struct {
	_        structs.HostLayout
	GID      [16]byte `c:"gid"`
	QPHandle uint32
	MLID     uint16 `c:"mlid"`
	Reserved uint16
}
