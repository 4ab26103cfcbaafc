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
// Go's sysmon, issue 17). Where mmap takes its arguments in a struct
// (386, s390x: old_mmap) the raw call fails and unix.Mmap maps the page;
// unmapScratchPage undoes either. nil when no page can be mapped.
func mapScratchPage() *scratch {
	const prot, flags = unix.PROT_READ | unix.PROT_WRITE, unix.MAP_PRIVATE | unix.MAP_ANONYMOUS
	addr, _, e := unix.RawSyscall6(unix.SYS_MMAP, 0, scratchSize, prot, flags, ^uintptr(0), 0)
	if e == 0 {
		return &scratch{mem: unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(nil), addr)), scratchSize)}
	}
	mem, err := unix.Mmap(-1, 0, scratchSize, prot, flags)
	if err != nil {
		return nil
	}
	return &scratch{mem: mem, viaUnix: true}
}

// unmapScratchPage unmaps a page of mapScratchPage: unix.Munmap knows
// only the mappings unix.Mmap made (EINVAL for the others).
func unmapScratchPage(s *scratch) {
	if s.viaUnix {
		_ = unix.Munmap(s.mem)
		return
	}
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
