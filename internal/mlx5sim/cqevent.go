//go:build linux

package mlx5sim

import (
	"encoding/binary"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// cqEvents is what the kernel keeps of a CQ for completion events: the
// channel fd (in the process that created the CQ; -1 for none), the
// user handle an event carries, and the events reported so far, which
// DESTROY_CQ returns (libibverbs waits until that many are acked).
type cqEvents struct {
	fd       int
	uhandle  uint64
	reported uint32
}

// notify runs the device-side line
//
//	notify CQ
//
// the HCA's completion event for an armed CQ: as ib_uverbs_comp_handler,
// it queues a struct ib_uverbs_comp_event_desc (the CQ's user handle) on
// the CQ's completion channel and counts it. The channel is the eventfd
// the device handed out, in the process whose memory mem is; an eventfd
// read returns the 8-byte count, so one write of the handle is one
// event, and the device refuses a second before the first was read
// (EBUSY), when the counter would add them up. Whether the CQ is armed
// is the scenario's business: the arm doorbells are in the snapshots.
func (d *Device) notify(mem Mem, name string) unix.Errno {
	cq := d.lookup("cq", name)
	if cq == nil {
		return unix.ENOENT
	}
	if cq.cqEv.fd < 0 {
		return unix.EINVAL
	}
	var b [8]byte
	binary.NativeEndian.PutUint64(b[:], cq.cqEv.uhandle)
	if err := writeEventFD(mem, cq.cqEv.fd, b[:]); err != nil {
		d.emit(fmt.Sprintf("  event %s: %v", cq.name, err))
		if e, ok := err.(unix.Errno); ok {
			return e
		}
		return unix.EIO
	}
	cq.cqEv.reported++
	d.emit(fmt.Sprintf("  event %s channel=%s reported=%d", cq.name, cq.channel, cq.cqEv.reported))
	return 0
}

// writeEventFD writes b to fd of the process behind mem: directly in
// this process, else through a copy of the fd taken with pidfd_getfd
// (the permission process_vm_writev already needs). An fd with an
// unread event is EBUSY.
func writeEventFD(mem Mem, fd int, b []byte) error {
	var pid int
	switch m := mem.(type) {
	case ProcMem:
		pid = m.Pid
	case LocalMem:
		pid = os.Getpid()
	default:
		return unix.EINVAL
	}
	if pid != os.Getpid() {
		pfd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			return err
		}
		nfd, err := unix.PidfdGetfd(pfd, fd, 0)
		unix.Close(pfd)
		if err != nil {
			return err
		}
		defer unix.Close(nfd)
		fd = nfd
	}
	p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	if n, err := unix.Poll(p, 0); err != nil {
		return err
	} else if n > 0 {
		return unix.EBUSY
	}
	_, err := unix.Write(fd, b)
	return err
}
