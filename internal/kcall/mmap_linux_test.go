package kcall

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"strconv"
	"testing"

	"github.com/go-rdma/rdmacm/internal/abi"
	"golang.org/x/sys/unix"
)

// These tests map a memfd through Mmap on whatever GOARCH runs them:
// natively, GOARCH=386 on an amd64 kernel, and under qemu-user for the
// others (docs/architecture.md, "Testing"); every linux GOARCH by hand:
//
//	for a in amd64: 386: arm:arm arm64:aarch64 mips:mips mipsle:mipsel \
//	    mips64:mips64 mips64le:mips64el ppc64:ppc64 ppc64le:ppc64le \
//	    riscv64:riscv64 s390x:s390x loong64:loongarch64; do
//	  q=${a#*:}; CGO_ENABLED=0 GOARCH=${a%%:*} go test -count=1 \
//	    ${q:+-exec qemu-$q-static} -run 'Mmap|Scratch' ./internal/abi/
//	done
//
// Offsets are in pages of the system's size: 16 KiB on loong64
// (qemu-loongarch64 too), where an offset of 4096 is EINVAL.

var testPage = int64(os.Getpagesize())

// pagePattern is the content the tests write to page p of a memfd: its
// index in the first 8 bytes, so a mapping at the wrong offset shows.
func pagePattern(p int64) []byte {
	b := make([]byte, testPage)
	for i := range b {
		b[i] = byte(int64(i)*7 + p*31 + 1)
	}
	binary.LittleEndian.PutUint64(b, uint64(p))
	return b
}

// newMemfd returns a memfd of size bytes whose pages in pages hold
// pagePattern; the rest is a hole (zeros, no memory).
func newMemfd(t *testing.T, size int64, pages ...int64) int {
	t.Helper()
	fd, err := unix.MemfdCreate("abi-mmap-test", unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatalf("memfd_create: %v", err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Ftruncate(fd, size); err != nil {
		t.Fatalf("ftruncate(%d): %v", size, err)
	}
	for _, p := range pages {
		if n, err := unix.Pwrite(fd, pagePattern(p), p*testPage); err != nil || int64(n) != testPage {
			t.Fatalf("pwrite page %d: %d, %v", p, n, err)
		}
	}
	return fd
}

// isMapped reports whether the first byte of b is mapped: a write from
// it fails with EFAULT if not. (msync's ENOMEM would not do: qemu-user
// keeps a 32-bit guest's whole address space mapped on the host.)
func isMapped(t *testing.T, b []byte) bool {
	t.Helper()
	fd := newMemfd(t, 0)
	_, err := unix.Pwrite(fd, b[:1], 0)
	if err != nil && !errors.Is(err, unix.EFAULT) {
		t.Fatalf("pwrite from %#x: %v, want success or EFAULT", abi.SlicePtr(b), err)
	}
	return err == nil
}

func TestMmapMapsAFileAtAPageOffset(t *testing.T) {
	fd := newMemfd(t, 3*testPage, 0, 1, 2)
	mem, err := Mmap(fd, testPage, int(2*testPage), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatalf("Mmap(memfd, offset %d, %d bytes): %v", testPage, 2*testPage, err)
	}
	if int64(len(mem)) != 2*testPage {
		t.Fatalf("mapping is %d bytes, want %d", len(mem), 2*testPage)
	}
	if !bytes.Equal(mem[:testPage], pagePattern(1)) || !bytes.Equal(mem[testPage:], pagePattern(2)) {
		t.Fatalf("mapping at offset %d does not hold pages 1 and 2 of the file (first bytes %x)", testPage, mem[:8])
	}

	// MAP_SHARED: a store through the mapping is in the file.
	msg := []byte("written through the mapping")
	copy(mem[testPage+100:], msg)
	got := make([]byte, len(msg))
	if n, err := unix.Pread(fd, got, 2*testPage+100); err != nil || n != len(msg) || !bytes.Equal(got, msg) {
		t.Fatalf("pread after the store: %q, %d, %v; want %q", got[:n], n, err, msg)
	}

	if err := Munmap(mem); err != nil {
		t.Fatalf("Munmap: %v", err)
	}
	if isMapped(t, mem) {
		t.Fatalf("page still mapped after Munmap")
	}
}

// An offset past 4 GiB reaches the kernel whole: on 32-bit arches only
// mmap2's page offset can carry it (the byte offset of mips' old mmap is
// 32 bits and maps page 1 instead).
//
// QEMU's user mode before 8.1 cuts mmap2's offset to 32 bits itself
// ("linux-user: Widen target_mmap offset argument to off_t", 2023), so
// under qemu-arm or qemu-mips 7.2 the mapping holds page 1 whatever the
// program passes (qemu -strace shows mmap2(..., 0x100001) from us). There
// a 32-bit test holds Mmap to what x/sys/unix.Mmap, which makes the
// same mmap2 call, maps; GOARCH=386 on an amd64 kernel proves the real
// case, and TestMmap2PageOffset the argument.
func TestMmapMapsPast4GiB(t *testing.T) {
	far := 1<<32/testPage + 1 // the page after 4 GiB
	fd := newMemfd(t, (far+1)*testPage, 1, far)
	mem, err := Mmap(fd, far*testPage, int(testPage), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatalf("Mmap(memfd, offset %#x): %v", far*testPage, err)
	}
	defer Munmap(mem)
	if bytes.Equal(mem, pagePattern(far)) {
		return
	}
	got := "neither page"
	if bytes.Equal(mem, pagePattern(1)) {
		got = "page 1 (the offset cut to 32 bits)"
	}
	if strconv.IntSize == 64 {
		t.Fatalf("mapping at offset %#x holds %s", far*testPage, got)
	}
	ref, err := unix.Mmap(fd, far*testPage, int(testPage), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatalf("mapping at offset %#x holds %s; unix.Mmap there: %v", far*testPage, got, err)
	}
	defer unix.Munmap(ref)
	if !bytes.Equal(ref, mem) {
		t.Fatalf("mapping at offset %#x holds %s, and not what unix.Mmap maps there", far*testPage, got)
	}
	t.Logf("mapping at offset %#x holds %s, as unix.Mmap's: the kernel or emulator (QEMU < 8.1) cuts mmap2's offset", far*testPage, got)
}

func TestMmapRejectsAnUnalignedOffset(t *testing.T) {
	fd := newMemfd(t, 3*testPage, 0, 1, 2)
	for _, offset := range []int64{1, testPage + 1, 2*testPage - 1} {
		mem, err := Mmap(fd, offset, int(testPage), unix.PROT_READ, unix.MAP_SHARED)
		if !errors.Is(err, unix.EINVAL) {
			if err == nil {
				Munmap(mem)
			}
			t.Errorf("Mmap(offset %d) = %v, want EINVAL", offset, err)
		}
	}
}

// A ring is mapped and unmapped without a heap allocation on every arch
// (s390x's argument array stays on the stack).
func TestMmapDoesNotAllocate(t *testing.T) {
	fd := newMemfd(t, testPage, 0)
	var failed error
	n := testing.AllocsPerRun(20, func() {
		mem, err := Mmap(fd, 0, int(testPage), unix.PROT_READ, unix.MAP_SHARED)
		if err == nil {
			err = Munmap(mem)
		}
		if err != nil {
			failed = err
		}
	})
	if failed != nil {
		t.Fatalf("Mmap/Munmap: %v", failed)
	}
	if n != 0 {
		t.Errorf("Mmap + Munmap: %v allocations, want 0", n)
	}
}

func TestMunmapOfAnEmptySliceDoesNothing(t *testing.T) {
	if err := Munmap(nil); err != nil {
		t.Fatalf("Munmap(nil) = %v", err)
	}
}

// The command page is mapped with the raw call on every arch and
// unmapped with Munmap.
func TestScratchPageMapsAndUnmaps(t *testing.T) {
	s := mapScratchPage()
	if s == nil {
		t.Fatalf("mapScratchPage failed")
	}
	if len(s.mem) != scratchSize || abi.SlicePtr(s.mem)%uint64(testPage) != 0 {
		t.Fatalf("scratch page: %d bytes at %#x, want one aligned page", len(s.mem), abi.SlicePtr(s.mem))
	}
	for i := range s.mem {
		if s.mem[i] != 0 {
			t.Fatalf("byte %d of a new scratch page is %#x, want 0", i, s.mem[i])
		}
		s.mem[i] = byte(i) // faults unless writable
	}
	if !isMapped(t, s.mem) {
		t.Fatalf("scratch page not mapped")
	}
	mem := s.mem
	unmapScratchPage(s)
	if isMapped(t, mem) {
		t.Fatalf("scratch page still mapped after unmapScratchPage")
	}
}
