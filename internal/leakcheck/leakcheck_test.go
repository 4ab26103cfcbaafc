//go:build linux

package leakcheck

import (
	"bytes"
	"errors"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const settle = 100 * time.Millisecond

// TestCleanRunPasses opens and closes a file, a raw pipe, an os.Pipe and a
// TCP listener (the last two go through the netpoller): nothing is
// reported and the tests' code is kept.
func TestCleanRunPasses(t *testing.T) {
	var out bytes.Buffer
	code := run(func() int {
		f, err := os.Open(os.Args[0])
		if err != nil {
			t.Error(err)
			return 0
		}
		f.Close()
		var p [2]int
		if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
			t.Error(err)
			return 0
		}
		syscall.Close(p[0])
		syscall.Close(p[1])
		r, w, err := os.Pipe()
		if err != nil {
			t.Error(err)
			return 0
		}
		r.Close()
		w.Close()
		if l, err := net.Listen("tcp", "127.0.0.1:0"); err == nil {
			l.Close()
		}
		return 0
	}, &out, settle)
	if code != 0 || out.Len() != 0 {
		t.Fatalf("code %d, output %q; want 0 and nothing", code, out.String())
	}
}

// TestLeakedFileFails keeps a file open: exit code 1 and the fd with its
// path in the output.
func TestLeakedFileFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "leaked")
	var f *os.File
	var out bytes.Buffer
	code := run(func() int {
		var err error
		if f, err = os.Create(path); err != nil {
			t.Error(err)
		}
		return 0
	}, &out, settle)
	if f == nil {
		t.FailNow()
	}
	defer f.Close()
	want := "fd " + strconv.Itoa(int(f.Fd())) + " -> " + path
	if code != 1 || !strings.Contains(out.String(), want) || !strings.Contains(out.String(), "1 file descriptor(s)") {
		t.Fatalf("code %d, output %q; want 1 and %q", code, out.String(), want)
	}
}

// TestLeakedRawPipeFails leaks both ends of a pipe made with a raw
// syscall (no *os.File, no finalizer): both are reported.
func TestLeakedRawPipeFails(t *testing.T) {
	var p [2]int
	var out bytes.Buffer
	code := run(func() int {
		if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
			t.Error(err)
		}
		return 0
	}, &out, settle)
	defer syscall.Close(p[0])
	defer syscall.Close(p[1])
	if code != 1 || strings.Count(out.String(), "-> pipe:[") != 2 {
		t.Fatalf("code %d, output %q; want 1 and two pipes", code, out.String())
	}
}

// TestFailingTestsKeepTheirCode: a leak does not mask the tests' own
// failure code, and is still listed.
func TestFailingTestsKeepTheirCode(t *testing.T) {
	var p [2]int
	var out bytes.Buffer
	code := run(func() int {
		if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
			t.Error(err)
		}
		return 3
	}, &out, settle)
	syscall.Close(p[0])
	syscall.Close(p[1])
	if code != 3 || !strings.Contains(out.String(), "pipe:[") {
		t.Fatalf("code %d, output %q; want 3 and the pipe", code, out.String())
	}
	if code := run(func() int { return 2 }, &out, settle); code != 2 {
		t.Fatalf("code %d, want the tests' 2", code)
	}
}

// TestReplacedFdFails: an fd that was open before the tests but names
// another file afterwards (dup2 over it) is a leak, as is one whose path
// is the same but whose file was recreated (another inode).
func TestReplacedFdFails(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	fa, err := os.Create(a)
	if err != nil {
		t.Fatal(err)
	}
	defer fa.Close()
	fd := int(fa.Fd())
	var out bytes.Buffer
	code := run(func() int {
		fb, err := os.Create(b)
		if err != nil {
			t.Error(err)
			return 0
		}
		defer fb.Close()
		if err := syscall.Dup3(int(fb.Fd()), fd, syscall.O_CLOEXEC); err != nil {
			t.Error(err)
		}
		return 0
	}, &out, settle)
	want := "fd " + strconv.Itoa(fd) + " -> " + b + " (was " + a + " before the tests)"
	if code != 1 || !strings.Contains(out.String(), want) {
		t.Fatalf("code %d, output %q; want 1 and %q", code, out.String(), want)
	}

	// Same path, new file: only the inode tells them apart.
	out.Reset()
	code = run(func() int {
		if err := os.Remove(b); err != nil {
			t.Error(err)
		}
		fb, err := os.Create(b)
		if err != nil {
			t.Error(err)
			return 0
		}
		defer fb.Close()
		if err := syscall.Dup3(int(fb.Fd()), fd, syscall.O_CLOEXEC); err != nil {
			t.Error(err)
		}
		return 0
	}, &out, settle)
	if code != 1 || !strings.Contains(out.String(), "fd "+strconv.Itoa(fd)+" -> "+b) {
		t.Fatalf("recreated file: code %d, output %q; want 1 and fd %d", code, out.String(), fd)
	}
}

// TestClosingABaselineFdIsFine: fewer fds after the tests is no leak.
func TestClosingABaselineFdIsFine(t *testing.T) {
	f, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	code := run(func() int { f.Close(); return 0 }, &out, settle)
	if code != 0 || out.Len() != 0 {
		t.Fatalf("code %d, output %q; want 0 and nothing", code, out.String())
	}
}

// TestSettlingGoroutineClosesItsFd: a goroutine still shutting down when
// the tests return closes its fd within the settle time; no failure, and
// nothing is reported once it has exited.
func TestSettlingGoroutineClosesItsFd(t *testing.T) {
	var out bytes.Buffer
	code := run(func() int {
		var p [2]int
		if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
			t.Error(err)
			return 0
		}
		go func() {
			time.Sleep(30 * time.Millisecond)
			syscall.Close(p[0])
			syscall.Close(p[1])
		}()
		return 0
	}, &out, time.Second)
	if code != 0 || out.Len() != 0 {
		t.Fatalf("code %d, output %q; want 0 and nothing", code, out.String())
	}
}

// TestLingeringGoroutineIsReported: a goroutine still running after the
// settle time is reported with its stack but does not fail the run.
func TestLingeringGoroutineIsReported(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	var out bytes.Buffer
	code := run(func() int {
		go lingering(release)
		return 0
	}, &out, settle)
	if code != 0 || !strings.Contains(out.String(), "leakcheck.lingering") || !strings.Contains(out.String(), "not a failure") {
		t.Fatalf("code %d, output %q; want 0 and the goroutine's stack", code, out.String())
	}
}

func lingering(release chan struct{}) { <-release }

// TestListFDsSeesOwnFiles checks the listing itself: an open file is
// listed with its path, and the listing's own directory fd is not.
func TestListFDsSeesOwnFiles(t *testing.T) {
	f, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fds, err := listFDs()
	if err != nil {
		t.Fatal(err)
	}
	exe, _ := filepath.Abs(os.Args[0])
	if got := fds[int(f.Fd())].target; got != exe {
		t.Fatalf("fd %d -> %q, want %q", f.Fd(), got, exe)
	}
	for fd, info := range fds {
		if info.target == "/proc/"+strconv.Itoa(os.Getpid())+"/fd" {
			t.Fatalf("the listing's own fd %d is listed", fd)
		}
	}
}

const envChild = "LEAKCHECK_TEST_CHILD"

// TestMainFailsOnLeak runs this test binary again with only
// TestChildLeaks, which leaks a pipe: Main must make the binary exit 1
// after its tests passed, naming the pipe.
func TestMainFailsOnLeak(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildLeaks$", "-test.v")
	cmd.Env = append(os.Environ(), envChild+"=1")
	out, err := cmd.CombinedOutput()
	if errors.Is(err, syscall.ENOEXEC) {
		t.Skipf("cannot run the test binary itself (under qemu-user without binfmt): %v", err)
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("child: %v, want exit status 1; output:\n%s", err, out)
	}
	if !bytes.Contains(out, []byte("--- PASS: TestChildLeaks")) || !bytes.Contains(out, []byte("the tests left 1 file descriptor(s) open")) ||
		!bytes.Contains(out, []byte("-> pipe:[")) {
		t.Fatalf("child output lacks the passed test or the leaked pipe:\n%s", out)
	}
}

func TestChildLeaks(t *testing.T) {
	if os.Getenv(envChild) != "1" {
		t.Skip("run by TestMainFailsOnLeak")
	}
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	syscall.Close(p[1]) // p[0] leaks
}

// TestSignalLoopIsNotLingering: signal.Notify starts os/signal's loop
// goroutine for the rest of the process (the fuzzing coordinator does so
// inside m.Run); it is neither waited for nor reported.
func TestSignalLoopIsNotLingering(t *testing.T) {
	var out bytes.Buffer
	start := time.Now()
	code := run(func() int {
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGUSR2)
		signal.Stop(c)
		return 0
	}, &out, time.Second)
	if code != 0 || out.Len() != 0 || time.Since(start) > 500*time.Millisecond {
		t.Fatalf("code %d after %v, output %q; want 0 at once and nothing", code, time.Since(start), out.String())
	}
}
