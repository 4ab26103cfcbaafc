//go:build linux

package cm

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// An rdma_cm node the process may not open: the error names the node and
// matches ErrPermission and the errno.
func TestOpenUcmaPermission(t *testing.T) {
	node := filepath.Join(t.TempDir(), "rdma_cm")
	for _, errno := range []unix.Errno{unix.EACCES, unix.EPERM} {
		_, err := openUcma(node, func(string, int, uint32) (int, error) { return -1, errno })
		if !errors.Is(err, ErrPermission) || !errors.Is(err, errno) || !strings.Contains(err.Error(), node) {
			t.Errorf("%v: %v, want ErrPermission naming %s", errno, err, node)
		}
		if errors.Is(err, ErrNoDevice) {
			t.Errorf("%v matches ErrNoDevice: %v", errno, err)
		}
	}
	// A missing node is ErrNoDevice, also named.
	_, err := openUcma(node, unix.Open)
	if !errors.Is(err, ErrNoDevice) || !errors.Is(err, unix.ENOENT) || !strings.Contains(err.Error(), node) {
		t.Errorf("missing node: %v", err)
	}
	// A real mode-000 file, where the file mode is enforced (not root:
	// CAP_DAC_OVERRIDE opens it anyway).
	if err := os.WriteFile(node, nil, 0); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		t.Log("running as root: mode 000 does not deny, checked with the injected errno only")
		return
	}
	k, err := openUcma(node, unix.Open)
	if k != nil {
		k.close()
	}
	if !errors.Is(err, ErrPermission) || !errors.Is(err, unix.EACCES) || !strings.Contains(err.Error(), node) {
		t.Errorf("mode 000 node: %v", err)
	}
}

// A backend name Open does not know is an invalid argument, named.
func TestOpenUnknownBackend(t *testing.T) {
	_, err := Open(&Options{Backend: "rxe-please"})
	if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), `"rxe-please"`) {
		t.Fatalf("Open with an unknown backend: %v, want ErrInvalidArgument naming it", err)
	}
}
