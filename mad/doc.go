// Package mad encodes and decodes InfiniBand Communication Management
// MADs byte-exactly: the 24-byte MAD common header and every CM
// attribute of IBTA vol. 1 chapter 12 (REQ, MRA, REJ, REP, RTU, DREQ,
// DREP, SIDR_REQ, SIDR_REP, LAP, APR) plus ClassPortInfo (§13.4.8.1).
// Field positions follow the Linux kernel's include/rdma/ibta_vol1_c12.h,
// including the ECE vendor ID fields.
//
// Two layers:
//
//   - Parsing: Parse(b) validates the header once (length >= 256, base
//     version 1, class 0x07, class version 2, known attribute, method
//     Send, or Get/Set/GetResp for ClassPortInfo, REQ transport type,
//     MRA MessageMRAed) and returns a View: REQView, REPView, ... Use a
//     type switch. Views read fixed offsets of the caller's buffer; no
//     copy, no allocation. ParseREQ and friends check for one message.
//   - Building: plain structs (REQ, REP, ...) with MarshalTo(b), which
//     writes the whole 256-byte MAD into b without allocating and with
//     every reserved bit zero, and Marshal() for a new slice. Fields
//     wider than their wire field are refused (ErrFieldRange), not
//     truncated. view.Decode(&m) fills a struct without allocating;
//     m.UnmarshalMAD(b) parses and decodes in one call.
//
// Round trip: for any MAD that Parse accepts and CheckReserved passes
// (no reserved bit set), Decode then MarshalTo reproduces b[:256]
// exactly, private data included. Private data, REJ ARI and the
// SIDR_REP/APR information fields are fixed-size arrays, as on the wire;
// the length of private data is not on the wire.
//
// ECE: REQ, REP and SIDR_REP have ECE() and SetECE(ece.ECE). The vendor
// ID lives in the struct's VendorID field (wire placement per
// ece.PlacementOf), the options in Header.AttributeModifier. SIDR_REP
// carries only vendor bits 15:0, as Linux writes them.
//
// Helpers: IPHeader/ParseIPHeader for the 36-byte rdma_cm IP header at
// the start of REQ and SIDR_REQ private data, ServiceID/SplitServiceID
// for rdma_cm port spaces, TimeoutDuration/TimeoutExponent for the
// 4.096 µs × 2^n timeouts, names for RejectReason (with ARI
// descriptions), MRAedMessage, RejectedMessage, SIDRStatus, APRStatus,
// and Describe, the one-line summary of a MAD used in logs and test
// transcripts.
//
// Every field offset is a named constant (reqLocalQPN, repSRQShift, ...)
// written once, next to its IBTA table, and shared by the range check,
// the encoder and the view accessor.
//
// Errors wrap the sentinels in errors.go (ErrShortBuffer,
// ErrBadBaseVersion, ErrWrongClass, ErrUnknownAttribute, ...); field
// problems are *FieldError values carrying the field name and offset.
// No input makes any function panic; every decoder is fuzzed. Only
// encoding/binary.BigEndian is used, so the package is endian-neutral.
package mad
