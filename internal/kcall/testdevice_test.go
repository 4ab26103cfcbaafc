package kcall

import (
	"errors"
	"testing"

	"github.com/go-rdma/rdmacm/internal/abi"
	"github.com/go-rdma/rdmacm/internal/unix"
)

// fakeDevice answers only fd 1000 and records what reached it.
type fakeDevice struct {
	ioctls, writes, mmaps, munmaps int
	lastWrite                      []byte
	lastHdr                        abi.IoctlHdr
	page                           []byte
}

func (f *fakeDevice) Ioctl(fd int, req, arg uintptr) (bool, error) {
	if fd != 1000 {
		return false, nil
	}
	f.ioctls++
	var b [24]byte
	ReadMem(uint64(arg), b[:])
	f.lastHdr = abi.Decode[abi.IoctlHdr](b[:])
	return true, unix.EPROTONOSUPPORT
}

func (f *fakeDevice) Write(fd int, p uintptr, n int) (bool, int, error) {
	if fd != 1000 {
		return false, 0, nil
	}
	f.writes++
	f.lastWrite = make([]byte, n)
	ReadMem(uint64(p), f.lastWrite)
	return true, n, nil
}

func (f *fakeDevice) Mmap(fd int, offset int64, size int, prot, flags int) (bool, []byte, error) {
	if fd != 1000 {
		return false, nil, nil
	}
	f.mmaps++
	f.page = make([]byte, size)
	return true, f.page, nil
}

func (f *fakeDevice) Munmap(b []byte) (bool, error) {
	if len(f.page) == 0 || &b[0] != &f.page[0] {
		return false, nil
	}
	f.munmaps++
	return true, nil
}

func TestTestDeviceSeam(t *testing.T) {
	f := &fakeDevice{}
	restore := SetTestDevice(f)
	defer restore()

	call := NewIoctl(abi.UverbsObjectDevice, abi.UverbsMethodInvokeWrite, 7)
	call.Const(abi.UverbsAttrWriteCmd, 3)
	if err := call.Do(1000); !errors.Is(err, unix.EPROTONOSUPPORT) {
		t.Fatalf("Do through the seam: %v, want EPROTONOSUPPORT", err)
	}
	if f.lastHdr.ObjectID != abi.UverbsObjectDevice || f.lastHdr.MethodID != abi.UverbsMethodInvokeWrite || f.lastHdr.NumAttrs != 1 || f.lastHdr.DriverID != 7 {
		t.Fatalf("device saw header %+v", f.lastHdr)
	}
	if n, err := Write(1000, []byte{1, 2, 3}); err != nil || n != 3 || string(f.lastWrite) != "\x01\x02\x03" {
		t.Fatalf("Write through the seam: n=%d err=%v saw %x", n, err, f.lastWrite)
	}
	mem, err := Mmap(1000, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil || len(mem) != 4096 {
		t.Fatalf("Mmap through the seam: %d bytes, %v", len(mem), err)
	}
	WriteMem(uint64(abi.SlicePtr(mem)), []byte{9})
	if mem[0] != 9 {
		t.Fatalf("WriteMem did not reach the mapping")
	}
	if err := Munmap(mem); err != nil || f.munmaps != 1 {
		t.Fatalf("Munmap through the seam: %v, %d unmaps", err, f.munmaps)
	}
	// Other fds still reach the kernel: fd -1 fails with EBADF.
	if _, err := Write(-1, []byte{1}); !errors.Is(err, unix.EBADF) {
		t.Fatalf("unhandled fd: %v, want EBADF from the kernel", err)
	}
	restore()
	if _, err := Write(1000, []byte{1}); !errors.Is(err, unix.EBADF) {
		t.Fatalf("after restore: %v, want EBADF from the kernel", err)
	}
	if f.writes != 1 || f.ioctls != 1 || f.mmaps != 1 {
		t.Fatalf("counts: %d writes, %d ioctls, %d mmaps", f.writes, f.ioctls, f.mmaps)
	}
}
