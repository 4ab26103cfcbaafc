package vmtest

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
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

//go:embed init.sh
var initScript []byte

// imageFormat changes whenever the image layout changes, so old cache
// entries are not reused.
const imageFormat = "vmtest-image-3"

// DebPackages returns the packages fetched with `apt-get download` and
// unpacked into the guest; the kernel image package is resolved from
// linux-image-amd64.
func DebPackages() []string {
	return []string{
		"rdmacm-utils", "ibverbs-utils", "ibverbs-providers", "librdmacm1", "libibverbs1",
		"libibumad3", "libpci3", "libnl-3-200", "libnl-route-3-200", "perftest",
	}
}

// KernelMetaPackage names the package whose dependency is the kernel image.
const KernelMetaPackage = "linux-image-amd64"

// guestModules are the roots of the module set; dependencies are added from
// modules.dep. The guest init loads them in dependency order.
var guestModules = []string{
	"virtio_pci", "virtio_net", "9pnet_virtio", "9p",
	"rdma_rxe", "ib_uverbs", "ib_umad", "rdma_ucm", "crc32_generic", "veth",
}

// CMModules returns the kernel CM modules a guest leaves out (with
// everything that depends on them) when our own CM engine must own the CM
// class.
func CMModules() []string { return []string{"ib_cm", "iw_cm", "rdma_cm", "rdma_ucm"} }

// guestDebBinaries are copied from the unpacked packages into /usr/bin.
var guestDebBinaries = []string{
	"rping", "ucmatose", "rdma_server", "rdma_client", "udaddy", "mckey", "cmtime", "riostream", "rstream", "rcopy",
	"ibv_devinfo", "ibv_devices", "ibv_rc_pingpong", "ibv_ud_pingpong",
	"ibv_srq_pingpong",
	"ib_send_lat", "ib_send_bw", "ib_write_lat", "ib_write_bw", "ib_read_lat",
}

// guestHostBinaries are host tools copied into the guest (iproute2's ip and
// rdma work where busybox ip does not).
var guestHostBinaries = map[string]string{
	"/usr/sbin/ip":     "bin/ip",
	"/usr/bin/rdma":    "bin/rdma",
	"/usr/bin/tcpdump": "bin/tcpdump",
}

// busyboxApplets get a link to busybox in /bin.
var busyboxApplets = strings.Fields(`sh ash ls cat cp mv rm ln echo printf mount umount insmod rmmod lsmod modprobe
	sleep usleep ps kill killall pidof grep egrep sed awk cut head tail wc sort uniq tr tee xargs find
	dmesg hexdump od xxd date true false env chmod mkdir rmdir touch uname hostname seq timeout test [ [[
	poweroff reboot sync setsid cttyhack stat readlink realpath dirname basename du df free top uptime
	md5sum sha256sum cmp diff gzip gunzip zcat tar vi less more ping nc netstat ifconfig route arp nproc
	mknod mkfifo id whoami which expr sh yes watch time nohup`)

// Image is a prepared guest: kernel, initramfs and what went into them.
type Image struct {
	Dir           string              `json:"-"`
	Key           string              `json:"key"`
	Arch          string              `json:"arch,omitempty"` // ArchARM64, or empty for amd64
	Kernel        string              `json:"-"`              // path of vmlinuz
	Initrd        string              `json:"-"`              // path of initrd.gz
	KernelRelease string              `json:"kernel_release"`
	Versions      map[string]string   `json:"versions"` // Debian package -> version
	Modules       []string            `json:"modules"`  // load order
	ModuleDeps    map[string][]string `json:"module_deps"`
	Created       time.Time           `json:"created"`
}

// PrepareOptions tune Prepare. The zero value is fine.
type PrepareOptions struct {
	CacheDir string    // default: CacheDir()
	Log      io.Writer // progress; default os.Stderr
	// NoInstall leaves host packages alone (fail instead of apt-get install).
	NoInstall bool
	// Arch is the guest architecture: ArchAMD64 (the default) or ArchARM64.
	Arch string
}

// CacheDir is $VMTEST_CACHE, else os.UserCacheDir()/go-rdma-vmtest.
func CacheDir() (string, error) {
	if d := os.Getenv("VMTEST_CACHE"); d != "" {
		return filepath.Abs(d)
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("vmtest: no cache dir (set VMTEST_CACHE): %w", err)
	}
	return filepath.Join(d, "go-rdma-vmtest"), nil
}

// hostNeeds maps a file that must exist on the host to the Debian package
// that brings it.
var hostNeeds = [][2]string{
	{"/usr/bin/qemu-system-x86_64", "qemu-system-x86"},
	{"/bin/busybox", "busybox-static"},
	{"/usr/bin/tcpdump", "tcpdump"},
	{"/usr/sbin/ip", "iproute2"},
	{"/usr/bin/rdma", "iproute2"},
	{"/usr/bin/gcc", "gcc"},
	{"/usr/include/rdma/rdma_cma.h", "librdmacm-dev"},
	{"/usr/include/infiniband/verbs.h", "libibverbs-dev"},
	{"/usr/bin/dpkg-deb", "dpkg"},
}

// EnsureHostPackages installs missing host tools with apt-get.
func EnsureHostPackages(ctx context.Context, log io.Writer) error {
	var missing []string
	seen := map[string]bool{}
	for _, n := range hostNeeds {
		if _, err := os.Stat(n[0]); err != nil && !seen[n[1]] {
			seen[n[1]] = true
			missing = append(missing, n[1])
		}
	}
	if len(missing) == 0 {
		return nil
	}
	fmt.Fprintf(log, "vmtest: installing host packages %v\n", missing)
	if err := aptUpdate(ctx, log); err != nil {
		return err
	}
	args := append([]string{"install", "-y", "-q", "--no-install-recommends"}, missing...)
	if out, err := aptCmd(ctx, "apt-get", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("vmtest: apt-get install %v: %w\n%s", missing, err, tail(out, 2000))
	}
	return nil
}

func aptCmd(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	return cmd
}

func aptUpdate(ctx context.Context, log io.Writer) error {
	fmt.Fprintln(log, "vmtest: apt-get update")
	if out, err := aptCmd(ctx, "apt-get", "update", "-q").CombinedOutput(); err != nil {
		return fmt.Errorf("vmtest: apt-get update: %w\n%s", err, tail(out, 2000))
	}
	return nil
}

// kernelPackage resolves linux-image-amd64 to the image package it depends on.
func kernelPackage(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "apt-cache", "depends", KernelMetaPackage).Output()
	if err != nil {
		return "", fmt.Errorf("apt-cache depends %s: %w", KernelMetaPackage, err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == "Depends:" && strings.HasPrefix(f[1], "linux-image-") {
			return f[1], nil
		}
	}
	return "", fmt.Errorf("apt-cache depends %s: no linux-image dependency in %q", KernelMetaPackage, out)
}

// candidateVersions asks apt-cache policy for each package's candidate.
func candidateVersions(ctx context.Context, pkgs []string, arch string) (map[string]string, error) {
	args := []string{"policy"}
	for _, p := range pkgs {
		if arch != "" {
			p += ":" + arch
		}
		args = append(args, p)
	}
	out, err := exec.CommandContext(ctx, "apt-cache", args...).Output()
	if err != nil {
		return nil, fmt.Errorf("apt-cache policy: %w", err)
	}
	vers := map[string]string{}
	var cur string
	for _, line := range strings.Split(string(out), "\n") {
		if !strings.HasPrefix(line, " ") && strings.HasSuffix(line, ":") {
			cur = strings.TrimSuffix(line, ":")
			continue
		}
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "Candidate:"); ok && cur != "" {
			if v = strings.TrimSpace(v); v != "(none)" {
				vers[strings.TrimSuffix(strings.TrimSuffix(cur, ":amd64"), ":"+arch)] = v
			}
		}
	}
	var missing []string
	for _, p := range pkgs {
		if vers[p] == "" {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		return vers, fmt.Errorf("apt-cache policy: no %s candidate for %v", cmp.Or(arch, "amd64"), missing)
	}
	return vers, nil
}

// resolveVersions finds the kernel package and all versions, running
// apt-get update once if the package lists do not know them.
func resolveVersions(ctx context.Context, log io.Writer) (string, map[string]string, error) {
	try := func() (string, map[string]string, error) {
		kpkg, err := kernelPackage(ctx)
		if err != nil {
			return "", nil, err
		}
		vers, err := candidateVersions(ctx, append([]string{kpkg}, DebPackages()...), "")
		return kpkg, vers, err
	}
	return retryAfterUpdate(ctx, log, try)
}

// retryAfterUpdate runs try, and once more after apt-get update if the
// package lists did not know what it asked for.
func retryAfterUpdate(ctx context.Context, log io.Writer, try func() (string, map[string]string, error)) (string, map[string]string, error) {
	kpkg, vers, err := try()
	if err == nil {
		return kpkg, vers, nil
	}
	fmt.Fprintf(log, "vmtest: %v; refreshing package lists\n", err)
	if err := aptUpdate(ctx, log); err != nil {
		return "", nil, err
	}
	return try()
}

// Prepare returns the cached guest image for the current package versions,
// building it first if needed.
func Prepare(ctx context.Context, opts PrepareOptions) (*Image, error) {
	log := opts.Log
	if log == nil {
		log = os.Stderr
	}
	cache := opts.CacheDir
	if cache == "" {
		var err error
		if cache, err = CacheDir(); err != nil {
			return nil, err
		}
	}
	switch opts.Arch {
	case "", ArchAMD64:
	case ArchARM64:
		return prepareArm64(ctx, opts, log, cache)
	default:
		return nil, fmt.Errorf("vmtest: prepare: no guest architecture %q (amd64, arm64)", opts.Arch)
	}
	if !opts.NoInstall {
		if err := EnsureHostPackages(ctx, log); err != nil {
			return nil, err
		}
	}
	kpkg, vers, err := resolveVersions(ctx, log)
	if err != nil {
		return nil, fmt.Errorf("vmtest: prepare: %w", err)
	}
	hostFiles, err := hostGuestFiles()
	if err != nil {
		return nil, fmt.Errorf("vmtest: prepare: %w", err)
	}
	key, err := imageKey(vers, hostFiles)
	if err != nil {
		return nil, fmt.Errorf("vmtest: prepare: %w", err)
	}
	dir := filepath.Join(cache, "images", key)
	if img, err := loadImage(dir); err == nil {
		return img, nil
	}
	fmt.Fprintf(log, "vmtest: building guest image %s in %s\n", key, dir)
	start := time.Now()
	img, err := buildImage(ctx, log, cache, dir, key, kpkg, vers, hostFiles)
	if err != nil {
		return nil, fmt.Errorf("vmtest: prepare: %w", err)
	}
	fmt.Fprintf(log, "vmtest: image ready in %v\n", time.Since(start).Round(time.Millisecond))
	return img, nil
}

func loadImage(dir string) (*Image, error) {
	b, err := os.ReadFile(filepath.Join(dir, "image.json"))
	if err != nil {
		return nil, err
	}
	img := &Image{}
	if err := json.Unmarshal(b, img); err != nil {
		return nil, err
	}
	img.Dir = dir
	img.Kernel = filepath.Join(dir, "vmlinuz")
	img.Initrd = filepath.Join(dir, "initrd.gz")
	for _, p := range []string{img.Kernel, img.Initrd} {
		if _, err := os.Stat(p); err != nil {
			return nil, err
		}
	}
	return img, nil
}

// hostGuestFiles lists the host files that go into the guest (busybox, the
// host tools and their libraries), for the cache key and the build.
func hostGuestFiles() ([]libFile, error) {
	res := &libResolver{dirs: []libDir{
		{"/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu"},
		{"/usr/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu"},
	}}
	files := []libFile{{Host: "/bin/busybox", Guest: "/bin/busybox"}}
	srcs := make([]string, 0, len(guestHostBinaries))
	for src := range guestHostBinaries {
		srcs = append(srcs, src)
	}
	sort.Strings(srcs)
	for _, src := range srcs {
		files = append(files, libFile{Host: src, Guest: "/" + guestHostBinaries[src]})
		libs, err := res.closure(src)
		if err != nil {
			return nil, err
		}
		files = append(files, libs...)
	}
	// glibc dlopens libgcc_s for pthread_cancel/unwinding (rping needs it).
	if lf, ok := res.find("libgcc_s.so.1"); ok {
		files = append(files, lf)
	} else {
		return nil, errors.New("libgcc_s.so.1 not found on the host")
	}
	return files, nil
}

func imageKey(vers map[string]string, hostFiles []libFile) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n", imageFormat)
	h.Write(initScript)
	fmt.Fprintf(h, "%q %q %q\n", guestModules, guestDebBinaries, busyboxApplets)
	pkgs := make([]string, 0, len(vers))
	for p := range vers {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	for _, p := range pkgs {
		fmt.Fprintf(h, "%s=%s\n", p, vers[p])
	}
	for _, f := range hostFiles {
		fh, err := os.Open(f.Host)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\n", f.Guest)
		_, err = io.Copy(h, fh)
		fh.Close()
		if err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// debFileName is apt's file name for a package version (epoch colon escaped).
func debFileName(pkg, ver string) string {
	return fmt.Sprintf("%s_%s_amd64.deb", pkg, strings.ReplaceAll(ver, ":", "%3a"))
}

func downloadDebs(ctx context.Context, log io.Writer, debDir string, vers map[string]string) ([]string, error) {
	if err := os.MkdirAll(debDir, 0o755); err != nil {
		return nil, err
	}
	var files, want []string
	for pkg, ver := range vers {
		name := debFileName(pkg, ver)
		files = append(files, filepath.Join(debDir, name))
		if _, err := os.Stat(filepath.Join(debDir, name)); err != nil {
			want = append(want, pkg+"="+ver)
		}
	}
	sort.Strings(files)
	if len(want) == 0 {
		return files, nil
	}
	sort.Strings(want)
	fmt.Fprintf(log, "vmtest: apt-get download %v\n", want)
	cmd := aptCmd(ctx, "apt-get", append([]string{"download", "-q"}, want...)...)
	cmd.Dir = debDir
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("apt-get download: %w\n%s", err, tail(out, 2000))
	}
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			return nil, fmt.Errorf("apt-get download did not produce %s", filepath.Base(f))
		}
	}
	return files, nil
}

func buildImage(ctx context.Context, log io.Writer, cache, dir, key, kpkg string, vers map[string]string, hostFiles []libFile) (*Image, error) {
	debs, err := downloadDebs(ctx, log, filepath.Join(cache, "debs"), vers)
	if err != nil {
		return nil, err
	}
	it, err := unpackImage(ctx, cache, key, kpkg, debs, "lib64")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(it.tmp)
	root, t := it.root, it.t
	for _, f := range hostFiles {
		t.Copy(f.Guest, 0o755, f.Host)
	}
	for _, a := range busyboxApplets {
		if _, taken := t["bin/"+a]; !taken {
			t.Symlink("bin/"+a, "busybox")
		}
	}

	// Everything the rdma-core packages put in the multiarch lib dir
	// (including the dlopened providers under libibverbs/), as is.
	libRoot := filepath.Join(root, "usr/lib/x86_64-linux-gnu")
	err = filepath.Walk(libRoot, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			t.Symlink(rel, target)
		case fi.IsDir():
			t.Dir(rel)
		case fi.Mode().IsRegular():
			t.Copy(rel, 0o755, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	drivers, _ := filepath.Glob(filepath.Join(root, "etc/libibverbs.d/*.driver"))
	if len(drivers) == 0 {
		return nil, errors.New("ibverbs-providers: no etc/libibverbs.d/*.driver")
	}
	for _, d := range drivers {
		t.Copy("etc/libibverbs.d/"+filepath.Base(d), 0o644, d)
	}
	res := &libResolver{dirs: []libDir{
		{filepath.Join(root, "usr/lib/x86_64-linux-gnu"), "/usr/lib/x86_64-linux-gnu"},
		{filepath.Join(root, "lib/x86_64-linux-gnu"), "/lib/x86_64-linux-gnu"},
		{"/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu"},
		{"/usr/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu"},
	}}
	for _, b := range guestDebBinaries {
		src := filepath.Join(root, "usr/bin", b)
		if _, err := os.Stat(src); err != nil {
			return nil, fmt.Errorf("guest binary %s: %w", b, err)
		}
		t.Copy("usr/bin/"+b, 0o755, src)
		libs, err := res.closure(src)
		if err != nil {
			return nil, err
		}
		for _, l := range libs {
			if _, have := t[cleanArchivePath(l.Guest)]; !have {
				t.Copy(l.Guest, 0o755, l.Host)
			}
		}
	}

	return it.finish(dir, key, "", vers)
}

// SkipClosure returns skip plus every module of the image that depends on
// one of them, in load order.
func (img *Image) SkipClosure(skip []string) []string {
	idx := &moduleIndex{deps: img.ModuleDeps}
	return idx.dependents(img.Modules, skip)
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// imageTree is what the image builds of both architectures share: the
// debs unpacked in a temporary directory beside the cached images, the
// kernel's modules in load order, and the initramfs tree with its
// skeleton and those modules. The caller removes tmp.
type imageTree struct {
	tmp, root, krel string
	idx             *moduleIndex
	order           []string
	t               fsTree
}

// unpackImage unpacks debs and starts the tree; extraDirs are made too.
func unpackImage(ctx context.Context, cache, key, kpkg string, debs []string, extraDirs ...string) (*imageTree, error) {
	it, err := unpackTree(ctx, cache, key, kpkg, debs, extraDirs)
	if err != nil && it != nil {
		os.RemoveAll(it.tmp)
	}
	return it, err
}

func unpackTree(ctx context.Context, cache, key, kpkg string, debs []string, extraDirs []string) (*imageTree, error) {
	if err := os.MkdirAll(filepath.Join(cache, "images"), 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(filepath.Join(cache, "images"), key+".tmp-")
	if err != nil {
		return nil, err
	}
	it := &imageTree{tmp: tmp, root: filepath.Join(tmp, "root"), t: fsTree{}}
	root := it.root
	for _, deb := range debs {
		if out, err := exec.CommandContext(ctx, "dpkg-deb", "-x", deb, root).CombinedOutput(); err != nil {
			return it, fmt.Errorf("dpkg-deb -x %s: %w\n%s", filepath.Base(deb), err, out)
		}
	}
	kdirs, err := os.ReadDir(filepath.Join(root, "lib/modules"))
	if err != nil || len(kdirs) != 1 {
		return it, fmt.Errorf("%s: want exactly one /lib/modules/<release> (err %v)", kpkg, err)
	}
	krel := kdirs[0].Name()
	modDir := filepath.Join(root, "lib/modules", krel)
	var idx *moduleIndex
	if depFile, err := os.Open(filepath.Join(modDir, "modules.dep")); err == nil {
		idx, err = parseModulesDep(depFile)
		depFile.Close()
		if err != nil {
			return it, err
		}
	} else if idx, err = modinfoIndex(modDir); err != nil {
		return it, err
	}
	order, err := idx.loadOrder(guestModules)
	if err != nil {
		return it, err
	}

	t := it.t
	for _, d := range append([]string{"dev", "proc", "sys", "tmp", "run", "var/run", "root", "host", "etc", "sbin", "usr/bin", "usr/sbin", "mods"}, extraDirs...) {
		t.Dir(d)
	}
	t.File("init", 0o755, initScript)
	t.File("etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\ntcpdump:x:0:0:tcpdump:/:/bin/sh\n"))
	t.File("etc/group", 0o644, []byte("root:x:0:\ntcpdump:x:0:\n"))
	t.File("etc/hosts", 0o644, []byte("127.0.0.1 localhost\n192.0.2.1 a\n192.0.2.2 b\n"))
	var modOrder bytes.Buffer
	for _, m := range order {
		p := idx.path[m]
		if !strings.HasSuffix(p, ".ko") {
			return it, fmt.Errorf("module %s is %s: compressed modules are not handled", m, p)
		}
		t.Copy("mods/"+m+".ko", 0o644, filepath.Join(modDir, p))
		fmt.Fprintln(&modOrder, m)
	}
	t.File("mods/order", 0o644, modOrder.Bytes())
	it.krel, it.idx, it.order = krel, idx, order
	return it, nil
}

// finish writes the initramfs, the kernel (and its config) and
// image.json, and moves the image into dir.
func (it *imageTree) finish(dir, key, arch string, vers map[string]string) (*Image, error) {
	tmp, root, krel, order, idx, t := it.tmp, it.root, it.krel, it.order, it.idx, it.t
	var initrd bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&initrd, gzip.BestSpeed)
	if err := t.WriteCPIO(zw, os.ReadFile); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(tmp, "initrd.gz"), initrd.Bytes(), 0o644); err != nil {
		return nil, err
	}
	kernel, err := os.ReadFile(filepath.Join(root, "boot", "vmlinuz-"+krel))
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(tmp, "vmlinuz"), kernel, 0o644); err != nil {
		return nil, err
	}
	if cfg, err := os.ReadFile(filepath.Join(root, "boot", "config-"+krel)); err == nil {
		_ = os.WriteFile(filepath.Join(tmp, "config"), cfg, 0o644)
	}
	img := &Image{
		Key: key, Arch: arch, KernelRelease: krel, Versions: vers, Modules: order,
		ModuleDeps: map[string][]string{}, Created: time.Now().UTC(),
	}
	for _, m := range order {
		img.ModuleDeps[m] = idx.deps[m]
	}
	b, err := json.MarshalIndent(img, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(tmp, "image.json"), b, 0o644); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(root); err != nil {
		return nil, err
	}
	os.RemoveAll(dir) // a broken earlier attempt
	if err := os.Rename(tmp, dir); err != nil {
		return nil, err
	}
	return loadImage(dir)
}
