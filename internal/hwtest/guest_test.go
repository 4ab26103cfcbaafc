//go:build linux

package hwtest

// make hwtest inside a vmtest guest, against rxe0, so that it cannot rot:
//
//	go generate ./internal/hwtest/   # the commands into testdata/bin
//	go build -o bin/vmexec ./internal/vmtest/cmd/vmexec
//	CGO_ENABLED=0 go test -count=1 -p 1 -v -exec "$PWD/bin/vmexec" ./internal/hwtest/

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/internal/vmtest/guest"
)

// rxeSkips are the checks that SKIP on rxe, with the reason each must
// give: in the stock guest our CM engine cannot run beside ib_cm; in a
// guest without the kernel CM (vmexec -nocm-a) the kernel backend cannot.
func rxeSkips() map[string]string {
	skips := map[string]string{"ECE query/set": "provider rxe has no ECE"}
	if slices.Contains(guest.Local().NoMods, "ib_cm") {
		skips["cm kernel backend + ECE"] = "rdma_ucm is not loaded"
		for _, c := range []string{"rdmacm-ping", "rdmacm-ping -q -ece", "rdmacm-ping -connect-only -ece"} {
			skips[c] = "one CM agent per port"
		}
	} else {
		skips["cm user backend + ECE"] = "ib_cm is loaded"
	}
	return skips
}

// allChecks is every row, in order.
var allChecks = []string{
	"verbs objects (ioctl)", "verbs objects (write)",
	"RC loopback connect", "RC SEND/RECV", "RC RDMA WRITE", "RC RDMA WRITE_WITH_IMM", "RC RDMA READ",
	"RC inline SEND", "completion channel wait", "UD loopback via AH",
	"ECE query/set",
	"cm kernel backend + ECE", "cm user backend + ECE",
	"build commands", "verbs-pingpong", "verbs-pingpong -e",
	"rdmacm-ping", "rdmacm-ping -q -ece", "rdmacm-ping -connect-only -ece",
}

func TestGuestHwtest(t *testing.T) {
	guest.Require(t)
	bin, err := filepath.Abs(filepath.Join("testdata", "bin"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{cmdPingPong, cmdPing} {
		if err := executable(filepath.Join(bin, c)); err != nil {
			t.Fatalf("%v: build the commands on the host first: go generate ./internal/hwtest/ (make vmtest does)", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	rep := Run(ctx, Config{Device: "rxe0", BinDir: bin, Timeout: 2 * time.Minute, Log: os.Stderr})
	md := rep.Markdown()
	t.Logf("report:\n%s", md)
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"hwtest-report.md": []byte(md), "hwtest-report.json": js.Bytes()} {
		if err := os.WriteFile(filepath.Join(guest.OutDir(), name), data, 0o644); err != nil {
			t.Error(err)
		}
	}

	// What CI checks: the JSON parses and agrees with itself, every row
	// passes but the expected skips, and nothing is missing.
	back, err := ReadJSON(&js)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Checks) != len(allChecks) {
		t.Errorf("%d checks, want %d", len(back.Checks), len(allChecks))
	}
	skips := rxeSkips()
	for i, c := range back.Checks {
		if i < len(allChecks) && c.Name != allChecks[i] {
			t.Errorf("check %d is %q, want %q", i, c.Name, allChecks[i])
		}
		reason, skipOK := skips[c.Name]
		switch {
		case c.Status == Skip && skipOK && strings.Contains(c.Detail, reason):
		case c.Status == Skip && skipOK:
			t.Errorf("%s: SKIP %q, want the reason %q", c.Name, c.Detail, reason)
		case skipOK:
			t.Errorf("%s: %s %q, want SKIP on rxe (%s)", c.Name, c.Status, c.Detail, reason)
		case c.Status != Pass:
			t.Errorf("%s: %s: %s", c.Name, c.Status, c.Detail)
		}
	}
	if rep.ExitCode() != 0 {
		t.Errorf("exit status %d", rep.ExitCode())
	}
	want := fmt.Sprintf("hwtest: %d passed, 0 failed, %d skipped", len(allChecks)-len(skips), len(skips))
	if !strings.HasSuffix(md, "\n"+want+"\n") {
		t.Errorf("report does not end with %q", want)
	}
	for _, s := range Sections() {
		if !strings.Contains(md, s+"\n") {
			t.Errorf("report has no %q section", s)
		}
	}
	for name, want := range map[string]string{
		"device": "rxe0", "driver": "rxe", "HasECE": "no", "interface": "ioctl",
		"IPv4 address": guest.Local().Addr, "parent netdev": "eth0", "PCI vendor:device": "-",
	} {
		if got := rep.Field(name); got != want {
			t.Errorf("header %s = %q, want %q", name, got, want)
		}
	}
	for _, name := range []string{"date", "kernel", "host arch", "Go", "module", "node GUID", "fw_ver", "board_id", "loopback GID"} {
		if rep.Field(name) == "" {
			t.Errorf("header has no %s", name)
		}
	}
	if len(rep.Ports) != 1 || rep.Ports[0].State != "ACTIVE" || rep.Ports[0].LinkLayer != "Ethernet" {
		t.Errorf("ports %+v", rep.Ports)
	}
	v2 := false
	for _, g := range rep.GIDs {
		v2 = v2 || g.Type == "RoCE v2" && g.Netdev == "eth0"
	}
	if !v2 {
		t.Errorf("no RoCE v2 GID on eth0 in %+v", rep.GIDs)
	}
}
