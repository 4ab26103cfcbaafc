package kcall

import (
	"testing"
	"unsafe"

	"github.com/go-rdma/rdmacm/internal/abi"
)

// The kernel reads a ucma write's header first and the command right
// after it.
func TestUcmaMsgLayout(t *testing.T) {
	if off := unsafe.Offsetof(ucmaMsg[abi.UcmaEventResp]{}.hdr); off != 0 {
		t.Errorf("ucmaMsg.hdr at %d, want 0", off)
	}
	if off := unsafe.Offsetof(ucmaMsg[abi.UcmaEventResp]{}.body); off != abi.SizeofUcmaCmdHdr {
		t.Errorf("ucmaMsg.body at %d, want %d", off, abi.SizeofUcmaCmdHdr)
	}
}
