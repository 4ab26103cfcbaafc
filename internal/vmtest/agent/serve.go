package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// stopGrace is how long a stopped or timed-out job gets between SIGTERM and SIGKILL.
const stopGrace = 3 * time.Second

// idleBackoff bounds how far an idle agent stretches its poll interval, as
// a multiple of the base interval. Each look at the request folder is a
// ReadDir over 9p, several round trips through QEMU: under TCG about 5 ms
// of guest CPU, so a fixed 20 ms poll took 28% of every guest's CPU,
// the benchmarks' server guest included (/proc/PID/stat of the agent over
// 10 s of idling: 2.8 s).
const idleBackoff = 16

// nextPoll is the wait before the next look at the request folder: the
// base interval after activity (a request, or a job that ended), doubling
// while idle up to idleBackoff times the base.
func nextPoll(cur, base time.Duration, active bool) time.Duration {
	if active || cur < base {
		return base
	}
	return min(2*cur, idleBackoff*base)
}

// Serve runs jobs submitted to dir until ctx is done or a shutdown request
// arrives; then it kills what is still running. It looks for requests
// at once when a job ends and every poll after a request, doubling the
// wait while idle up to idleBackoff×poll: a request that follows a
// finished job (the host's next command) waits a few polls at most, any
// other at most idleBackoff×poll.
func Serve(ctx context.Context, dir, name string, poll time.Duration) error {
	if poll <= 0 {
		poll = 20 * time.Millisecond
	}
	for _, d := range []string{"req", "jobs"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	info, _ := json.Marshal(ReadyInfo{Name: name, Kernel: trimNul(kernelRelease()), PID: os.Getpid(), Started: time.Now()})
	if err := writeAtomic(filepath.Join(dir, "ready.json"), info); err != nil {
		return err
	}
	var mu sync.Mutex
	jobs := map[string]*job{}
	var wg sync.WaitGroup
	defer func() {
		mu.Lock()
		for _, j := range jobs {
			j.stop()
		}
		mu.Unlock()
		wg.Wait()
	}()
	reqDir := filepath.Join(dir, "req")
	ended := make(chan struct{}, 1) // a job ended: the host's next request is near
	wait := poll
	for {
		ents, err := os.ReadDir(reqDir)
		if err != nil {
			return fmt.Errorf("agent: %w", err)
		}
		active := false
		for _, e := range ents {
			n := e.Name()
			if strings.HasPrefix(n, ".") {
				continue
			}
			active = true
			p := filepath.Join(reqDir, n)
			switch {
			case n == "shutdown":
				os.Remove(p)
				return nil
			case strings.HasSuffix(n, ".stop"):
				id := strings.TrimSuffix(n, ".stop")
				mu.Lock()
				j := jobs[id]
				mu.Unlock()
				if j != nil {
					j.stop()
				}
				os.Remove(p)
			case strings.HasSuffix(n, ".json"):
				id := strings.TrimSuffix(n, ".json")
				b, err := os.ReadFile(p)
				os.Remove(p)
				if err != nil {
					continue
				}
				var cmd Cmd
				jobDir := filepath.Join(dir, "jobs", id)
				if err := os.MkdirAll(jobDir, 0o755); err != nil {
					continue
				}
				if err := json.Unmarshal(b, &cmd); err != nil {
					writeResult(jobDir, &Result{ID: id, ExitCode: -1, Error: "bad request: " + err.Error()})
					continue
				}
				j := &job{id: id, dir: jobDir, cmd: cmd, stopCh: make(chan struct{})}
				mu.Lock()
				jobs[id] = j
				mu.Unlock()
				wg.Add(1)
				go func() {
					defer wg.Done()
					j.run()
					mu.Lock()
					delete(jobs, id)
					mu.Unlock()
					select {
					case ended <- struct{}{}:
					default:
					}
				}()
			}
		}
		wait = nextPoll(wait, poll, active)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-ended:
			t.Stop()
			wait = 0 // look now, then every poll
		case <-t.C:
		}
	}
}

type job struct {
	id, dir  string
	cmd      Cmd
	stopOnce sync.Once
	stopCh   chan struct{}
}

func (j *job) stop() { j.stopOnce.Do(func() { close(j.stopCh) }) }

func writeResult(dir string, r *Result) {
	b, _ := json.Marshal(r)
	_ = writeAtomic(filepath.Join(dir, "result.json"), b)
}

func (j *job) run() {
	r := &Result{ID: j.id, ExitCode: -1}
	start := time.Now()
	defer func() {
		r.Duration = time.Since(start)
		writeResult(j.dir, r)
	}()
	stdout, err := os.Create(filepath.Join(j.dir, "stdout"))
	if err != nil {
		r.Error = err.Error()
		return
	}
	defer stdout.Close()
	stderr, err := os.Create(filepath.Join(j.dir, "stderr"))
	if err != nil {
		r.Error = err.Error()
		return
	}
	defer stderr.Close()
	var c *exec.Cmd
	if len(j.cmd.Args) > 0 {
		c = exec.Command(j.cmd.Args[0], j.cmd.Args[1:]...)
	} else {
		c = exec.Command("/bin/sh", "-c", j.cmd.Script)
	}
	c.Env = append(os.Environ(), j.cmd.Env...)
	c.Dir = j.cmd.Dir
	c.Stdout, c.Stderr = stdout, stderr
	c.SysProcAttr = groupAttr()
	if err := c.Start(); err != nil {
		r.Error = err.Error()
		return
	}
	_ = os.WriteFile(filepath.Join(j.dir, "started"), fmt.Appendf(nil, "%d\n", c.Process.Pid), 0o644)
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	timeout := time.NewTimer(j.cmd.Timeout)
	defer timeout.Stop()
	pgid := c.Process.Pid
	var werr error
	select {
	case werr = <-done:
	case <-timeout.C:
		r.TimedOut = true
		werr = terminate(pgid, done)
	case <-j.stopCh:
		r.Stopped = true
		werr = terminate(pgid, done)
	}
	// Whatever the job left in its process group goes too.
	killGroup(pgid, syscall.SIGKILL)
	var ee *exec.ExitError
	switch {
	case werr == nil:
		r.ExitCode = 0
	case errors.As(werr, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			r.Signal = ws.Signal().String()
		} else {
			r.ExitCode = ee.ExitCode()
		}
	default:
		r.Error = werr.Error()
	}
}

// terminate sends SIGTERM to the process group, then SIGKILL after stopGrace.
func terminate(pgid int, done <-chan error) error {
	killGroup(pgid, syscall.SIGTERM)
	select {
	case err := <-done:
		return err
	case <-time.After(stopGrace):
		killGroup(pgid, syscall.SIGKILL)
		return <-done
	}
}
