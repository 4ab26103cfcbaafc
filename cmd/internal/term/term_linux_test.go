//go:build linux

package term

import (
	"os"
	"testing"
)

func TestIsTerminalOfAFileAndAPipe(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "x")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if IsTerminal(int(f.Fd())) || IsTerminal(int(w.Fd())) || IsTerminal(-1) {
		t.Error("IsTerminal: a file, a pipe or fd -1 is a terminal")
	}
}
