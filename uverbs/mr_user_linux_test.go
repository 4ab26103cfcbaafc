package uverbs

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/go-rdma/rdmacm/internal/abi"
	"github.com/go-rdma/rdmacm/qp"
	"golang.org/x/sys/unix"
)

func TestParseMaps(t *testing.T) {
	maps := `55d0c0a00000-55d0c0a21000 rw-p 00000000 00:00 0                          [heap]
7f0000000000-7f0000200000 rw-s 00000000 00:0f 1234                       /anon_hugepage (deleted)
7f0000200000-7f0000201000 rw-s 00000000 00:01 99                         /memfd:buf (deleted)
c000000000-c000400000 rw-p 00000000 00:00 0                              [anon: Go: heap]
7f0000300000-7f0000302000 rw-p 00000000 00:00 0 
garbage
`
	v := parseMaps([]byte(maps))
	if len(v) != 5 {
		t.Fatalf("%d VMAs, want 5: %+v", len(v), v)
	}
	if v[1].name != "/anon_hugepage (deleted)" || !v[1].shared || v[1].inode != 1234 {
		t.Errorf("hugetlb VMA %+v", v[1])
	}
	if v[3].name != "[anon: Go: heap]" || v[3].start != 0xc000000000 || v[3].end != 0xc000400000 {
		t.Errorf("Go heap VMA %+v", v[3])
	}
	if v[4].name != "" || v[4].shared {
		t.Errorf("anonymous VMA %+v", v[4])
	}
}

func TestCheckMapped(t *testing.T) {
	named := `c000000000-c000400000 rw-p 00000000 00:00 0  [anon: Go: heap]
7f0000000000-7f0000200000 rw-s 00000000 00:0f 1234  /anon_hugepage (deleted)
7f0000200000-7f0000202000 rw-s 00000000 00:01 99  /memfd:buf (deleted)
7f0000300000-7f0000302000 rw-p 00000000 00:00 0
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0  [stack]
`
	unnamed := strings.Replace(named, "[anon: Go: heap]", "", 1)
	for _, c := range []struct {
		maps       string
		start, end uint64
		ok         string // "" when it must be refused with a message containing bad
		bad        string
	}{
		{named, 0xc000001000, 0xc000002000, "", "Go-heap"},
		{named, 0x7f0000000000, 0x7f0000200000, "hugetlb", ""},
		{named, 0x7f0000100000, 0x7f0000202000, "two file VMAs, contiguous", ""},
		{named, 0x7f0000201000, 0x7f0000203000, "", "not mapped"},
		{named, 0x7f0000300000, 0x7f0000302000, "unnamed anonymous, the runtime names its own", ""},
		{unnamed, 0x7f0000300000, 0x7f0000302000, "", "cannot tell"},
		{unnamed, 0x7f0000200000, 0x7f0000201000, "memfd without names", ""},
		{named, 0x7ffd00000000, 0x7ffd00001000, "", "[stack]"},
		{named, 0x1000, 0x2000, "", "not mapped"},
	} {
		err := checkMapped([]byte(c.maps), c.start, c.end)
		switch {
		case c.ok != "" && err != nil:
			t.Errorf("%s: %#x-%#x refused: %v", c.ok, c.start, c.end, err)
		case c.ok == "" && (err == nil || !strings.Contains(err.Error(), c.bad)):
			t.Errorf("%#x-%#x: error %v, want one containing %q", c.start, c.end, err, c.bad)
		}
	}
}

// UserBuffer refuses Go-heap and misaligned memory, and takes a memfd
// mapping and a MAP_HUGETLB one (when the host has huge pages); its Close
// leaves the mapping to the caller.
func TestUserBuffer(t *testing.T) {
	page := os.Getpagesize()
	heap := make([]byte, 3*page)
	off := page - int(abi.SlicePtr(heap)%uint64(page))
	_, err := UserBuffer(heap[off : off+page])
	if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "Go") {
		t.Errorf("Go-heap memory: %v, want ErrInvalidArgument naming the Go heap", err)
	}
	fd, err := unix.MemfdCreate("uverbs-test", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Ftruncate(fd, int64(2*page)); err != nil {
		t.Fatal(err)
	}
	mem, err := unix.Mmap(fd, 0, 2*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	if _, err := UserBuffer(mem[1:]); !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "page-aligned") {
		t.Errorf("misaligned: %v", err)
	}
	if _, err := UserBuffer(mem[:0]); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("empty: %v", err)
	}
	b, err := UserBuffer(mem)
	if err != nil {
		t.Fatalf("memfd mapping: %v", err)
	}
	if b.Addr() != abi.SlicePtr(mem) || b.Len() != 2*page {
		t.Errorf("buffer %#x+%d, mapping %#x+%d", b.Addr(), b.Len(), abi.SlicePtr(mem), len(mem))
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	mem[0] = 1 // still mapped after Close
	huge, err := unix.Mmap(-1, 0, 2<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_HUGETLB)
	if err != nil {
		t.Logf("no huge pages on this host (%v): MAP_HUGETLB is covered by the guest test", err)
		return
	}
	defer unix.Munmap(huge)
	if _, err := UserBuffer(huge); err != nil {
		t.Errorf("MAP_HUGETLB mapping: %v", err)
	}
}

// Registration arguments that no kernel could take fail before any
// command, with ErrInvalidArgument.
func TestRegArgsRefused(t *testing.T) {
	x, _ := fileContext(t)
	pd := &PD{ctx: x}
	buf, err := AllocBuffer(2 * os.Getpagesize())
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Close()
	rw := qp.AccessLocalWrite | qp.AccessRemoteWrite
	if _, err := pd.RegMRIOVA(buf, 0, buf.Len(), 0x10000010, rw); !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "within a") {
		t.Errorf("IOVA off the page offset: %v", err)
	}
	if _, err := pd.RegDmabufMR(3, 0x100, 4096, 0x2000, rw); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("dmabuf IOVA off the page offset: %v", err)
	}
	if _, err := pd.RegDmabufMR(-1, 0, 4096, 0, rw); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("dmabuf fd -1: %v", err)
	}
	if _, err := pd.RegDmabufMR(3, 0, 4096, 0, qp.AccessRemoteWrite); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("dmabuf remote write without local write: %v", err)
	}
	mr := &MR{pd: pd, buf: buf}
	if err := mr.Rereg(0, nil, nil, 0, 0, 0); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("rereg without flags: %v", err)
	}
	if err := mr.Rereg(ReregTranslation, nil, buf, 0, buf.Len()+1, 0); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("rereg past the buffer: %v", err)
	}
	if err := mr.Rereg(ReregPD, &PD{ctx: &Context{}}, nil, 0, 0, 0); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("rereg to another context's PD: %v", err)
	}
	if err := (&MR{pd: pd}).Rereg(ReregAccess, nil, nil, 0, 0, qp.AccessLocalWrite); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("rereg of a dma-buf MR: %v", err)
	}
}
