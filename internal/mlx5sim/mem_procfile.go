//go:build linux

package mlx5sim

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// xferProcFile is ProcMem's transfer through /proc/PID/mem, where
// process_vm_readv/writev are not implemented: in our provider's arm64
// test binary under qemu-aarch64, whose guest addresses are qemu's host
// addresses (guest_base 0), so the file's offsets are the guest's. An
// unmapped address is EIO from the file, reported as EFAULT as
// process_vm_readv would. One difference remains: a write to a read-only
// mapping succeeds here (the file writes with FOLL_FORCE) where
// process_vm_writev fails with EFAULT.
func (m ProcMem) xferProcFile(addr uint64, b []byte, write bool) error {
	f, err := os.OpenFile(fmt.Sprintf("/proc/%d/mem", m.Pid), os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	off := int64(addr)
	if off < 0 {
		return unix.EFAULT
	}
	if write {
		_, err = f.WriteAt(b, off)
	} else {
		_, err = f.ReadAt(b, off)
	}
	if err != nil {
		return unix.EFAULT
	}
	return nil
}
