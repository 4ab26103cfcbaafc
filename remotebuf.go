package rdmacm

import (
	"encoding/binary"
	"fmt"
)

// RemoteBufLen is the length of RemoteBuf's encoding.
const RemoteBufLen = 16

// RemoteBuf is registered memory of the peer, as RDMA WRITE and READ
// address it: the virtual address, the remote key and the length.
//
// It encodes to RemoteBufLen bytes, big-endian: Addr (8 bytes), RKey (4),
// Len (4), which fit in the private data of every CM message (56 bytes
// in a REQ of the TCP port space) and in any message.
type RemoteBuf struct {
	Addr uint64
	RKey uint32
	Len  uint32
}

// AppendBinary appends r's 16-byte encoding to b.
func (r RemoteBuf) AppendBinary(b []byte) ([]byte, error) {
	b = binary.BigEndian.AppendUint64(b, r.Addr)
	b = binary.BigEndian.AppendUint32(b, r.RKey)
	return binary.BigEndian.AppendUint32(b, r.Len), nil
}

// MarshalBinary returns r's 16-byte encoding.
func (r RemoteBuf) MarshalBinary() ([]byte, error) {
	return r.AppendBinary(make([]byte, 0, RemoteBufLen))
}

// UnmarshalBinary decodes exactly RemoteBufLen bytes; shorter or longer
// input is an error matching ErrInvalidArgument. Private data received
// in CM events is zero-padded to the whole CM field: decode it with
// DecodeRemoteBuf.
func (r *RemoteBuf) UnmarshalBinary(b []byte) error {
	if len(b) != RemoteBufLen {
		return fmt.Errorf("rdmacm: remote buffer: %d bytes, want %d: %w", len(b), RemoteBufLen, ErrInvalidArgument)
	}
	*r, _, _ = DecodeRemoteBuf(b)
	return nil
}

// DecodeRemoteBuf decodes a RemoteBuf from the start of b and returns the
// bytes after it; fewer than RemoteBufLen bytes is an error matching
// ErrInvalidArgument.
func DecodeRemoteBuf(b []byte) (RemoteBuf, []byte, error) {
	if len(b) < RemoteBufLen {
		return RemoteBuf{}, b, fmt.Errorf("rdmacm: remote buffer: %d bytes, want %d: %w", len(b), RemoteBufLen, ErrInvalidArgument)
	}
	return RemoteBuf{
		Addr: binary.BigEndian.Uint64(b),
		RKey: binary.BigEndian.Uint32(b[8:]),
		Len:  binary.BigEndian.Uint32(b[12:]),
	}, b[RemoteBufLen:], nil
}

// Slice returns the n bytes of r from offset off, or false if they do not
// fit in r.
func (r RemoteBuf) Slice(off, n uint32) (RemoteBuf, bool) {
	if off > r.Len || n > r.Len-off {
		return RemoteBuf{}, false
	}
	return RemoteBuf{Addr: r.Addr + uint64(off), RKey: r.RKey, Len: n}, true
}

func (r RemoteBuf) String() string {
	return fmt.Sprintf("addr=%#x rkey=%#x len=%d", r.Addr, r.RKey, r.Len)
}
