// Package twintest runs the rsocket twins (cmd/rsocket-stream,
// cmd/rsocket-copy) against librdmacm's rstream and rcopy in the vmtest
// guests (a = 192.0.2.1, b = 192.0.2.2, soft-RoCE on a virtual wire). The
// interop tests of both commands use it, one guest pair per test binary.
package twintest

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

// The commands in the guests: our twins, built static into the share,
// and librdmacm's tools from the image.
const (
	GoStream = "/host/bin/rsocket-stream"
	GoCopy   = "/host/bin/rsocket-copy"
	CStream  = "rstream"
	CCopy    = "rcopy"
)

// Guests is one lazily booted pair with the twins installed.
type Guests struct {
	opts vmtest.PairOptions
	// goFlags end every twin's command line (rcopy's options follow the
	// file names), e.g. "-backend user".
	goFlags string

	once sync.Once
	pair *vmtest.Pair
	err  error
}

// New describes the pair (guest a without the kernel CM for our engine)
// and the flags the twins get.
func New(opts vmtest.PairOptions, goFlags string) *Guests {
	opts.Log = os.Stderr
	return &Guests{opts: opts, goFlags: goFlags}
}

// Pair boots the guests on first use; it skips without VMTEST=1 (make
// vmtest), and a pair that does not boot fails the test.
func (g *Guests) Pair(tb testing.TB) *vmtest.Pair {
	tb.Helper()
	if os.Getenv("VMTEST") != "1" {
		tb.Skip("real-kernel interop test: boots QEMU guests; run with VMTEST=1 (make vmtest)")
	}
	g.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
		defer cancel()
		opts := g.opts
		if d := os.Getenv("VMTEST_SHARE"); d != "" {
			opts.Share, opts.Keep = d, true
		}
		if g.pair, g.err = vmtest.BootPair(ctx, opts); g.err == nil {
			g.err = installTwins(g.pair.Share)
		}
	})
	if g.err != nil {
		tb.Fatalf("guests: %v", g.err)
	}
	return g.pair
}

// Close shuts the pair down (from TestMain).
func (g *Guests) Close() {
	if g.pair != nil {
		g.pair.Close()
	}
}

// installTwins builds both twins (static) into share/bin.
func installTwins(share string) error {
	bin := filepath.Join(share, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return err
	}
	for _, name := range []string{"rsocket-stream", "rsocket-copy"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(bin, name), "github.com/go-rdma/rdmacm/cmd/"+name)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %v\n%s", name, err, out)
		}
	}
	return nil
}

// line is a command line, with the twins' flags at the end of a twin's.
func (g *Guests) line(cmd, args string) string {
	s := cmd + " " + args
	if (cmd == GoStream || cmd == GoCopy) && g.goFlags != "" {
		s += " " + g.goFlags
	}
	return s
}

// Serve starts server on m and returns once it listens on port: a twin
// says so on stdout (marker); for a C server (block-buffered stdout) the
// kernel's cm_id table is the witness.
func Serve(t testing.TB, ctx context.Context, m *vmtest.Machine, server, marker string, port int) *agent.Process {
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

// Finish waits for a server that exits after its client.
func Finish(t testing.TB, ctx context.Context, p *agent.Process, what string) string {
	t.Helper()
	r, err := p.Wait(ctx)
	if r == nil || !r.Success() {
		t.Fatalf("%s: %v %+v", what, err, r)
	}
	return r.Stdout
}

// RowPattern matches an rstream row; its group is the columns that do
// not depend on time: name, bytes, xfers, iters, total.
var RowPattern = regexp.MustCompile(`(?m)^(\S+ +\S+ +\S+ +\S+ +\S+) +[0-9.]+s +[0-9.]+ +[0-9.]+$`)

// Header is rstream's output header.
const Header = "name      bytes   xfers   iters   total       time     Gb/sec    usec/xfer"

// Rows checks out starts with rstream's header and has n rows, and
// returns their time-independent columns.
func Rows(t testing.TB, who, out string, n int) []string {
	t.Helper()
	if !strings.HasPrefix(out, Header+"\n") {
		t.Fatalf("%s: no rstream header in\n%s", who, out)
	}
	var rows []string
	for _, m := range RowPattern.FindAllStringSubmatch(out, -1) {
		rows = append(rows, strings.Join(strings.Fields(m[1]), " "))
	}
	if len(rows) != n {
		t.Fatalf("%s: %d rows, want %d:\n%s", who, len(rows), n, out)
	}
	return rows
}

// StreamCase runs server on srv and client on cli with the same test
// flags, and checks both printed the same row.
func (g *Guests) StreamCase(t *testing.T, srv, cli *vmtest.Machine, server, client, flags string, port int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	marker := ""
	if server == GoStream {
		marker = "name"
	}
	args := fmt.Sprintf("%s -p %d", flags, port)
	sp := Serve(t, ctx, srv, g.line(server, args), marker, port)
	defer sp.Stop(context.Background())
	cr, err := cli.Run(ctx, g.line(client, fmt.Sprintf("-s %s %s", srv.Addr, args)))
	if cr == nil || !cr.Success() {
		t.Fatalf("client %s %s on %s: %v %+v", client, args, cli.Name, err, cr)
	}
	sOut := Finish(t, ctx, sp, "server "+server)
	t.Logf("server %s:\n%sclient %s:\n%s", server, sOut, client, cr.Stdout)
	s, c := Rows(t, "server", sOut, 1), Rows(t, "client", cr.Stdout, 1)
	if s[0] != c[0] {
		t.Errorf("rows differ: server %q, client %q", s[0], c[0])
	}
}

// CopySource makes a file of size random bytes on m and returns its path
// and sha256sum line.
func CopySource(t testing.TB, ctx context.Context, m *vmtest.Machine, size int) (string, string) {
	t.Helper()
	const src = "/tmp/copy-src.bin"
	r, err := m.Run(ctx, fmt.Sprintf("head -c %d /dev/urandom > %s && sha256sum < %s", size, src, src))
	if r == nil || !r.Success() {
		t.Fatalf("source file: %v %+v", err, r)
	}
	return src, r.Stdout
}

// CopyCase copies src (size bytes, sha256sum line want) from cli to srv,
// client against server, and compares the sha256 of the copy.
func (g *Guests) CopyCase(t *testing.T, srv, cli *vmtest.Machine, server, client, src, want string, size, port int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	marker := ""
	if server == GoCopy {
		marker = "waiting for connection"
	}
	dst := fmt.Sprintf("/tmp/copy-dst-%d.bin", port)
	sp := Serve(t, ctx, srv, "cd /tmp && "+g.line(server, fmt.Sprintf("-p %d", port)), marker, port)
	// rcopy's options follow the file names (a first argument starting
	// with '-' means the server).
	cr, err := cli.Run(ctx, g.line(client, fmt.Sprintf("%s %s:%s -p %d", src, srv.Addr, dst, port)))
	sr, _ := sp.Stop(context.Background()) // both rcopy servers serve until stopped
	if cr == nil || !cr.Success() {
		t.Fatalf("client %s: %v %+v\nserver: %+v", client, err, cr, sr)
	}
	t.Logf("client %s:\n%s", client, cr.Stdout)
	if sr != nil {
		t.Logf("server %s:\n%s", server, sr.Stdout)
	}
	if !regexp.MustCompile(fmt.Sprintf(`^opening\.\.\.transferring\.\.\.closing\.\.\.done\n%d bytes in [0-9.]+ seconds = [0-9.]+ Gb/sec\n$`, size)).MatchString(cr.Stdout) {
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
