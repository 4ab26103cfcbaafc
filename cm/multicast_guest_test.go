//go:build linux

package cm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/internal/vmtest/guest"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
)

// igmpHas reports whether /proc/net/igmp lists the IPv4 group (the file
// prints each group as the hex of its host-order word).
func igmpHas(t *testing.T, group netip.Addr) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/net/igmp")
	if err != nil {
		t.Fatal(err)
	}
	a := group.As4()
	return strings.Contains(string(b), fmt.Sprintf("%08X", binary.LittleEndian.Uint32(a[:])))
}

// TestGuestMulticastJoinLeave joins groups on the backend guest a runs
// (the kernel CM, or our engine under vmexec -nocm-a) and checks what a
// join holds and that nothing outlives it: the group's AH and Q_Key, the
// netdev's IGMP membership (none for a send-only join), the library QP's
// attachment (the QP is destroyed after Leave without EBUSY), the
// membership dropped by Leave and by destroying the ID, and a unicast
// address refused with ErrInvalidArgument.
func TestGuestMulticastJoinLeave(t *testing.T) {
	guest.Require(t)
	ctx := guestCtx(t, time.Minute)
	ch, err := Open(&Options{Backend: BackendAuto})
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	t.Logf("backend %q", ch.Backend())
	local := netip.MustParseAddrPort(guest.Local().Addr + ":0")
	newID := func() *ID {
		id, err := ch.CreateID(rdma.PortSpaceUDP, &IDOptions{QPType: qp.UD, Sync: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := id.Bind(local); err != nil {
			t.Fatal(err)
		}
		return id
	}
	id := newID()
	defer id.Destroy()
	if _, err := id.CreateQP(QPInit{Cap: qp.Cap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}}); err != nil {
		t.Fatal(err)
	}
	peer := netip.MustParseAddr(guest.Peer().Addr)
	if _, err := id.JoinMulticast(ctx, peer, false, nil); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("join %v: %v, want ErrInvalidArgument", peer, err)
	} else {
		t.Logf("join %v: %v", peer, err)
	}
	full, sendOnly := netip.MustParseAddr("239.7.7.1"), netip.MustParseAddr("239.7.7.2")
	m, err := id.JoinMulticast(ctx, full, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	ah := m.AH()
	if want := rdma.GID(netip.AddrFrom16(full.As16()).As16()); ah.GRH.DGID != want || !ah.IsGlobal {
		t.Errorf("AH %+v, want DGID %v", ah, want.Addr())
	}
	if !igmpHas(t, full) {
		t.Errorf("no IGMP membership of %v after the join", full)
	}
	so, err := id.JoinMulticast(ctx, sendOnly, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if igmpHas(t, sendOnly) {
		t.Errorf("a send-only join of %v took an IGMP membership", sendOnly)
	}
	if err := m.Leave(); err != nil {
		t.Fatal(err)
	}
	if err := so.Leave(); err != nil {
		t.Fatal(err)
	}
	if igmpHas(t, full) {
		t.Errorf("IGMP membership of %v outlived Leave", full)
	}
	if err := id.DestroyQP(); err != nil {
		t.Errorf("destroy the QP after Leave: %v", err)
	}
	// Destroying an ID (and its attached QP) leaves its groups.
	id2 := newID()
	if _, err := id2.CreateQP(QPInit{Cap: qp.Cap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := id2.JoinMulticast(ctx, full, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := id2.Destroy(); err != nil {
		t.Fatalf("destroy an ID in a group: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second) // the kernel CM leaves from a work queue
	for igmpHas(t, full) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if igmpHas(t, full) {
		t.Errorf("IGMP membership of %v outlived the ID", full)
	}
	ch.mu.Lock()
	left := len(ch.mcs)
	ch.mu.Unlock()
	if left != 0 {
		t.Errorf("%d groups left in the channel", left)
	}
}
