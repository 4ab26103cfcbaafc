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
	"os"
	"os/exec"
	"slices"
	"strings"
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
	srv.Stderr = os.Stderr
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
		select {
		case <-rest:
			t.Fatalf("client: %v\n%s\nserver (sent SIGQUIT, stacks on stderr):\n%s", err, cliOut, out.String())
		case <-time.After(10 * time.Second):
			t.Fatalf("client: %v\n%s\nserver: still running 10s after SIGQUIT", err, cliOut)
		}
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
