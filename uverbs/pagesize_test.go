//go:build linux

package uverbs

import (
	"errors"
	"testing"

	"github.com/go-rdma/rdmacm/internal/abi"
	"github.com/go-rdma/rdmacm/internal/kcall"
	"golang.org/x/sys/unix"
)

// pageKernel is a test device that handles no call and says the kernel's
// pages are n bytes (an arm64 kernel with 16 KiB or 64 KiB pages).
type pageKernel struct{ n int }

func (pageKernel) Ioctl(int, uintptr, uintptr) (bool, error)  { return false, nil }
func (pageKernel) Write(int, uintptr, int) (bool, int, error) { return false, 0, nil }
func (pageKernel) Mmap(int, int64, int, int, int) (bool, []byte, error) {
	return false, nil, nil
}
func (pageKernel) Munmap([]byte) (bool, error) { return false, nil }
func (k pageKernel) PageSize() int             { return k.n }

// TestPageSizeFromKernel checks that every page-size computation of the
// package follows the kernel's page size (kcall.PageSize), not 4 KiB nor
// the build's: the mlx5 context request's bfreg count, the rounding of
// buffers and of the provider's queue and doorbell-record memory, and
// the page-offset rule of IOVA registration.
func TestPageSizeFromKernel(t *testing.T) {
	for _, c := range []struct{ page, tot, lowLat int }{{4096, 16, 4}, {16384, 16, 4}, {65536, 32, 20}} {
		restore := kcall.SetTestDevice(pageKernel{c.page})
		p := &mlx5Provider{}
		ins, _ := p.contextData()
		req := abi.Decode[abi.MLX5AllocUcontextReqV2](ins[0])
		if p.pageSize != c.page || int(req.TotalNumBfregs) != c.tot || int(req.NumLowLatencyBfregs) != c.lowLat {
			t.Errorf("%d-byte pages: provider page %d, context asks %d bfregs (%d low latency), want %d (%d)",
				c.page, p.pageSize, req.TotalNumBfregs, req.NumLowLatencyBfregs, c.tot, c.lowLat)
		}
		mem, err := mmapAnon(100)
		if err != nil {
			t.Fatal(err)
		}
		if len(mem) != c.page {
			t.Errorf("%d-byte pages: mmapAnon(100) gave %d bytes", c.page, len(mem))
		}
		unix.Munmap(mem)
		b, err := AllocBuffer(100)
		if err != nil {
			t.Fatal(err)
		}
		if cap(b.mem) != c.page {
			t.Errorf("%d-byte pages: AllocBuffer(100) rounds to %d bytes", c.page, cap(b.mem))
		}
		// An IOVA 4 KiB off the address has another offset within a larger
		// page, which the kernel refuses: so do we, before any call.
		if c.page > 4096 {
			pd := &PD{ctx: &Context{dev: Device{Name: "page0"}}}
			if _, err := pd.RegMRIOVA(b, 0, 100, b.Addr()+4096, 0); !errors.Is(err, ErrInvalidArgument) {
				t.Errorf("%d-byte pages: IOVA 4 KiB past the address: %v, want ErrInvalidArgument", c.page, err)
			}
		}
		b.Close()
		restore()
	}
}

// TestDmabufNoIoctlFirst: on a kernel without the ioctl interface
// RegDmabufMR fails with ENOTTY before checking its arguments, as
// libibverbs' ioctl does, whatever the page size (an offset and IOVA 4
// KiB apart are fine with 4 KiB pages and not with 64 KiB ones; the
// simulated 64 KiB kernel showed ours answering EINVAL there).
func TestDmabufNoIoctlFirst(t *testing.T) {
	restore := kcall.SetTestDevice(pageKernel{65536})
	defer restore()
	pd := &PD{ctx: &Context{dev: Device{Name: "page0"}, prov: &mlx5Provider{}}}
	_, err := pd.RegDmabufMR(3, 0, 4096, 0x1000, 0)
	if !errors.Is(err, ErrNotSupported) || !errors.Is(err, unix.ENOTTY) {
		t.Fatalf("RegDmabufMR without the ioctl interface: %v, want ErrNotSupported and ENOTTY", err)
	}
}
