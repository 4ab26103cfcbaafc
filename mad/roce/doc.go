// Package roce frames InfiniBand packets as RoCEv2 (IBTA Vol 1 Annex A17)
// for traces: Ethernet (with optional 802.1Q tags on decode), IPv4 or
// IPv6, UDP to port 4791, the Base Transport Header, the Datagram Extended
// Transport Header for UD and the 4-byte invariant CRC.
//
// Decode returns a Packet, a view over the frame's bytes that was checked
// once for lengths and header consistency; its accessors read fixed
// offsets. Frame is the struct used to build a packet (AppendTo, Marshal)
// and the copy Parse returns. MAD extracts the 256-byte management datagram
// from a GSI packet (UD SEND_ONLY to QP 1 with the GSI Q_Key), which is how
// the CM travels on RoCE.
//
// The ICRC follows A17.8 as the Linux soft-RoCE driver (rxe_icrc.c)
// computes it: CRC-32 (the Ethernet polynomial) over 8 bytes of 0xFF
// standing in for the absent LRH, then the IP header, UDP header, BTH and
// the rest of the packet up to the ICRC, with the fields routers may change
// replaced by ones: IPv4 TOS, TTL and header checksum; IPv6 traffic class,
// flow label and hop limit; the UDP checksum; the BTH byte that holds
// FECN, BECN and reserved bits. Like the Ethernet FCS the result goes on the
// wire least significant byte first. Package functions report the value as
// hash/crc32.ChecksumIEEE would return it.
package roce
