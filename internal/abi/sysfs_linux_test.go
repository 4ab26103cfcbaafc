//go:build linux

package abi

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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
