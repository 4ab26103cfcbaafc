//go:build linux

package kcall

import (
	"testing"

	"golang.org/x/sys/unix"
)

func TestUcmaOpenFlags(t *testing.T) {
	fd, err := UcmaOpen("/dev/null", unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		t.Fatal(err)
	}
	if fl&unix.O_ACCMODE != unix.O_RDWR || fl&unix.O_NONBLOCK == 0 {
		t.Fatalf("flags %#x: want O_RDWR|O_NONBLOCK", fl)
	}
	fdfl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	if err != nil || fdfl&unix.FD_CLOEXEC == 0 {
		t.Fatalf("F_GETFD = %#x, %v: want FD_CLOEXEC", fdfl, err)
	}
	if _, err := UcmaOpen("/nonexistent/rdma_cm", unix.O_RDWR, 0); err != unix.ENOENT {
		t.Fatalf("missing node: %v, want ENOENT", err)
	}
}

func TestUcmaWarmScratch(t *testing.T) {
	scratchPool.Lock()
	saved, savedHot := scratchPool.free, scratchHot.Swap(nil)
	scratchPool.free = nil
	scratchPool.Unlock()
	t.Cleanup(func() {
		scratchPool.Lock()
		for _, s := range scratchPool.free {
			unmapScratchPage(s)
		}
		if s := scratchHot.Swap(savedHot); s != nil {
			unmapScratchPage(s)
		}
		scratchPool.free = saved
		scratchPool.Unlock()
	})
	UcmaWarmScratch(2)
	UcmaWarmScratch(2) // already two: maps nothing more
	if n := scratchKept(); n != 2 {
		t.Fatalf("%d pages kept, want 2", n)
	}
	s := getScratch()
	s.mem[0], s.mem[scratchSize-1] = 1, 2 // writable, the whole page
	putScratch(s)
}
