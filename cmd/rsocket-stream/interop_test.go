package main

// Interop with librdmacm's rstream and rcopy in the vmtest guests (a =
// 192.0.2.1, b = 192.0.2.2, soft-RoCE on a virtual wire), on the kernel
// CM. One pair for the package; the same twins on our CM engine are in
// cmd/rsocket-copy/interop_test.go. They run with VMTEST=1 (make
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

// pair boots the guests once and puts the twins and rcopy (from the
// cached rdmacm-utils package; the image leaves it out) in /host/bin.
func pair(tb testing.TB) *vmtest.Pair {
	tb.Helper()
	if os.Getenv("VMTEST") != "1" {
		tb.Skip("real-kernel interop test: boots QEMU guests; run with VMTEST=1 (make vmtest)")
	}
	pairOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
		defer cancel()
		opts := vmtest.PairOptions{Log: os.Stderr}
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
// rcopy from the rdmacm-utils package the image was built from.
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
	goStream = "/host/bin/rsocket-stream"
	goCopy   = "/host/bin/rsocket-copy"
	cCopy    = "/host/bin/rcopy"
)

// serve starts server on m and returns once it listens on port: a Go
// twin says so on stdout (marker); for a C server (block-buffered
// stdout) the kernel's cm_id table is the witness.
func serve(t testing.TB, ctx context.Context, m *vmtest.Machine, server, marker string, port int) *agent.Process {
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

// finish waits for a server that exits after its client.
func finish(t testing.TB, ctx context.Context, p *agent.Process, what string) string {
	t.Helper()
	r, err := p.Wait(ctx)
	if r == nil || !r.Success() {
		t.Fatalf("%s: %v %+v", what, err, r)
	}
	return r.Stdout
}

// rowFields are the columns of an rstream row that do not depend on
// time: name, bytes, xfers, iters, total.
var row = regexp.MustCompile(`(?m)^(\S+ +\S+ +\S+ +\S+ +\S+) +[0-9.]+s +[0-9.]+ +[0-9.]+$`)

const header = "name      bytes   xfers   iters   total       time     Gb/sec    usec/xfer"

func wantRows(t *testing.T, who, out string, n int) []string {
	t.Helper()
	if !strings.HasPrefix(out, header+"\n") {
		t.Fatalf("%s: no rstream header in\n%s", who, out)
	}
	var rows []string
	for _, m := range row.FindAllStringSubmatch(out, -1) {
		rows = append(rows, strings.Join(strings.Fields(m[1]), " "))
	}
	if len(rows) != n {
		t.Fatalf("%s: %d rows, want %d:\n%s", who, len(rows), n, out)
	}
	return rows
}

// streamCase runs a server on srv and a client on cli with the same test
// flags, and checks both printed the same row.
func streamCase(t *testing.T, srv, cli *vmtest.Machine, server, client, flags string, port int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	marker := ""
	if server == goStream {
		marker = "name"
	}
	args := fmt.Sprintf("%s -p %d", flags, port)
	sp := serve(t, ctx, srv, server+" "+args, marker, port)
	defer sp.Stop(context.Background())
	cr, err := cli.Run(ctx, fmt.Sprintf("%s -s %s %s", client, srv.Addr, args))
	if cr == nil || !cr.Success() {
		t.Fatalf("client %s %s on %s: %v %+v", client, args, cli.Name, err, cr)
	}
	sOut := finish(t, ctx, sp, "server "+server)
	t.Logf("server %s:\n%sclient %s:\n%s", server, sOut, client, cr.Stdout)
	s, c := wantRows(t, "server", sOut, 1), wantRows(t, "client", cr.Stdout, 1)
	if s[0] != c[0] {
		t.Errorf("rows differ: server %q, client %q", s[0], c[0])
	}
}

// TestStreamInterop: our twin against rstream in both roles, every byte
// verified (-T v): blocking calls at every size, nonblocking at 4 KiB and
// 64 KiB (the nonblocking C side spins, slowly, in these 1-vCPU guests).
func TestStreamInterop(t *testing.T) {
	p := pair(t)
	port := 7600
	for _, flags := range []string{
		"-S 64 -C 1 -I 100 -T b -T v", "-S 4096 -C 1 -I 50 -T b -T v",
		"-S 65536 -C 30 -I 1 -T b -T v", "-S 1048576 -C 3 -I 1 -T b -T v",
		"-S 4096 -C 1 -I 50 -T n -T v", "-S 65536 -C 10 -I 1 -T n -T v",
	} {
		port++
		t.Run("go-server/"+flags, func(t *testing.T) { streamCase(t, p.A, p.B, goStream, "rstream", flags, port) })
		port++
		t.Run("go-client/"+flags, func(t *testing.T) { streamCase(t, p.B, p.A, "rstream", goStream, flags, port) })
	}
}

// TestStreamTCP: -T s against rstream's plain-socket mode.
func TestStreamTCP(t *testing.T) {
	p := pair(t)
	for i, dir := range [][2]string{{goStream, "rstream"}, {"rstream", goStream}} {
		t.Run(filepath.Base(dir[0])+"-server", func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			args := fmt.Sprintf("-S 4096 -C 100 -I 1 -T s -T v -p %d", 7700+i)
			srv, err := p.B.Start(ctx, dir[0]+" "+args)
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Stop(context.Background())
			// No cm_id over TCP: the client retries until the port answers.
			for try := 0; ; try++ {
				r, err := p.A.Run(ctx, fmt.Sprintf("%s -s %s %s", dir[1], p.B.Addr, args))
				if r != nil && r.Success() {
					c := wantRows(t, "client", r.Stdout, 1)
					if s := wantRows(t, "server", finish(t, ctx, srv, "server"), 1); s[0] != c[0] {
						t.Errorf("rows differ: server %q, client %q", s[0], c[0])
					}
					return
				}
				if try == 50 || ctx.Err() != nil {
					t.Fatalf("client: %v %+v", err, r)
				}
				time.Sleep(200 * time.Millisecond)
			}
		})
	}
}

// copySource makes a 64 MiB file of random bytes on m once and returns
// its path and sha256sum line.
func copySource(t *testing.T, ctx context.Context, m *vmtest.Machine) (string, string) {
	t.Helper()
	const src = "/tmp/copy-src.bin"
	r, err := m.Run(ctx, "head -c 67108864 /dev/urandom > "+src+" && sha256sum < "+src)
	if r == nil || !r.Success() {
		t.Fatalf("source file: %v %+v", err, r)
	}
	return src, r.Stdout
}

// copyCase copies src (sha256sum line want) from cli to srv, client
// against server, and compares the sha256 of the copy.
func copyCase(t *testing.T, srv, cli *vmtest.Machine, server, client, marker, src, want string, port int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dst := fmt.Sprintf("/tmp/copy-dst-%d.bin", port)
	sp := serve(t, ctx, srv, fmt.Sprintf("cd /tmp && %s -p %d", server, port), marker, port)
	cr, err := cli.Run(ctx, fmt.Sprintf("%s %s %s:%s -p %d", client, src, srv.Addr, dst, port))
	sr, _ := sp.Stop(context.Background()) // both rcopy servers serve forever
	if cr == nil || !cr.Success() {
		t.Fatalf("client %s: %v %+v\nserver: %+v", client, err, cr, sr)
	}
	t.Logf("client %s:\n%s", client, cr.Stdout)
	if sr != nil {
		t.Logf("server %s:\n%s", server, sr.Stdout)
	}
	if !regexp.MustCompile(`^opening\.\.\.transferring\.\.\.closing\.\.\.done\n67108864 bytes in [0-9.]+ seconds = [0-9.]+ Gb/sec\n$`).MatchString(cr.Stdout) {
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

// TestCopyInterop: 64 MiB with librdmacm's rcopy, our twin as client and
// as server.
func TestCopyInterop(t *testing.T) {
	p := pair(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	src, want := copySource(t, ctx, p.A)
	defer p.A.Run(context.Background(), "rm -f "+src)
	t.Run("go-client", func(t *testing.T) { copyCase(t, p.B, p.A, cCopy, goCopy, "", src, want, 7801) })
	t.Run("go-server", func(t *testing.T) {
		copyCase(t, p.B, p.A, goCopy, cCopy, "waiting for connection", src, want, 7802)
	})
}
