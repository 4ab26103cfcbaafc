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
