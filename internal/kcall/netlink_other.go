//go:build !linux

package kcall

import "github.com/go-rdma/rdmacm/internal/unix"

// NetlinkSocket fails: netlink is Linux's.
func NetlinkSocket(proto int) (fd int, pid uint32, err error) { return -1, 0, unix.ErrNotSupported }

// NetlinkSendToKernel fails.
func NetlinkSendToKernel(fd int, msg []byte) error { return unix.ErrNotSupported }

// NetlinkRecv fails.
func NetlinkRecv(fd int, buf []byte, flags int) (n int, fromPid uint32, err error) {
	return 0, 0, unix.ErrNotSupported
}
