package kcall

import (
	"unsafe"

	"github.com/go-rdma/rdmacm/internal/abi"
	"golang.org/x/sys/unix"
)

// UmadRegisterAgent2Call runs IB_USER_MAD_REGISTER_AGENT2 on fd. On
// success the kernel writes the agent ID into r.ID; on EINVAL with
// unsupported flags it writes the supported ones into r.Flags.
func UmadRegisterAgent2Call(fd int, r *abi.UmadRegReq2) error {
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), abi.UmadRegisterAgent2, uintptr(unsafe.Pointer(r)))
	if e != 0 {
		return e
	}
	return nil
}
