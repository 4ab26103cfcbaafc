package main

// The twins on our CM engine: guest a boots without the kernel CM
// (ib_cm, iw_cm, rdma_cm, rdma_ucm), so rsocket-copy and rsocket-stream
// run there with -backend user over umad, against librdmacm's rcopy (64
// MiB) and rstream on guest b's kernel CM, in both roles. One pair for the
// package; the same twins on the kernel CM are in
// cmd/rsocket-stream/interop_test.go. They run with VMTEST=1 (make
// vmtest); otherwise they skip, and a guest that does not boot fails them.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/internal/vmtest"
	"github.com/go-rdma/rdmacm/internal/vmtest/agent"
)

var (
	pairOnce sync.Once
	thePair  *vmtest.Pair
	pairErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if thePair != nil {
		thePair.Close()
	}
	os.Exit(code)
}

func pair(tb testing.TB) *vmtest.Pair {
	tb.Helper()
	if os.Getenv("VMTEST") != "1" {
		tb.Skip("real-kernel interop test: boots QEMU guests; run with VMTEST=1 (make vmtest)")
	}
	pairOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
		defer cancel()
		opts := vmtest.PairOptions{Log: os.Stderr, SkipModulesA: vmtest.CMModules()}
		if d := os.Getenv("VMTEST_SHARE"); d != "" {
			opts.Share, opts.Keep = d, true
		}
		if thePair, pairErr = vmtest.BootPair(ctx, opts); pairErr == nil {
			pairErr = installTools(thePair.Share)
		}
	})
	if pairErr != nil {
		tb.Fatalf("guests: %v", pairErr)
	}
	return thePair
}

// installTools builds the twins (static) into share/bin and extracts
// rcopy from the rdmacm-utils package the image was built from (the
// image leaves rcopy out).
func installTools(share string) error {
	bin := filepath.Join(share, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return err
	}
	for _, pkg := range []string{"rsocket-stream", "rsocket-copy"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(bin, pkg), "../"+pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
		}
	}
	cache, err := vmtest.CacheDir()
	if err != nil {
		return err
	}
	debs, _ := filepath.Glob(filepath.Join(cache, "debs", "rdmacm-utils_*.deb"))
	if len(debs) == 0 {
		return fmt.Errorf("no rdmacm-utils package in %s/debs", cache)
	}
	tmp, err := os.MkdirTemp("", "rdmacm-utils")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if out, err := exec.Command("dpkg-deb", "-x", debs[len(debs)-1], tmp).CombinedOutput(); err != nil {
		return fmt.Errorf("dpkg-deb: %v\n%s", err, out)
	}
	rcopy, err := os.ReadFile(filepath.Join(tmp, "usr/bin/rcopy"))
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(bin, "rcopy"), rcopy, 0o755)
}

const (
	goStream = "/host/bin/rsocket-stream -backend user"
	goCopy   = "/host/bin/rsocket-copy"
	cCopy    = "/host/bin/rcopy"
)

// serveGuest starts server on m and returns once it listens: a Go twin says
// so on stdout (marker); a C server's listener shows in the kernel's
// cm_id table.
func serveGuest(t *testing.T, ctx context.Context, m *vmtest.Machine, server, marker string, port int) *agent.Process {
	t.Helper()
	p, err := m.Start(ctx, server)
	if err != nil {
		t.Fatal(err)
	}
	if marker != "" {
		if err := p.WaitOutput(ctx, marker); err != nil {
			r, _ := p.Stop(context.Background())
			t.Fatalf("%s on %s: not listening: %v %+v", server, m.Name, err, r)
		}
		return p
	}
	want := regexp.MustCompile(fmt.Sprintf(`state LISTEN .*src-addr \S+:%d `, port))
	for {
		r, err := m.Run(ctx, "rdma resource show cm_id")
		if err == nil && want.MatchString(r.Stdout) {
			return p
		}
		select {
		case <-ctx.Done():
			p.Stop(context.Background())
			t.Fatalf("%s on %s: no listener on port %d", server, m.Name, port)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// copySize is the file the engine's copies move: 64 MiB, as the
// kernel-CM tests' (cmd/rsocket-stream), as the issue asks.
const copySize = 64 << 20

// copySource makes a copySize file of random bytes on m once and returns
// its path and sha256sum line.
func copySource(t *testing.T, ctx context.Context, m *vmtest.Machine) (string, string) {
	t.Helper()
	const src = "/tmp/copy-src.bin"
	r, err := m.Run(ctx, fmt.Sprintf("head -c %d /dev/urandom > %s && sha256sum < %s", copySize, src, src))
	if r == nil || !r.Success() {
		t.Fatalf("source file: %v %+v", err, r)
	}
	return src, r.Stdout
}

// copyCase copies src (sha256sum line want) from cli to srv and compares
// the sha256 of the copy.
func copyCase(t *testing.T, srv, cli *vmtest.Machine, server, client, marker, src, want string, port int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dst := fmt.Sprintf("/tmp/copy-dst-%d.bin", port)
	// rcopy's options follow the file names (a first argument starting
	// with '-' means the server); -backend user is for our twin.
	backend := func(cmd string) string {
		if cmd == goCopy {
			return " -backend user"
		}
		return ""
	}
	sp := serveGuest(t, ctx, srv, fmt.Sprintf("cd /tmp && %s -p %d%s", server, port, backend(server)), marker, port)
	cr, err := cli.Run(ctx, fmt.Sprintf("%s %s %s:%s -p %d%s", client, src, srv.Addr, dst, port, backend(client)))
	sr, _ := sp.Stop(context.Background()) // both servers serve until stopped
	if cr == nil || !cr.Success() {
		t.Fatalf("client %s: %v %+v\nserver: %+v", client, err, cr, sr)
	}
	t.Logf("client %s:\n%s", client, cr.Stdout)
	if sr != nil {
		t.Logf("server %s:\n%s", server, sr.Stdout)
	}
	if !regexp.MustCompile(fmt.Sprintf(`^opening\.\.\.transferring\.\.\.closing\.\.\.done\n%d bytes in [0-9.]+ seconds = [0-9.]+ Gb/sec\n$`, copySize)).MatchString(cr.Stdout) {
		t.Errorf("client output %q", cr.Stdout)
	}
	r, err := srv.Run(ctx, "sha256sum < "+dst+"; rm -f "+dst)
	if r == nil || !r.Success() {
		t.Fatalf("copy: %v %+v", err, r)
	}
	if r.Stdout != want {
		t.Errorf("sha256 of the copy %q, of the source %q", r.Stdout, want)
	}
}

// TestCopyInteropUser: 64 MiB with rcopy on b's kernel CM, our twin on
// our engine in a as client (to b) and as server (from b).
func TestCopyInteropUser(t *testing.T) {
	p := pair(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	srcA, wantA := copySource(t, ctx, p.A)
	defer p.A.Run(context.Background(), "rm -f "+srcA)
	t.Run("go-client", func(t *testing.T) { copyCase(t, p.B, p.A, cCopy, goCopy, "", srcA, wantA, 7811) })
	srcB, wantB := copySource(t, ctx, p.B)
	defer p.B.Run(context.Background(), "rm -f "+srcB)
	t.Run("go-server", func(t *testing.T) {
		copyCase(t, p.A, p.B, goCopy, cCopy, "waiting for connection", srcB, wantB, 7812)
	})
}

var row = regexp.MustCompile(`(?m)^(\S+ +\S+ +\S+ +\S+ +\S+) +[0-9.]+s +[0-9.]+ +[0-9.]+$`)

func rows(t *testing.T, who, out string) string {
	t.Helper()
	m := row.FindAllStringSubmatch(out, -1)
	if !strings.HasPrefix(out, "name      bytes   xfers   iters   total       time     Gb/sec    usec/xfer\n") || len(m) != 1 {
		t.Fatalf("%s: want rstream's header and one row:\n%s", who, out)
	}
	return strings.Join(strings.Fields(m[0][1]), " ")
}

// TestStreamInteropUser: the stream twin on our engine against rstream,
// both roles, blocking, verified, at a latency and a bandwidth size.
func TestStreamInteropUser(t *testing.T) {
	p := pair(t)
	port := 7820
	for _, flags := range []string{"-S 4096 -C 1 -I 100 -T b -T v", "-S 65536 -C 50 -I 1 -T b -T v"} {
		for _, goServer := range []bool{true, false} {
			port++
			name := map[bool]string{true: "go-server/", false: "go-client/"}[goServer] + flags
			t.Run(name, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
				defer cancel()
				args := fmt.Sprintf("%s -p %d", flags, port)
				srv, cli, server, client, marker := p.B, p.A, "rstream", goStream, ""
				if goServer {
					srv, cli, server, client, marker = p.A, p.B, goStream, "rstream", "name"
				}
				sp := serveGuest(t, ctx, srv, server+" "+args, marker, port)
				defer sp.Stop(context.Background())
				cr, err := cli.Run(ctx, fmt.Sprintf("%s -s %s %s", client, srv.Addr, args))
				if cr == nil || !cr.Success() {
					t.Fatalf("client: %v %+v", err, cr)
				}
				sr, err := sp.Wait(ctx)
				if sr == nil || !sr.Success() {
					t.Fatalf("server: %v %+v", err, sr)
				}
				t.Logf("server:\n%sclient:\n%s", sr.Stdout, cr.Stdout)
				if s, c := rows(t, "server", sr.Stdout), rows(t, "client", cr.Stdout); s != c {
					t.Errorf("rows differ: server %q, client %q", s, c)
				}
			})
		}
	}
}
