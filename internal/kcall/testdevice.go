package kcall

import (
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/go-rdma/rdmacm/internal/abi"
)

// TestDevice answers uverbs syscalls in place of the kernel. It is the
// seam through which tests run the real providers in-process against a
// simulated device (internal/mlx5sim); production code never installs
// one, and then every call below costs one atomic load.
//
// A method returns handled == false to pass the call on to the kernel.
// Errors are unix.Errno values, as the kernel returns them.
type TestDevice interface {
	// Ioctl answers ioctl(fd, req, arg); arg is the address of the
	// argument (for RDMA_VERBS_IOCTL, the ib_uverbs_ioctl_hdr).
	Ioctl(fd int, req uintptr, arg uintptr) (handled bool, err error)
	// Write answers write(fd, p, n).
	Write(fd int, p uintptr, n int) (handled bool, written int, err error)
	// Mmap answers mmap(NULL, size, prot, flags, fd, offset).
	Mmap(fd int, offset int64, size int, prot, flags int) (handled bool, mem []byte, err error)
	// Munmap answers munmap of a mapping Mmap returned.
	Munmap(b []byte) (handled bool, err error)
}

type testDeviceBox struct{ d TestDevice }

var testDevice atomic.Pointer[testDeviceBox]

// SetTestDevice installs d until restore is called. Only tests call it.
func SetTestDevice(d TestDevice) (restore func()) {
	old := testDevice.Swap(&testDeviceBox{d})
	return func() { testDevice.Store(old) }
}

// viaTestDevice hands the ioctl call c to the installed test device, if
// any; handled reports that it answered (Do then skips the kernel).
func (c *IoctlCall) viaTestDevice(fd int) (handled bool, err error) {
	d := currentTestDevice()
	if d == nil {
		return false, nil
	}
	handled, err = d.Ioctl(fd, abi.RDMAVerbsIoctl, uintptr(unsafe.Pointer(&c.hdr)))
	runtime.KeepAlive(c)
	return handled, err
}

func currentTestDevice() TestDevice {
	if b := testDevice.Load(); b != nil {
		return b.d
	}
	return nil
}

// ReadMem copies len(b) bytes from the raw address addr of this process
// into b. It is the simulated device's copy_from_user: the address came
// from a command the code under test built, so it points at live memory.
//
// Not inlined: inlined into a caller whose b is a fixed-size array, Go
// 1.26.8's SSA lowering panics in disjointTypes (nil-based pointer).
//
//go:noinline
func ReadMem(addr uint64, b []byte) {
	if len(b) == 0 {
		return
	}
	copy(b, unsafe.Slice((*byte)(rawPointer(addr)), len(b)))
}

// WriteMem copies b to the raw address addr of this process (the
// simulated device's copy_to_user). Not inlined, as ReadMem.
//
//go:noinline
func WriteMem(addr uint64, b []byte) {
	if len(b) == 0 {
		return
	}
	copy(unsafe.Slice((*byte)(rawPointer(addr)), len(b)), b)
}

// MemAt views n bytes at the raw address addr of this process: a
// simulated device's mapping (UAR pages) handed back from Mmap, or the
// memory of an inline send's SGE (registered or pinned by the caller).
func MemAt(addr uint64, n int) []byte {
	return unsafe.Slice((*byte)(rawPointer(addr)), n)
}

// rawPointer turns an address into a pointer by reinterpreting the
// word, not by arithmetic on nil: under -race (checkptr) pointer
// arithmetic from nil that lands in the Go heap is fatal, and the
// addresses here may be of heap memory the code under test pinned.
func rawPointer(addr uint64) unsafe.Pointer {
	a := uintptr(addr)
	return *(*unsafe.Pointer)(unsafe.Pointer(&a))
}
