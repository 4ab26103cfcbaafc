//go:build linux

package rdmacm_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm"
	"github.com/go-rdma/rdmacm/internal/vmtest/guest"
	"github.com/go-rdma/rdmacm/qp"
	"golang.org/x/sys/unix"
)

// rpingSink runs one ping of rping's protocol as the client against an
// rping server (C, librdmacm) on the peer, advertising sink as the
// buffer the server RDMA-WRITEs the ping data into: the server first
// RDMA-READs data (NUL-terminated, as rping's ping string) from our
// source buffer, then writes strlen(data)+1 bytes at sink.Addr. It
// returns the error of the wait for the server's "go ahead" after the
// write, nil when the write completed at the server.
func rpingSink(ctx context.Context, t *testing.T, port int, data string, sink rdmacm.RemoteBuf) (server string, err error) {
	t.Helper()
	peer := guest.Peer()
	srv, err := peer.Start(ctx, fmt.Sprintf("rping -s -v -a %s -p %d", peer.Addr, port))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		srv.Wait(ctx)
		server = srv.Stdout() + srv.Stderr()
	}()
	var ep *rdmacm.Endpoint
	for {
		ep, err = rdmacm.Dial(ctx, fmt.Sprintf("%s:%d", peer.Addr, port), &rdmacm.EndpointOptions{Backend: guestBackend()})
		if err == nil || ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond) // rping not listening yet
	}
	if err != nil {
		srv.Stop(ctx)
		t.Fatalf("dial rping: %v", err)
	}
	defer ep.Close()
	msgs, err := ep.RegMsgs(64)
	if err != nil {
		t.Fatal(err)
	}
	defer msgs.Close()
	src, err := ep.RegRead(len(data) + 1)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	copy(src.Bytes(), data+"\x00")
	advert := func(r rdmacm.RemoteBuf) error {
		b, _ := r.MarshalBinary() // rping_rdma_info: buf, rkey, size, big-endian
		copy(msgs.Bytes(), b)
		if err := ep.PostRecv(msgs, 32, 16); err != nil {
			return err
		}
		if err := ep.PostSend(msgs, 0, 16); err != nil {
			return err
		}
		if _, err := ep.WaitSend(ctx); err != nil {
			return err
		}
		_, err := ep.WaitRecv(ctx) // the server's "go ahead"
		return err
	}
	if err := advert(src.Remote()); err != nil {
		t.Fatalf("read advert: %v", err)
	}
	return "", advert(sink)
}

// memfdMapping maps n bytes of a new memfd, shared.
func memfdMapping(t *testing.T, n int) []byte {
	t.Helper()
	fd, err := unix.MemfdCreate("rdmacm-test", unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd) // the mapping keeps the file
	if err := unix.Ftruncate(fd, int64(n)); err != nil {
		t.Fatal(err)
	}
	mem, err := unix.Mmap(fd, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(mem) })
	return mem
}

// hugeMapping maps one 2 MiB huge page (MAP_HUGETLB), reserving huge pages
// in this guest first if it has none.
func hugeMapping(t *testing.T) []byte {
	t.Helper()
	const size = 2 << 20
	const knob = "/proc/sys/vm/nr_hugepages"
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_HUGETLB)
	if err == nil {
		t.Logf("huge pages were configured (%s)", readTrim(knob))
		t.Cleanup(func() { unix.Munmap(mem) })
		return mem
	}
	old := readTrim(knob)
	if werr := os.WriteFile(knob, []byte("2"), 0); werr != nil {
		t.Fatalf("MAP_HUGETLB: %v, and %s=%s could not be raised: %v", err, knob, old, werr)
	}
	t.Cleanup(func() { os.WriteFile(knob, []byte(old), 0) })
	t.Logf("the guest had %s=%s; set it to 2, now %s", knob, old, readTrim(knob))
	mem, err = unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_HUGETLB)
	if err != nil {
		t.Fatalf("MAP_HUGETLB with %s=%s: %v", knob, readTrim(knob), err)
	}
	t.Cleanup(func() { unix.Munmap(mem) })
	return mem
}

func readTrim(path string) string {
	b, _ := os.ReadFile(path)
	return strings.TrimSpace(string(b))
}

// TestCallerMemoryInGuest registers memory the test mapped itself (a
// memfd, a huge page) and has a C peer, rdma-core's rping server,
// RDMA-WRITE into it: at the memory's address, at an IOVA other than the
// address, and past the end of the MR, which fails at the writer with a
// remote access error and changes nothing outside the MR.
func TestCallerMemoryInGuest(t *testing.T) {
	guest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	page := os.Getpagesize()
	rw := rdmacm.MemOptions{Access: qp.AccessLocalWrite | qp.AccessRemoteWrite}

	// The endpoint layer registers on a connection's PD; these MRs go on
	// one of a connection made for that purpose, which rping needs none of:
	// a listener on the local device shares the PD with every endpoint.
	l, err := rdmacm.Listen(guest.Local().Addr+":7436", &rdmacm.EndpointOptions{Backend: guestBackend()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	check := func(t *testing.T, mem []byte, at int, data string) {
		t.Helper()
		if got := string(mem[at : at+len(data)+1]); got != data+"\x00" {
			t.Errorf("memory at %d: %q, want %q", at, got, data+"\x00")
		}
	}
	port := 7190
	t.Run("memfd", func(t *testing.T) {
		mem := memfdMapping(t, 4*page)
		mr, err := l.RegMemory(mem, rw)
		if err != nil {
			t.Fatal(err)
		}
		defer mr.Close()
		data := "rdma-ping-0: into a memfd"
		r := mr.Remote()
		r.Addr += 300
		if out, err := rpingSink(ctx, t, port, data, r); err != nil {
			t.Fatalf("rping's write: %v\nrping:\n%s", err, out)
		}
		check(t, mem, 300, data)
	})
	port++
	t.Run("iova", func(t *testing.T) {
		mem := memfdMapping(t, 4*page)
		const iova = 0x7e5500000000
		mr, err := l.RegMemory(mem, rdmacm.MemOptions{Access: rw.Access, IOVA: iova, UseIOVA: true})
		if err != nil {
			t.Fatal(err)
		}
		defer mr.Close()
		if mr.Remote().Addr != iova {
			t.Fatalf("Remote().Addr %#x, want the IOVA %#x", mr.Remote().Addr, uint64(iova))
		}
		data := "rdma-ping-0: at an IOVA"
		at := 2*page + 40
		if out, err := rpingSink(ctx, t, port, data, rdmacm.RemoteBuf{Addr: iova + uint64(at), RKey: mr.Remote().RKey, Len: 64}); err != nil {
			t.Fatalf("rping's write: %v\nrping:\n%s", err, out)
		}
		check(t, mem, at, data)
		if n := bytes.Count(mem, []byte{0}); n != len(mem)-len(data) {
			t.Errorf("%d bytes changed, want %d", len(mem)-n, len(data))
		}
	})
	port++
	t.Run("hugepage", func(t *testing.T) {
		mem := hugeMapping(t)
		mr, err := l.RegMemory(mem, rw)
		if err != nil {
			t.Fatal(err)
		}
		defer mr.Close()
		data := "rdma-ping-0: into a huge page"
		at := 1<<20 + 7
		r := mr.Remote()
		r.Addr += uint64(at)
		if out, err := rpingSink(ctx, t, port, data, r); err != nil {
			t.Fatalf("rping's write: %v\nrping:\n%s", err, out)
		}
		check(t, mem, at, data)
	})
	port++
	t.Run("outside", func(t *testing.T) {
		mem := memfdMapping(t, 3*page)
		for i := range mem {
			mem[i] = 0xa5
		}
		before := bytes.Clone(mem)
		mr, err := l.RegMemory(mem[page:2*page], rw) // the middle page only
		if err != nil {
			t.Fatal(err)
		}
		defer mr.Close()
		data := "rdma-ping-0: across the end of the MR"
		r := mr.Remote()
		r.Addr += uint64(page - 8) // 8 bytes inside, the rest past the end
		out, err := rpingSink(ctx, t, port, data, r)
		if err == nil {
			t.Fatalf("a write past the MR's end completed\nrping:\n%s", out)
		}
		t.Logf("our side: %v", err)
		// rping reports the failed RDMA WRITE's status:
		// IBV_WC_REM_ACCESS_ERR is 10.
		if !strings.Contains(out, "status "+strconv.Itoa(int(rdmacm.WCRemAccessErr))) {
			t.Errorf("rping did not report a remote access error:\n%s", out)
		}
		if !bytes.Equal(mem[:page], before[:page]) || !bytes.Equal(mem[2*page:], before[2*page:]) {
			t.Errorf("memory outside the MR changed")
		}
		if errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("our side waited until the deadline")
		}
	})
}
