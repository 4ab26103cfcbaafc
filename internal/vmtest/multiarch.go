package vmtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// unameMachine is `uname -m` in a guest of arch: the directory under the
// share's bin/ its builds go to.
func unameMachine(arch string) string {
	if arch == ArchARM64 {
		return "aarch64"
	}
	return "x86_64"
}

// images returns the images the pair's guests booted.
func (p *Pair) images() []*Image {
	var imgs []*Image
	for _, m := range p.Machines() {
		imgs = append(imgs, m.image)
	}
	return imgs
}

// installEach builds name once for each architecture of imgs, into
// share/bin/<uname -m>/name, and makes share/bin/name run the build of the
// guest it runs in, so /host/bin/name is the same command in every guest.
func installEach(share string, imgs []*Image, name string, build func(img *Image, out string) error) error {
	bin := filepath.Join(share, "bin")
	done := map[string]bool{}
	for _, img := range imgs {
		arch := img.ArchName()
		if done[arch] {
			continue
		}
		done[arch] = true
		out := filepath.Join(bin, unameMachine(arch), name)
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		if err := build(img, out); err != nil {
			return err
		}
	}
	script := fmt.Sprintf("#!/bin/sh\nexec %s/bin/$(uname -m)/%s \"$@\"\n", GuestShare, name)
	dst := filepath.Join(bin, name)
	os.Remove(dst)
	return os.WriteFile(dst, []byte(script), 0o755)
}

// InstallGo builds the Go main package pkg static (CGO_ENABLED=0) for each
// of the pair's architectures and installs it as /host/bin/name.
func (p *Pair) InstallGo(ctx context.Context, name, pkg string) error {
	return InstallGo(ctx, p.Share, p.images(), name, pkg)
}

// InstallC compiles a C program using librdmacm and libibverbs for each of
// the pair's architectures and installs it as /host/bin/name.
func (p *Pair) InstallC(ctx context.Context, name string, srcs ...string) error {
	return InstallC(ctx, p.Share, p.images(), name, srcs...)
}

// InstallGo is Pair.InstallGo for guests of imgs that will mount share
// (to build while they boot).
func InstallGo(ctx context.Context, share string, imgs []*Image, name, pkg string) error {
	return installEach(share, imgs, name, func(img *Image, out string) error {
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", out, pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+img.ArchName())
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("vmtest: go build %s for %s: %w\n%s", pkg, img.ArchName(), err, b)
		}
		return nil
	})
}

// InstallC is Pair.InstallC for guests of imgs that will mount share.
func InstallC(ctx context.Context, share string, imgs []*Image, name string, srcs ...string) error {
	return installEach(share, imgs, name, func(img *Image, out string) error {
		return BuildC(ctx, img, out, srcs...)
	})
}

// BuildC compiles srcs into out for img's architecture, linked with
// librdmacm and libibverbs: gcc for amd64; for arm64 the cross compiler,
// with the host's (architecture-independent) rdma-core headers and the
// arm64 image's libraries.
func BuildC(ctx context.Context, img *Image, out string, srcs ...string) error {
	if img == nil || img.ArchName() == ArchAMD64 {
		args := append([]string{"-O2", "-Wall", "-o", out}, srcs...)
		cmd := exec.CommandContext(ctx, "gcc", append(args, "-lrdmacm", "-libverbs")...)
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("vmtest: gcc %v: %w\n%s", srcs, err, b)
		}
		return nil
	}
	// Only rdma-core's header folders: the rest of /usr/include is the
	// host's libc.
	inc, err := os.MkdirTemp("", "vmtest-inc-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(inc)
	for _, d := range []string{"rdma", "infiniband"} {
		if err := os.Symlink("/usr/include/"+d, filepath.Join(inc, d)); err != nil {
			return err
		}
	}
	lib := filepath.Join(img.Dir, "lib")
	args := append([]string{"-O2", "-Wall", "-isystem", inc, "-o", out}, srcs...)
	args = append(args, filepath.Join(lib, "librdmacm.so.1"), filepath.Join(lib, "libibverbs.so.1"), "-Wl,-rpath-link,"+lib)
	cc := arm64Triple + "-gcc"
	if b, err := exec.CommandContext(ctx, cc, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("vmtest: %s %v: %w\n%s", cc, srcs, err, b)
	}
	return nil
}

// Image is the image the guest booted.
func (m *Machine) Image() *Image { return m.image }
