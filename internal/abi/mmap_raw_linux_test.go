package abi

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"strconv"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// These tests map a memfd through MmapShort on whatever GOARCH runs them:
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
		t.Fatalf("pwrite from %#x: %v, want success or EFAULT", SlicePtr(b), err)
	}
	return err == nil
}

func TestMmapShortMapsAFileAtAPageOffset(t *testing.T) {
	fd := newMemfd(t, 3*testPage, 0, 1, 2)
	mem, err := MmapShort(fd, testPage, int(2*testPage), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatalf("MmapShort(memfd, offset %d, %d bytes): %v", testPage, 2*testPage, err)
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

	if err := MunmapShort(mem); err != nil {
		t.Fatalf("MunmapShort: %v", err)
	}
	if isMapped(t, mem) {
		t.Fatalf("page still mapped after MunmapShort")
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
// a 32-bit test holds MmapShort to what x/sys/unix.Mmap, which makes the
// same mmap2 call, maps; GOARCH=386 on an amd64 kernel proves the real
// case, and TestMmap2PageOffset the argument.
func TestMmapShortMapsPast4GiB(t *testing.T) {
	far := 1<<32/testPage + 1 // the page after 4 GiB
	fd := newMemfd(t, (far+1)*testPage, 1, far)
	mem, err := MmapShort(fd, far*testPage, int(testPage), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatalf("MmapShort(memfd, offset %#x): %v", far*testPage, err)
	}
	defer MunmapShort(mem)
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

func TestMmapShortRejectsAnUnalignedOffset(t *testing.T) {
	fd := newMemfd(t, 3*testPage, 0, 1, 2)
	for _, offset := range []int64{1, testPage + 1, 2*testPage - 1} {
		mem, err := MmapShort(fd, offset, int(testPage), unix.PROT_READ, unix.MAP_SHARED)
		if !errors.Is(err, unix.EINVAL) {
			if err == nil {
				MunmapShort(mem)
			}
			t.Errorf("MmapShort(offset %d) = %v, want EINVAL", offset, err)
		}
	}
}

// A ring is mapped and unmapped without a heap allocation on every arch
// (s390x's argument array stays on the stack).
func TestMmapShortDoesNotAllocate(t *testing.T) {
	fd := newMemfd(t, testPage, 0)
	var failed error
	n := testing.AllocsPerRun(20, func() {
		mem, err := MmapShort(fd, 0, int(testPage), unix.PROT_READ, unix.MAP_SHARED)
		if err == nil {
			err = MunmapShort(mem)
		}
		if err != nil {
			failed = err
		}
	})
	if failed != nil {
		t.Fatalf("MmapShort/MunmapShort: %v", failed)
	}
	if n != 0 {
		t.Errorf("MmapShort + MunmapShort: %v allocations, want 0", n)
	}
}

func TestMunmapShortOfAnEmptySliceDoesNothing(t *testing.T) {
	if err := MunmapShort(nil); err != nil {
		t.Fatalf("MunmapShort(nil) = %v", err)
	}
}

// The command page is mapped with the raw call on every arch and
// unmapped with MunmapShort.
func TestScratchPageMapsAndUnmaps(t *testing.T) {
	s := mapScratchPage()
	if s == nil {
		t.Fatalf("mapScratchPage failed")
	}
	if len(s.mem) != scratchSize || SlicePtr(s.mem)%uint64(testPage) != 0 {
		t.Fatalf("scratch page: %d bytes at %#x, want one aligned page", len(s.mem), SlicePtr(s.mem))
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

// noReplaceHonored reports whether mmap puts a MAP_FIXED_NOREPLACE
// mapping of page 0 of fd at the free address it is given and fails with
// EEXIST at a taken one, as Linux 4.17 and later do. qemu-user 7.2 (make
// qemu-user) maps elsewhere instead of failing; MmapShortNextTo then
// gets no span, which is correct, and only its placement is not tested
// there.
func noReplaceHonored(t *testing.T, fd int) bool {
	t.Helper()
	region, err := unix.Mmap(-1, 0, int(2*testPage), unix.PROT_READ, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatalf("mmap: %v", err)
	}
	defer MunmapShort(region) // both pages, the probe's if it landed there
	if err := MunmapShort(region[testPage:]); err != nil {
		t.Fatalf("munmap: %v", err)
	}
	want := uintptr(SlicePtr(region)) + uintptr(testPage)
	addr, err := rawMmap(want, uintptr(testPage), unix.PROT_READ, unix.MAP_SHARED|unix.MAP_FIXED_NOREPLACE, fd, 0)
	if err != nil {
		t.Logf("MAP_FIXED_NOREPLACE at a free address: %v", err)
		return false
	}
	if addr != want {
		MunmapShort(unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(nil), addr)), testPage))
		t.Logf("MAP_FIXED_NOREPLACE at free %#x mapped %#x instead (qemu-user?): placement not tested", want, addr)
		return false
	}
	// The same address again, now taken: EEXIST, not a mapping elsewhere.
	addr, err = rawMmap(want, uintptr(testPage), unix.PROT_READ, unix.MAP_SHARED|unix.MAP_FIXED_NOREPLACE, fd, 0)
	if err == nil {
		MunmapShort(unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(nil), addr)), testPage))
		t.Logf("MAP_FIXED_NOREPLACE at taken %#x mapped %#x instead of EEXIST (qemu-user?): placement not tested", want, addr)
		return false
	}
	return err == unix.EEXIST
}

// MmapShortNextTo puts the second mapping right below the first one or
// right after its last page (a first mapping shorter than a page
// included), and one MunmapShort over both unmaps the two.
func TestMmapShortNextToMapsAdjacentAndUnmapsOnce(t *testing.T) {
	fd := newMemfd(t, 4*testPage, 0, 1, 2, 3)
	first, err := MmapShort(fd, 0, int(testPage)-100, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatalf("MmapShort: %v", err)
	}
	second, both, err := MmapShortNextTo(first, fd, 2*testPage, int(2*testPage), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatalf("MmapShortNextTo: %v", err)
	}
	if both == nil {
		defer MunmapShort(first)
		defer MunmapShort(second)
		if noReplaceHonored(t, fd) {
			t.Fatalf("second mapping at %#x, not next to the first's page at %#x", SlicePtr(second), SlicePtr(first))
		}
		if !bytes.Equal(second[:testPage], pagePattern(2)) || !bytes.Equal(second[testPage:], pagePattern(3)) {
			t.Fatalf("second mapping (elsewhere, at %#x) does not hold pages 2 and 3 of the file", SlicePtr(second))
		}
		return
	}
	below := SlicePtr(second)+uint64(2*testPage) == SlicePtr(first) && SlicePtr(both) == SlicePtr(second)
	above := SlicePtr(second) == SlicePtr(first)+uint64(testPage) && SlicePtr(both) == SlicePtr(first)
	if !below && !above || int64(len(both)) != 3*testPage {
		t.Fatalf("first %#x, second %#x, both %#x+%d: want the two touching, both over them", SlicePtr(first), SlicePtr(second), SlicePtr(both), len(both))
	}
	if !bytes.Equal(second[:testPage], pagePattern(2)) || !bytes.Equal(second[testPage:], pagePattern(3)) {
		t.Fatalf("second mapping does not hold pages 2 and 3 of the file (first bytes %x)", second[:8])
	}
	if err := MunmapShort(both); err != nil {
		t.Fatalf("MunmapShort(both): %v", err)
	}
	if isMapped(t, first) || isMapped(t, second) || isMapped(t, second[testPage:]) {
		t.Fatalf("a page is still mapped after MunmapShort(both)")
	}
}

// With the page below the first mapping taken, MmapShortNextTo maps right
// after it; with both neighbours taken, elsewhere. It never maps over a
// page that is there. The neighbours are an anonymous three-page region
// whose middle page is "first", with its last page unmapped for the first
// case.
func TestMmapShortNextToLeavesOccupiedPagesAlone(t *testing.T) {
	fd := newMemfd(t, 4*testPage, 3)
	for _, tc := range []struct {
		name      string
		abovefree bool
	}{
		{"below taken", true},
		{"both taken", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			region, err := unix.Mmap(-1, 0, int(3*testPage), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
			if err != nil {
				t.Fatalf("mmap: %v", err)
			}
			defer MunmapShort(region) // all three pages, whatever is left
			for i := range region {
				region[i] = 0x5a
			}
			if tc.abovefree {
				if err := MunmapShort(region[2*testPage:]); err != nil {
					t.Fatalf("munmap of the region's last page: %v", err)
				}
			}
			first := region[testPage : 2*testPage]
			second, both, err := MmapShortNextTo(first, fd, 3*testPage, int(testPage), unix.PROT_READ, unix.MAP_SHARED)
			if err != nil {
				t.Fatalf("MmapShortNextTo: %v", err)
			}
			if tc.abovefree && both == nil && !noReplaceHonored(t, fd) {
				defer MunmapShort(second)
			} else if tc.abovefree {
				if SlicePtr(second) != SlicePtr(first)+uint64(testPage) || SlicePtr(both) != SlicePtr(first) || int64(len(both)) != 2*testPage {
					t.Fatalf("second %#x, both %#x+%d: want right after first %#x", SlicePtr(second), SlicePtr(both), len(both), SlicePtr(first))
				}
			} else {
				defer MunmapShort(second)
				if both != nil || SlicePtr(second) >= SlicePtr(region) && SlicePtr(second) < SlicePtr(region)+uint64(len(region)) {
					t.Fatalf("second %#x inside the existing region %#x+%d (both %d bytes)", SlicePtr(second), SlicePtr(region), len(region), len(both))
				}
			}
			if !bytes.Equal(second, pagePattern(3)) {
				t.Fatalf("second mapping holds %x, want page 3 of the file", second[:8])
			}
			for i, b := range region[:2*testPage] {
				if b != 0x5a {
					t.Fatalf("byte %d of the existing pages changed to %#x", i, b)
				}
			}
		})
	}
}
