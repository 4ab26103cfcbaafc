// Package agent runs commands in a vmtest guest on behalf of the host or of
// the other guest. Requests and results are files in a directory on the
// shared 9p folder (both guests and the host see it; 9p's default cache=none
// keeps them coherent), so no network or vsock is needed:
//
//	DIR/req/ID.json         a Cmd, renamed into place when complete
//	DIR/req/ID.stop         ask the agent to stop job ID (SIGTERM, then SIGKILL)
//	DIR/req/shutdown        stop every job and return from Serve
//	DIR/jobs/ID/stdout      the job's output, growing while it runs
//	DIR/jobs/ID/stderr
//	DIR/jobs/ID/started     written once the process runs (holds its pid)
//	DIR/jobs/ID/result.json a Result, renamed into place when the job is over
//	DIR/ready.json          written by Serve when it starts polling
//
// Serve looks at DIR/req every poll (20 ms) after activity and backs off to
// 16×poll while idle: each look is several 9p round trips through QEMU.
//
// The agent in each guest is cmd/vmagent; Client is used by the host harness
// and by tests inside a guest (package guest).
package agent

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"
)

// DefaultTimeout bounds a command whose Cmd.Timeout and context give none.
const DefaultTimeout = 2 * time.Minute

// Cmd is one command for an agent.
type Cmd struct {
	Args    []string      `json:"args,omitempty"`   // argv; when empty, Script runs under /bin/sh -c
	Script  string        `json:"script,omitempty"` // shell script
	Env     []string      `json:"env,omitempty"`    // KEY=VALUE added to the agent's environment
	Dir     string        `json:"dir,omitempty"`    // working directory in the guest
	Timeout time.Duration `json:"timeout"`          // the agent kills the job's process group after this
}

func (c Cmd) String() string {
	if len(c.Args) > 0 {
		return strings.Join(c.Args, " ")
	}
	return c.Script
}

// Result is how a job ended. Stdout and Stderr are read by the client.
type Result struct {
	ID       string        `json:"id"`
	ExitCode int           `json:"exit_code"`        // -1 when killed by a signal or never started
	Signal   string        `json:"signal,omitempty"` // the signal that ended it
	TimedOut bool          `json:"timed_out,omitempty"`
	Stopped  bool          `json:"stopped,omitempty"` // ended by Process.Stop
	Error    string        `json:"error,omitempty"`   // could not start
	Duration time.Duration `json:"duration"`
	Stdout   string        `json:"-"`
	Stderr   string        `json:"-"`
}

// Success reports exit status 0.
func (r *Result) Success() bool { return r.Error == "" && r.ExitCode == 0 && r.Signal == "" }

func (r *Result) describe() string {
	switch {
	case r.Error != "":
		return "did not start: " + r.Error
	case r.TimedOut:
		return fmt.Sprintf("timed out after %v (killed)", r.Duration.Round(time.Millisecond))
	case r.Signal != "":
		return "killed by " + r.Signal
	}
	return fmt.Sprintf("exit status %d", r.ExitCode)
}

// ExitError is returned for a job that did not exit with status 0.
type ExitError struct {
	Machine string
	Cmd     string
	Result  *Result
}

func (e *ExitError) Error() string {
	return fmt.Sprintf("%s: %q: %s\nstdout:\n%s\nstderr:\n%s", e.Machine, e.Cmd, e.Result.describe(),
		tailString(e.Result.Stdout, 3000), tailString(e.Result.Stderr, 3000))
}

// ErrNoAgent means the agent did not answer in time (guest hung or gone).
var ErrNoAgent = errors.New("vmtest agent did not answer")

func tailString(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// Client submits commands to the agent serving Dir.
type Client struct {
	Name string        // for messages, e.g. "b"
	Dir  string        // the agent directory as seen by this process
	Poll time.Duration // default 20ms
}

func (c *Client) poll() time.Duration {
	if c.Poll > 0 {
		return c.Poll
	}
	return 20 * time.Millisecond
}

var idCounter atomic.Uint64

func newID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%d-%d-%s", os.Getpid(), idCounter.Add(1), hex.EncodeToString(b[:]))
}

// writeAtomic writes data to a hidden temporary name and renames it into place.
func writeAtomic(path string, data []byte) error {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Ready reports whether the agent has announced itself.
func (c *Client) Ready() bool {
	_, err := os.Stat(filepath.Join(c.Dir, "ready.json"))
	return err == nil
}

// Start submits cmd and waits until the agent has started it. A zero
// cmd.Timeout becomes the context's remaining time, or DefaultTimeout.
func (c *Client) Start(ctx context.Context, cmd Cmd) (*Process, error) {
	if len(cmd.Args) == 0 && cmd.Script == "" {
		return nil, errors.New("agent: empty command")
	}
	if cmd.Timeout <= 0 {
		cmd.Timeout = DefaultTimeout
		if dl, ok := ctx.Deadline(); ok {
			cmd.Timeout = time.Until(dl)
		}
	}
	p := &Process{c: c, ID: newID(), Cmd: cmd}
	b, err := json.Marshal(cmd)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(c.Dir, "req"), 0o755); err != nil {
		return nil, err
	}
	if err := writeAtomic(filepath.Join(c.Dir, "req", p.ID+".json"), b); err != nil {
		return nil, fmt.Errorf("agent %s: submit: %w", c.Name, err)
	}
	for {
		if _, err := os.Stat(p.file("started")); err == nil {
			return p, nil
		}
		if _, err := os.Stat(p.file("result.json")); err == nil {
			return p, nil // ended (or failed to start) already; Wait tells
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("agent %s: %q not started: %w (%w)", c.Name, cmd, ErrNoAgent, ctx.Err())
		case <-time.After(c.poll()):
		}
	}
}

// Run runs cmd to completion. The error is an *ExitError when the command
// ran but failed; the Result is returned whenever there is one.
func (c *Client) Run(ctx context.Context, cmd Cmd) (*Result, error) {
	p, err := c.Start(ctx, cmd)
	if err != nil {
		return nil, err
	}
	return p.Wait(ctx)
}

// Attach returns the Process for a job started earlier (by another
// process, say) with the given ID; timeout bounds Wait like Cmd.Timeout.
func (c *Client) Attach(id string, timeout time.Duration) *Process {
	return &Process{c: c, ID: id, Cmd: Cmd{Script: "job " + id, Timeout: timeout}}
}

// Process is a job started by Client.Start.
type Process struct {
	c   *Client
	ID  string
	Cmd Cmd
}

func (p *Process) file(name string) string { return filepath.Join(p.c.Dir, "jobs", p.ID, name) }

// StdoutPath and StderrPath name the job's output files for this process.
func (p *Process) StdoutPath() string { return p.file("stdout") }
func (p *Process) StderrPath() string { return p.file("stderr") }

// Stdout returns the output so far.
func (p *Process) Stdout() string { b, _ := os.ReadFile(p.file("stdout")); return string(b) }

// Stderr returns the error output so far.
func (p *Process) Stderr() string { b, _ := os.ReadFile(p.file("stderr")); return string(b) }

// WaitOutput waits until the job's stdout or stderr contains s. It fails if
// the job ends first or ctx is done.
func (p *Process) WaitOutput(ctx context.Context, s string) error {
	for {
		if strings.Contains(p.Stdout(), s) || strings.Contains(p.Stderr(), s) {
			return nil
		}
		if r, ok := p.result(); ok {
			return fmt.Errorf("%s: %q ended before printing %q: %s\nstdout:\n%s\nstderr:\n%s",
				p.c.Name, p.Cmd, s, r.describe(), tailString(r.Stdout, 2000), tailString(r.Stderr, 2000))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %q did not print %q: %w\nstdout:\n%s\nstderr:\n%s",
				p.c.Name, p.Cmd, s, ctx.Err(), tailString(p.Stdout(), 2000), tailString(p.Stderr(), 2000))
		case <-time.After(p.c.poll()):
		}
	}
}

func (p *Process) result() (*Result, bool) {
	b, err := os.ReadFile(p.file("result.json"))
	if err != nil {
		return nil, false
	}
	r := &Result{}
	if err := json.Unmarshal(b, r); err != nil {
		return nil, false
	}
	r.Stdout, r.Stderr = p.Stdout(), p.Stderr()
	return r, true
}

// Done reports whether the job has ended.
func (p *Process) Done() bool { _, ok := p.result(); return ok }

// Wait waits for the job to end. The agent enforces Cmd.Timeout; allow a
// little longer before concluding that the agent (or its guest) is gone.
func (p *Process) Wait(ctx context.Context) (*Result, error) {
	grace := time.NewTimer(p.Cmd.Timeout + 15*time.Second)
	defer grace.Stop()
	for {
		if r, ok := p.result(); ok {
			if !r.Success() && !r.Stopped {
				return r, &ExitError{Machine: p.c.Name, Cmd: p.Cmd.String(), Result: r}
			}
			return r, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("agent %s: %q: no result: %w\nstdout so far:\n%s\nstderr so far:\n%s",
				p.c.Name, p.Cmd, ctx.Err(), tailString(p.Stdout(), 2000), tailString(p.Stderr(), 2000))
		case <-grace.C:
			return nil, fmt.Errorf("agent %s: %q: %w %v after its timeout", p.c.Name, p.Cmd, ErrNoAgent, 15*time.Second)
		case <-time.After(p.c.poll()):
		}
	}
}

// Stop asks the agent to end the job (SIGTERM to its process group, SIGKILL
// a few seconds later) and waits for it. A job ended this way is not an error.
func (p *Process) Stop(ctx context.Context) (*Result, error) {
	if r, ok := p.result(); ok {
		if !r.Success() {
			return r, &ExitError{Machine: p.c.Name, Cmd: p.Cmd.String(), Result: r}
		}
		return r, nil
	}
	if err := writeAtomic(filepath.Join(p.c.Dir, "req", p.ID+".stop"), nil); err != nil {
		return nil, err
	}
	return p.Wait(ctx)
}

// Shutdown asks the agent to stop all jobs and exit (the guest then powers off).
func (c *Client) Shutdown() error {
	return writeAtomic(filepath.Join(c.Dir, "req", "shutdown"), nil)
}

// ReadyInfo is what the agent writes to ready.json.
type ReadyInfo struct {
	Name    string    `json:"name"`
	Kernel  string    `json:"kernel"`
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
}

func trimNul(b []byte) string { return string(bytes.TrimRight(b, "\x00\n")) }
