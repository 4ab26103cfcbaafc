//go:build linux

package cm

import (
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/go-rdma/rdmacm/internal/abi"
	"github.com/go-rdma/rdmacm/internal/kcall"
	"github.com/go-rdma/rdmacm/rdma"
)

// ucmaCostDevice answers CREATE_ID and DESTROY_ID on one fd in place of
// the rdma_cm device, at once and without recording: with it the kernel
// backend's user-space side of cmtime's create id and destroy steps runs
// on the host, where its instructions can be counted
// (BenchmarkKernelIDUserCost).
type ucmaCostDevice struct {
	ucmaOnly
	fd   int
	next uint32
	buf  [64]byte
}

func (d *ucmaCostDevice) Write(fd int, p uintptr, n int) (bool, int, error) {
	if fd != d.fd || n > len(d.buf) || n < abi.SizeofUcmaCmdHdr+8 {
		return false, 0, nil
	}
	b := d.buf[:n]
	kcall.ReadMem(uint64(p), b)
	cmd := binary.NativeEndian.Uint32(b)
	body := b[abi.SizeofUcmaCmdHdr:]
	var resp [8]byte
	switch cmd {
	case abi.UcmaCmdCreateID: // response pointer after the 8-byte uid
		d.next++
		binary.NativeEndian.PutUint32(resp[:], d.next)
		kcall.WriteMem(binary.NativeEndian.Uint64(body[8:]), resp[:4])
	case abi.UcmaCmdDestroyID: // response pointer first
		kcall.WriteMem(binary.NativeEndian.Uint64(body), resp[:4])
	}
	return true, n, nil
}

// BenchmarkKernelIDUserCost creates 200 IDs and destroys them, as
// cmtime's create id and destroy steps, on the kernel backend over
// ucmaCostDevice; per ID. Count its instructions with callgrind:
//
//	go test -c -o /tmp/cm.test ./cm/
//	GODEBUG=asyncpreemptoff=1 GOMAXPROCS=1 valgrind --tool=callgrind /tmp/cm.test -test.run '^$' -test.bench KernelIDUserCost -test.benchtime 2000x
func BenchmarkKernelIDUserCost(b *testing.B) {
	c := ucmaCostChannel(b)
	ids := make([]*ID, 200)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		j := i % len(ids)
		var err error
		if ids[j], err = c.CreateID(rdma.PortSpaceTCP, nil); err != nil {
			b.Fatal(err)
		}
		if j == len(ids)-1 || i == b.N-1 {
			for _, id := range ids[:j+1] {
				if err := id.Destroy(); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
}

// TestKernelIDAllocs bounds the heap allocations of an ID's create and
// destroy on the kernel backend: the ID only. The CREATE_ID command
// stays off the heap because the ucma calls are not inlined into this
// package (kcall.UcmaCreateIDCall).
func TestKernelIDAllocs(t *testing.T) {
	c := ucmaCostChannel(t)
	got := testing.AllocsPerRun(100, func() {
		id, err := c.CreateID(rdma.PortSpaceTCP, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := id.Destroy(); err != nil {
			t.Fatal(err)
		}
	})
	if got > 1 {
		t.Errorf("kernel backend ID create+destroy: %v allocations, want at most 1", got)
	}
}

// ucmaCostChannel is a channel on the kernel backend over a
// ucmaCostDevice, closed when the test ends.
func ucmaCostChannel(t testing.TB) *Channel {
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fds[1]) })
	k, err := openUcma("fake-rdma_cm", func(string, int, uint32) (int, error) { return fds[0], nil })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kcall.SetTestDevice(&ucmaCostDevice{fd: fds[0]}))
	c := newChannel(k)
	t.Cleanup(func() { c.Close() })
	return c
}
