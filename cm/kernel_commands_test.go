//go:build linux

package cm

// The kernel backend's commands, byte for byte, on the host: a fake
// rdma_cm device (kcall.SetTestDevice) records every write() the backend
// makes and answers each response pointer with a fixed byte pattern. The
// transcript (header, payload with the response pointer masked, the
// option value, and what the backend made of each answer) is compared
// with testdata/ucma-commands.golden, which was recorded from the
// backend before its commands moved behind internal/abi's typed
// wrappers. Run with -update to rewrite it after an intended change.

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/go-rdma/rdmacm/ece"
	"github.com/go-rdma/rdmacm/internal/abi"
	"github.com/go-rdma/rdmacm/internal/kcall"
	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/ucma-commands.golden")

// fakeUcma answers the writes to one fd as the rdma_cm device would,
// recording them.
type fakeUcma struct {
	ucmaOnly
	fd     int
	out    strings.Builder
	events int // GET_EVENT answers left before EAGAIN
}

// respOffset is where a command's user pointer sits in its payload (-1:
// none).
func respOffset(cmd uint32) int {
	switch cmd {
	case abi.UcmaCmdCreateID:
		return 8
	case abi.UcmaCmdDestroyID, abi.UcmaCmdQuery, abi.UcmaCmdInitQPAttr, abi.UcmaCmdJoinMcast,
		abi.UcmaCmdLeaveMcast, abi.UcmaCmdGetEvent, abi.UcmaCmdSetOption:
		return 0
	}
	return -1
}

func (f *fakeUcma) Write(fd int, p uintptr, n int) (bool, int, error) {
	if fd != f.fd {
		return false, 0, nil
	}
	b := make([]byte, n)
	kcall.ReadMem(uint64(p), b)
	var h abi.UcmaCmdHdr
	h.Cmd = binary.NativeEndian.Uint32(b)
	h.In = binary.NativeEndian.Uint16(b[4:])
	h.Out = binary.NativeEndian.Uint16(b[6:])
	body := b[abi.SizeofUcmaCmdHdr:]
	if h.Cmd == abi.UcmaCmdGetEvent {
		if f.events == 0 {
			return true, 0, unix.EAGAIN
		}
		f.events--
	}
	var ptr uint64
	if off := respOffset(h.Cmd); off >= 0 && len(body) >= off+8 {
		ptr = binary.NativeEndian.Uint64(body[off:])
		binary.NativeEndian.PutUint64(body[off:], 0)
	}
	fmt.Fprintf(&f.out, "write cmd=%d in=%d out=%d len=%d\n  %s\n", h.Cmd, h.In, h.Out, n, hex.EncodeToString(body))
	if h.Cmd == abi.UcmaCmdSetOption && ptr != 0 {
		v := make([]byte, binary.NativeEndian.Uint32(body[20:]))
		kcall.ReadMem(ptr, v)
		fmt.Fprintf(&f.out, "  optval %x\n", v)
	}
	if h.Out > 0 && ptr != 0 {
		resp := make([]byte, h.Out)
		for i := range resp {
			resp[i] = byte(i*7 + int(h.Cmd))
		}
		if h.Cmd == abi.UcmaCmdQuery && len(resp) >= 4 {
			binary.NativeEndian.PutUint32(resp, 2) // QUERY PATH: two records
		}
		if h.Cmd == abi.UcmaCmdGetEvent {
			// A plausible private-data length in both union members.
			resp[20+264] = 9
			resp[20+296] = 5
		}
		kcall.WriteMem(ptr, resp)
	}
	return true, n, nil
}

// ucmaOnly is the part of an kcall.TestDevice that a fake rdma_cm device
// leaves to the kernel: ioctls and mmaps (the verbs' syscalls).
type ucmaOnly struct{}

func (ucmaOnly) Ioctl(int, uintptr, uintptr) (bool, error)            { return false, nil }
func (ucmaOnly) Mmap(int, int64, int, int, int) (bool, []byte, error) { return false, nil, nil }
func (ucmaOnly) Munmap([]byte) (bool, error)                          { return false, nil }

func TestKernelCommandBytes(t *testing.T) {
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		t.Skip("the golden transcript is of a little-endian host")
	}
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[1])
	k, err := openUcma("fake-rdma_cm", func(string, int, uint32) (int, error) { return fds[0], nil })
	if err != nil {
		t.Fatal(err)
	}
	defer k.close()
	f := &fakeUcma{fd: fds[0]}
	defer kcall.SetTestDevice(f)()

	say := func(format string, args ...any) { fmt.Fprintf(&f.out, "= "+format+"\n", args...) }
	v4 := netip.MustParseAddrPort("192.0.2.1:7471")
	v4b := netip.MustParseAddrPort("192.0.2.2:18515")
	v6 := netip.MustParseAddrPort("[2001:db8::1]:7471")
	pd := []byte("private data")
	full := &ConnParam{PrivateData: pd, ResponderResources: 3, InitiatorDepth: 4, FlowControl: true,
		RetryCount: 6, RNRRetryCount: 7, SRQ: true, QPNum: 0x123456, QKey: 0x11223344}
	e := ece.ECE{VendorID: 0x15b3, Options: 0x30000001}

	h, err := k.createID(0x1122334455, rdma.PortSpaceTCP, qp.RC)
	say("createID %#x %v", h, err)
	h, err = k.createID(7, rdma.PortSpaceIB, qp.UD)
	say("createID %#x %v", h, err)
	n, err := k.destroyID(0x42)
	say("destroyID %d %v", n, err)
	say("bind %v", k.bind(0x42, v4))
	say("bind %v", k.bind(0x42, v6))
	say("resolveAddr %v", k.resolveAddr(0x42, netip.AddrPort{}, v4b, 2*time.Second))
	say("resolveAddr %v", k.resolveAddr(0x42, v4, v4b, 0))
	say("resolveAddr %v", k.resolveAddr(0x42, v6, v6, 100*24*time.Hour))
	say("resolveRoute %v", k.resolveRoute(0x42, 1500*time.Millisecond))
	ai, err := k.queryAddr(0x42)
	say("queryAddr %+v %v", ai, err)
	prs, err := k.queryPath(0x42)
	say("queryPath %+v %v", prs, err)
	say("listen %v", k.listen(0x42, 10))
	say("listen %v", k.listen(0x42, -1))
	say("connect %v", k.connect(0x42, full, e))
	say("connect %v", k.connect(0x42, &ConnParam{}, ece.ECE{}))
	say("connect %v", k.connect(0x42, &ConnParam{PrivateData: make([]byte, 256)}, e))
	// What Connect sends for a ConnParam that carries only private data
	// (librdmacm's defaults: retry 7/7, resources resolved from 0xff), and
	// for one that asks for zeros with the sentinels.
	partial := defaultConnParam(&ConnParam{PrivateData: pd, QPNum: 0x123456})
	say("connect %v", k.connect(0x42, &partial, ece.ECE{}))
	zeros := defaultConnParam(&ConnParam{QPNum: 0x123456, RetryCount: RetryNone, RNRRetryCount: RetryNone,
		ResponderResources: ResourcesNone, InitiatorDepth: ResourcesNone})
	say("connect %v", k.connect(0x42, &zeros, ece.ECE{}))
	say("accept %v", k.accept(0x42, 0x99, &partial, ece.ECE{}))
	say("accept %v", k.accept(0x42, 0x99, full, e))
	say("accept %v", k.accept(0x42, 0x99, nil, e))
	say("reject %v", k.reject(0x42, pd, 28))
	say("disconnect %v", k.disconnect(0x42))
	for _, s := range []qp.State{qp.Init, qp.RTR, qp.RTS} {
		a, m, err := k.initQPAttr(0x42, s)
		say("initQPAttr %+v %#x %v", a, m, err)
	}
	say("setOption %v", k.setOption(0x42, optLevelID, optTOS, []byte{0x28}))
	say("setOption %v", k.setOption(0x42, optLevelID, optReuseAddr, intOpt(true)))
	say("setOption %v", k.setOption(0x42, optLevelID, optReuseAddr, nil))
	say("notify %v", k.notify(0x42, 4))
	mc, err := k.join(0x42, 0x77, netip.MustParseAddr("224.0.0.1"), true)
	say("join %#x %v", mc, err)
	mc, err = k.join(0x42, 0x78, netip.MustParseAddr("ff0e::1"), false)
	say("join %#x %v", mc, err)
	n, err = k.leave(0x43)
	say("leave %d %v", n, err)
	f.events = 2
	err = k.readEvents(context.Background(), func(r *rawEvent) { say("event %+v", *r) })
	say("readEvents %v", err)

	got := f.out.String()
	golden := filepath.Join("testdata", "ucma-commands.golden")
	if *updateGolden {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to record it)", err)
	}
	if !bytes.Equal([]byte(got), want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := range max(len(gl), len(wl)) {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("transcript differs from %s at line %d:\n got %s\nwant %s", golden, i+1, g, w)
			}
		}
	}
}
