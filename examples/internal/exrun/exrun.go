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
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/internal/vmtest/guest"
)

const envMain = "RDMACM_EXAMPLE_MAIN"

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
	srv.Env = append(os.Environ(), envMain+"=-backend "+Backend()+" "+server)
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
	res, err := guest.Peer().RunCmd(ctx, guest.Cmd{Args: []string{self}, Timeout: 6 * time.Minute,
		Env: []string{envMain + "=-backend kernel " + client}})
	if res != nil {
		t.Logf("client stderr:\n%s", res.Stderr)
		cliOut = res.Stdout
	}
	if err != nil {
		t.Fatalf("client: %v\n%s", err, cliOut)
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
