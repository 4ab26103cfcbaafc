package guest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/internal/vmtest"
	"github.com/go-rdma/rdmacm/internal/vmtest/guest"
)

// These run inside guest a under vmexec (make vmtest) and check what the
// runner promises: the environment, both agents, background processes,
// timeouts, the wire between the guests and the results folder.

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestEnvironment(t *testing.T) {
	guest.Require(t)
	if got := guest.Local(); got.Name != "a" || got.Addr != "192.0.2.1" {
		t.Errorf("Local() = %s %s, want a 192.0.2.1", got.Name, got.Addr)
	}
	if got := guest.Peer(); got.Name != "b" || got.Addr != "192.0.2.2" {
		t.Errorf("Peer() = %s %s, want b 192.0.2.2", got.Name, got.Addr)
	}
	if os.Getuid() != 0 {
		t.Errorf("uid %d, want root", os.Getuid())
	}
	if _, err := os.Stat("/dev/infiniband/uverbs0"); err != nil {
		t.Errorf("no uverbs device: %v", err)
	}
	if fi, err := os.Stat(guest.OutDir()); err != nil || !fi.IsDir() {
		t.Errorf("OutDir %s: %v", guest.OutDir(), err)
	}
}

func TestBothGuestsHaveRXE(t *testing.T) {
	guest.Require(t)
	ctx := ctxFor(t, time.Minute)
	for _, m := range []*guest.Machine{guest.Local(), guest.Peer()} {
		r, err := m.Run(ctx, "hostname; ibv_devinfo -d rxe0")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(r.Stdout, m.Name+"\n") || !strings.Contains(r.Stdout, "PORT_ACTIVE") {
			t.Errorf("guest %s:\n%s", m.Name, r.Stdout)
		}
	}
}

func TestExitStatusAndTimeout(t *testing.T) {
	guest.Require(t)
	ctx := ctxFor(t, time.Minute)
	r, err := guest.Peer().Run(ctx, "echo out; echo err >&2; exit 7")
	var ee *guest.ExitError
	if !errors.As(err, &ee) || r == nil || r.ExitCode != 7 || r.Stdout != "out\n" || r.Stderr != "err\n" {
		t.Errorf("exit 7: result %+v, err %v", r, err)
	}
	start := time.Now()
	r, err = guest.Peer().RunCmd(ctx, guest.Cmd{Script: "sleep 60", Timeout: time.Second})
	if err == nil || r == nil || !r.TimedOut {
		t.Errorf("sleep 60 with a 1s timeout: result %+v, err %v", r, err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("timeout took %v", d)
	}
}

func TestBackgroundStop(t *testing.T) {
	guest.Require(t)
	ctx := ctxFor(t, time.Minute)
	p, err := guest.Peer().Start(ctx, "echo started; exec sleep 300")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.WaitOutput(ctx, "started"); err != nil {
		t.Fatal(err)
	}
	r, err := p.Stop(ctx)
	if err != nil || !r.Stopped || r.Signal != "terminated" {
		t.Errorf("Stop: result %+v, err %v", r, err)
	}
}

// TestRpingAcrossGuests: a server in the peer, the client here, capture of
// the CM exchange kept in the results folder.
func TestRpingAcrossGuests(t *testing.T) {
	guest.Require(t)
	ctx := ctxFor(t, 2*time.Minute)
	peer := guest.Peer()
	srvCmd := fmt.Sprintf("rping -s -v -a %s -p 7190 -C 3", peer.Addr)
	srv, err := peer.Start(ctx, srvCmd)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop(context.Background())
	for {
		r, err := peer.Run(ctx, "rdma resource show cm_id")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(r.Stdout, "LISTEN") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	capture, err := guest.Local().StartCapture(ctx, "rping-from-guest.pcap", "")
	if err != nil {
		t.Fatal(err)
	}
	cliCmd := fmt.Sprintf("rping -c -v -a %s -p 7190 -C 3", peer.Addr)
	r, err := guest.Local().Run(ctx, cliCmd)
	if err != nil && !vmtest.RpingTeardownRace(cliCmd, r) {
		t.Fatal(err)
	}
	if n := len(regexp.MustCompile(`(?m)^ping data: `).FindAllString(r.Stdout, -1)); n != 3 {
		t.Errorf("%d pings, want 3:\n%s", n, r.Stdout)
	}
	// rping v44 can exit 255 after a good run (vmtest.RpingTeardownRace);
	// the pings are still checked above.
	if sr, err := srv.Wait(ctx); err != nil && !vmtest.RpingTeardownRace(srvCmd, sr) {
		t.Errorf("server: %v", err)
	}
	time.Sleep(500 * time.Millisecond)
	if _, err := capture.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(guest.OutDir(), "rping-from-guest.pcap"))
	if err != nil || fi.Size() < 24+5*(16+322) {
		t.Errorf("capture: %v, size %d, want 5 CM packets", err, fi.Size())
	}
}

// TestModulesMatchEnvironment: VMTEST_NOMODS names exactly the modules the
// guests left out (vmexec -nocm-a/-nocm-b).
func TestModulesMatchEnvironment(t *testing.T) {
	guest.Require(t)
	ctx := ctxFor(t, time.Minute)
	for _, m := range []*guest.Machine{guest.Local(), guest.Peer()} {
		skipped := map[string]bool{}
		for _, n := range m.NoMods {
			skipped[n] = true
		}
		for _, mod := range []string{"ib_cm", "rdma_cm", "rdma_ucm", "ib_umad", "rdma_rxe"} {
			loaded, err := m.HasModule(ctx, mod)
			if err != nil {
				t.Fatal(err)
			}
			if loaded == skipped[mod] {
				t.Errorf("guest %s: module %s loaded=%v but VMTEST_NOMODS=%v", m.Name, mod, loaded, m.NoMods)
			}
		}
	}
}
