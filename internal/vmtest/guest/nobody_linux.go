package guest

import "syscall"

// nobodyAttr runs a child as uid and gid 65534.
func nobodyAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
}
