//go:build linux

package abi

import (
	"sync"
	"unsafe"

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
	return mapScratchPage()
}

// mapScratchPage maps one page with a raw mmap (an anonymous mapping
// never waits; through the scheduler's path the call could be retaken by
// Go's sysmon, issue 17); rawMmap is right on every arch, so no fallback
// to unix.Mmap is needed. nil when no page can be mapped.
func mapScratchPage() *scratch {
	addr, err := rawMmap(0, scratchSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS, -1, 0)
	if err != nil {
		return nil
	}
	return &scratch{mem: unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(nil), addr)), scratchSize)}
}

// unmapScratchPage unmaps a page of mapScratchPage.
func unmapScratchPage(s *scratch) {
	_ = MunmapShort(s.mem)
}

func putScratch(s *scratch) {
	scratchPool.Lock()
	if len(scratchPool.free) < scratchKeep {
		scratchPool.free = append(scratchPool.free, s)
		scratchPool.Unlock()
		return
	}
	scratchPool.Unlock()
	unmapScratchPage(s)
}
