package ece

// Placement says where a CM message carries ECE (IBTA vol. 1 rel. 1.4
// chapter 12; kernel cm_format_req, cm_format_rep, cm_format_sidr_rep).
// Options always travel in the MAD header's 32-bit AttributeModifier;
// the vendor ID's placement differs by message.
type Placement uint8

const (
	// PlacementNone: the message carries no ECE (MRA, REJ, RTU, DREQ,
	// DREP, SIDR_REQ, LAP, APR, ClassPortInfo). AttributeModifier is 0.
	PlacementNone Placement = iota
	// PlacementREQ: VendorID is the 24-bit field at REQ data bytes 5..7.
	PlacementREQ
	// PlacementREP: VendorID is split into single bytes at REP data
	// bytes 15 (bits 23:16), 19 (bits 15:8) and 23 (bits 7:0).
	PlacementREP
	// PlacementSIDRREP: SIDR_REP data bytes 6..7 hold a 16-bit field of
	// which the kernel fills only the low byte, with vendor bits 15:8,
	// and data byte 11 holds bits 7:0. Bits 23:16 are not carried.
	PlacementSIDRREP
)

// CM attribute IDs that carry ECE (kernel CM_*_ATTR_ID).
const (
	attrREQ     = 0x0010
	attrREP     = 0x0013
	attrSIDRREP = 0x0018
)

// PlacementOf returns where the CM message with attribute ID attrID
// carries ECE.
func PlacementOf(attrID uint16) Placement {
	switch attrID {
	case attrREQ:
		return PlacementREQ
	case attrREP:
		return PlacementREP
	case attrSIDRREP:
		return PlacementSIDRREP
	}
	return PlacementNone
}

// SplitREP splits a vendor ID into the REP's high, middle and low bytes.
func SplitREP(vendorID uint32) (high, mid, low uint8) {
	return uint8(vendorID >> 16), uint8(vendorID >> 8), uint8(vendorID)
}

// JoinREP rebuilds a vendor ID from the REP's three bytes, as the
// kernel's cm_format_rep_event does.
func JoinREP(high, mid, low uint8) uint32 {
	return uint32(high)<<16 | uint32(mid)<<8 | uint32(low)
}

// SplitSIDRREP returns SIDR_REP's 16-bit VENDOR_ID_H field and 8-bit
// VENDOR_ID_L field for vendorID, as the kernel's cm_format_sidr_rep
// writes them: the high field carries only bits 15:8.
func SplitSIDRREP(vendorID uint32) (high16 uint16, low uint8) {
	return uint16(vendorID>>8) & 0xff, uint8(vendorID)
}

// JoinSIDRREP rebuilds a vendor ID from SIDR_REP's fields. The kernel
// does not parse SIDR_REP ECE; this reads the fields as written.
func JoinSIDRREP(high16 uint16, low uint8) uint32 {
	return uint32(high16)<<8 | uint32(low)
}
