package roce

import "hash/crc32"

// crcAfterDummyLRH is the CRC-32 state after the 8 bytes of 0xFF that stand
// in for the LRH (A17.8.1): rxe_icrc.c seeds its raw CRC with 0xdebb20e3,
// which is this value un-inverted.
var crcAfterDummyLRH = crc32.Update(0, crc32.IEEETable, []byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF})

// maxMaskedLen is the longest header run that gets masked: an IPv4 header
// with 40 bytes of options, UDP and BTH.
const maxMaskedLen = 60 + udpHeaderLen + BTHLen

// computeICRC returns the ICRC of pkt, which runs from the IP header to the
// byte before the ICRC; ipHdrLen is the IP header length.
func computeICRC(pkt []byte, ipHdrLen int, ipv6 bool) uint32 {
	var hdr [maxMaskedLen]byte
	n := copy(hdr[:], pkt[:ipHdrLen+udpHeaderLen+BTHLen])
	h := hdr[:n]
	if ipv6 {
		h[0] |= 0x0F // traffic class (high nibble in byte 0) ...
		h[1] = 0xFF  // ... and flow label
		h[2] = 0xFF
		h[3] = 0xFF
		h[7] = 0xFF // hop limit
	} else {
		h[1] = 0xFF // TOS (DSCP, ECN)
		h[8] = 0xFF // TTL
		h[10] = 0xFF
		h[11] = 0xFF // header checksum
	}
	udp := h[ipHdrLen:]
	udp[6] = 0xFF
	udp[7] = 0xFF // UDP checksum
	bth := udp[udpHeaderLen:]
	bth[4] = 0xFF // FECN, BECN, resv6a
	crc := crc32.Update(crcAfterDummyLRH, crc32.IEEETable, h)
	return crc32.Update(crc, crc32.IEEETable, pkt[n:])
}
