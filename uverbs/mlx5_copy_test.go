package uverbs

import (
	"bytes"
	"testing"
	"unsafe"
)

// TestMLX5CopyInline checks both inline copies (copyInline32To64 for 32
// to 64 bytes, copyInline for any length) against copy at every length
// up to 80 and at unaligned source and destination offsets: every byte
// of the length is copied and none around it is written.
func TestMLX5CopyInline(t *testing.T) {
	src := make([]byte, 128)
	for i := range src {
		src[i] = byte(i*7 + 1)
	}
	for n := 0; n <= 80; n++ {
		for _, so := range []int{0, 1, 3, 8} {
			for _, do := range []int{0, 4, 5} {
				s := src[so : so+n]
				addr := uint64(uintptr(unsafe.Pointer(unsafe.SliceData(src)))) + uint64(so)
				want := bytes.Repeat([]byte{0xee}, 100)
				copy(want[do:], s)
				copies := map[string]func([]byte, uint64){"copyInline": copyInline}
				if wordCopyOK && n >= 32 && n <= 64 {
					copies["copyInline32To64"] = copyInline32To64
				}
				for name, f := range copies {
					got := bytes.Repeat([]byte{0xee}, 100)
					f(got[do:do+n], addr)
					if !bytes.Equal(got, want) {
						t.Fatalf("%s of %d bytes (source +%d, destination +%d):\n got %x\nwant %x", name, n, so, do, got, want)
					}
				}
			}
		}
	}
}
