package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// serve runs an agent on a temporary directory for the test's lifetime.
func serve(t *testing.T) *Client {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, dir, "t", 5*time.Millisecond) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	c := &Client{Name: "t", Dir: dir, Poll: 5 * time.Millisecond}
	deadline := time.Now().Add(5 * time.Second)
	for !c.Ready() {
		if time.Now().After(deadline) {
			t.Fatal("agent not ready")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return c
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func TestRunOutputAndStatus(t *testing.T) {
	c := serve(t)
	r, err := c.Run(ctx(t), Cmd{Script: `echo "$GREETING"; echo oops >&2; pwd`, Env: []string{"GREETING=hello"}, Dir: "/"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Stdout != "hello\n/\n" || r.Stderr != "oops\n" || r.ExitCode != 0 {
		t.Errorf("result %+v", r)
	}
	r, err = c.Run(ctx(t), Cmd{Args: []string{"sh", "-c", "exit 3"}})
	var ee *ExitError
	if !errors.As(err, &ee) || r.ExitCode != 3 || ee.Result.ExitCode != 3 {
		t.Errorf("exit 3: %+v, %v", r, err)
	}
	r, err = c.Run(ctx(t), Cmd{Args: []string{"/nonexistent/binary"}})
	if err == nil || r.Error == "" {
		t.Errorf("missing binary: %+v, %v", r, err)
	}
}

func TestTimeoutKillsProcessGroup(t *testing.T) {
	c := serve(t)
	marker := filepath.Join(t.TempDir(), "child-alive")
	start := time.Now()
	// The background child must die with its parent's group.
	r, err := c.Run(ctx(t), Cmd{Script: "(sleep 2; touch " + marker + ") & sleep 60", Timeout: 300 * time.Millisecond})
	if err == nil || !r.TimedOut {
		t.Fatalf("want a timeout, got %+v, %v", r, err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("timeout took %v", d)
	}
	time.Sleep(2500 * time.Millisecond)
	if _, err := os.Stat(marker); err == nil {
		t.Error("a child of the timed-out job survived")
	}
}

func TestStartWaitOutputStop(t *testing.T) {
	c := serve(t)
	p, err := c.Start(ctx(t), Cmd{Script: "echo ready; exec sleep 60"})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.WaitOutput(ctx(t), "ready"); err != nil {
		t.Fatal(err)
	}
	if p.Done() {
		t.Fatal("done too early")
	}
	r, err := p.Stop(ctx(t))
	if err != nil || !r.Stopped || r.Signal != "terminated" {
		t.Errorf("stop: %+v, %v", r, err)
	}
	p, err = c.Start(ctx(t), Cmd{Script: "echo bye"})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.WaitOutput(ctx(t), "never printed"); err == nil || !strings.Contains(err.Error(), "ended before") {
		t.Errorf("WaitOutput on an ended job: %v", err)
	}
}

func TestNoAgent(t *testing.T) {
	c := &Client{Name: "gone", Dir: t.TempDir(), Poll: 5 * time.Millisecond}
	cx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := c.Run(cx, Cmd{Script: "true"}); !errors.Is(err, ErrNoAgent) {
		t.Errorf("got %v, want ErrNoAgent", err)
	}
}

func TestShutdown(t *testing.T) {
	dir := t.TempDir()
	done := make(chan error, 1)
	go func() { done <- Serve(context.Background(), dir, "t", 5*time.Millisecond) }()
	c := &Client{Name: "t", Dir: dir, Poll: 5 * time.Millisecond}
	p, err := c.Start(ctx(t), Cmd{Script: "exec sleep 60"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Shutdown(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after shutdown")
	}
	if r, err := p.Wait(ctx(t)); err != nil || !r.Stopped {
		t.Errorf("job after shutdown: %+v, %v", r, err)
	}
}

func TestNextPollBacksOffWhileIdle(t *testing.T) {
	base := 20 * time.Millisecond
	var got []time.Duration
	cur := base
	for range 6 {
		cur = nextPoll(cur, base, false)
		got = append(got, cur)
	}
	want := []time.Duration{40, 80, 160, 320, 320, 320}
	for i := range want {
		if got[i] != want[i]*time.Millisecond {
			t.Fatalf("idle polls: got %v, want %v ms", got, want)
		}
	}
	if d := nextPoll(320*time.Millisecond, base, true); d != base {
		t.Errorf("after a request: %v, want %v", d, base)
	}
	if d := nextPoll(0, base, false); d != base {
		t.Errorf("after a job ended: %v, want %v", d, base)
	}
}

// TestServeAfterBackoff: an agent that has idled to its longest interval
// still serves requests, and serves the next one after a job ends.
func TestServeAfterBackoff(t *testing.T) {
	c := serve(t)
	time.Sleep(40 * idleBackoff * time.Millisecond) // well past the back-off ramp at 5 ms
	for i, script := range []string{"echo one", "echo two"} {
		r, err := c.Run(ctx(t), Cmd{Script: script})
		if err != nil {
			t.Fatal(err)
		}
		if want := strings.TrimPrefix(script, "echo ") + "\n"; !r.Success() || r.Stdout != want {
			t.Errorf("run %d: %+v, want stdout %q", i, r, want)
		}
	}
}
