package main

// rdma-mckey against librdmacm's mckey in the vmtest guests: this test
// binary runs in guest a (192.0.2.1) and acts as rdma-mckey there (and on
// guest b through the share); mckey runs on guest b (192.0.2.2) on the
// kernel CM. Run with vmexec for a on the kernel CM, and with vmexec
// -nocm-a for a on our CM engine (no rdma_ucm there: -backend auto picks
// the engine):
//
//	go build -o bin/vmexec ./internal/vmtest/cmd/vmexec
//	CGO_ENABLED=0 VMTEST=1 go test -count=1 -v -exec "$PWD/bin/vmexec" ./cmd/rdma-mckey/
//	CGO_ENABLED=0 VMTEST=1 go test -count=1 -v -exec "$PWD/bin/vmexec -nocm-a" ./cmd/rdma-mckey/

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/internal/vmtest/guest"
)

// envRunMain makes the test binary act as rdma-mckey.
const envRunMain = "RDMA_MCKEY_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(envRunMain) == "1" {
		cfg, err := parseArgs(os.Args[1:], os.Stderr)
		if err != nil {
			os.Exit(2)
		}
		os.Exit(runMain(context.Background(), cfg, os.Stdout))
	}
	os.Exit(m.Run())
}

// syncBuffer is a goroutine-safe output sink for a local process.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// mckeyLines are the lines both programs print, in order, for one ID.
func mckeyLines(sender bool, group string) []string {
	role, data := "mckey: starting server", "receiving data transfers"
	if sender {
		role, data = "mckey: starting client", "initiating data transfers"
	}
	return []string{role, "mckey: joining", "mckey: joined dgid: ::ffff:" + group + " mlid 0x0 sl 0", data, "data transfers complete", "test complete", "return status 0"}
}

func checkLines(t *testing.T, who, out string, want []string) {
	t.Helper()
	got := strings.Split(strings.TrimSpace(out), "\n")
	for i := range got {
		got[i] = strings.TrimSpace(got[i])
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s printed:\n%s\nwant:\n%s", who, out, strings.Join(want, "\n"))
	}
}

// TestGuestMckeyInterop runs each direction against mckey: the Go sender
// (full member, and send-only) to mckey receiving on b, and mckey sending
// from b to the Go receiver. Each receiver counts every datagram (mckey
// polls for -C completions), and both print mckey's lines.
func TestGuestMckeyInterop(t *testing.T) {
	guest.Require(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	peer := guest.Peer()
	kernelCM, err := guest.Local().HasModule(context.Background(), "rdma_ucm")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("guest a on the kernel CM: %v", kernelCM)
	const count = "-C 20 -S 512"
	for _, c := range []struct {
		name     string
		goSender bool
		goFlags  string
		group    string
	}{
		{"go-sender", true, "", "239.1.2.3"},
		{"go-sender-sendonly", true, "-o", "239.1.2.4"},
		{"go-receiver", false, "", "239.1.2.5"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			// The guests have no route to 224.0.0.0/4: both sides bind, and
			// the group's device is the bound address's (as the kernel's
			// route lookup for a multicast destination does).
			goArgs := append([]string{"-m", c.group, "-b", guest.Local().Addr}, strings.Fields(count+" "+c.goFlags)...)
			cCmd := "mckey -m " + c.group + " -b " + peer.Addr + " " + count
			if c.goSender {
				goArgs = append(goArgs, "-s")
			} else {
				cCmd += " -s"
			}
			goCmd := exec.CommandContext(ctx, self, goArgs...)
			goCmd.Env = append(os.Environ(), envRunMain+"=1")
			var goOut syncBuffer
			goCmd.Stdout, goCmd.Stderr = &goOut, &goOut
			var cOut string
			if c.goSender {
				// mckey's stdout is block-buffered on the agent's pipe: give
				// it time to join instead of waiting for its line. The Go
				// sender then waits its own 3 s before sending.
				p, err := peer.Start(ctx, cCmd)
				if err != nil {
					t.Fatal(err)
				}
				defer p.Stop(context.Background())
				time.Sleep(1500 * time.Millisecond)
				if err := goCmd.Run(); err != nil {
					t.Fatalf("rdma-mckey %q: %v\n%s", goArgs, err, goOut.String())
				}
				res, err := p.Wait(ctx)
				if err != nil {
					t.Fatalf("%s: %v\n%s%s\nrdma-mckey:\n%s", cCmd, err, p.Stdout(), p.Stderr(), goOut.String())
				}
				cOut = res.Stdout + res.Stderr
			} else {
				if err := goCmd.Start(); err != nil {
					t.Fatal(err)
				}
				exited := make(chan error, 1)
				go func() { exited <- goCmd.Wait() }()
				for !strings.Contains(goOut.String(), "mckey: joined") {
					select {
					case err := <-exited:
						t.Fatalf("rdma-mckey exited before joining (%v):\n%s", err, goOut.String())
					case <-ctx.Done():
						goCmd.Process.Kill()
						<-exited
						t.Fatalf("rdma-mckey did not join:\n%s", goOut.String())
					case <-time.After(50 * time.Millisecond):
					}
				}
				res, err := peer.Run(ctx, cCmd)
				if err != nil {
					goCmd.Process.Kill()
					<-exited
					t.Fatalf("%s: %v\n%+v\nrdma-mckey:\n%s", cCmd, err, res, goOut.String())
				}
				cOut = res.Stdout + res.Stderr
				if err := <-exited; err != nil {
					t.Fatalf("rdma-mckey %q: %v\n%s\nmckey:\n%s", goArgs, err, goOut.String(), cOut)
				}
			}
			t.Logf("rdma-mckey %s:\n%smckey:\n%s", strings.Join(goArgs, " "), goOut.String(), cOut)
			checkLines(t, "rdma-mckey", goOut.String(), mckeyLines(c.goSender, c.group))
			checkLines(t, "mckey", cOut, mckeyLines(!c.goSender, c.group))
		})
	}
}
