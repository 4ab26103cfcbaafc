//go:build !linux

package agent

import (
	"os"
	"syscall"
)

// The agent runs in Linux guests; elsewhere it builds, and jobs get no
// process group of their own.

func kernelRelease() []byte { return nil }

func groupAttr() *syscall.SysProcAttr { return nil }

// killGroup kills the job's process (there is no group here).
func killGroup(pid int, _ syscall.Signal) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}
