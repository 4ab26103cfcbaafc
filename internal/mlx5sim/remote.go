//go:build linux

package mlx5sim

import (
	"encoding/binary"
	"fmt"
	"os"
	"sync"
	"unsafe"

	"github.com/go-rdma/rdmacm/internal/abi"
	"github.com/go-rdma/rdmacm/internal/kcall"
	"golang.org/x/sys/unix"
)

// unsafe: as install.go, the device's answers are by address.

// Remote is the Go side's client of the shim protocol (README section 3):
// the device runs in another process (RunChild's), which reads and writes
// this one's memory with process_vm_readv/writev, exactly as for the C
// side. It is how the Go side runs under qemu-user with c/fenceplugin.c:
// the plugin blocks the thread that is about to execute a barrier until
// the device has replied, which an in-process device could only do from
// another thread of the same runtime (a stop-the-world would then wait
// for the blocked thread forever).
type Remote struct {
	mu   sync.Mutex
	fd   int
	ctxs map[int]bool // fds with a context: a new GET_CONTEXT on one is a reopened number
	maps map[uintptr]int
	mem  Mem
}

// remoteFDMin keeps the socket out of the fd numbers the provider sees,
// as the shim does.
const remoteFDMin = 900

// DialRemote connects to the device's socket at path (MLX5SIM_SOCK).
func DialRemote(path string) (*Remote, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("mlx5sim: socket: %w", err)
	}
	if err := unix.Connect(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("mlx5sim: connect to the device: %w", err)
	}
	hi, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, remoteFDMin)
	unix.Close(fd)
	if err != nil {
		return nil, fmt.Errorf("mlx5sim: move the device socket: %w", err)
	}
	return &Remote{fd: hi, ctxs: map[int]bool{}, maps: map[uintptr]int{}, mem: SelfMem()}, nil
}

// Close closes the connection.
func (r *Remote) Close() error { return unix.Close(r.fd) }

func (r *Remote) io(b []byte, write bool) error {
	for len(b) > 0 {
		var n int
		var err error
		if write {
			n, err = unix.Write(r.fd, b)
		} else {
			n, err = unix.Read(r.fd, b)
		}
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("mlx5sim: the device closed the connection")
		}
		b = b[n:]
	}
	return nil
}

// call sends one request and returns the reply; a lost device is fatal
// to the run (as in the shim, which answers EIO).
func (r *Remote) call(q simReq, text string) (ret int64, errno unix.Errno, usedSpare bool) {
	var b [reqSize]byte
	n := binary.NativeEndian
	q.Len = uint32(len(text))
	q.Pid = uint64(os.Getpid())
	n.PutUint32(b[0:], q.Kind)
	n.PutUint32(b[4:], uint32(q.FD))
	n.PutUint32(b[8:], uint32(q.SpareFD))
	n.PutUint32(b[12:], q.Len)
	n.PutUint64(b[16:], q.A0)
	n.PutUint64(b[24:], q.A1)
	n.PutUint64(b[32:], q.A2)
	n.PutUint64(b[40:], q.A3)
	n.PutUint64(b[48:], q.Pid)
	var rep [repSize]byte
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.io(append(b[:], text...), true); err != nil {
		return -1, unix.EIO, false
	}
	if err := r.io(rep[:], false); err != nil {
		return -1, unix.EIO, false
	}
	return int64(n.Uint64(rep[0:])), unix.Errno(n.Uint32(rep[8:])), n.Uint32(rep[12:]) == 1
}

// withSpare forwards a call that may create an fd, lending the device an
// eventfd as the shim does.
func (r *Remote) withSpare(q simReq) (int64, unix.Errno) {
	spare, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		spare = -1
	}
	q.SpareFD = int32(spare)
	ret, e, used := r.call(q, "")
	if spare >= 0 && !used {
		unix.Close(spare)
	}
	return ret, e
}

// Install makes the remote device answer this process's uverbs calls
// (kcall.SetTestDevice), as Device.Install does in-process.
func (r *Remote) Install() (restore func()) { return kcall.SetTestDevice(remoteSeam{r}) }

type remoteSeam struct{ r *Remote }

// reopened tells the device that fd's number was closed and reused (a
// close(2) the seam does not see), before a GET_CONTEXT on an fd that
// already has a context; a failed GET_CONTEXT leaves none, and its retry
// goes to the same context, as in Device.Install's seam.
func (s remoteSeam) reopened(fd int) {
	s.r.mu.Lock()
	had := s.r.ctxs[fd]
	delete(s.r.ctxs, fd)
	s.r.mu.Unlock()
	if had {
		s.r.call(simReq{Kind: kindClose, FD: int32(fd), SpareFD: -1}, "")
	}
}

// gotContext notes that a GET_CONTEXT on fd succeeded.
func (s remoteSeam) gotContext(fd int) {
	s.r.mu.Lock()
	s.r.ctxs[fd] = true
	s.r.mu.Unlock()
}

func (s remoteSeam) Ioctl(fd int, req uintptr, arg uintptr) (bool, error) {
	if !IsUverbsFD(fd) {
		return false, nil
	}
	var h [24]byte
	getCtx := uint64(req) == abi.RDMAVerbsIoctl && s.r.mem.Read(uint64(arg), h[:]) == nil && abi.Native.Uint16(h[2:]) == 0 && abi.Native.Uint16(h[4:]) == abi.UverbsMethodGetContext
	if getCtx {
		s.reopened(fd)
	}
	_, e := s.r.withSpare(simReq{Kind: kindIoctl, FD: int32(fd), A0: uint64(req), A1: uint64(arg)})
	if getCtx && e == 0 {
		s.gotContext(fd)
	}
	return true, errOf(e)
}

func (s remoteSeam) Write(fd int, p uintptr, n int) (bool, int, error) {
	if !IsUverbsFD(fd) {
		return false, 0, nil
	}
	var h [4]byte
	getCtx := n >= 8 && s.r.mem.Read(uint64(p), h[:]) == nil && abi.Native.Uint32(h[:]) == abi.UverbsCmdGetContext
	if getCtx {
		s.reopened(fd)
	}
	ret, e := s.r.withSpare(simReq{Kind: kindWrite, FD: int32(fd), A0: uint64(p), A1: uint64(n)})
	if e != 0 {
		return true, 0, e
	}
	if getCtx {
		s.gotContext(fd)
	}
	return true, int(ret), nil
}

func (s remoteSeam) Mmap(fd int, offset int64, size int, prot, flags int) (bool, []byte, error) {
	if !IsUverbsFD(fd) {
		return false, nil, nil
	}
	if size <= 0 {
		return true, nil, unix.EINVAL
	}
	b, err := kcall.Mmap(-1, 0, size, prot|unix.PROT_READ, unix.MAP_SHARED|unix.MAP_ANONYMOUS)
	if err != nil {
		return true, nil, err
	}
	addr := uintptr(unsafe.Pointer(&b[0]))
	_, e, _ := s.r.call(simReq{Kind: kindMmap, FD: int32(fd), SpareFD: -1, A0: uint64(addr), A1: uint64(size), A2: uint64(offset), A3: uint64(uint32(prot))}, "")
	if e != 0 {
		rawMunmap(addr, size)
		return true, nil, e
	}
	s.r.mu.Lock()
	s.r.maps[addr] = size
	s.r.mu.Unlock()
	return true, b, nil
}

func (s remoteSeam) Munmap(b []byte) (bool, error) {
	if len(b) == 0 {
		return false, nil
	}
	addr := uintptr(unsafe.Pointer(&b[0]))
	s.r.mu.Lock()
	n, ok := s.r.maps[addr]
	delete(s.r.maps, addr)
	s.r.mu.Unlock()
	if !ok {
		return false, nil
	}
	s.r.call(simReq{Kind: kindMunmap, FD: -1, SpareFD: -1, A0: uint64(addr), A1: uint64(len(b))}, "")
	if err := rawMunmap(addr, n); err != nil {
		return true, err
	}
	return true, nil
}

// Snapshot, Exec and Record are the scenario.Device of a Go interpreter
// whose device is remote (kinds 5, 6 and 8).

func (r *Remote) Snapshot(label string) {
	r.call(simReq{Kind: kindSnapshot, FD: -1, SpareFD: -1}, label)
}

func (r *Remote) Exec(line string) error {
	_, e, _ := r.call(simReq{Kind: kindExec, FD: -1, SpareFD: -1}, line)
	return errOf(e)
}

func (r *Remote) Record(line string) { r.call(simReq{Kind: kindRecord, FD: -1, SpareFD: -1}, line) }

// TraceWindow opens (true) or closes the calling thread's trace window
// for c/fenceplugin.c (a prctl the kernel fails with EINVAL; the caller
// has locked its OS thread).
func TraceWindow(open bool) {
	v := uintptr(0)
	if open {
		v = 1
	}
	unix.Syscall6(unix.SYS_PRCTL, prctlTrace, v, 0, 0, 0, 0) // fails (EINVAL) on the kernel; the plugin sees it first
}

// prctlTrace is SIM_PRCTL_TRACE (c/mlx5sim.h).
const prctlTrace = 0x6d6c7835
