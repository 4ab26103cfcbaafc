package rsocket

import (
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/go-rdma/rdmacm/rdma"
)

// The rsockets wire format, as librdmacm/rsocket.c (rdma-core v44) sends
// it: the 40-byte rs_conn_data in the REQ and REP private data, and the
// 32-bit immediate of every RDMA WRITE WITH IMMEDIATE.

// Protocol constants (rsocket.c, 63-70 and 131-138).
const (
	connDataLen    = 40     // sizeof(struct rs_conn_data)
	sgeLen         = 16     // sizeof(struct rs_sge): addr u64, key u32, length u32
	protoVersion   = 1      // rs_conn_data.version; there is no negotiation
	flagNet        = 1 << 0 // RS_CONN_FLAG_NET: the sender is big-endian
	flagIOMap      = 1 << 1 // RS_CONN_FLAG_IOMAP: always set
	sglSize        = 2      // RS_SGL_SIZE: entries of the target SGL
	sndLowat       = 2048   // RS_SNDLOWAT: least free send buffer for a send
	olapStartSize  = 2048   // RS_OLAP_START_SIZE: the first chunk of a send
	maxTransfer    = 65536  // RS_MAX_TRANSFER: chunks double up to this
	qpMinSize      = 16     // RS_QP_MIN_SIZE
	qpMaxSize      = 0xFFFE
	qpCtrlSize     = 4       // RS_QP_CTRL_SIZE: control messages in flight
	defaultQPSize  = 384     // def_sqsize, def_rqsize
	defaultBufSize = 1 << 17 // def_mem, def_wmem: 128 KiB
	defaultInline  = 64      // def_inline
	// defaultPollTime is rsocket.c's polling_time default.
	defaultPollTime = 10 * time.Microsecond
	maxImmData      = 1<<29 - 1
)

// Ops in the immediate's bits 31-29 (rsocket.c, RS_OP_*); the payload is
// bits 28-0.
const (
	opData     = 0 // payload: bytes written
	opWrite    = 2 // never on the wire (riowrite's local completion)
	opSGL      = 4 // payload: the new credit limit (a 16-bit sequence number)
	opIOMapSGL = 6 // payload: an iomap index
	opCtrl     = 7 // payload: ctrlDisconnect, ctrlKeepalive, ctrlShutdown
)

// Control messages (RS_CTRL_*).
const (
	ctrlDisconnect = 0
	ctrlKeepalive  = 1
	ctrlShutdown   = 2
)

func msgSet(op, data uint32) uint32 { return op<<29 | data&maxImmData }
func msgOp(imm uint32) uint32       { return imm >> 29 }
func msgData(imm uint32) uint32     { return imm & maxImmData }

// Errors a peer can cause.
var (
	// ErrVersion is a peer whose rs_conn_data version is not 1.
	ErrVersion = errors.New("rsocket: peer speaks another rsockets version")
	// ErrProtocol is a peer that broke the protocol (a malformed
	// immediate, SGL or length); the connection is ended.
	ErrProtocol = errors.New("rsocket: protocol violation by the peer")
)

// sge is struct rs_sge: a remote buffer.
type sge struct {
	Addr   uint64
	Key    uint32
	Length uint32
}

// connData is struct rs_conn_data, built to be sent.
type connData struct {
	Version         uint8
	Flags           uint8
	Credits         uint16 // the sender's receive queue size
	TargetIOMapSize uint8  // scaled (rs_value_to_scale(n, 8))
	TargetSGL       sge    // where to write SGL updates; Length = entries
	DataBuf         sge    // the first half of the receive buffer
}

// marshal writes the 40 big-endian bytes (rsocket.c rs_format_conn_data);
// the reserved bytes are zero.
func (c *connData) marshal(b *[connDataLen]byte) {
	*b = [connDataLen]byte{}
	b[0], b[1] = c.Version, c.Flags
	binary.BigEndian.PutUint16(b[2:], c.Credits)
	b[7] = c.TargetIOMapSize
	putSGE(b[8:], c.TargetSGL, true)
	putSGE(b[24:], c.DataBuf, true)
}

// connDataView reads a peer's rs_conn_data (rs_save_conn_data).
type connDataView []byte

func (v connDataView) Version() uint8         { return v[0] }
func (v connDataView) Flags() uint8           { return v[1] }
func (v connDataView) Credits() uint16        { return binary.BigEndian.Uint16(v[2:]) }
func (v connDataView) TargetIOMapSize() uint8 { return v[7] }
func (v connDataView) TargetSGL() sge         { return getSGE(v[8:], true) }
func (v connDataView) DataBuf() sge           { return getSGE(v[24:], true) }

// parseConnData checks a peer's private data once: length, version (as
// rsocket.c: a version other than 1 is refused), and the values our side
// later relies on (at least one SGL entry and one credit, a data buffer
// of at least one byte). Reserved bytes are ignored.
func parseConnData(b []byte) (connDataView, error) {
	if len(b) < connDataLen {
		return nil, fmt.Errorf("%w: private data of %d bytes, want %d", ErrProtocol, len(b), connDataLen)
	}
	v := connDataView(b[:connDataLen])
	switch {
	case v.Version() != protoVersion:
		return nil, fmt.Errorf("%w: version %d, want %d", ErrVersion, v.Version(), protoVersion)
	case v.Credits() == 0:
		return nil, fmt.Errorf("%w: 0 credits", ErrProtocol)
	case v.TargetSGL().Length == 0 || v.TargetSGL().Length > 256:
		return nil, fmt.Errorf("%w: target SGL of %d entries", ErrProtocol, v.TargetSGL().Length)
	case v.DataBuf().Length == 0 || v.DataBuf().Length > 1<<30:
		return nil, fmt.Errorf("%w: data buffer of %d bytes", ErrProtocol, v.DataBuf().Length)
	case v.DataBuf().Addr+2*uint64(v.DataBuf().Length) < v.DataBuf().Addr:
		return nil, fmt.Errorf("%w: data buffer wraps the address space", ErrProtocol)
	}
	return v, nil
}

// putSGE and getSGE write and read an rs_sge in big-endian (bigEndian)
// or little-endian order; concrete calls keep b off the heap.
func putSGE(b []byte, s sge, bigEndian bool) {
	_ = b[sgeLen-1]
	if bigEndian {
		binary.BigEndian.PutUint64(b, s.Addr)
		binary.BigEndian.PutUint32(b[8:], s.Key)
		binary.BigEndian.PutUint32(b[12:], s.Length)
		return
	}
	binary.LittleEndian.PutUint64(b, s.Addr)
	binary.LittleEndian.PutUint32(b[8:], s.Key)
	binary.LittleEndian.PutUint32(b[12:], s.Length)
}

func getSGE(b []byte, bigEndian bool) sge {
	_ = b[sgeLen-1]
	if bigEndian {
		return sge{Addr: binary.BigEndian.Uint64(b), Key: binary.BigEndian.Uint32(b[8:]), Length: binary.BigEndian.Uint32(b[12:])}
	}
	return sge{Addr: binary.LittleEndian.Uint64(b), Key: binary.LittleEndian.Uint32(b[8:]), Length: binary.LittleEndian.Uint32(b[12:])}
}

// valueToScale and scaleToValue are rsocket.c's encoding of
// target_iomap_size in one byte: up to 128 as is, above in units of 256.
func valueToScale(value, bits int) int {
	if value <= 1<<(bits-1) {
		return value
	}
	return 1<<(bits-1) | value>>bits
}

func scaleToValue(value, bits int) int {
	if value <= 1<<(bits-1) {
		return value
	}
	return (value &^ (1 << (bits - 1))) << bits
}

// iomapLen is sizeof(struct rs_iomap): offset u64, then an rs_sge.
const iomapLen = 8 + sgeLen

// iomapEntry is struct rs_iomap: the peer's window at offset.
type iomapEntry struct {
	Offset uint64
	SGE    sge
}

func putIOMap(b []byte, e iomapEntry, bigEndian bool) {
	_ = b[iomapLen-1]
	if bigEndian {
		binary.BigEndian.PutUint64(b, e.Offset)
	} else {
		binary.LittleEndian.PutUint64(b, e.Offset)
	}
	putSGE(b[8:], e.SGE, bigEndian)
}

func getIOMap(b []byte, bigEndian bool) iomapEntry {
	_ = b[iomapLen-1]
	off := binary.LittleEndian.Uint64(b)
	if bigEndian {
		off = binary.BigEndian.Uint64(b)
	}
	return iomapEntry{Offset: off, SGE: getSGE(b[8:], bigEndian)}
}

// hostBigEndian is rs_host_is_net(): the NET flag this host sends.
var hostBigEndian = binary.NativeEndian.Uint16([]byte{0, 1}) == 1

// errConnReset is the error of a connection the transport lost, or of a
// send on one that can no longer send. It unwraps to syscall.ECONNRESET,
// which rsocket.c's rsend and riowrite set there (as cm's RejectError
// does to ECONNREFUSED), and matches rdma.ErrDisconnected.
var errConnReset error = connReset{}

type connReset struct{}

func (connReset) Error() string        { return "connection reset" }
func (connReset) Unwrap() error        { return syscall.ECONNRESET }
func (connReset) Is(target error) bool { return target == rdma.ErrDisconnected }
