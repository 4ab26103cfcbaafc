package vmtest

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type cpioEntry struct {
	Name string
	Mode uint32
	Data string
}

// readNewc parses a newc archive (the test's own reader, written from the
// format description, not from cpioWriter).
func readNewc(t *testing.T, b []byte) []cpioEntry {
	t.Helper()
	var out []cpioEntry
	off := 0
	align := func() {
		for off%4 != 0 {
			off++
		}
	}
	for {
		if len(b)-off < 110 {
			t.Fatalf("short header at %d", off)
		}
		h := string(b[off : off+110])
		if h[:6] != "070701" {
			t.Fatalf("bad magic %q at %d", h[:6], off)
		}
		field := func(i int) uint32 {
			v, err := strconv.ParseUint(h[6+8*i:14+8*i], 16, 32)
			if err != nil {
				t.Fatalf("field %d: %v", i, err)
			}
			return uint32(v)
		}
		mode, size, namesize := field(1), int(field(6)), int(field(11))
		off += 110
		name := string(b[off : off+namesize-1])
		if b[off+namesize-1] != 0 {
			t.Fatalf("name %q not NUL-terminated", name)
		}
		off += namesize
		align()
		data := string(b[off : off+size])
		off += size
		align()
		if name == "TRAILER!!!" {
			if off != len(b) {
				t.Errorf("%d bytes after the trailer", len(b)-off)
			}
			return out
		}
		out = append(out, cpioEntry{name, mode, data})
	}
}

func testTree() fsTree {
	tr := fsTree{}
	tr.File("init", 0o755, []byte("#!/bin/sh\necho hi\n"))
	tr.File("usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so", 0o644, []byte("x"))
	tr.Symlink("bin/sh", "busybox")
	tr.Dir("proc")
	return tr
}

func TestCPIOWriterRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	if err := testTree().WriteCPIO(&buf, os.ReadFile); err != nil {
		t.Fatal(err)
	}
	got := readNewc(t, buf.Bytes())
	want := []cpioEntry{
		{"bin", cpioModeDir | 0o755, ""},
		{"bin/sh", cpioModeSymlink | 0o777, "busybox"},
		{"init", cpioModeFile | 0o755, "#!/bin/sh\necho hi\n"},
		{"proc", cpioModeDir | 0o755, ""},
		{"usr", cpioModeDir | 0o755, ""},
		{"usr/lib", cpioModeDir | 0o755, ""},
		{"usr/lib/x86_64-linux-gnu", cpioModeDir | 0o755, ""},
		{"usr/lib/x86_64-linux-gnu/libibverbs", cpioModeDir | 0o755, ""},
		{"usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so", cpioModeFile | 0o644, "x"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("archive (-want +got):\n%s", diff)
	}
}

// TestCPIOReadableByCpio checks the archive with GNU cpio, the reference
// implementation of the format (installed by tools/deps.sh).
func TestCPIOReadableByCpio(t *testing.T) {
	if _, err := exec.LookPath("cpio"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("cpio is not installed (tools/deps.sh installs it)")
		}
		t.Skip("cpio is not installed")
	}
	var buf bytes.Buffer
	if err := testTree().WriteCPIO(&buf, os.ReadFile); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("cpio", "-it", "--quiet")
	cmd.Stdin = &buf
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	names := strings.Fields(string(out))
	if len(names) != 9 || names[1] != "bin/sh" || names[8] != "usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so" {
		t.Errorf("cpio -t listed %q", names)
	}
}

func TestCPIOSourceErrors(t *testing.T) {
	tr := fsTree{}
	tr.Copy("bin/x", 0o755, "/nonexistent/file")
	err := tr.WriteCPIO(&bytes.Buffer{}, os.ReadFile)
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "bin/x") {
		t.Errorf("got %v, want a not-exist error naming bin/x", err)
	}
}
