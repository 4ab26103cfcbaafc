// Command vmexec is a go test -exec runner: it boots the vmtest guest pair
// and runs the package's test binary inside guest a, with guest b as its
// peer on the soft-RoCE wire (see package guest for the test side):
//
//	go build -o bin/vmexec ./internal/vmtest/cmd/vmexec
//	CGO_ENABLED=0 go test -p 1 -count=1 -exec "$PWD/bin/vmexec" ./uverbs/...
//
// Flags (before the test binary; put them in the -exec string):
//
//	-nocm-a, -nocm-b   boot that guest without ib_cm, iw_cm, rdma_cm, rdma_ucm
//	-timeout D         bound for the test binary (default: its -test.timeout + 30s, else 10m)
//	-boot-timeout D    bound for booting each guest (default 3m)
//	-keep              keep the share folder (printed) after the run
//
// The binary runs as root in guest a with the working directory holding a
// copy of the package's testdata/ (at the package's path in the module, next
// to a copy of mad/testdata/captures), and the environment VMTEST_GUEST=a,
// VMTEST_PEER=b, VMTEST_LOCAL_ADDR=192.0.2.1, VMTEST_PEER_ADDR=192.0.2.2,
// VMTEST_SHARE=/host, VMTEST_OUT_DIR, VMTEST_NOMODS, VMTEST_PEER_NOMODS,
// VMTEST=1 and the host's CI. Its output streams through; vmexec exits with
// its exit status. If $VMTEST_OUT is set, the guest's VMTEST_OUT_DIR is
// copied there afterwards. Boot failures, crashes and timeouts print the
// guests' console tails.
package main

import (
	"context"
	"debug/elf"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/go-rdma/rdmacm/internal/vmtest"
	"github.com/go-rdma/rdmacm/internal/vmtest/agent"
)

func main() { os.Exit(run()) }

func run() int {
	fs := flag.NewFlagSet("vmexec", flag.ContinueOnError)
	nocmA := fs.Bool("nocm-a", false, "boot guest a without the kernel CM modules")
	nocmB := fs.Bool("nocm-b", false, "boot guest b without the kernel CM modules")
	timeout := fs.Duration("timeout", 0, "bound for the test binary")
	bootTimeout := fs.Duration("boot-timeout", vmtest.DefaultBootTimeout, "bound for booting each guest")
	keep := fs.Bool("keep", false, "keep the share folder")
	if err := fs.Parse(os.Args[1:]); err != nil || fs.NArg() < 1 {
		fmt.Fprintln(os.Stderr, "usage: vmexec [flags] TEST_BINARY [ARGS...]")
		return 2
	}
	bin, args := fs.Arg(0), fs.Args()[1:]
	if *timeout == 0 {
		*timeout = 10 * time.Minute
		if d, ok := testTimeout(args); ok && d > 0 {
			// The binary's own -test.timeout panics first (with its
			// goroutine dump); go test kills us at -timeout + 1m.
			*timeout = d + 30*time.Second
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout+2**bootTimeout)
	defer cancel()

	if isDynamic(bin) {
		fmt.Fprintf(os.Stderr, "vmexec: note: %s is dynamically linked; build with CGO_ENABLED=0 for a static test binary\n", filepath.Base(bin))
	}
	opts := vmtest.PairOptions{BootTimeout: *bootTimeout, Keep: *keep, Log: os.Stderr,
		Lifetime: *timeout + 2**bootTimeout + time.Minute}
	if *nocmA {
		opts.SkipModulesA = vmtest.CMModules()
	}
	if *nocmB {
		opts.SkipModulesB = vmtest.CMModules()
	}
	p, err := vmtest.BootPair(ctx, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "vmexec:", err)
		return 1
	}
	defer func() {
		p.Close()
		if *keep {
			fmt.Fprintf(os.Stderr, "vmexec: share kept at %s\n", p.Share)
		}
	}()

	pkgDir := filepath.Join(p.Share, "pkg")
	outDir := filepath.Join(p.Share, "out")
	for _, d := range []string{pkgDir, outDir, filepath.Join(p.Share, "bin")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "vmexec:", err)
			return 1
		}
	}
	guestBin := filepath.Join(p.Share, "bin", filepath.Base(bin))
	if err := copyFile(bin, guestBin, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "vmexec:", err)
		return 1
	}
	if wd, err := os.Getwd(); err == nil {
		// The package sits at its path inside a copy of the module tree
		// that holds only testdata: its own, and the golden captures
		// other packages read (../../mad/testdata/captures).
		if root, ok := moduleRoot(wd); ok {
			if rel, err := filepath.Rel(root, wd); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
				pkgDir = filepath.Join(p.Share, "mod", rel)
				captures := filepath.Join("mad", "testdata", "captures")
				if _, err := os.Stat(filepath.Join(root, captures)); err == nil && rel != "mad" {
					if err := os.CopyFS(filepath.Join(p.Share, "mod", captures), os.DirFS(filepath.Join(root, captures))); err != nil {
						fmt.Fprintln(os.Stderr, "vmexec: copy golden captures:", err)
						return 1
					}
				}
				if err := os.MkdirAll(pkgDir, 0o755); err != nil {
					fmt.Fprintln(os.Stderr, "vmexec:", err)
					return 1
				}
			}
		}
		if _, err := os.Stat(filepath.Join(wd, "testdata")); err == nil {
			if err := os.CopyFS(filepath.Join(pkgDir, "testdata"), os.DirFS(filepath.Join(wd, "testdata"))); err != nil {
				fmt.Fprintln(os.Stderr, "vmexec: copy testdata:", err)
				return 1
			}
		}
	}
	env := []string{
		"VMTEST=1", "VMTEST_GUEST=a", "VMTEST_PEER=b",
		"VMTEST_LOCAL_ADDR=" + vmtest.AddrA, "VMTEST_PEER_ADDR=" + vmtest.AddrB,
		"VMTEST_SHARE=" + vmtest.GuestShare, "VMTEST_OUT_DIR=" + p.A.GuestPath(outDir),
		"VMTEST_NOMODS=" + strings.Join(p.A.SkippedModules, ","),
		"VMTEST_PEER_NOMODS=" + strings.Join(p.B.SkippedModules, ","),
		"HOME=/root", "TMPDIR=/tmp",
	}
	for _, k := range []string{"CI", "GOTRACEBACK", "GODEBUG", "GOMAXPROCS"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	// Test knobs of this module (CM_ENDURANCE_CYCLES, CM_LEAK_CYCLES).
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "CM_") {
			env = append(env, kv)
		}
	}
	proc, err := p.A.StartCmd(ctx, agent.Cmd{
		Args: append([]string{p.A.GuestPath(guestBin)}, args...),
		Env:  env, Dir: p.A.GuestPath(pkgDir), Timeout: *timeout,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "vmexec:", err)
		return 1
	}
	res, err := stream(ctx, proc)
	if out := os.Getenv("VMTEST_OUT"); out != "" {
		if cerr := os.CopyFS(out, os.DirFS(outDir)); cerr != nil {
			fmt.Fprintln(os.Stderr, "vmexec: copy results to $VMTEST_OUT:", cerr)
		}
	}
	switch {
	case err != nil && res == nil:
		fmt.Fprintf(os.Stderr, "vmexec: %v\n%s", err, p.ConsoleReports(40))
		return 1
	case res.TimedOut || res.Signal != "" || res.Error != "":
		fmt.Fprintf(os.Stderr, "vmexec: test binary in guest a: %v\n%s", err, p.ConsoleReports(40))
		return 1
	case res.ExitCode != 0:
		fmt.Fprintf(os.Stderr, "vmexec: test binary exited %d; guest consoles:\n%s", res.ExitCode, p.ConsoleReports(20))
		return res.ExitCode
	}
	return 0
}

// stream copies the job's output to ours while it runs, then returns its result.
func stream(ctx context.Context, proc *agent.Process) (*agent.Result, error) {
	var outOff, errOff int64
	flush := func() {
		outOff = copyFrom(proc.StdoutPath(), outOff, os.Stdout)
		errOff = copyFrom(proc.StderrPath(), errOff, os.Stderr)
	}
	for !proc.Done() {
		flush()
		select {
		case <-ctx.Done():
			flush()
			return nil, fmt.Errorf("test binary: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	flush()
	return proc.Wait(ctx)
}

func copyFrom(path string, off int64, w io.Writer) int64 {
	f, err := os.Open(path)
	if err != nil {
		return off
	}
	defer f.Close()
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return off
	}
	n, _ := io.Copy(w, f)
	return off + n
}

func copyFile(src, dst string, perm os.FileMode) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, perm)
}

// testTimeout finds -test.timeout in the test binary's arguments.
func testTimeout(args []string) (time.Duration, bool) {
	for i, a := range args {
		v, ok := strings.CutPrefix(a, "-test.timeout=")
		if !ok && a == "-test.timeout" && i+1 < len(args) {
			v, ok = args[i+1], true
		}
		if ok {
			d, err := time.ParseDuration(v)
			return d, err == nil
		}
	}
	return 0, false
}

func isDynamic(bin string) bool {
	f, err := elf.Open(bin)
	if err != nil {
		return false
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return true
		}
	}
	return false
}

// moduleRoot finds the directory of the go.mod above dir.
func moduleRoot(dir string) (string, bool) {
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}
