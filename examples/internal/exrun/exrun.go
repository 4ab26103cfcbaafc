// Package exrun runs the example programs in the vmtest guests. Each
// example's test binary doubles as the program (Main): the guests have no
// Go toolchain, and vmexec ships the test binary only.
//
// Run starts the server in guest a, with the CM the guest has (the kernel
// CM, or our engine under vmexec -nocm-a), and the client in guest b with
// the kernel CM, and returns both outputs.
package exrun

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/internal/vmtest/guest"
)

const envMain = "RDMACM_EXAMPLE_MAIN"

// clientQuit bounds a client run: every example's client finishes in well
// under a minute in the guests.
const clientQuit = 4 * time.Minute

// Main runs the program instead of the tests when the binary was started
// by Run.
func Main(m *testing.M, main func()) {
	if args, ok := os.LookupEnv(envMain); ok {
		os.Args = append(os.Args[:1], strings.Fields(args)...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// Backend is the CM of guest a.
func Backend() string {
	if slices.Contains(guest.Local().NoMods, "ib_cm") {
		return "user"
	}
	return "kernel"
}

// Run runs the server (until it prints a line starting with ready, then
// in the background) and the client, and returns their outputs.
func Run(t *testing.T, server, client string, ready string) (srvOut, cliOut string) {
	t.Helper()
	guest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	srv := exec.CommandContext(ctx, self)
	srv.Env = append(os.Environ(), "GOTRACEBACK=all", envMain+"=-backend "+Backend()+" "+server)
	var srvErr lockedBuffer
	srv.Stderr = io.MultiWriter(os.Stderr, &srvErr)
	pipe, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Process.Kill()
	var out strings.Builder
	sc := bufio.NewScanner(pipe)
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		if strings.HasPrefix(sc.Text(), ready) {
			break
		}
	}
	rest := make(chan struct{})
	go func() {
		for sc.Scan() {
			out.WriteString(sc.Text() + "\n")
		}
		close(rest)
	}()
	// A client still running after clientQuit dumps its goroutines
	// (SIGQUIT), and so does the server when the client fails: a hang
	// shows where both ends wait.
	res, err := guest.Peer().RunCmd(ctx, guest.Cmd{Timeout: 6 * time.Minute,
		Script: fmt.Sprintf("exec timeout -s QUIT %d %s", int(clientQuit.Seconds()), self),
		Env:    []string{"GOTRACEBACK=all", envMain + "=-backend kernel " + client}})
	if res != nil {
		t.Logf("client stderr:\n%s", res.Stderr)
		cliOut = res.Stdout
	}
	if err != nil {
		srv.Process.Signal(syscall.SIGQUIT)
		srvText := "still running 10s after SIGQUIT"
		select {
		case <-rest:
			srvText = out.String()
		case <-time.After(10 * time.Second):
		}
		var stderr string
		if res != nil {
			stderr = res.Stderr
		}
		// The condensed stacks come last: CI shows a failed test's end.
		t.Fatalf("client: %v\n%s\nserver (sent SIGQUIT, stacks on stderr):\n%s\nwhere the client waits:\n%s\nwhere the server waits:\n%s",
			err, cliOut, srvText, Waits(stderr), Waits(srvErr.String()))
	}
	done := make(chan error, 1)
	go func() { <-rest; done <- srv.Wait() }()
	select {
	case err = <-done:
	case <-time.After(2 * time.Minute):
		err = context.DeadlineExceeded
	}
	if err != nil {
		t.Fatalf("server: %v\n%s", err, out.String())
	}
	t.Logf("server:\n%s\nclient:\n%s", out.String(), cliOut)
	return out.String(), cliOut
}

// lockedBuffer is a strings.Builder that a process's output can be
// copied into while another goroutine reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Waits condenses a Go traceback to the goroutines in this module's code,
// one line each: state, then the module's and net/http's functions,
// innermost first. CI shows the end of a failed test's output, and whole
// tracebacks push the frames that matter out of it.
func Waits(traceback string) string {
	var b strings.Builder
	for _, g := range strings.Split(traceback, "\n\ngoroutine ")[1:] {
		lines := strings.Split(g, "\n")
		var fns []string
		for _, l := range lines[1:] {
			if l == "" || strings.HasPrefix(l, "\t") || strings.HasPrefix(l, "created by") {
				continue
			}
			if strings.Contains(l, "go-rdma/rdmacm") || strings.HasPrefix(l, "net/http.") {
				fn := l[strings.LastIndex(l, "/")+1:]
				if i := strings.LastIndex(fn, "("); i > 0 {
					fn = fn[:i]
				}
				fns = append(fns, fn)
			}
		}
		if len(fns) > 0 && slices.ContainsFunc(fns, func(f string) bool { return !strings.HasPrefix(f, "http.") }) {
			// "7 gp=0x... m=nil [select]:" -> "7 [select]"
			head := strings.TrimSuffix(lines[0], ":")
			if i, j := strings.IndexByte(head, ' '), strings.IndexByte(head, '['); i > 0 && j > i {
				head = head[:i] + " " + head[j:]
			}
			fmt.Fprintf(&b, "goroutine %s %s\n", head, strings.Join(fns, " < "))
		}
	}
	return b.String()
}
