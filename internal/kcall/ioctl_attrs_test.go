package kcall

import (
	"errors"
	"syscall"
	"testing"
	"unsafe"

	"github.com/go-rdma/rdmacm/internal/abi"
)

// TestIoctlTooManyAttrs: a call built with more attributes than the
// array holds never writes or encodes past it, and refuses to run.
func TestIoctlTooManyAttrs(t *testing.T) {
	c := NewIoctl(1, 2, 0)
	for i := range IoctlMaxAttrs + 3 {
		c.U64(uint16(i), uint64(i))
	}
	if got, want := len(c.Encoded()), int(unsafe.Sizeof(abi.IoctlHdr{}))+IoctlMaxAttrs*int(unsafe.Sizeof(abi.IoctlAttr{})); got != want {
		t.Errorf("encoded %d bytes, want %d (the whole array, no more)", got, want)
	}
	if err := c.Do(-1); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("Do with %d attributes: %v, want EINVAL", IoctlMaxAttrs+3, err)
	}
	ok := NewIoctl(1, 2, 0)
	for i := range IoctlMaxAttrs {
		ok.U64(uint16(i), uint64(i))
	}
	if ok.tooManyAttrs() {
		t.Errorf("%d attributes refused; the array holds them", IoctlMaxAttrs)
	}
	if got := ok.attrs[IoctlMaxAttrs-1].AttrID; got != IoctlMaxAttrs-1 {
		t.Errorf("last attribute id %d, want %d", got, IoctlMaxAttrs-1)
	}
}

// TestIoctlTooManyOutputs: outputs past the array neither panic nor run.
func TestIoctlTooManyOutputs(t *testing.T) {
	c := NewIoctl(1, 2, 0)
	bufs := make([][16]byte, IoctlMaxAttrs+2)
	for i := range bufs {
		c.Out(uint16(i), bufs[i][:])
	}
	if err := c.Do(-1); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("Do with %d outputs: %v, want EINVAL", len(bufs), err)
	}
}
