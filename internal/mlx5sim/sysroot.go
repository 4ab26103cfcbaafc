//go:build linux

package mlx5sim

// The arm64 sysroot in which the C side of the differential test runs
// under qemu-aarch64: Debian's arm64 libc, libibverbs and libmlx5
// (ibverbs-providers) with their libnl dependencies, unpacked from the
// packages apt-get downloads into a cache outside the tree.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// arm64Packages are unpacked into the sysroot: every library the
// scenario program, the shim and the mlx5 plugin load (checked after
// unpacking, see checkNeeded).
var arm64Packages = []string{
	"libc6", "libgcc-s1", "libibverbs1", "ibverbs-providers", "libnl-3-200", "libnl-route-3-200",
}

// sysrootFormat changes whenever the sysroot layout changes, so that old
// cache entries are not reused.
const sysrootFormat = "mlx5sim-sysroot-1"

// Arm64Sysroot is an unpacked Debian arm64 root for qemu-aarch64 -L.
type Arm64Sysroot struct {
	Dir  string   // the root: lib/ld-linux-aarch64.so.1, usr/lib/aarch64-linux-gnu/..., etc/libibverbs.d
	Debs []string // the package files it was unpacked from, e.g. ibverbs-providers_44.0-2_arm64.deb
}

// LibDirs are the sysroot's library directories, for the cross linker.
func (s *Arm64Sysroot) LibDirs() []string {
	return []string{filepath.Join(s.Dir, "usr/lib/aarch64-linux-gnu"), filepath.Join(s.Dir, "lib/aarch64-linux-gnu")}
}

// CacheDir is $MLX5SIM_CACHE, else os.UserCacheDir()/go-rdma-mlx5sim.
func CacheDir() (string, error) {
	if d := os.Getenv("MLX5SIM_CACHE"); d != "" {
		return filepath.Abs(d)
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("mlx5sim: no cache dir (set MLX5SIM_CACHE): %w", err)
	}
	return filepath.Join(d, "go-rdma-mlx5sim"), nil
}

// arm64Debs asks apt which package files it would download for
// arm64Packages (no download): their names carry the versions, which key
// the cache.
func arm64Debs(ctx context.Context) ([]string, error) {
	if _, err := exec.LookPath("apt-get"); err != nil {
		return nil, missing("apt-get not found: the arm64 sysroot is built from Debian's packages")
	}
	args := []string{"download", "--print-uris", "-q"}
	for _, p := range arm64Packages {
		args = append(args, p+":arm64")
	}
	out, err := exec.CommandContext(ctx, "apt-get", args...).CombinedOutput()
	if err != nil {
		if bytes.Contains(out, []byte("Unable to locate package")) || bytes.Contains(out, []byte("no installation candidate")) {
			return nil, missing("apt does not know Debian's arm64 packages %v "+
				"(make deps runs dpkg --add-architecture arm64 and apt-get update): %s", arm64Packages, bytes.TrimSpace(out))
		}
		return nil, fmt.Errorf("mlx5sim: apt-get download --print-uris: %v\n%s", err, out)
	}
	var debs []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		// 'URI' FILE SIZE HASH
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && strings.HasPrefix(f[0], "'") && strings.HasSuffix(f[1], "_arm64.deb") {
			debs = append(debs, f[1])
		}
	}
	if len(debs) != len(arm64Packages) {
		return nil, fmt.Errorf("mlx5sim: apt-get download --print-uris named %d arm64 packages, want %d:\n%s", len(debs), len(arm64Packages), out)
	}
	sort.Strings(debs)
	return debs, nil
}

// PrepareArm64Sysroot returns the cached arm64 sysroot for the package
// versions apt offers now, downloading and unpacking them first if
// needed. When apt does not know the arm64 packages (no dpkg
// --add-architecture arm64), the error wraps ErrMissingDependency.
func PrepareArm64Sysroot(ctx context.Context) (*Arm64Sysroot, error) {
	cache, err := CacheDir()
	if err != nil {
		return nil, err
	}
	debs, err := arm64Debs(ctx)
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n", sysrootFormat, strings.Join(debs, "\n"))
	dir := filepath.Join(cache, "sysroot-arm64-"+hex.EncodeToString(h.Sum(nil))[:16])
	s := &Arm64Sysroot{Dir: dir, Debs: debs}
	if _, err := os.Stat(filepath.Join(dir, ".complete")); err == nil {
		return s, nil
	}
	for _, tool := range []string{"dpkg-deb"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, missing("%s not found (install Debian package dpkg)", tool)
		}
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return nil, err
	}
	// Built under a temporary name and renamed, so that a concurrent or
	// interrupted build never leaves a half sysroot under the final name.
	tmp, err := os.MkdirTemp(cache, "sysroot-arm64-*.tmp")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	debDir := filepath.Join(tmp, "debs")
	if err := os.Mkdir(debDir, 0o755); err != nil {
		return nil, err
	}
	// apt's sandbox user cannot write a root-only temporary directory.
	if err := os.Chmod(tmp, 0o755); err != nil {
		return nil, err
	}
	if err := os.Chmod(debDir, 0o777); err != nil {
		return nil, err
	}
	args := []string{"download", "-q"}
	for _, p := range arm64Packages {
		args = append(args, p+":arm64")
	}
	get := exec.CommandContext(ctx, "apt-get", args...)
	get.Dir = debDir
	get.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	if out, err := get.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("mlx5sim: apt-get download of the arm64 sysroot: %v\n%s", err, out)
	}
	root := filepath.Join(tmp, "root")
	for _, d := range debs {
		if out, err := exec.CommandContext(ctx, "dpkg-deb", "-x", filepath.Join(debDir, d), root).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("mlx5sim: dpkg-deb -x %s: %v\n%s", d, err, out)
		}
	}
	built := &Arm64Sysroot{Dir: root, Debs: debs}
	if err := built.check(); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(root, ".complete"), []byte(strings.Join(debs, "\n")+"\n"), 0o644); err != nil {
		return nil, err
	}
	if err := os.Rename(root, dir); err != nil {
		if _, serr := os.Stat(filepath.Join(dir, ".complete")); serr != nil {
			return nil, fmt.Errorf("mlx5sim: installing the arm64 sysroot: %w", err)
		}
		// Another process finished the same sysroot first.
	}
	return s, nil
}

// check verifies that the sysroot has the dynamic loader, libibverbs'
// mlx5 driver file and plugin, and every library that libibverbs and the
// plugin need, transitively.
func (s *Arm64Sysroot) check() error {
	for _, f := range []string{"lib/ld-linux-aarch64.so.1", "etc/libibverbs.d/mlx5.driver"} {
		if _, err := os.Stat(filepath.Join(s.Dir, f)); err != nil {
			return fmt.Errorf("mlx5sim: arm64 sysroot: %w", err)
		}
	}
	plugins, _ := filepath.Glob(filepath.Join(s.Dir, "usr/lib/aarch64-linux-gnu/libibverbs/libmlx5-rdmav*.so"))
	if len(plugins) == 0 {
		return errors.New("mlx5sim: arm64 sysroot: no libibverbs/libmlx5-rdmav*.so plugin")
	}
	return s.checkNeeded(append([]string{"libibverbs.so.1", "libc.so.6"}, plugins...))
}

// checkNeeded resolves the DT_NEEDED closure of libs (sonames in the
// library directories, or paths) within the sysroot.
func (s *Arm64Sysroot) checkNeeded(libs []string) error {
	seen := map[string]bool{}
	for len(libs) > 0 {
		name := libs[0]
		libs = libs[1:]
		if seen[name] {
			continue
		}
		seen[name] = true
		file := name
		if !filepath.IsAbs(name) {
			file = ""
			for _, d := range s.LibDirs() {
				if _, err := os.Stat(filepath.Join(d, name)); err == nil {
					file = filepath.Join(d, name)
					break
				}
			}
			if file == "" {
				return fmt.Errorf("mlx5sim: arm64 sysroot: %s is needed but in none of %v", name, arm64Packages)
			}
		}
		f, err := elf.Open(s.resolve(file))
		if err != nil {
			return fmt.Errorf("mlx5sim: arm64 sysroot: %w", err)
		}
		needed, err := f.ImportedLibraries()
		machine := f.Machine
		f.Close()
		if err != nil {
			return fmt.Errorf("mlx5sim: arm64 sysroot: %s: %w", name, err)
		}
		if machine != elf.EM_AARCH64 {
			return fmt.Errorf("mlx5sim: arm64 sysroot: %s is %v, not aarch64", name, machine)
		}
		libs = append(libs, needed...)
	}
	return nil
}

// resolve follows symbolic links inside the sysroot (absolute link targets
// are relative to it, as for the guest's loader).
func (s *Arm64Sysroot) resolve(file string) string {
	for range 16 {
		t, err := os.Readlink(file)
		if err != nil {
			return file
		}
		if path.IsAbs(t) {
			file = filepath.Join(s.Dir, t)
		} else {
			file = filepath.Join(filepath.Dir(file), t)
		}
	}
	return file
}
