//go:build linux

package kcall

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/go-rdma/rdmacm/internal/abi"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// The raw sysfs readers answer as package os does: contents, sorted
// names, *fs.PathError around the errno.
func TestSysfsReadersMatchPackageOS(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("x", 5000) + "\n"
	for name, body := range map[string]string{"b": "1\n", "a": long, "c": ""} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "d0"), 0o755); err != nil {
		t.Fatal(err)
	}
	names, err := SysfsReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a", "b", "c", "d0"}, names); diff != "" {
		t.Errorf("SysfsReadDir (-want +got):\n%s", diff)
	}
	for _, name := range []string{"a", "b", "c"} {
		got, err := SysfsReadFile(filepath.Join(dir, name))
		want, _ := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(got) != string(want) {
			t.Errorf("SysfsReadFile(%s) = %d bytes, %v; want %d bytes", name, len(got), err, len(want))
		}
	}
	missing := filepath.Join(dir, "missing")
	_, err = SysfsReadFile(missing)
	var pe *fs.PathError
	if !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &pe) || pe.Path != missing || pe.Op != "open" {
		t.Errorf("SysfsReadFile(missing) = %v, want an open *fs.PathError matching fs.ErrNotExist", err)
	}
	if _, err := SysfsReadDir(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("SysfsReadDir(missing) = %v, want fs.ErrNotExist", err)
	}
	if _, err := SysfsReadDir(filepath.Join(dir, "b")); err == nil {
		t.Error("SysfsReadDir(a file) succeeded")
	}
	if _, err := SysfsReadFile(dir); err == nil {
		t.Error("SysfsReadFile(a directory) succeeded")
	}
	if !SysfsExists(filepath.Join(dir, "d0")) || !SysfsExists(filepath.Join(dir, "c")) || SysfsExists(missing) {
		t.Error("SysfsExists disagrees with os.Stat")
	}
}

func TestIfIndexToNameNamesLoopback(t *testing.T) {
	// Every network namespace has lo; sysfs gives its index (not
	// net.InterfaceByName: its netlink parse fails under qemu-s390x).
	b, err := os.ReadFile("/sys/class/net/lo/ifindex")
	if err != nil {
		t.Fatal(err)
	}
	index, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	name, err := IfIndexToName(index)
	if err != nil || name != "lo" {
		t.Errorf("IfIndexToName(%d) = %q, %v; want lo", index, name, err)
	}
	if _, err := IfIndexToName(1 << 30); !errors.Is(err, unix.ENODEV) {
		t.Errorf("IfIndexToName(no such index) = %v, want ENODEV", err)
	}
}

// A netlink request with the raw calls: RTM_GETLINK dump of this network
// namespace ends with NLMSG_DONE from port id 0.
func TestNetlinkDumpEnds(t *testing.T) {
	fd, pid, err := NetlinkSocket(unix.NETLINK_ROUTE)
	if err != nil {
		t.Fatal(err)
	}
	defer Close(fd)
	msg := make([]byte, unix.NLMSG_HDRLEN+unix.SizeofIfInfomsg)
	abi.Native.PutUint32(msg[0:], uint32(len(msg)))
	abi.Native.PutUint16(msg[4:], unix.RTM_GETLINK)
	abi.Native.PutUint16(msg[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	abi.Native.PutUint32(msg[8:], 1)
	abi.Native.PutUint32(msg[12:], pid)
	if err := NetlinkSendToKernel(fd, msg); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64<<10)
	for range 1000 {
		n, from, err := NetlinkRecv(fd, buf, 0)
		if err != nil || from != 0 || n < unix.NLMSG_HDRLEN {
			t.Fatalf("NetlinkRecv = %d, from %d, %v", n, from, err)
		}
		for b := buf[:n]; len(b) >= unix.NLMSG_HDRLEN; {
			l := int(abi.Native.Uint32(b))
			if abi.Native.Uint16(b[4:]) == unix.NLMSG_DONE {
				return
			}
			if l < unix.NLMSG_HDRLEN || l > len(b) {
				t.Fatalf("bad message length %d", l)
			}
			b = b[min((l+3)&^3, len(b)):]
		}
	}
	t.Fatal("no NLMSG_DONE")
}
