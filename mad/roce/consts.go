package roce

// Wire constants (IBTA Vol 1 ch. 9 and Annex A17; Linux ib_verbs.h, ib_mad.h).
const (
	// UDPPort is the RoCEv2 destination port (A17.2.1; ROCE_V2_UDP_DPORT).
	UDPPort = 4791

	EtherTypeIPv4 = 0x0800
	EtherTypeIPv6 = 0x86DD
	EtherTypeVLAN = 0x8100 // 802.1Q customer tag
	EtherTypeQinQ = 0x88A8 // 802.1ad service tag

	ethHeaderLen  = 14
	vlanTagLen    = 4
	ipv4MinHdrLen = 20
	ipv6HdrLen    = 40
	udpHeaderLen  = 8
	ipProtoUDP    = 17

	// BTHLen, DETHLen and ICRCLen are the sizes of the Base Transport
	// Header (9.2), the Datagram Extended Transport Header (9.3.2) and the
	// invariant CRC (7.8.1).
	BTHLen  = 12
	DETHLen = 8
	ICRCLen = 4

	// MADLen is the size of a MAD (13.4.2).
	MADLen = 256

	// OpcodeUDSendOnly is the BTH opcode of a UD SEND only packet; MADs use
	// it. OpcodeUDSendOnlyImm is the variant with immediate data.
	OpcodeUDSendOnly    = 0x64
	OpcodeUDSendOnlyImm = 0x65

	// GSIQP is the QP number of the General Services Interface (QP 1).
	GSIQP = 1
	// GSIQKey is the Q_Key of QP 1 (IB_QP1_QKEY).
	GSIQKey = 0x80010000
	// DefaultPKey is the full-membership default partition key; RoCE uses it.
	DefaultPKey = 0xFFFF

	maxQPN = 1<<24 - 1
	maxPSN = 1<<24 - 1
)

// hasDETH reports whether a BTH opcode is followed by a DETH. Only the UD
// SEND opcodes are supported; RD (RDETH+DETH) is not used on RoCE.
func hasDETH(opcode uint8) bool {
	return opcode == OpcodeUDSendOnly || opcode == OpcodeUDSendOnlyImm
}
