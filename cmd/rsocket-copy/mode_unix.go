//go:build unix

package main

import (
	"os"
	"syscall"
)

// syscallMode is the file-type bits of st_mode, which rcopy sends along
// with the permissions (msg->hdr.data = st_mode).
func syscallMode(fi os.FileInfo) uint32 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint32(st.Mode) &^ 0o7777
	}
	return 0
}
