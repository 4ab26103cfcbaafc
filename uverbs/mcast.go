package uverbs

import (
	"errors"
	"fmt"
	"slices"

	"github.com/go-rdma/rdmacm/internal/abi"
	"github.com/go-rdma/rdmacm/internal/unix"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
)

// mcastGroup is one attachment of a QP.
type mcastGroup struct {
	gid rdma.GID
	lid uint16
}

// AttachMcast attaches the UD QP to the multicast group gid (ATTACH_MCAST,
// ibv_attach_mcast): datagrams sent to the group then arrive on the QP's
// receive queue. lid is the group's MLID on InfiniBand; RoCE ignores it
// (give it 0, or the MLID a join reported). Attaching twice is not an error
// (the kernel keeps one attachment). A GID that IsMulticastGID refuses or
// a QP that is not UD is refused with ErrInvalidArgument before any
// syscall.
func (q *QP) AttachMcast(gid rdma.GID, lid uint16) error {
	op := fmt.Sprintf("attach QP %#x to multicast group %s", q.num, gid.Addr())
	x := q.pd.ctx
	// ib_attach_mcast's own checks, so that the error says which.
	if !IsMulticastGID(gid) {
		return opError(op, x.dev.Name, fmt.Errorf("not a multicast GID: %w", unix.EINVAL))
	}
	if q.typ != qp.UD {
		return opError(op, x.dev.Name, fmt.Errorf("a %v QP cannot join a group, only UD: %w", q.typ, unix.EINVAL))
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	g := mcastGroup{gid, lid}
	if slices.Contains(q.mcasts, g) {
		return nil
	}
	if err := q.mcastCmd(op, abi.UverbsCmdAttachMcast, g); err != nil {
		return err
	}
	q.mcasts = append(q.mcasts, g)
	return nil
}

// DetachMcast detaches the QP from the group (DETACH_MCAST,
// ibv_detach_mcast). A group the QP is not attached to (or no longer: Close
// detaches every group first, as the kernel will not destroy an attached
// QP) is refused with ErrInvalidArgument, the kernel's EINVAL.
func (q *QP) DetachMcast(gid rdma.GID, lid uint16) error {
	op := fmt.Sprintf("detach QP %#x from multicast group %s", q.num, gid.Addr())
	q.mu.Lock()
	defer q.mu.Unlock()
	i := slices.Index(q.mcasts, mcastGroup{gid, lid})
	if i < 0 {
		return opError(op, q.pd.ctx.dev.Name, fmt.Errorf("the QP is not attached to the group: %w", unix.EINVAL))
	}
	if err := q.mcastCmd(op, abi.UverbsCmdDetachMcast, q.mcasts[i]); err != nil {
		return err
	}
	q.mcasts = slices.Delete(q.mcasts, i, i+1)
	return nil
}

// detachAll detaches every group, for Close.
func (q *QP) detachAll() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	var errs []error
	for _, g := range q.mcasts {
		op := fmt.Sprintf("detach QP %#x from multicast group %s", q.num, g.gid.Addr())
		req := abi.UverbsAttachMcast{GID: g.gid, QPHandle: q.handle, MLID: g.lid}
		// Not under lockOpen: Context.Close closes its QPs after marking
		// itself closed, as destroyQP does.
		errs = append(errs, opErr(op, q.pd.ctx.dev.Name, q.pd.ctx.exec(&cmd{num: abi.UverbsCmdDetachMcast, in: abi.Bytes(&req)})))
	}
	q.mcasts = nil
	return errors.Join(errs...)
}

// mcastCmd issues ATTACH_MCAST or DETACH_MCAST (no response, no driver
// data: the same on rxe and mlx5).
func (q *QP) mcastCmd(op string, num uint32, g mcastGroup) error {
	x := q.pd.ctx
	if err := x.lockOpen(op); err != nil {
		return err
	}
	req := abi.UverbsAttachMcast{GID: g.gid, QPHandle: q.handle, MLID: g.lid}
	err := x.exec(&cmd{num: num, in: abi.Bytes(&req)})
	x.mu.Unlock()
	return opErr(op, x.dev.Name, err)
}

// IsMulticastGID reports whether the kernel takes gid as a multicast group
// (rdma_is_multicast_addr): ff00::/8, or an IPv4-mapped 224.0.0.0/4
// address (the MGID of an IPv4 group on RoCE v2).
func IsMulticastGID(gid rdma.GID) bool {
	if gid[0] == 0xff {
		return true
	}
	a := gid.Addr()
	return a.Is4In6() && a.Unmap().IsMulticast()
}
