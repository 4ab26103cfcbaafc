package hwtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The two commands checked end to end.
const (
	cmdPingPong = "verbs-pingpong"
	cmdPing     = "rdmacm-ping"
)

// BuildTimeout bounds go build of the commands.
const BuildTimeout = 5 * time.Minute

// Ports of the command runs.
const (
	portPingPong = 18515
	portPing     = 7392
)

// eceFlag is README.md's ECE value, as rdmacm-ping takes it.
const eceFlag = "0x15b3:0x30000001"

func (r *runner) commandChecks(ctx context.Context, tg *target) {
	var dir string
	res := r.checkFor(ctx, "build commands", BuildTimeout, func(ctx context.Context) (string, error) {
		if r.cfg.BinDir != "" {
			for _, c := range []string{cmdPingPong, cmdPing} {
				if err := executable(filepath.Join(r.cfg.BinDir, c)); err != nil {
					return "", fmt.Errorf("-bin %s: %w", r.cfg.BinDir, err)
				}
			}
			dir = r.cfg.BinDir
			return "prebuilt in " + dir, nil
		}
		d, detail, err := buildCommands(ctx)
		dir = d
		return detail, err
	})
	if dir != "" && r.cfg.BinDir == "" {
		defer os.RemoveAll(dir)
	}
	need := func(ctx context.Context) error {
		switch {
		case res.Status != Pass:
			return errors.New("not run: the commands were not built")
		case r.abandoned:
			return errors.New("not run: an earlier check timed out")
		}
		return nil
	}
	gid := strconv.Itoa(tg.gid.Index)
	for i, extra := range [][]string{nil, {"-e"}} {
		name := strings.TrimSpace(cmdPingPong + " " + strings.Join(extra, " "))
		port := strconv.Itoa(portPingPong + i)
		r.check(ctx, name, func(ctx context.Context) (string, error) {
			if err := need(ctx); err != nil {
				return "", err
			}
			args := append([]string{"-d", tg.dev.Name, "-i", "1", "-g", gid, "-p", port, "-n", "200", "-s", "4096", "-c"}, extra...)
			srv, cli, err := pair(ctx, filepath.Join(dir, cmdPingPong), args, append(args[:len(args):len(args)], "127.0.0.1"),
				func(out string) bool { return strings.Contains(strings.ToLower(out), "couldn't connect") })
			if err == nil {
				for who, out := range map[string]string{"server": srv, "client": cli} {
					if !pingPongSummary.MatchString(out) {
						err = errors.Join(err, fmt.Errorf("%s printed no \"200 iters in\" summary", who))
					}
				}
			}
			return sides(srv, cli), err
		})
	}
	ping := filepath.Join(dir, cmdPing)
	runs := []struct {
		name       string
		srv, cli   []string
		wantRemote bool
	}{
		{cmdPing, []string{"-s"}, []string{"-c", "-C", "10", "-V"}, false},
		{cmdPing + " -q -ece", []string{"-s", "-q", "-ece", eceFlag}, []string{"-c", "-C", "10", "-V", "-q", "-ece", eceFlag}, false},
		{cmdPing + " -connect-only -ece", []string{"-s", "-connect-only", "-ece", eceFlag}, []string{"-c", "-connect-only", "-ece", eceFlag}, true},
	}
	for i, run := range runs {
		r.check(ctx, run.name, func(ctx context.Context) (string, error) {
			if err := need(ctx); err != nil {
				return "", err
			}
			if !tg.ip.IsValid() {
				return "", skipf("no IPv4 address for the CM: %v", tg.ipErr)
			}
			if !tg.dev.RDMACM.Present {
				// Each process of our engine registers the CM class on
				// the port, and a port takes one such agent.
				return "", skipf("no kernel CM: the user backend takes one CM agent per port, so a server and a client cannot share this host (the cm user backend row runs both in one process)")
			}
			common := []string{"-a", tg.ip.String(), "-p", strconv.Itoa(portPing + i), "-t", "20"}
			srv, cli, err := pair(ctx, ping, append(run.srv, common...), append(run.cli, common...), cmRetry)
			detail := sides(srv, cli)
			if err == nil && run.wantRemote {
				want := "remote ECE: vendor=0x15b3 options=0x30000001"
				for who, out := range map[string]string{"server": srv, "client": cli} {
					if !strings.Contains(out, want) {
						err = errors.Join(err, fmt.Errorf("%s did not print %q", who, want))
					}
				}
				detail = "both sides printed " + want + "\n" + detail
			}
			return detail, err
		})
	}
}

var pingPongSummary = regexp.MustCompile(`\b200 iters in [\d.]+ seconds`)

// cmRetry: the client ran before the server listened (REJ, unreachable).
func cmRetry(out string) bool {
	o := strings.ToLower(out)
	return strings.Contains(o, "reject") || strings.Contains(o, "unreachable") || strings.Contains(o, "refused")
}

func executable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", path)
	}
	return nil
}

// goTool finds the go command: PATH, else $GOROOT/bin.
func goTool() (string, error) {
	if p, err := exec.LookPath("go"); err == nil {
		return p, nil
	}
	if root := os.Getenv("GOROOT"); root != "" {
		p := filepath.Join(root, "bin", "go")
		if executable(p) == nil {
			return p, nil
		}
	}
	return "", errors.New("no go command in PATH (give -bin DIR with prebuilt verbs-pingpong and rdmacm-ping)")
}

// buildCommands builds both commands from the module around the working
// directory into a new temporary folder.
func buildCommands(ctx context.Context) (dir, detail string, err error) {
	gotool, err := goTool()
	if err != nil {
		return "", "", err
	}
	out, err := exec.CommandContext(ctx, gotool, "env", "GOMOD").Output()
	if err != nil {
		return "", "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", "", errors.New("not inside the module's source tree: run from it, or give -bin DIR")
	}
	root := filepath.Dir(gomod)
	dir, err = os.MkdirTemp("", "hwtest-bin-")
	if err != nil {
		return "", "", err
	}
	cmd := exec.CommandContext(ctx, gotool, "build", "-o", dir+string(filepath.Separator), "./cmd/"+cmdPingPong, "./cmd/"+cmdPing)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	cmd.WaitDelay = 5 * time.Second
	if b, err := cmd.CombinedOutput(); err != nil {
		return dir, "", fmt.Errorf("go build in %s: %w\n%s", root, err, lastLines(string(b), 5))
	}
	return dir, "go build of ./cmd/" + cmdPingPong + " and ./cmd/" + cmdPing + " (CGO_ENABLED=0)", nil
}

// syncBuffer is a bytes.Buffer safe to read while a process writes it.
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

// pair runs bin as a server with srvArgs, then as a client with cliArgs
// (again after a short pause while retry says the server was not ready),
// and waits for both. Both must exit 0.
func pair(ctx context.Context, bin string, srvArgs, cliArgs []string, retry func(string) bool) (srvOut, cliOut string, err error) {
	var sout syncBuffer
	srv := exec.CommandContext(ctx, bin, srvArgs...)
	srv.Stdout, srv.Stderr, srv.WaitDelay = &sout, &sout, 5*time.Second
	if err := srv.Start(); err != nil {
		return "", "", fmt.Errorf("server: %w", err)
	}
	srvDone := make(chan error, 1)
	go func() { srvDone <- srv.Wait() }()
	var srvErr error
	srvExited := false
	var out []byte
	var cerr error
	for {
		cli := exec.CommandContext(ctx, bin, cliArgs...)
		cli.WaitDelay = 5 * time.Second
		out, cerr = cli.CombinedOutput()
		if cerr == nil || !retry(string(out)) || ctx.Err() != nil {
			break
		}
		select {
		case srvErr = <-srvDone:
			srvExited = true
		case <-time.After(300 * time.Millisecond):
		}
		if srvExited {
			break
		}
	}
	cliOut = string(out)
	if cerr != nil {
		cerr = fmt.Errorf("client %s: %w", strings.Join(cliArgs, " "), cerr)
		if !srvExited {
			srv.Process.Kill()
		}
	}
	if !srvExited {
		select {
		case srvErr = <-srvDone:
		case <-ctx.Done():
			srv.Process.Kill()
			srvErr = fmt.Errorf("did not exit: %w", ctx.Err())
			<-srvDone
		}
	}
	if srvErr != nil && cerr == nil {
		srvErr = fmt.Errorf("server %s: %w", strings.Join(srvArgs, " "), srvErr)
	} else if srvErr != nil {
		srvErr = nil // killed after the client failed
	}
	return sout.String(), cliOut, errors.Join(cerr, srvErr)
}

// sides is the detail of a server/client run: their last lines.
func sides(srv, cli string) string {
	return "server: " + lastLines(srv, 2) + "\nclient: " + lastLines(cli, 3)
}
