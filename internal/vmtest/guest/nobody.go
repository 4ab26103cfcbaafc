package guest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// RunAsNobody runs a copy of the running test binary as user nobody (uid
// and gid 65534, no capabilities) with env=1 in its environment and args
// on its command line, and returns its output; a non-zero exit fails t.
// The copy lives in a local directory: the 9p share is not readable by
// nobody.
func RunAsNobody(t testing.TB, env string, args ...string) []byte {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "nobody-child-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	child := filepath.Join(dir, "child")
	if err := os.WriteFile(child, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(child, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env+"=1")
	cmd.SysProcAttr = nobodyAttr()
	if cmd.SysProcAttr == nil {
		t.Skip("RunAsNobody needs Linux")
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child as nobody: %v\n%s", err, out)
	}
	return out
}
