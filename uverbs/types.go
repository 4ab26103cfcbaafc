package uverbs

import (
	"strconv"

	"github.com/go-rdma/rdmacm/rdma"
)

// NodeType is the device's node type (sysfs node_type; enum
// rdma_node_type).
type NodeType uint8

// Node types.
const (
	NodeCA          NodeType = 1
	NodeSwitch      NodeType = 2
	NodeRouter      NodeType = 3
	NodeRNIC        NodeType = 4
	NodeUSNIC       NodeType = 5
	NodeUSNICUDP    NodeType = 6
	NodeUnspecified NodeType = 7
)

func (t NodeType) String() string {
	switch t {
	case NodeCA:
		return "CA"
	case NodeSwitch:
		return "switch"
	case NodeRouter:
		return "router"
	case NodeRNIC:
		return "RNIC"
	case NodeUSNIC:
		return "usNIC"
	case NodeUSNICUDP:
		return "usNIC UDP"
	case NodeUnspecified:
		return "unspecified"
	}
	return "NodeType(" + strconv.Itoa(int(t)) + ")"
}

// PortState is the logical port state (IBTA vol. 1 §14.2.5.6 PortInfo
// PortState; enum ib_port_state).
type PortState uint8

// Port states.
const (
	PortNop         PortState = 0
	PortDown        PortState = 1
	PortInit        PortState = 2
	PortArmed       PortState = 3
	PortActive      PortState = 4
	PortActiveDefer PortState = 5
)

var portStateNames = [...]string{"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"}

func (s PortState) String() string {
	if int(s) < len(portStateNames) {
		return portStateNames[s]
	}
	return "PortState(" + strconv.Itoa(int(s)) + ")"
}

// PhysState is the physical port state (sysfs phys_state).
type PhysState uint8

// PhysLinkUp is the physical state of a port whose link is up.
const PhysLinkUp PhysState = 5

// LinkLayer is a port's link layer (enum ibv_link_layer).
type LinkLayer uint8

// Link layers.
const (
	LinkUnspecified LinkLayer = 0
	LinkInfiniBand  LinkLayer = 1
	LinkEthernet    LinkLayer = 2
)

func (l LinkLayer) String() string {
	switch l {
	case LinkInfiniBand:
		return "InfiniBand"
	case LinkEthernet:
		return "Ethernet"
	}
	return "Unknown"
}

// GIDType is the kind of a GID table entry (enum ib_uverbs_gid_type).
type GIDType uint8

// GID types.
const (
	GIDTypeIB     GIDType = 0
	GIDTypeRoCEv1 GIDType = 1
	GIDTypeRoCEv2 GIDType = 2
)

func (t GIDType) String() string {
	switch t {
	case GIDTypeIB:
		return "IB"
	case GIDTypeRoCEv1:
		return "RoCE v1"
	case GIDTypeRoCEv2:
		return "RoCE v2"
	}
	return "GIDType(" + strconv.Itoa(int(t)) + ")"
}

// GIDEntry is one valid slot of a port's GID table.
type GIDEntry struct {
	Port   int
	Index  int
	GID    rdma.GID
	Type   GIDType
	Netdev string // associated network device; empty for IB
	// NetdevIndex is the ifindex (from the QUERY_GID_TABLE ioctl; 0 when
	// read from sysfs).
	NetdevIndex int
}
