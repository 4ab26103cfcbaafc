//go:build !linux

package abi

import "os"

// IsTerminal reports whether fd is a character device (a terminal, for
// stdio's purposes) where it cannot ask TCGETS.
func IsTerminal(fd int) bool {
	fi, err := os.NewFile(uintptr(fd), "").Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
