package vmtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Guest architectures, named by GOARCH (which is also Debian's name).
const (
	ArchAMD64 = "amd64"
	ArchARM64 = "arm64"
)

// arm64KernelMeta names the package whose dependency is the arm64 kernel
// image (Debian's generic arm64 flavour, 4 KiB pages).
const arm64KernelMeta = "linux-image-arm64"

// arm64ImageFormat changes whenever the arm64 image layout changes.
const arm64ImageFormat = "vmtest-image-arm64-2"

// arm64Packages are fetched for arm64 besides DebPackages: everything in
// the arm64 guest comes from Debian's arm64 packages (the host's busybox
// and iproute2 are x86-64), so the libraries the tools need are listed too.
var arm64Packages = []string{
	"busybox-static", "iproute2",
	"libc6", "libgcc-s1", "libbpf1", "libbsd0", "libmd0", "libcap2", "libelf1", "zlib1g", "libmnl0", "libudev1",
}

// arm64Triple is the multiarch directory of arm64 libraries.
const arm64Triple = "aarch64-linux-gnu"

// ArchName returns the image's architecture (images built before arm64
// existed have none recorded: they are amd64).
func (img *Image) ArchName() string {
	if img.Arch == "" {
		return ArchAMD64
	}
	return img.Arch
}

// qemuBinary is the system emulator for the image's architecture.
func (img *Image) qemuBinary() string {
	if img.ArchName() == ArchARM64 {
		return "qemu-system-aarch64"
	}
	return "qemu-system-x86_64"
}

// arm64HostNeeds: host files the arm64 image and guest need.
var arm64HostNeeds = [][2]string{
	{"/usr/bin/qemu-system-aarch64", "qemu-system-arm"},
	{"/usr/bin/dpkg-deb", "dpkg"},
	{"/usr/bin/" + arm64Triple + "-gcc", "gcc-aarch64-linux-gnu"},
}

// ensureArm64Host installs qemu-system-arm if missing and enables the arm64
// foreign architecture so apt can fetch arm64 packages.
func ensureArm64Host(ctx context.Context, log io.Writer, install bool) error {
	var missing []string
	for _, n := range arm64HostNeeds {
		if _, err := os.Stat(n[0]); err != nil {
			missing = append(missing, n[1])
		}
	}
	out, err := exec.CommandContext(ctx, "dpkg", "--print-foreign-architectures").Output()
	if err != nil {
		return fmt.Errorf("dpkg --print-foreign-architectures: %w", err)
	}
	foreign := strings.Contains("\n"+string(out), "\narm64\n")
	if len(missing) == 0 && foreign {
		return nil
	}
	if !install {
		return fmt.Errorf("arm64 guests need %v and `dpkg --add-architecture arm64` (arm64 known: %v)", missing, foreign)
	}
	if !foreign {
		fmt.Fprintln(log, "vmtest: dpkg --add-architecture arm64")
		if out, err := exec.CommandContext(ctx, "dpkg", "--add-architecture", "arm64").CombinedOutput(); err != nil {
			return fmt.Errorf("dpkg --add-architecture arm64: %w\n%s", err, out)
		}
	}
	if err := aptUpdate(ctx, log); err != nil {
		return err
	}
	if len(missing) > 0 {
		fmt.Fprintf(log, "vmtest: installing host packages %v\n", missing)
		args := append([]string{"install", "-y", "-q", "--no-install-recommends"}, missing...)
		if out, err := aptCmd(ctx, "apt-get", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("apt-get install %v: %w\n%s", missing, err, tail(out, 2000))
		}
	}
	return nil
}

// arm64Versions resolves the arm64 kernel package and every package's
// candidate version (pkg:arm64), refreshing the lists once if needed.
func arm64Versions(ctx context.Context, log io.Writer) (string, map[string]string, error) {
	try := func() (string, map[string]string, error) {
		out, err := exec.CommandContext(ctx, "apt-cache", "depends", arm64KernelMeta+":arm64").Output()
		if err != nil {
			return "", nil, fmt.Errorf("apt-cache depends %s:arm64: %w", arm64KernelMeta, err)
		}
		kpkg := ""
		for _, line := range strings.Split(string(out), "\n") {
			f := strings.Fields(line)
			if len(f) == 2 && f[0] == "Depends:" && strings.HasPrefix(f[1], "linux-image-") {
				kpkg = strings.TrimSuffix(f[1], ":arm64")
				break
			}
		}
		if kpkg == "" {
			return "", nil, fmt.Errorf("apt-cache depends %s:arm64: no linux-image dependency in %q", arm64KernelMeta, out)
		}
		vers, err := candidateVersions(ctx, append(append([]string{kpkg}, DebPackages()...), arm64Packages...), "arm64")
		if err != nil {
			return "", nil, err
		}
		return kpkg, vers, nil
	}
	return retryAfterUpdate(ctx, log, try)
}

// downloadArm64Debs fetches pkg:arm64=version into debDir, once.
func downloadArm64Debs(ctx context.Context, log io.Writer, debDir string, vers map[string]string) ([]string, error) {
	if err := os.MkdirAll(debDir, 0o755); err != nil {
		return nil, err
	}
	find := func(pkg, ver string) string {
		v := strings.ReplaceAll(ver, ":", "%3a")
		for _, arch := range []string{"arm64", "all"} {
			p := filepath.Join(debDir, fmt.Sprintf("%s_%s_%s.deb", pkg, v, arch))
			if _, err := os.Stat(p); err == nil {
				return p
			}
		}
		return ""
	}
	var want []string
	for pkg, ver := range vers {
		if find(pkg, ver) == "" {
			want = append(want, pkg+":arm64="+ver)
		}
	}
	if len(want) > 0 {
		sort.Strings(want)
		fmt.Fprintf(log, "vmtest: apt-get download %v\n", want)
		cmd := aptCmd(ctx, "apt-get", append([]string{"download", "-q"}, want...)...)
		cmd.Dir = debDir
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("apt-get download: %w\n%s", err, tail(out, 2000))
		}
	}
	var files []string
	for pkg, ver := range vers {
		p := find(pkg, ver)
		if p == "" {
			return nil, fmt.Errorf("apt-get download did not produce %s %s for arm64", pkg, ver)
		}
		files = append(files, p)
	}
	sort.Strings(files)
	return files, nil
}

func arm64ImageKey(vers map[string]string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n", arm64ImageFormat)
	h.Write(initScript)
	fmt.Fprintf(h, "%q %q %q %q\n", guestModules, guestDebBinaries, busyboxApplets, arm64Packages)
	pkgs := make([]string, 0, len(vers))
	for p := range vers {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	for _, p := range pkgs {
		fmt.Fprintf(h, "%s=%s\n", p, vers[p])
	}
	return "arm64-" + hex.EncodeToString(h.Sum(nil))[:16]
}

// prepareArm64 is Prepare for Arch arm64: Debian bookworm's arm64 kernel,
// busybox, iproute2 and rdma-core, all from arm64 packages.
func prepareArm64(ctx context.Context, opts PrepareOptions, log io.Writer, cache string) (*Image, error) {
	if err := ensureArm64Host(ctx, log, !opts.NoInstall); err != nil {
		return nil, fmt.Errorf("vmtest: prepare arm64: %w", err)
	}
	kpkg, vers, err := arm64Versions(ctx, log)
	if err != nil {
		return nil, fmt.Errorf("vmtest: prepare arm64: %w", err)
	}
	key := arm64ImageKey(vers)
	dir := filepath.Join(cache, "images", key)
	if img, err := loadImage(dir); err == nil {
		return img, nil
	}
	fmt.Fprintf(log, "vmtest: building arm64 guest image %s in %s\n", key, dir)
	start := time.Now()
	img, err := buildArm64Image(ctx, log, cache, dir, key, kpkg, vers)
	if err != nil {
		return nil, fmt.Errorf("vmtest: prepare arm64: %w", err)
	}
	fmt.Fprintf(log, "vmtest: arm64 image ready in %v\n", time.Since(start).Round(time.Millisecond))
	return img, nil
}

func buildArm64Image(ctx context.Context, log io.Writer, cache, dir, key, kpkg string, vers map[string]string) (*Image, error) {
	debs, err := downloadArm64Debs(ctx, log, filepath.Join(cache, "debs-arm64"), vers)
	if err != nil {
		return nil, err
	}
	it, err := unpackImage(ctx, cache, key, kpkg, debs)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(it.tmp)
	tmp, root, t := it.tmp, it.root, it.t

	res := &libResolver{root: root, dirs: []libDir{
		{filepath.Join(root, "lib", arm64Triple), "/lib/" + arm64Triple},
		{filepath.Join(root, "usr/lib", arm64Triple), "/usr/lib/" + arm64Triple},
	}}
	// add copies an arm64 executable or library and, transitively, the
	// arm64 libraries it needs (DT_NEEDED; ldd cannot run arm64 code).
	add := func(guest, src string) error {
		t.Copy(guest, 0o755, src)
		libs, err := res.closure(src)
		if err != nil {
			return err
		}
		for _, l := range libs {
			if _, have := t[cleanArchivePath(l.Guest)]; !have {
				t.Copy(l.Guest, 0o755, l.Host)
			}
		}
		return nil
	}
	bb := filepath.Join(root, "bin/busybox")
	if _, err := os.Stat(bb); err != nil {
		return nil, fmt.Errorf("busybox-static (arm64): %w", err)
	}
	t.Copy("bin/busybox", 0o755, bb)
	// iproute2's ip and rdma, as on the x86-64 guest: busybox's ip cannot
	// add an rxe link.
	for guest, cands := range map[string][]string{"bin/ip": {"bin/ip", "sbin/ip", "usr/bin/ip", "usr/sbin/ip"}, "bin/rdma": {"usr/bin/rdma", "bin/rdma", "sbin/rdma"}} {
		src := ""
		for _, c := range cands {
			if fi, err := os.Lstat(filepath.Join(root, c)); err == nil && fi.Mode().IsRegular() {
				src = filepath.Join(root, c)
				break
			}
		}
		if src == "" {
			return nil, fmt.Errorf("iproute2 (arm64): no %s", filepath.Base(guest))
		}
		if err := add(guest, src); err != nil {
			return nil, err
		}
	}
	for _, a := range busyboxApplets {
		if _, taken := t["bin/"+a]; !taken {
			t.Symlink("bin/"+a, "busybox")
		}
	}
	for _, b := range guestDebBinaries {
		src := filepath.Join(root, "usr/bin", b)
		if _, err := os.Stat(src); err != nil {
			return nil, fmt.Errorf("guest binary %s: %w", b, err)
		}
		if err := add("usr/bin/"+b, src); err != nil {
			return nil, err
		}
	}
	// The verbs providers libibverbs dlopens, and their driver files.
	provDir := filepath.Join(root, "usr/lib", arm64Triple, "libibverbs")
	provs, _ := filepath.Glob(filepath.Join(provDir, "*.so"))
	if len(provs) == 0 {
		return nil, errors.New("ibverbs-providers (arm64): no providers")
	}
	for _, p := range provs {
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			return nil, err
		}
		if err := add("usr/lib/"+arm64Triple+"/libibverbs/"+filepath.Base(p), real); err != nil {
			return nil, err
		}
	}
	drivers, _ := filepath.Glob(filepath.Join(root, "etc/libibverbs.d/*.driver"))
	if len(drivers) == 0 {
		return nil, errors.New("ibverbs-providers (arm64): no etc/libibverbs.d/*.driver")
	}
	for _, d := range drivers {
		t.Copy("etc/libibverbs.d/"+filepath.Base(d), 0o644, d)
	}
	// glibc dlopens libgcc_s for pthread_cancel/unwinding (rping needs it).
	lf, ok := res.find("libgcc_s.so.1")
	if !ok {
		return nil, errors.New("libgcc-s1 (arm64): no libgcc_s.so.1")
	}
	t.Copy(lf.Guest, 0o755, lf.Host)
	// librdmacm and libibverbs with their libraries, to link C fixtures
	// for the guest against (BuildC).
	for _, l := range []string{"librdmacm.so.1", "libibverbs.so.1"} {
		lf, ok := res.find(l)
		if !ok {
			return nil, fmt.Errorf("arm64 %s not found", l)
		}
		libs, err := res.closure(lf.Host)
		if err != nil {
			return nil, err
		}
		for _, f := range append(libs, lf) {
			if err := copyFile(filepath.Join(tmp, "lib", filepath.Base(f.Guest)), f.Host); err != nil {
				return nil, err
			}
		}
	}

	// Debian's arm64 "vmlinuz" is an uncompressed Image, which QEMU's
	// -kernel loads without firmware.
	return it.finish(dir, key, ArchARM64, vers)
}

func copyFile(dst, src string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}
