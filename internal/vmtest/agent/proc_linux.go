package agent

import "syscall"

// kernelRelease is uname -r.
func kernelRelease() []byte {
	var uts syscall.Utsname
	_ = syscall.Uname(&uts)
	rel := make([]byte, 0, len(uts.Release))
	for _, c := range uts.Release {
		rel = append(rel, byte(c))
	}
	return rel
}

// groupAttr puts a job in a process group of its own.
func groupAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// killGroup sends sig to the process group pgid.
func killGroup(pgid int, sig syscall.Signal) { _ = syscall.Kill(-pgid, sig) }
