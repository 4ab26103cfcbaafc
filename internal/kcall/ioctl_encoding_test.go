package kcall

import (
	"encoding/binary"
	"testing"

	"github.com/go-rdma/rdmacm/internal/abi"
)

func TestIoctlEncoding(t *testing.T) {
	c := NewIoctl(abi.UverbsObjectCQ, abi.UverbsMethodCQCreate, abi.RDMADriverRXE)
	c.IDR(abi.UverbsAttrCreateCQHandle, 0)
	c.U32(abi.UverbsAttrCreateCQCQE, 255)
	c.U64(abi.UverbsAttrCreateCQUserHandle, 0x0102030405060708)
	i := c.FD(abi.UverbsAttrCreateCQEventFD, -1)
	c.Optional(i)
	c.Const(9, 42)
	b := c.Encoded()
	ne := binary.NativeEndian
	if len(b) != 24+5*16 {
		t.Fatalf("length %d", len(b))
	}
	if ne.Uint16(b[0:]) != uint16(len(b)) || ne.Uint16(b[2:]) != 3 || ne.Uint16(b[4:]) != 0 || ne.Uint16(b[6:]) != 5 ||
		ne.Uint64(b[8:]) != 0 || ne.Uint32(b[16:]) != 14 || ne.Uint32(b[20:]) != 0 {
		t.Fatalf("header % x", b[:24])
	}
	attr := func(n int) []byte { return b[24+16*n : 40+16*n] }
	if a := attr(1); ne.Uint16(a[0:]) != 1 || ne.Uint16(a[2:]) != 4 || ne.Uint16(a[4:]) != abi.AttrFMandatory || ne.Uint32(a[8:]) != 255 || ne.Uint32(a[12:]) != 0 {
		t.Errorf("u32 attr % x", a)
	}
	if a := attr(2); ne.Uint16(a[2:]) != 8 || ne.Uint64(a[8:]) != 0x0102030405060708 {
		t.Errorf("u64 attr % x", a)
	}
	if a := attr(3); ne.Uint16(a[2:]) != 0 || ne.Uint16(a[4:]) != 0 || int64(ne.Uint64(a[8:])) != -1 {
		t.Errorf("optional fd attr % x", a)
	}
	if a := attr(4); ne.Uint16(a[2:]) != 8 || ne.Uint64(a[8:]) != 42 {
		t.Errorf("const attr % x", a)
	}
	// A pointer attribute longer than 8 bytes carries the address of a
	// copy taken by In (in the scratch page, on Linux) or of buf, pinned.
	buf := []byte("twenty bytes of caps")
	j := c.In(abi.UverbsAttrCreateQPCap, buf)
	got := make([]byte, 20)
	ReadMem(c.Data(j), got)
	if string(got) != string(buf) || c.attrs[j].Len != 20 {
		t.Errorf("ptr attr %+v: % x", c.attrs[j], got)
	}
	// An output reaches its buffer when the call finishes; the bytes the
	// kernel did not write keep their value.
	out := []byte("0123456789abcdef")
	k := c.Out(abi.UverbsAttrCreateQPRespCap, out)
	WriteMem(c.Data(k), []byte("KERNEL"))
	c.finish()
	if string(out) != "KERNEL6789abcdef" {
		t.Errorf("out buffer %q", out)
	}
}
