// Package pcap reads and writes classic libpcap capture files (the format
// of tcpdump -w; not pcapng): a 24-byte file header, then records of a
// 16-byte header and the captured bytes. The reader accepts both byte
// orders and both the microsecond (magic 0xa1b2c3d4) and nanosecond
// (0xa1b23c4d) variants; the writer writes little-endian microsecond files
// (or nanosecond ones with NewNanosecondWriter).
package pcap

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"
)

// LinkType is a pcap LINKTYPE_ value (tcpdump.org/linktypes.html).
type LinkType uint32

const (
	LinkTypeEthernet  LinkType = 1   // IEEE 802.3 Ethernet
	LinkTypeRaw       LinkType = 101 // raw IPv4 or IPv6
	LinkTypeLinuxSLL  LinkType = 113 // Linux cooked capture v1 (tcpdump -i any)
	LinkTypeLinuxSLL2 LinkType = 276 // Linux cooked capture v2
)

// MaxRecordLen caps a record's captured length: larger records are an
// error, not an allocation. It is also the snap length NewWriter uses
// (tcpdump's default).
const MaxRecordLen = 256 << 10

const (
	magicMicro = 0xa1b2c3d4
	magicNano  = 0xa1b23c4d
	magicNG    = 0x0a0d0d0a // pcapng section header block

	fileHeaderLen   = 24
	recordHeaderLen = 16
)

// Errors; they are wrapped with detail, match them with errors.Is.
var (
	// ErrNotPcap: the file does not start with a classic pcap magic.
	ErrNotPcap = errors.New("pcap: not a classic pcap file")
	// ErrTruncated: the file ends inside a header or a record.
	ErrTruncated = errors.New("pcap: truncated file")
	// ErrBadRecord: a record header is inconsistent (captured length above
	// the snap length, MaxRecordLen or the original length).
	ErrBadRecord = errors.New("pcap: bad record")
	// ErrTooLong: a packet to write is longer than MaxRecordLen.
	ErrTooLong = errors.New("pcap: packet too long")
)

// FileHeader is the pcap global header.
type FileHeader struct {
	ByteOrder    binary.ByteOrder
	Nanosecond   bool // timestamps have nanosecond resolution
	VersionMajor uint16
	VersionMinor uint16
	ThisZone     int32 // GMT offset in seconds; 0 in practice
	SigFigs      uint32
	SnapLen      uint32
	LinkType     LinkType
}

// Record is one captured packet.
type Record struct {
	Time time.Time
	// OrigLen is the packet's length on the wire; Data may be shorter
	// when the capture's snap length cut it.
	OrigLen int
	Data    []byte
}

// Reader reads records from a pcap stream.
type Reader struct {
	r     io.Reader
	hdr   FileHeader
	rec   [recordHeaderLen]byte
	buf   []byte
	count int
}

// NewReader reads and checks the file header.
func NewReader(r io.Reader) (*Reader, error) {
	var h [fileHeaderLen]byte
	if n, err := io.ReadFull(r, h[:]); err != nil {
		if err == io.EOF {
			return nil, fmt.Errorf("%w: empty input", ErrNotPcap)
		}
		if err == io.ErrUnexpectedEOF {
			return nil, fmt.Errorf("%w: %d-byte file header, want %d", ErrTruncated, n, fileHeaderLen)
		}
		return nil, fmt.Errorf("pcap: reading file header: %w", err)
	}
	var fh FileHeader
	switch magic := binary.LittleEndian.Uint32(h[:]); magic {
	case magicMicro:
		fh.ByteOrder = binary.LittleEndian
	case magicNano:
		fh.ByteOrder, fh.Nanosecond = binary.LittleEndian, true
	default:
		switch binary.BigEndian.Uint32(h[:]) {
		case magicMicro:
			fh.ByteOrder = binary.BigEndian
		case magicNano:
			fh.ByteOrder, fh.Nanosecond = binary.BigEndian, true
		case magicNG:
			return nil, fmt.Errorf("%w: this is pcapng (convert with: editcap -F pcap in.pcapng out.pcap)", ErrNotPcap)
		default:
			return nil, fmt.Errorf("%w: magic %#08x", ErrNotPcap, magic)
		}
	}
	bo := fh.ByteOrder
	fh.VersionMajor = bo.Uint16(h[4:])
	fh.VersionMinor = bo.Uint16(h[6:])
	fh.ThisZone = int32(bo.Uint32(h[8:]))
	fh.SigFigs = bo.Uint32(h[12:])
	fh.SnapLen = bo.Uint32(h[16:])
	// The top bits of the link-type word carry FCS information (pcap-savefile(5)).
	fh.LinkType = LinkType(bo.Uint32(h[20:]) & 0x0FFFFFFF)
	if fh.VersionMajor != 2 {
		return nil, fmt.Errorf("%w: version %d.%d", ErrNotPcap, fh.VersionMajor, fh.VersionMinor)
	}
	return &Reader{r: r, hdr: fh}, nil
}

// Header returns the file header.
func (r *Reader) Header() FileHeader { return r.hdr }

// LinkType returns the file's link type.
func (r *Reader) LinkType() LinkType { return r.hdr.LinkType }

// Next returns the next record, or io.EOF after the last one. Record.Data
// is only valid until the next call.
func (r *Reader) Next() (Record, error) {
	n, err := io.ReadFull(r.r, r.rec[:])
	switch {
	case err == io.EOF:
		return Record{}, io.EOF
	case err == io.ErrUnexpectedEOF:
		return Record{}, fmt.Errorf("%w: record %d header has %d of %d bytes", ErrTruncated, r.count+1, n, recordHeaderLen)
	case err != nil:
		return Record{}, fmt.Errorf("pcap: record %d: %w", r.count+1, err)
	}
	r.count++
	bo := r.hdr.ByteOrder
	sec := bo.Uint32(r.rec[0:])
	frac := bo.Uint32(r.rec[4:])
	capLen := bo.Uint32(r.rec[8:])
	origLen := bo.Uint32(r.rec[12:])
	switch {
	case capLen > MaxRecordLen:
		return Record{}, fmt.Errorf("%w: record %d captured length %d exceeds %d", ErrBadRecord, r.count, capLen, MaxRecordLen)
	case r.hdr.SnapLen != 0 && capLen > r.hdr.SnapLen:
		return Record{}, fmt.Errorf("%w: record %d captured length %d exceeds the snap length %d", ErrBadRecord, r.count, capLen, r.hdr.SnapLen)
	case capLen > origLen:
		return Record{}, fmt.Errorf("%w: record %d captured length %d exceeds its original length %d", ErrBadRecord, r.count, capLen, origLen)
	}
	if cap(r.buf) < int(capLen) {
		r.buf = make([]byte, capLen)
	}
	data := r.buf[:capLen]
	if n, err := io.ReadFull(r.r, data); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return Record{}, fmt.Errorf("%w: record %d has %d of %d bytes", ErrTruncated, r.count, n, capLen)
		}
		return Record{}, fmt.Errorf("pcap: record %d: %w", r.count, err)
	}
	nsec := int64(frac) * 1000
	if r.hdr.Nanosecond {
		nsec = int64(frac)
	}
	return Record{
		Time:    time.Unix(int64(sec), nsec).UTC(),
		OrigLen: int(origLen),
		Data:    data,
	}, nil
}

// Writer writes a pcap stream.
type Writer struct {
	w          io.Writer
	nanosecond bool
	buf        []byte
}

// NewWriter writes the header of a little-endian microsecond pcap file
// with snap length MaxRecordLen.
func NewWriter(w io.Writer, linkType LinkType) (*Writer, error) {
	return newWriter(w, linkType, false)
}

// NewNanosecondWriter is NewWriter for a file with nanosecond timestamps.
func NewNanosecondWriter(w io.Writer, linkType LinkType) (*Writer, error) {
	return newWriter(w, linkType, true)
}

func newWriter(w io.Writer, linkType LinkType, nanosecond bool) (*Writer, error) {
	magic := uint32(magicMicro)
	if nanosecond {
		magic = magicNano
	}
	h := make([]byte, 0, fileHeaderLen)
	h = binary.LittleEndian.AppendUint32(h, magic)
	h = binary.LittleEndian.AppendUint16(h, 2)
	h = binary.LittleEndian.AppendUint16(h, 4)
	h = binary.LittleEndian.AppendUint32(h, 0) // thiszone
	h = binary.LittleEndian.AppendUint32(h, 0) // sigfigs
	h = binary.LittleEndian.AppendUint32(h, MaxRecordLen)
	h = binary.LittleEndian.AppendUint32(h, uint32(linkType))
	if _, err := w.Write(h); err != nil {
		return nil, fmt.Errorf("pcap: writing file header: %w", err)
	}
	return &Writer{w: w, nanosecond: nanosecond}, nil
}

// WritePacket writes one record with the whole packet captured. Times
// before 1970 or after 2106 do not fit the format and are an error.
func (w *Writer) WritePacket(t time.Time, data []byte) error {
	if len(data) > MaxRecordLen {
		return fmt.Errorf("%w: %d bytes, the limit is %d", ErrTooLong, len(data), MaxRecordLen)
	}
	sec := t.Unix()
	if sec < 0 || sec > 1<<32-1 {
		return fmt.Errorf("pcap: time %v does not fit a 32-bit Unix time", t)
	}
	frac := uint32(t.Nanosecond())
	if !w.nanosecond {
		frac /= 1000
	}
	b := w.buf[:0]
	b = binary.LittleEndian.AppendUint32(b, uint32(sec))
	b = binary.LittleEndian.AppendUint32(b, frac)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(data)))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(data)))
	b = append(b, data...)
	w.buf = b
	if _, err := w.w.Write(b); err != nil {
		return fmt.Errorf("pcap: writing record: %w", err)
	}
	return nil
}
