//go:build linux

package mlx5sim

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// BenchName is the C benchmark's file name in BuildBench's directory.
const BenchName = "mlx5sim_bench"

// BuildBench compiles c/bench.c (libibverbs + libmlx5 posting and polling
// against the simulated device) into outDir and returns its path. It
// needs what BuildC needs; run it under the shim built by BuildC.
func BuildBench(outDir string) (string, error) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		return "", missing("gcc not found (install Debian package gcc): %v", err)
	}
	src, err := cDir()
	if err != nil {
		return "", err
	}
	if err := checkDeps(gcc); err != nil {
		return "", err
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return "", err
	}
	bin := filepath.Join(outDir, BenchName)
	args := []string{"-std=c11", "-O2", "-g", "-Wall", "-Wextra", "-Werror", "-I", src,
		"-o", bin, filepath.Join(src, "bench.c"), "-lmlx5", "-libverbs"}
	if out, err := exec.Command(gcc, args...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("mlx5sim: compiling bench.c: %v\n%s", err, out)
	}
	return bin, nil
}
