//go:build linux

package mlx5sim

// Building and running the C side of the differential test: c/shim.c (an
// LD_PRELOAD library that forwards the device's system calls to Device over
// a unix socket) and c/scenario.c (the C scenario interpreter, which drives
// NVIDIA's libmlx5 through libibverbs). See README.md.

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// ErrMissingDependency is wrapped by BuildC's error when a tool or package
// the C side needs is not installed (as opposed to a compile failure), so
// that tests can skip outside CI.
var ErrMissingDependency = errors.New("mlx5sim: missing build dependency")

// Names of the files BuildC writes into its output directory.
const (
	ShimName     = "libmlx5sim_shim.so"
	ScenarioName = "mlx5sim_scenario"
)

// cDir is the directory holding shim.c and scenario.c, next to this file.
func cDir() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("mlx5sim: cannot locate the source directory")
	}
	dir := filepath.Join(filepath.Dir(file), "c")
	if _, err := os.Stat(filepath.Join(dir, "shim.c")); err != nil {
		return "", fmt.Errorf("mlx5sim: C sources not found: %w", err)
	}
	return dir, nil
}

func missing(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMissingDependency, fmt.Sprintf(format, args...))
}

// checkDeps verifies gcc, the libibverbs headers and library
// (libibverbs-dev) and NVIDIA's provider (ibverbs-providers) are installed.
func checkDeps(gcc string) error {
	// libibverbs-dev: the header, and libibverbs.so to link against.
	probe := exec.Command(gcc, "-x", "c", "-o", os.DevNull, "-", "-libverbs")
	probe.Stdin = strings.NewReader("#include <infiniband/verbs.h>\nint main(void) { return ibv_get_device_list(0) != 0; }\n")
	if out, err := probe.CombinedOutput(); err != nil {
		return missing("cannot compile and link against <infiniband/verbs.h> and -libverbs "+
			"(install Debian package libibverbs-dev): %v\n%s", err, bytes.TrimSpace(out))
	}
	// ibverbs-providers: libmlx5.so.1, and the plugin libibverbs loads
	// (libibverbs/libmlx5-rdmav*.so next to it) with its driver file.
	out, err := exec.Command(gcc, "-print-file-name=libmlx5.so.1").Output()
	lib := strings.TrimSpace(string(out))
	if err != nil || !filepath.IsAbs(lib) {
		return missing("libmlx5.so.1 not found (install Debian package ibverbs-providers)")
	}
	plugins, _ := filepath.Glob(filepath.Join(filepath.Dir(lib), "libibverbs", "libmlx5-rdmav*.so"))
	if len(plugins) == 0 {
		return missing("the libibverbs mlx5 provider plugin (libibverbs/libmlx5-rdmav*.so next to %s) "+
			"is not installed (install Debian package ibverbs-providers)", lib)
	}
	if _, err := os.Stat("/etc/libibverbs.d/mlx5.driver"); err != nil {
		return missing("/etc/libibverbs.d/mlx5.driver not found (install Debian package ibverbs-providers)")
	}
	return nil
}

// BuildC compiles c/shim.c into outDir/libmlx5sim_shim.so and c/scenario.c
// into outDir/mlx5sim_scenario, and returns their paths. A missing gcc,
// libibverbs-dev or ibverbs-providers gives an error wrapping
// ErrMissingDependency that names the Debian package.
func BuildC(outDir string) (shim, scenario string, err error) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		return "", "", missing("gcc not found (install Debian package gcc): %v", err)
	}
	src, err := cDir()
	if err != nil {
		return "", "", err
	}
	if err := checkDeps(gcc); err != nil {
		return "", "", err
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return "", "", err
	}
	shim = filepath.Join(outDir, ShimName)
	scenario = filepath.Join(outDir, ScenarioName)
	common := []string{"-std=c11", "-O2", "-g", "-Wall", "-Wextra", "-Werror", "-I", src}

	args := append(append([]string{}, common...), "-shared", "-fPIC",
		"-o", shim, filepath.Join(src, "shim.c"), "-ldl", "-lpthread")
	if out, err := exec.Command(gcc, args...).CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("mlx5sim: compiling shim.c: %v\n%s", err, out)
	}
	args = append(append([]string{}, common...),
		"-o", scenario, filepath.Join(src, "scenario.c"), "-libverbs", "-ldl")
	if out, err := exec.Command(gcc, args...).CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("mlx5sim: compiling scenario.c: %v\n%s", err, out)
	}
	return shim, scenario, nil
}

// Environment pinning for the C runs. libibverbs and libmlx5 (rdma-core
// v44) read these variables; every one is removed from the child's
// environment, so that libmlx5 runs with its compiled-in defaults, which
// are the ones our Go provider implements:
//
//   - MLX5_* (providers/mlx5/mlx5.c, verbs.c): MLX5_SINGLE_THREADED (unset:
//     bfreg locks as computed by need_uuar_lock), MLX5_SHUT_UP_BF (unset:
//     regular write-combining UARs, BlueFlame on), MLX5_POST_SEND_PREFER_BF
//     (unset: prefer BlueFlame), MLX5_TOTAL_UUARS (unset: 16 bfregs),
//     MLX5_NUM_LOW_LAT_UUARS (unset: 4), MLX5_CQE_SIZE (unset: 64),
//     MLX5_SCATTER_TO_CQE (unset: on), MLX5_QP_SIGNATURE,
//     MLX5_SRQ_SIGNATURE, MLX5_RWQ_SIGNATURE (any value enables WQE
//     signatures: unset), MLX5_DEBUG_MASK, MLX5_DEBUG_FILE (no debug
//     output), MLX5_FREEZE_ON_ERROR_CQE (would hang on an error CQE),
//     MLX5_LOCAL_CPUS, MLX5_STALL_NUM_LOOP, MLX5_STALL_CQ_POLL_MIN/MAX,
//     MLX5_STALL_CQ_INC_STEP/DEC_STEP (CQ-poll stalling).
//   - MLX_{QP,CQ,MR,SRQ,RWQ}_ALLOC_TYPE and MLX_*_{MAX,MIN}_LOG2_CONTIG_BSIZE
//     (buf.c: unset means plain anonymous/aligned buffers), HUGE_CQ,
//     HUGE_RC, HUGE_UC, HUGE_UD, HUGE_RAW_ETH, HUGE_NA (hugepage buffers).
//   - RDMAV_FORK_SAFE, IBV_FORK_SAFE (ibv_fork_init: madvise on every MR),
//     RDMAV_HUGEPAGES_SAFE, RDMAV_ALLOW_DISASSOC_DESTROY,
//     MLX4_DEVICE_FATAL_CLEANUP, RDMAV_DRIVERS/IBV_DRIVERS (extra provider
//     paths), IBV_SHOW_WARNINGS, VERBS_LOG_LEVEL, VERBS_LOG_FILE.
//   - LD_LIBRARY_PATH, so that the Debian libibverbs and libmlx5 that
//     BuildC checked for are the ones loaded.
//
// One variable is set:
//
//   - MLX5_STALL_CQ_POLL=0. Unset, libmlx5 reads /proc/cpuinfo and on a
//     Sandy Bridge CPU enables CQ-poll stalling and reads the real
//     /sys/class/infiniband/mlx5_0/device/local_cpus (not under
//     SYSFS_PATH): host-dependent. 0 disables stalling everywhere; stalling
//     only adds delays in ibv_poll_cq, which our provider does not do.
var pinnedPrefixes = []string{"MLX5_", "MLX_", "MLX4_", "HUGE_", "RDMAV_", "IBV_", "VERBS_LOG_"}

var pinnedNames = []string{"LD_PRELOAD", "LD_LIBRARY_PATH", "SYSFS_PATH"}

// scenarioEnv is env with libibverbs' and libmlx5's variables removed and
// the shim's set (see above).
func scenarioEnv(env []string, shim, sysfsDir string) []string {
	var out []string
next:
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		for _, p := range pinnedPrefixes {
			if strings.HasPrefix(name, p) {
				continue next
			}
		}
		for _, n := range pinnedNames {
			if name == n {
				continue next
			}
		}
		out = append(out, kv)
	}
	return append(out,
		"LD_PRELOAD="+shim,
		"SYSFS_PATH="+sysfsDir,
		"MLX5_STALL_CQ_POLL=0",
	)
}

// ScenarioCmd returns the command that runs the C interpreter on a
// scenario file, with the shim preloaded, libibverbs reading the fake
// sysfs tree at sysfsDir, and libibverbs' and libmlx5's environment pinned
// (see pinnedPrefixes). MLX5SIM_SOCK is passed through from the current
// environment; the caller usually appends "MLX5SIM_SOCK=path" to cmd.Env.
// Exit status: 0 ran to the end, 1 "open" failed, 2 malformed scenario.
func ScenarioCmd(scenarioBin, shim, sysfsDir, file string) *exec.Cmd {
	cmd := exec.Command(scenarioBin, file)
	cmd.Env = scenarioEnv(os.Environ(), shim, sysfsDir)
	return cmd
}

// FencePluginName is the file BuildFencePlugin writes.
const FencePluginName = "libmlx5sim_fenceplugin.so"

// BuildFencePlugin compiles c/fenceplugin.c, the QEMU TCG plugin that
// reports barrier instructions (README, "Fences"), into outDir and
// returns its path.
func BuildFencePlugin(outDir string) (string, error) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		return "", missing("gcc not found (install Debian package gcc): %v", err)
	}
	src, err := cDir()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return "", err
	}
	out := filepath.Join(outDir, FencePluginName)
	args := []string{"-std=c11", "-O2", "-g", "-Wall", "-Wextra", "-Werror", "-I", src,
		"-shared", "-fPIC", "-fvisibility=hidden", "-o", out, filepath.Join(src, "fenceplugin.c"), "-lpthread"}
	if b, err := exec.Command(gcc, args...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("mlx5sim: compiling fenceplugin.c: %v\n%s", err, b)
	}
	return out, nil
}

// QemuUser returns the qemu-user emulator for goarch ("amd64", "arm64"):
// Debian's dynamic qemu-x86_64 or qemu-aarch64 (package qemu-user; the
// static build of qemu-user-static loads no plugins).
func QemuUser(goarch string) (string, error) {
	name := map[string]string{"amd64": "qemu-x86_64", "arm64": "qemu-aarch64"}[goarch]
	if name == "" {
		return "", fmt.Errorf("mlx5sim: no fence tracing for GOARCH %s", goarch)
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", missing("%s not found (install Debian package qemu-user): %v", name, err)
	}
	return p, nil
}

// FencedCmd returns cmd run under the qemu-user emulator qemu with the
// fence plugin: the same program, arguments, environment and output.
// LD_PRELOAD is passed to the guest only (-E), not to the emulator
// itself; extra goes before the program (e.g. -L for a foreign guest's
// libraries).
func FencedCmd(qemu, plugin string, extra []string, cmd *exec.Cmd) *exec.Cmd {
	args := []string{"-plugin", plugin}
	env, src := []string{}, cmd.Env
	if src == nil {
		src = os.Environ()
	}
	for _, kv := range src {
		if strings.HasPrefix(kv, "LD_PRELOAD=") {
			args = append(args, "-E", kv)
			continue
		}
		env = append(env, kv)
	}
	args = append(append(args, extra...), cmd.Path)
	c := exec.Command(qemu, append(args, cmd.Args[1:]...)...)
	c.Env, c.Stdout, c.Stderr, c.Dir = env, cmd.Stdout, cmd.Stderr, cmd.Dir
	return c
}
