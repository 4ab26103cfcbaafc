//go:build linux

// Package term answers the terminal questions of the commands.
package term

import "golang.org/x/sys/unix"

// IsTerminal reports whether fd is a terminal, as glibc's isatty does
// (TCGETS succeeds), without an *os.File that could change fd's mode.
func IsTerminal(fd int) bool {
	_, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	return err == nil
}
