//go:build linux

package mlx5sim

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/go-rdma/rdmacm/internal/abi"
	"golang.org/x/sys/unix"
)

// shimClient speaks the shim's side of the protocol.
type shimClient struct {
	t    *testing.T
	conn net.Conn
}

func (s *shimClient) req(kind uint32, fd, spare int32, text string, a ...uint64) (int64, unix.Errno, bool) {
	var b [reqSize]byte
	n := binary.NativeEndian
	n.PutUint32(b[0:], kind)
	n.PutUint32(b[4:], uint32(fd))
	n.PutUint32(b[8:], uint32(spare))
	n.PutUint32(b[12:], uint32(len(text)))
	for i, v := range a {
		n.PutUint64(b[16+8*i:], v)
	}
	n.PutUint64(b[48:], uint64(os.Getpid()))
	if _, err := s.conn.Write(append(b[:], text...)); err != nil {
		s.t.Fatal(err)
	}
	var r [repSize]byte
	if _, err := io.ReadFull(s.conn, r[:]); err != nil {
		s.t.Fatal(err)
	}
	return int64(n.Uint64(r[:])), unix.Errno(n.Uint32(r[8:])), n.Uint32(r[12:]) == 1
}

// buildGetContext lays a GET_CONTEXT ioctl out in mem (real memory of
// this process) and returns its address and the UHW_OUT address.
func buildGetContext(mem []byte) (uint64, uint64) {
	base := uint64(uintptr(unsafe.Pointer(&mem[0])))
	req := abi.MLX5AllocUcontextReqV2{TotalNumBfregs: 16, NumLowLatencyBfregs: 4, MaxCQEVersion: 1, LibCaps: 3}
	copy(mem[1024:], abi.Bytes(&req))
	attrs := []abi.IoctlAttr{
		{AttrID: 0, Len: 4, Flags: 1, Data: base + 2048},
		{AttrID: uhwIn, Len: 32, Flags: 1, Data: base + 1024},
		{AttrID: uhwOut, Len: 72, Flags: 1, Data: base + 3072},
	}
	h := abi.IoctlHdr{Length: 24 + 16*3, ObjectID: 0, MethodID: 3, NumAttrs: 3, DriverID: 1}
	copy(mem, abi.Bytes(&h))
	for i := range attrs {
		copy(mem[24+16*i:], abi.Bytes(&attrs[i]))
	}
	return base, base + 3072
}

func TestServe(t *testing.T) {
	mem, err := unix.Mmap(-1, 0, 8192, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	d := New(DefaultProfile())
	c1, c2 := net.Pipe()
	done := make(chan error, 1)
	go func() { done <- Serve(c2, d) }()
	s := &shimClient{t: t, conn: c1}
	arg, out := buildGetContext(mem)
	if ret, e, _ := s.req(kindIoctl, 5, -1, "", abi.RDMAVerbsIoctl, arg); ret != 0 || e != 0 {
		t.Fatalf("GET_CONTEXT: %d %v\n%s", ret, e, strings.Join(d.Trace(), "\n"))
	}
	r := abi.Decode[abi.MLX5AllocUcontextResp](mem[out-arg:])
	if r.TotBfregs != 16 {
		t.Errorf("resp %+v", r)
	}
	// An async event fd from the spare.
	h := abi.IoctlHdr{Length: 24 + 16, ObjectID: 16, MethodID: 0, NumAttrs: 1, DriverID: 1}
	a := abi.IoctlAttr{AttrID: 0, Flags: 1}
	copy(mem[4096:], abi.Bytes(&h))
	copy(mem[4096+24:], abi.Bytes(&a))
	if _, e, used := s.req(kindIoctl, 5, 77, "", abi.RDMAVerbsIoctl, arg+4096); e != 0 || !used {
		t.Errorf("ASYNC_EVENT_ALLOC: %v used %v", e, used)
	}
	if fd := binary.NativeEndian.Uint64(mem[4096+24+8:]); fd != 77 {
		t.Errorf("async fd %d", fd)
	}
	// A UAR page: the shim has mapped it at addr already.
	if _, e, _ := s.req(kindMmap, 5, -1, "", arg+4096, 4096, 0, unix.PROT_WRITE); e != 0 {
		t.Errorf("mmap: %v", e)
	}
	s.req(kindRecord, 0, -1, "poll n=0")
	s.req(kindSnapshot, 0, -1, "L2: open")
	if _, e, _ := s.req(kindExec, 0, -1, "cqe nope op=req qp=x"); e != unix.ENOENT {
		t.Errorf("exec: %v", e)
	}
	s.req(kindMunmap, 0, -1, "", arg+4096, 4096)
	s.req(kindClose, 5, -1, "")
	if _, e, _ := s.req(99, 0, -1, ""); e != unix.EINVAL {
		t.Errorf("kind 99: %v", e)
	}
	c1.Close()
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
	tr := strings.Join(d.Trace(), "\n")
	for _, want := range []string{"GET_CONTEXT ctx0", "~ ASYNC_EVENT_ALLOC -> ok fd=new", "MMAP off=0x0 cmd=0 idx=0 len=4096 prot=0x2 uar0 -> ok", "rec poll n=0", "snap L2: open", "exec cqe nope", "MUNMAP uar0", "~ CLOSE ctx0", "UNKNOWN shim request kind=99"} {
		if !strings.Contains(tr, want) {
			t.Errorf("trace lacks %q:\n%s", want, tr)
		}
	}
}

// TestRunChild runs this test binary as the child: it connects to
// MLX5SIM_SOCK and records a line.
func TestRunChild(t *testing.T) {
	if os.Getenv("MLX5SIM_RUNCHILD") != "" {
		c, err := net.Dial("unix", os.Getenv(sockEnv))
		if err != nil {
			os.Exit(3)
		}
		s := &shimClient{t: t, conn: c}
		s.req(kindRecord, 0, -1, "hello from the child")
		c.Close()
		return
	}
	d := New(DefaultProfile())
	cmd := exec.Command(os.Args[0], "-test.run=^TestRunChild$")
	cmd.Env = append(os.Environ(), "MLX5SIM_RUNCHILD=1")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := RunChild(ctx, cmd, d); err != nil {
		t.Fatal(err)
	}
	if tr := d.Trace(); len(tr) != 1 || tr[0] != "rec hello from the child" {
		t.Errorf("trace %q", tr)
	}
	// A child that never connects.
	if err := RunChild(ctx, exec.Command("/bin/true"), New(DefaultProfile())); err == nil {
		t.Error("RunChild with /bin/true: no error")
	}
}

// TestSeamReopen: in-process, a closed uverbs fd number reused for a new
// open gets a fresh context (close(2) is invisible to the seam).
func TestSeamReopen(t *testing.T) {
	f, err := os.OpenFile("/dev/full", os.O_RDWR, 0)
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	fd := int(f.Fd())
	if !IsUverbsFD(fd) {
		t.Fatal("/dev/full is not 1:7")
	}
	d := New(DefaultProfile())
	restore := d.Install()
	defer restore()
	s := &seam{d: d, mem: SelfMem(), maps: map[uintptr]int{}}
	mem, err := unix.Mmap(-1, 0, 8192, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	for i := 0; i < 2; i++ {
		arg, _ := buildGetContext(mem)
		if ok, err := s.Ioctl(fd, abi.RDMAVerbsIoctl, uintptr(arg)); !ok || err != nil {
			t.Fatalf("open %d: %v %v", i, ok, err)
		}
	}
	if ok, _ := s.Ioctl(0, abi.RDMAVerbsIoctl, 0); ok {
		t.Error("stdin handled")
	}
	// A UAR page mapped through the seam, then unmapped.
	ok, b, err := s.Mmap(fd, 0, 4096, unix.PROT_WRITE, unix.MAP_SHARED)
	if !ok || err != nil || len(b) != 4096 {
		t.Fatalf("mmap: %v %v", ok, err)
	}
	b[0x800] = 1
	if ok, err := s.Munmap(b); !ok || err != nil {
		t.Errorf("munmap: %v %v", ok, err)
	}
	tr := strings.Join(d.Trace(), "\n")
	if strings.Count(tr, "GET_CONTEXT ctx0") != 1 || !strings.Contains(tr, "GET_CONTEXT ctx1") || !strings.Contains(tr, "~ CLOSE ctx0") {
		t.Errorf("trace:\n%s", tr)
	}
}
