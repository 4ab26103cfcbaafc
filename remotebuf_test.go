package rdmacm

import (
	"bytes"
	"errors"
	"testing"
)

func TestRemoteBufRoundTrip(t *testing.T) {
	for _, r := range []RemoteBuf{{}, {Addr: 0x7f00_1234_5000, RKey: 0xdeadbeef, Len: 1 << 20}, {Addr: ^uint64(0), RKey: ^uint32(0), Len: ^uint32(0)}} {
		b, err := r.MarshalBinary()
		if err != nil || len(b) != RemoteBufLen {
			t.Fatalf("%v: %x, %v", r, b, err)
		}
		var got RemoteBuf
		if err := got.UnmarshalBinary(b); err != nil || got != r {
			t.Fatalf("round trip %v: got %v, %v", r, got, err)
		}
		// Private data arrives zero-padded to the CM field.
		padded := append(b, make([]byte, 40)...)
		got, rest, err := DecodeRemoteBuf(padded)
		if err != nil || got != r || len(rest) != 40 {
			t.Fatalf("decode padded %v: got %v rest %d, %v", r, got, len(rest), err)
		}
	}
	b, _ := RemoteBuf{Addr: 0x0102030405060708, RKey: 0x090a0b0c, Len: 0x0d0e0f10}.MarshalBinary()
	if want := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}; !bytes.Equal(b, want) {
		t.Fatalf("encoding %x, want %x (big-endian Addr, RKey, Len)", b, want)
	}
	a, _ := (RemoteBuf{Len: 1}).AppendBinary([]byte("x"))
	if len(a) != 17 || a[0] != 'x' {
		t.Fatalf("AppendBinary: %x", a)
	}
}

func TestRemoteBufErrors(t *testing.T) {
	var r RemoteBuf
	for _, n := range []int{0, 1, 15, 17, 56} {
		if err := r.UnmarshalBinary(make([]byte, n)); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("UnmarshalBinary(%d bytes) = %v, want ErrInvalidArgument", n, err)
		}
	}
	for _, n := range []int{0, 15} {
		if _, _, err := DecodeRemoteBuf(make([]byte, n)); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("DecodeRemoteBuf(%d bytes) = %v, want ErrInvalidArgument", n, err)
		}
	}
}

func TestRemoteBufSlice(t *testing.T) {
	r := RemoteBuf{Addr: 1000, RKey: 7, Len: 100}
	if s, ok := r.Slice(10, 90); !ok || s != (RemoteBuf{Addr: 1010, RKey: 7, Len: 90}) {
		t.Fatalf("Slice(10, 90) = %v, %v", s, ok)
	}
	for _, c := range [][2]uint32{{0, 101}, {101, 0}, {50, 51}, {1, ^uint32(0)}} {
		if _, ok := r.Slice(c[0], c[1]); ok {
			t.Errorf("Slice(%d, %d) fits", c[0], c[1])
		}
	}
}

func FuzzRemoteBuf(f *testing.F) {
	f.Add([]byte{})
	f.Add(make([]byte, 16))
	f.Add(bytes.Repeat([]byte{0xff}, 56))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, rest, err := DecodeRemoteBuf(b)
		if len(b) < RemoteBufLen {
			if err == nil {
				t.Fatal("short input decoded")
			}
			return
		}
		if err != nil || len(rest) != len(b)-RemoteBufLen {
			t.Fatalf("decode: %v, rest %d", err, len(rest))
		}
		enc, _ := r.MarshalBinary()
		if !bytes.Equal(enc, b[:RemoteBufLen]) {
			t.Fatalf("re-encoding %x != %x", enc, b[:RemoteBufLen])
		}
		var u RemoteBuf
		if err := u.UnmarshalBinary(b); (err == nil) != (len(b) == RemoteBufLen) || (err == nil && u != r) {
			t.Fatalf("UnmarshalBinary(%d bytes) = %v, %v", len(b), u, err)
		}
	})
}
