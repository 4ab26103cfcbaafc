//go:build linux

package kcall

import (
	"sync"
	"sync/atomic"
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

// scratchHot holds one free page in front of scratchPool: one command at
// a time (the common case) takes and returns it with an atomic swap each,
// not a lock and unlock each (about 50 instructions per command).
var scratchHot atomic.Pointer[scratch]

// scratchKept counts the free pages: the hot one and the pool's.
func scratchKept() int {
	scratchPool.Lock()
	n := len(scratchPool.free)
	scratchPool.Unlock()
	if scratchHot.Load() != nil {
		n++
	}
	return n
}

// getScratch returns a free page, nil when none can be mapped (the
// caller then pins Go memory as before).
func getScratch() *scratch {
	if s := scratchHot.Swap(nil); s != nil {
		return s
	}
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

// mapScratchPage maps one anonymous page (mmap is right on every arch,
// so no fallback to unix.Mmap is needed). nil when no page can be mapped.
func mapScratchPage() *scratch {
	addr, err := mmap(0, scratchSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS, -1, 0)
	if err != nil {
		return nil
	}
	return &scratch{mem: unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(nil), addr)), scratchSize)}
}

// unmapScratchPage unmaps a page of mapScratchPage.
func unmapScratchPage(s *scratch) {
	_ = Munmap(s.mem)
}

func putScratch(s *scratch) {
	if scratchHot.CompareAndSwap(nil, s) {
		return
	}
	scratchPool.Lock()
	if len(scratchPool.free) < scratchKeep-1 { // and the hot one
		scratchPool.free = append(scratchPool.free, s)
		scratchPool.Unlock()
		return
	}
	scratchPool.Unlock()
	unmapScratchPage(s)
}
