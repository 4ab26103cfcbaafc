//go:build linux

package abi

import (
	"sync"

	"golang.org/x/sys/unix"
)

// scratchPool keeps the pages of finished commands for the next ones;
// there are as many pages as commands ever ran at once, at most
// scratchKeep kept.
var scratchPool struct {
	sync.Mutex
	free []*scratch
}

const scratchKeep = 16

// getScratch returns a free page, nil when none can be mapped (the
// caller then pins Go memory as before).
func getScratch() *scratch {
	scratchPool.Lock()
	if n := len(scratchPool.free); n > 0 {
		s := scratchPool.free[n-1]
		scratchPool.free = scratchPool.free[:n-1]
		scratchPool.Unlock()
		return s
	}
	scratchPool.Unlock()
	mem, err := unix.Mmap(-1, 0, scratchSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil
	}
	return &scratch{mem: mem}
}

func putScratch(s *scratch) {
	scratchPool.Lock()
	if len(scratchPool.free) < scratchKeep {
		scratchPool.free = append(scratchPool.free, s)
		scratchPool.Unlock()
		return
	}
	scratchPool.Unlock()
	_ = unix.Munmap(s.mem)
}
