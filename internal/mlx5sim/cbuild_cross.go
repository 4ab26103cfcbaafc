//go:build linux

package mlx5sim

// The C side of the differential test for arm64: c/shim.c and
// c/scenario.c cross-compiled with Debian's aarch64 gcc, linked against
// the arm64 sysroot's libibverbs, and run under qemu-aarch64 (user mode)
// with the device in this process. With guest_base 0 (qemu-aarch64's
// choice for a position-independent 64-bit guest on a 64-bit host, checked
// by GuestBaseArm64; -B 0 is refused for it), a guest address is the host
// address in qemu's process, so the device's process_vm_readv/writev of
// the pid the shim reports (qemu's) reach the guest's memory unchanged.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Arm64CC is the cross compiler of the arm64 C side (Debian package
// gcc-aarch64-linux-gnu); QemuUser("arm64") finds the emulator.
const Arm64CC = "aarch64-linux-gnu-gcc"

// BuildCArm64 cross-compiles c/shim.c and c/scenario.c for aarch64 into
// outDir against sys, and returns their paths. The infiniband headers are
// the host's (libibverbs-dev's are architecture-independent); the program
// links against the sysroot's libibverbs.so.1. A missing cross compiler or
// header gives an error wrapping ErrMissingDependency.
func BuildCArm64(outDir string, sys *Arm64Sysroot) (shim, scenario string, err error) {
	cc, err := exec.LookPath(Arm64CC)
	if err != nil {
		return "", "", missing("%s not found (install Debian package gcc-aarch64-linux-gnu)", Arm64CC)
	}
	src, err := cDir()
	if err != nil {
		return "", "", err
	}
	const ibHeaders = "/usr/include/infiniband"
	if _, err := os.Stat(filepath.Join(ibHeaders, "verbs.h")); err != nil {
		return "", "", missing("%s/verbs.h not found (install Debian package libibverbs-dev)", ibHeaders)
	}
	// Only the infiniband headers come from the host: the rest (libc,
	// linux/, rdma/) are the cross toolchain's aarch64 ones.
	inc := filepath.Join(outDir, "include")
	if err := os.MkdirAll(inc, 0o755); err != nil {
		return "", "", err
	}
	if err := os.Symlink(ibHeaders, filepath.Join(inc, "infiniband")); err != nil && !os.IsExist(err) {
		return "", "", err
	}
	shim = filepath.Join(outDir, ShimName)
	scenario = filepath.Join(outDir, ScenarioName)
	common := []string{"-std=c11", "-O2", "-g", "-Wall", "-Wextra", "-Werror", "-I", src, "-I", inc}
	args := append(append([]string{}, common...), "-shared", "-fPIC",
		"-o", shim, filepath.Join(src, "shim.c"), "-ldl", "-lpthread")
	if out, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("mlx5sim: cross-compiling shim.c for arm64: %v\n%s", err, out)
	}
	libs := sys.LibDirs()
	args = append(append([]string{}, common...),
		"-o", scenario, filepath.Join(src, "scenario.c"), filepath.Join(libs[0], "libibverbs.so.1"),
		"-Wl,-rpath-link,"+strings.Join(libs, ":"), "-ldl")
	if out, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("mlx5sim: cross-compiling scenario.c for arm64: %v\n%s", err, out)
	}
	return shim, scenario, nil
}

// qemuEnv is env without qemu-user's own variables (QEMU_LD_PREFIX,
// QEMU_GUEST_BASE, QEMU_STRACE, ...), which would change how the guest
// runs; the command line sets what is needed.
func qemuEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "QEMU_") {
			out = append(out, kv)
		}
	}
	return out
}

// ScenarioCmdArm64 is ScenarioCmd for the cross-built C side under the
// qemu-aarch64 qemu with the fence plugin (FencedCmd): the sysroot is
// qemu's -L root, where the loader, /etc/libibverbs.d and the provider
// plugin resolve; the shim is preloaded into the guest only; SYSFS_PATH
// and the pinned variables pass through qemu's environment, less qemu's
// own QEMU_* variables.
func ScenarioCmdArm64(qemu, plugin string, sys *Arm64Sysroot, scenarioBin, shim, sysfsDir, file string) *exec.Cmd {
	cmd := ScenarioCmd(scenarioBin, shim, sysfsDir, file)
	cmd.Env = qemuEnv(cmd.Env)
	return FencedCmd(qemu, plugin, []string{"-L", sys.Dir}, cmd)
}

// GuestBaseArm64 runs qemu-aarch64 as ScenarioCmdArm64 does (without the
// plugin) on prog (an
// aarch64 program that exits by itself) and returns the guest_base qemu
// reports (-d page: "(nil)" or "0x0" when it is 0), which must be 0 for
// the device's process_vm_readv/writev.
func GuestBaseArm64(ctx context.Context, qemu string, sys *Arm64Sysroot, prog string, progArgs ...string) (string, error) {
	log := filepath.Join(os.TempDir(), fmt.Sprintf("mlx5sim-qemu-%d.log", os.Getpid()))
	defer os.Remove(log)
	args := append([]string{"-L", sys.Dir, "-d", "page", "-D", log, prog}, progArgs...)
	cmd := exec.CommandContext(ctx, qemu, args...)
	cmd.Env = qemuEnv(os.Environ())
	out, _ := cmd.CombinedOutput()
	b, err := os.ReadFile(log)
	if err != nil {
		return "", fmt.Errorf("mlx5sim: qemu -d page wrote no log: %v\n%s", err, out)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == "guest_base" {
			return f[1], nil
		}
	}
	return "", fmt.Errorf("mlx5sim: no guest_base line in qemu's -d page log:\n%s", bytes.TrimSpace(b))
}
