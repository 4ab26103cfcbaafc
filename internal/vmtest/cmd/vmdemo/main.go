// Command vmdemo is `make demo`: it boots two soft-RoCE QEMU guests and
// shows rdmacm-ping (pure Go, no librdmacm) talking to rdma-core's C peers
// across their wire: rping in both directions, then ECE with a librdmacm
// program that uses rdma_set_local_ece, and a reject with ECE (REJ 35).
//
// Run it from the module root: go run ./internal/vmtest/cmd/vmdemo
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/go-rdma/rdmacm/internal/vmtest"
)

const (
	pingPort    = 7174
	fixturePort = 7471
	ping        = "/host/bin/rdmacm-ping"
	fixture     = "/host/bin/ece_fixture"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	if err := run(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "demo failed:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer) error {
	say := func(format string, args ...any) { fmt.Fprintf(out, format+"\n", args...) }
	say("== Preparing two QEMU guests (Debian kernel, soft-RoCE rxe0, rdma-core tools)")
	p, err := vmtest.BootPair(ctx, vmtest.PairOptions{Log: io.Discard})
	if err != nil {
		return fmt.Errorf("booting the guests: %w", err)
	}
	defer p.Close()
	say("   guest a %s and guest b %s are up (accel %s), joined by a virtual wire", p.A.Addr, p.B.Addr, p.Accel)
	if err := buildTools(p.Share); err != nil {
		return err
	}
	a, b := p.A, p.B

	say("\n== 1. rdmacm-ping (Go) in guest a  ->  rping -s (C, librdmacm) in guest b")
	srvOut, cliOut, err := session(ctx, b, a, pingPort,
		"rping -s -v -a "+b.Addr+" -C 10",
		ping+" -c -v -V -a "+b.Addr+" -C 10")
	if err != nil {
		return err
	}
	show("rdmacm-ping", lines(cliOut, "ping data: ", 3), out)
	show("rdmacm-ping", grep(cliOut, `pings: rtt`), out)
	if err := wantPings("rping -s", srvOut, "server ping data: ", 10); err != nil {
		return err
	}
	say("   rping -s served %d pings", strings.Count(srvOut, "server ping data: "))

	say("\n== 2. rping -c (C) in guest a  ->  rdmacm-ping -s (Go) in guest b")
	srvOut, cliOut, err = session(ctx, b, a, pingPort,
		ping+" -s -v -a "+b.Addr,
		"rping -c -v -V -a "+b.Addr+" -C 10")
	if err != nil {
		return err
	}
	if err := wantPings("rping -c", cliOut, "ping data: ", 10); err != nil {
		return err
	}
	show("rping -c", lines(cliOut, "ping data: ", 3), out)
	say("   rdmacm-ping -s served %d pings", strings.Count(srvOut, "server ping data: "))

	say("\n== 3. ECE: rdmacm-ping offers 0x15b3:0x30000001  ->  C librdmacm server (rdma_set_local_ece 0x15b3:0x30000003)")
	srvOut, cliOut, err = session(ctx, b, a, fixturePort,
		fixture+fmt.Sprintf(" -s -a %s -p %d -V 0x15b3 -O 0x30000003 -t 60", b.Addr, fixturePort),
		ping+fmt.Sprintf(" -c -connect-only -a %s -p %d -ece 0x15b3:0x30000001", b.Addr, fixturePort))
	if err != nil {
		return err
	}
	show("C server saw   ", grep(srvOut, `remote ECE:`), out)
	show("Go client saw  ", grep(cliOut, `remote ECE:`), out)

	say("\n== 4. ECE: C librdmacm client offers 0x15b3:0x30000001  ->  rdmacm-ping -s replies 0x15b3:0x20000002")
	srvOut, cliOut, err = session(ctx, b, a, fixturePort,
		ping+fmt.Sprintf(" -s -connect-only -a %s -p %d -ece 0x15b3:0x20000002", b.Addr, fixturePort),
		fixture+fmt.Sprintf(" -c -a %s -p %d -V 0x15b3 -O 0x30000001 -t 60", b.Addr, fixturePort))
	if err != nil {
		return err
	}
	show("Go server saw  ", grep(srvOut, `remote ECE:`), out)
	show("C client saw   ", grep(cliOut, `remote ECE:`), out)
	eceLines := append(grep(srvOut, `remote ECE:`), grep(cliOut, `remote ECE:`)...)

	say("\n== 5. Reject with ECE: rdmacm-ping -s -reject-ece  <-  C librdmacm client")
	srvOut, cliOut, err = session(ctx, b, a, fixturePort,
		ping+fmt.Sprintf(" -s -reject-ece -a %s -p %d", b.Addr, fixturePort),
		fixture+fmt.Sprintf(" -c -a %s -p %d -V 0x15b3 -O 0x30000001 -t 60", b.Addr, fixturePort))
	if err != nil {
		return err
	}
	show("Go server      ", grep(srvOut, `rejected`), out)
	show("C client saw   ", grep(cliOut, `REJECTED`), out)

	say("\n== Done: Go and C peers interoperate over the real kernel CM. remote ECE values from step 4:")
	for _, l := range eceLines {
		say("   %s", l)
	}
	return nil
}

func buildTools(share string) error {
	bin := filepath.Join(share, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return err
	}
	gobuild := exec.Command("go", "build", "-o", filepath.Join(bin, "rdmacm-ping"), "./cmd/rdmacm-ping")
	gobuild.Env = append(os.Environ(), "CGO_ENABLED=0")
	if o, err := gobuild.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/rdmacm-ping (run from the module root): %v\n%s", err, o)
	}
	gcc := exec.Command("gcc", "-O2", "-Wall", "-o", filepath.Join(bin, "ece_fixture"),
		"internal/vmtest/fixtures/ece_fixture.c", "-lrdmacm", "-libverbs")
	if o, err := gcc.CombinedOutput(); err != nil {
		return fmt.Errorf("gcc ece_fixture: %v\n%s", err, o)
	}
	return nil
}

// session starts server in srv, waits until the kernel shows its listener,
// runs client in cli, and returns both outputs. Either exiting non-zero is
// an error, except the fixture's exit 3 ("rejected") in the reject step
// and rping's false failure at exit (vmtest.RpingTeardownRace); the
// callers then count rping's pings.
func session(ctx context.Context, srv, cli *vmtest.Machine, port int, server, client string) (string, string, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	proc, err := srv.Start(ctx, server)
	if err != nil {
		return "", "", err
	}
	defer proc.Stop(context.Background())
	want := regexp.MustCompile(fmt.Sprintf(`state LISTEN .*src-addr [0-9.]+:%d `, port))
	for {
		r, err := srv.Run(ctx, "rdma resource show cm_id")
		if err == nil && want.MatchString(r.Stdout) {
			break
		}
		select {
		case <-ctx.Done():
			return "", "", fmt.Errorf("guest %s: %q never listened on port %d", srv.Name, server, port)
		case <-time.After(100 * time.Millisecond):
		}
	}
	cr, err := cli.Run(ctx, client)
	if cr == nil {
		return "", "", fmt.Errorf("guest %s: %s: %w", cli.Name, client, err)
	}
	sr, err := proc.Wait(ctx)
	if sr == nil {
		return "", "", fmt.Errorf("guest %s: %s: %w", srv.Name, server, err)
	}
	rejected := strings.Contains(client, "ece_fixture") && cr.ExitCode == 3 && strings.Contains(server, "-reject-ece")
	srvOK := sr.ExitCode == 0 || vmtest.RpingTeardownRace(server, sr)
	cliOK := cr.ExitCode == 0 || rejected || vmtest.RpingTeardownRace(client, cr)
	if !srvOK || !cliOK {
		return "", "", fmt.Errorf("server %q exited %d:\n%s%s\nclient %q exited %d:\n%s%s",
			server, sr.ExitCode, sr.Stdout, sr.Stderr, client, cr.ExitCode, cr.Stdout, cr.Stderr)
	}
	return sr.Stdout + sr.Stderr, cr.Stdout + cr.Stderr, nil
}

// wantPings checks that out has n lines starting with prefix: rping's exit
// code alone does not tell (see session).
func wantPings(who, out, prefix string, n int) error {
	if got := len(lines(out, prefix, n+1)); got != n {
		return fmt.Errorf("%s printed %d lines %q, want %d:\n%s", who, got, prefix, n, out)
	}
	return nil
}

func lines(s, prefix string, n int) []string {
	var got []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) && len(got) < n {
			got = append(got, l)
		}
	}
	return got
}

func grep(s, pattern string) []string {
	re := regexp.MustCompile(pattern)
	var got []string
	for _, l := range strings.Split(s, "\n") {
		if re.MatchString(l) {
			got = append(got, strings.TrimSpace(l))
		}
	}
	return got
}

func show(who string, ls []string, out io.Writer) {
	if len(ls) == 0 {
		fmt.Fprintf(out, "   %s: (nothing)\n", who)
	}
	for _, l := range ls {
		fmt.Fprintf(out, "   %s: %s\n", who, l)
	}
}
