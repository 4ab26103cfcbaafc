package vmtest

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// An arm64 guest boots on QEMU's virt board with its console on the PL011
// and never asks for KVM; an x86-64 one keeps ttyS0.
func TestQemuArgsArm64(t *testing.T) {
	c := &MachineConfig{Name: "b", Addr: AddrB, MAC: "52:54:00:00:00:02", Share: "/s", Accel: "kvm", MemoryMiB: 768}
	arm := c.qemuArgs(&Image{Arch: ArchARM64, Kernel: "/k", Initrd: "/i"}, nil)
	joined := strings.Join(arm, " ")
	for _, want := range []string{"-M virt", "-cpu cortex-a72", "-accel tcg", "console=ttyAMA0"} {
		if !strings.Contains(joined, want) {
			t.Errorf("arm64 qemu args lack %q: %s", want, joined)
		}
	}
	if strings.Contains(joined, "kvm") {
		t.Errorf("arm64 qemu args ask for KVM: %s", joined)
	}
	x86 := strings.Join(c.qemuArgs(&Image{Kernel: "/k", Initrd: "/i"}, nil), " ")
	if !strings.Contains(x86, "console=ttyS0") || !strings.Contains(x86, "-accel kvm") || strings.Contains(x86, "-M virt") {
		t.Errorf("x86-64 qemu args: %s", x86)
	}
	if (&Image{}).qemuBinary() != "qemu-system-x86_64" || (&Image{Arch: ArchARM64}).qemuBinary() != "qemu-system-aarch64" {
		t.Error("qemu binary per architecture")
	}
}

// The interpreter of a foreign binary is found inside the staging root,
// through relative and absolute links there.
func TestInterpreterInRoot(t *testing.T) {
	root := t.TempDir()
	real := filepath.Join(root, "lib/aarch64-linux-gnu/ld-linux-aarch64.so.1")
	if err := os.MkdirAll(filepath.Dir(real), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(real, []byte("ld"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("aarch64-linux-gnu/ld-linux-aarch64.so.1", filepath.Join(root, "lib/ld-rel.so.1")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/lib/aarch64-linux-gnu/ld-linux-aarch64.so.1", filepath.Join(root, "lib/ld-abs.so.1")); err != nil {
		t.Fatal(err)
	}
	r := &libResolver{root: root}
	for _, p := range []string{"/lib/ld-rel.so.1", "/lib/ld-abs.so.1", "/lib/aarch64-linux-gnu/ld-linux-aarch64.so.1"} {
		got, err := r.interpreter(p)
		if err != nil || got != real {
			t.Errorf("interpreter(%s) = %q, %v; want %q", p, got, err, real)
		}
	}
	if _, err := r.interpreter("/lib/missing.so"); err == nil {
		t.Error("a missing interpreter resolved")
	}
}

// installEach builds once per architecture and puts a dispatcher at
// bin/NAME that picks the build by uname -m.
func TestInstallEach(t *testing.T) {
	share := t.TempDir()
	var built []string
	imgs := []*Image{{}, {Arch: ArchARM64}, {Arch: ArchAMD64}}
	err := installEach(share, imgs, "tool", func(img *Image, out string) error {
		built = append(built, strings.TrimPrefix(out, share))
		return os.WriteFile(out, nil, 0o755)
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"/bin/x86_64/tool", "/bin/aarch64/tool"}; !slices.Equal(built, want) {
		t.Errorf("built %v, want %v", built, want)
	}
	b, err := os.ReadFile(filepath.Join(share, "bin/tool"))
	if err != nil || string(b) != "#!/bin/sh\nexec /host/bin/$(uname -m)/tool \"$@\"\n" {
		t.Errorf("dispatcher %q, %v", b, err)
	}
}
