//go:build linux

package mlx5sim

import (
	"errors"
	"os"

	"github.com/go-rdma/rdmacm/internal/kcall"
	"golang.org/x/sys/unix"
)

// Mem is the user memory the device reads and writes: its copy_from_user
// and copy_to_user. Errors make the command fail with EFAULT, as in the
// kernel.
type Mem interface {
	Read(addr uint64, b []byte) error
	Write(addr uint64, b []byte) error
}

// LocalMem is the memory of this process, accessed with plain loads and
// stores (kcall.ReadMem/WriteMem). A bad address crashes the process; use
// SelfMem where addresses are not trusted.
type LocalMem struct{}

func (LocalMem) Read(addr uint64, b []byte) error  { kcall.ReadMem(addr, b); return nil }
func (LocalMem) Write(addr uint64, b []byte) error { kcall.WriteMem(addr, b); return nil }

// ProcMem is the memory of process Pid, accessed with process_vm_readv and
// process_vm_writev (root, or the same process). A bad address is an
// error (EFAULT), never a crash.
type ProcMem struct{ Pid int }

// SelfMem is ProcMem on this process: the safe in-process Mem (used by
// Install and the fuzz tests).
func SelfMem() ProcMem { return ProcMem{Pid: os.Getpid()} }

func (m ProcMem) Read(addr uint64, b []byte) error {
	return m.xfer(addr, b, false)
}

func (m ProcMem) Write(addr uint64, b []byte) error {
	return m.xfer(addr, b, true)
}

func (m ProcMem) xfer(addr uint64, b []byte, write bool) error {
	for len(b) > 0 {
		local := []unix.Iovec{{Base: &b[0]}}
		local[0].SetLen(len(b))
		remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(b)}}
		var n int
		var err error
		if write {
			n, err = unix.ProcessVMWritev(m.Pid, local, remote, 0)
		} else {
			n, err = unix.ProcessVMReadv(m.Pid, local, remote, 0)
		}
		if errors.Is(err, unix.ENOSYS) {
			// qemu-user does not emulate process_vm_readv/writev.
			return m.xferProcFile(addr, b, write)
		}
		if err != nil {
			return err
		}
		if n <= 0 {
			return unix.EFAULT
		}
		b = b[n:]
		addr += uint64(n)
	}
	return nil
}
