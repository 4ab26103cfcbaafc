package abi

import (
	"encoding/binary"
	"unsafe"
)

// Every uverbs, rxe and mlx5 struct in this package is a Go struct with an
// explicit layout: fixed-size fields only, every gap spelled out as a
// padding field, and offsets equal to those of the C struct on every LP64
// Linux target (layout_test.go compares them with gcc's). The kernel ABI is
// host-endian, so the struct's own memory is its encoding: Bytes and Decode
// copy it without any byte swapping, which is right on big-endian hosts
// (s390x, ppc64) as well. Fields declared __be* in C are documented as such
// and carried as raw bytes or swapped by the caller.

// Native is the host byte order, the order of every uverbs field not
// declared __be*.
var Native = binary.NativeEndian

// Bytes returns the memory of *p as a byte slice (its ABI encoding). The
// slice aliases *p.
func Bytes[T any](p *T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(p)), unsafe.Sizeof(*p))
}

// Decode copies the ABI encoding in b into a T. A short b fills the prefix
// and leaves the rest zero, as the kernel does for shorter responses; it
// never reads past b.
func Decode[T any](b []byte) T {
	var v T
	copy(Bytes(&v), b)
	return v
}

// SliceBytes views a slice of ABI structs as bytes (their encoding); the
// result aliases s.
func SliceBytes[T any](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}

// Ptr turns a pointer into the u64 the ABI carries. The caller must keep
// the memory alive and unmoved until the kernel is done with it (a
// runtime.Pinner, or memory outside the Go heap).
func Ptr(p unsafe.Pointer) uint64 { return uint64(uintptr(p)) }

// SlicePtr is Ptr for the first byte of b, 0 for an empty slice.
func SlicePtr(b []byte) uint64 {
	if len(b) == 0 {
		return 0
	}
	return Ptr(unsafe.Pointer(&b[0]))
}

// InlineU32 returns the u64 whose memory starts with the four native bytes
// of v: how an inline 4-byte ioctl attribute is carried in
// ib_uverbs_attr.data (the kernel memcpys len bytes from the start of the
// field). On big-endian hosts this is v<<32, not uint64(v).
func InlineU32(v uint32) uint64 {
	var b [8]byte
	Native.PutUint32(b[:4], v)
	return Native.Uint64(b[:])
}

// InlineBytes packs up to 8 payload bytes into an attribute data word the
// way the kernel reads them back (memcpy from the start of the field).
func InlineBytes(p []byte) uint64 {
	var b [8]byte
	copy(b[:], p)
	return Native.Uint64(b[:])
}
