//go:build linux

package cm

// Runs last in the package (file order): it deletes rxe0 and creates it
// again.

import (
	"context"
	"net/netip"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/rdma"
)

// TestGuestDeviceRemoval: deleting the RDMA device under a listener bound
// to it reports DEVICE_REMOVAL to the listener (cma_process_remove), the ID
// can then only be destroyed, and the channel closes cleanly. The device
// is created again afterwards.
func TestGuestDeviceRemoval(t *testing.T) {
	ch := kernelChannel(t)
	id, err := ch.CreateID(rdma.PortSpaceTCP, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := id.Bind(netip.AddrPortFrom(localAddr(t), freePort())); err != nil {
		t.Fatal(err)
	}
	if err := id.Listen(0); err != nil {
		t.Fatal(err)
	}
	restore := func() {
		out, err := exec.Command("sh", "-c", "rdma link show rxe0/1 >/dev/null 2>&1 || rdma link add rxe0 type rxe netdev eth0").CombinedOutput()
		if err != nil {
			t.Errorf("re-creating rxe0: %v\n%s", err, out)
		}
	}
	defer restore()
	if out, err := exec.Command("rdma", "link", "delete", "rxe0").CombinedOutput(); err != nil {
		t.Fatalf("rdma link delete rxe0: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ev, err := ch.GetEvent(ctx)
	if err != nil {
		t.Fatalf("no event after the device went away: %v", err)
	}
	if ev.Type != EventDeviceRemoval || ev.ID != id {
		t.Fatalf("got %v on %p, want DEVICE_REMOVAL on the listener %p", ev.Type, ev.ID, id)
	}
	t.Logf("event %v status %d, ID state %v", ev.Type, ev.Status, id.State())
	if err := ev.Ack(); err != nil {
		t.Fatal(err)
	}
	if err := id.Listen(0); err == nil {
		t.Error("Listen after DEVICE_REMOVAL succeeded")
	}
	if err := id.Destroy(); err != nil {
		t.Fatalf("Destroy after DEVICE_REMOVAL: %v", err)
	}
	restore()
	// The re-created device serves new IDs.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		out, _ := exec.Command("sh", "-c", "cat /sys/class/infiniband/rxe0/ports/1/gids/1").CombinedOutput()
		if strings.Contains(string(out), "ffff:c000") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("rxe0 came back without its IPv4 GID: %s", out)
		}
	}
	id2, err := ch.CreateID(rdma.PortSpaceTCP, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := id2.Bind(netip.AddrPortFrom(localAddr(t), freePort())); err != nil {
		t.Fatalf("bind on the re-created device: %v", err)
	}
	if err := id2.Destroy(); err != nil {
		t.Fatal(err)
	}
}
