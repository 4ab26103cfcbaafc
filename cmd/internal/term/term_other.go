//go:build !linux

// Package term answers the terminal questions of the commands.
package term

import "os"

// IsTerminal reports whether fd (0, 1 or 2) is a character device, a
// terminal for stdio's purposes where TCGETS cannot be asked. It stats
// the standard *os.File: a new os.File for fd would close fd when
// collected.
func IsTerminal(fd int) bool {
	var f *os.File
	switch fd {
	case 0:
		f = os.Stdin
	case 1:
		f = os.Stdout
	case 2:
		f = os.Stderr
	default:
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
