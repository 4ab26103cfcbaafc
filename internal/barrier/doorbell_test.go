package barrier

import (
	"bytes"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"
)

// TestDoorbellWC checks post_send_db's stores: the doorbell record, and
// the copy of both parts of a source that wraps, nothing past it. Where
// the fences fall among them is checked on the executed instructions,
// against libmlx5's (internal/mlx5sim TestFences), and which fences the
// assembly holds by TestBarrierInstructions.
func TestDoorbellWC(t *testing.T) {
	for _, c := range []struct {
		name   string
		n1, n2 int
	}{{"doorbell", 8, 0}, {"bf64", 64, 0}, {"bf256", 256, 0}, {"bf wrapping", 64, 128}} {
		t.Run(c.name, func(t *testing.T) {
			src := make([]uint64, 64) // 512 bytes: part 1 from offset 256, part 2 from 0
			for i := range src {
				src[i] = 0x0101010101010101 * uint64(i+1)
			}
			srcB := unsafe.Slice((*byte)(unsafe.Pointer(&src[0])), 512)
			dst := make([]uint64, 64)
			dstB := unsafe.Slice((*byte)(unsafe.Pointer(&dst[0])), 512)
			var rec uint32
			want := append(append([]byte(nil), srcB[256:256+c.n1]...), srcB[:c.n2]...)
			n := c.n1 + c.n2
			DoorbellWC(&rec, 0x12345678, unsafe.Pointer(&dst[0]), unsafe.Pointer(&srcB[256]), uintptr(c.n1),
				unsafe.Pointer(&srcB[0]), uintptr(c.n2))
			if rec != 0x12345678 {
				t.Errorf("record %#x, want 0x12345678", rec)
			}
			if !bytes.Equal(dstB[:n], want) || !bytes.Equal(dstB[n:], make([]byte, 512-n)) {
				t.Errorf("copy: dst %x, want %x then zeros", dstB[:n], want)
			}
		})
	}
}

func TestDoorbellWCUnlock(t *testing.T) {
	var l SpinLock
	l.Lock()
	src := [8]uint64{1, 2, 3, 4, 5, 6, 7, 8}
	var dst [8]uint64
	var rec uint32
	DoorbellWCUnlock(&l, &rec, 7, unsafe.Pointer(&dst[0]), unsafe.Pointer(&src[0]), 64, unsafe.Pointer(&src[0]), 0)
	if dst != src || rec != 7 {
		t.Fatalf("dst %v rec %d", dst, rec)
	}
	// Unlocked: the lock word is 0 again, so the next Lock takes it at
	// once.
	if atomic.LoadUint32(&l.v) != 0 {
		t.Fatal("DoorbellWCUnlock left the lock held")
	}
}

func TestSpinLock(t *testing.T) {
	var l SpinLock
	var wg sync.WaitGroup
	n := 0
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				l.Lock()
				n++
				l.Unlock()
			}
		}()
	}
	wg.Wait()
	if n != 16000 {
		t.Fatalf("counter %d, want 16000", n)
	}
}

func TestStoreRelease32(t *testing.T) {
	var v uint32 = 1
	StoreRelease32(&v, 0xdeadbeef)
	if v != 0xdeadbeef {
		t.Fatalf("%#x", v)
	}
}
