package abi

// Encoding tests that make no syscalls, so they also run under qemu-user on
// other architectures (arm64, and s390x, which is big-endian):
//   GOARCH=s390x go test -c -o abi.s390x ./internal/abi && qemu-s390x-static ./abi.s390x

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"testing"
)

// TestExplicitLayouts checks that every ABI struct spells its layout out:
// fixed-size fields only, no padding the compiler inserted, every 8-byte
// field 8-aligned and the size a multiple of 8 when it has one — the rules
// that make the Go layout the same on every 64-bit target.
func TestExplicitLayouts(t *testing.T) {
	var check func(typ reflect.Type) (align uintptr)
	check = func(typ reflect.Type) uintptr {
		switch typ.Kind() {
		case reflect.Uint8, reflect.Int8:
			return 1
		case reflect.Uint16, reflect.Int16:
			return 2
		case reflect.Uint32, reflect.Int32:
			return 4
		case reflect.Uint64, reflect.Int64:
			return 8
		case reflect.Array:
			return check(typ.Elem())
		case reflect.Struct:
			var sum, maxAlign uintptr = 0, 1
			for i := 0; i < typ.NumField(); i++ {
				f := typ.Field(i)
				a := check(f.Type)
				if f.Offset%a != 0 {
					t.Errorf("%s.%s at offset %d is not %d-aligned", typ.Name(), f.Name, f.Offset, a)
				}
				if f.Offset != sum {
					t.Errorf("%s.%s at offset %d: %d bytes of implicit padding before it", typ.Name(), f.Name, f.Offset, f.Offset-sum)
				}
				sum = f.Offset + f.Type.Size()
				maxAlign = max(maxAlign, a)
			}
			if sum != typ.Size() {
				t.Errorf("%s: %d bytes of implicit trailing padding", typ.Name(), typ.Size()-sum)
			}
			if typ.Size()%maxAlign != 0 {
				t.Errorf("%s: size %d not a multiple of its alignment %d", typ.Name(), typ.Size(), maxAlign)
			}
			return maxAlign
		}
		t.Errorf("%s: field kind %v has no fixed ABI size", typ, typ.Kind())
		return 1
	}
	for _, s := range uverbsStructs {
		check(reflect.TypeOf(s.v))
	}
}

func TestInlineU32IsNativeBytesAtStart(t *testing.T) {
	a := IoctlAttr{AttrID: 1, Len: 4, Data: InlineU32(0x11223344)}
	b := Bytes(&a)
	want := binary.NativeEndian.AppendUint32(nil, 0x11223344)
	if !bytes.Equal(b[8:12], want) || !bytes.Equal(b[12:16], []byte{0, 0, 0, 0}) {
		t.Fatalf("data bytes % x, want % x then zeros", b[8:16], want)
	}
	// On a big-endian host the u64 is not the plain value: the case a
	// uint64(v) conversion would get wrong.
	big := binary.NativeEndian.Uint16([]byte{0, 1}) == 1
	if got := InlineU32(7); big != (got != 7) {
		t.Fatalf("InlineU32(7) = %#x on a big-endian=%v host", got, big)
	}
	if got := InlineBytes([]byte{1, 2, 3}); !bytes.Equal(binary.NativeEndian.AppendUint64(nil, got)[:4], []byte{1, 2, 3, 0}) {
		t.Fatalf("InlineBytes: %#x", got)
	}
}

func TestIoctlEncoding(t *testing.T) {
	c := NewIoctl(UverbsObjectCQ, UverbsMethodCQCreate, RDMADriverRXE)
	c.IDR(UverbsAttrCreateCQHandle, 0)
	c.U32(UverbsAttrCreateCQCQE, 255)
	c.U64(UverbsAttrCreateCQUserHandle, 0x0102030405060708)
	i := c.FD(UverbsAttrCreateCQEventFD, -1)
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
	if a := attr(1); ne.Uint16(a[0:]) != 1 || ne.Uint16(a[2:]) != 4 || ne.Uint16(a[4:]) != AttrFMandatory || ne.Uint32(a[8:]) != 255 || ne.Uint32(a[12:]) != 0 {
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
	j := c.In(UverbsAttrCreateQPCap, buf)
	got := make([]byte, 20)
	ReadMem(c.Data(j), got)
	if string(got) != string(buf) || c.attrs[j].Len != 20 {
		t.Errorf("ptr attr %+v: % x", c.attrs[j], got)
	}
	// An output reaches its buffer when the call finishes; the bytes the
	// kernel did not write keep their value.
	out := []byte("0123456789abcdef")
	k := c.Out(UverbsAttrCreateQPRespCap, out)
	WriteMem(c.Data(k), []byte("KERNEL"))
	c.finish(true)
	if string(out) != "KERNEL6789abcdef" {
		t.Errorf("out buffer %q", out)
	}
}

func TestStructEncodingIsNative(t *testing.T) {
	q := UverbsCreateQP{Response: 0x1122334455667788, PDHandle: 7, SendCQHandle: 8, MaxInlineData: 64, QPType: UverbsQPTRC, SQSigAll: 1}
	b := Bytes(&q)
	ne := binary.NativeEndian
	if len(b) != 56 || ne.Uint64(b[0:]) != 0x1122334455667788 || ne.Uint32(b[16:]) != 7 || ne.Uint32(b[20:]) != 8 ||
		ne.Uint32(b[48:]) != 64 || b[52] != 1 || b[53] != 2 {
		t.Fatalf("create_qp bytes % x", b)
	}
	// Decode reads the same layout back, and a short buffer leaves the
	// tail zero.
	if got := Decode[UverbsCreateQP](b); got != q {
		t.Fatalf("round trip %+v", got)
	}
	if got := Decode[UverbsCreateQP](b[:20]); got.PDHandle != 7 || got.SendCQHandle != 0 {
		t.Fatalf("short decode %+v", got)
	}
	// The big-endian GID bytes of a WC's immediate stay in wire order.
	w := UverbsWC{ImmData: [4]byte{0xde, 0xad, 0xbe, 0xef}}
	if !bytes.Equal(Bytes(&w)[24:28], []byte{0xde, 0xad, 0xbe, 0xef}) {
		t.Fatal("imm_data moved")
	}
	var wqe RxeSendWQE
	ne.PutUint32(wqe.WR.WR[RxeWRUDAHNum-24:], 5)
	if ne.Uint32(Bytes(&wqe)[36:]) != 5 {
		t.Fatal("ud.ah_num offset")
	}
}
