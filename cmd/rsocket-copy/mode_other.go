//go:build !unix

package main

import (
	"os"
)

// syscallMode: no st_mode file-type bits off Unix; the permissions go alone.
func syscallMode(fi os.FileInfo) uint32 { return 0 }
