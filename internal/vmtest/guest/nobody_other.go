//go:build !linux

package guest

import "syscall"

// nobodyAttr: guests are Linux; elsewhere RunAsNobody skips.
func nobodyAttr() *syscall.SysProcAttr { return nil }
