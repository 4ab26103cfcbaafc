package vmtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const sampleModulesDep = `kernel/drivers/infiniband/sw/rxe/rdma_rxe.ko: kernel/drivers/infiniband/core/ib_uverbs.ko kernel/net/ipv6/ip6_udp_tunnel.ko kernel/net/ipv4/udp_tunnel.ko kernel/drivers/infiniband/core/ib_core.ko
kernel/drivers/infiniband/core/ib_core.ko:
kernel/drivers/infiniband/core/ib_uverbs.ko: kernel/drivers/infiniband/core/ib_core.ko
kernel/net/ipv4/udp_tunnel.ko:
kernel/net/ipv6/ip6_udp_tunnel.ko:
kernel/drivers/infiniband/core/rdma_ucm.ko: kernel/drivers/infiniband/core/rdma_cm.ko kernel/drivers/infiniband/core/iw_cm.ko kernel/drivers/infiniband/core/ib_cm.ko kernel/drivers/infiniband/core/ib_uverbs.ko kernel/drivers/infiniband/core/ib_core.ko
kernel/drivers/infiniband/core/rdma_cm.ko: kernel/drivers/infiniband/core/iw_cm.ko kernel/drivers/infiniband/core/ib_cm.ko kernel/drivers/infiniband/core/ib_core.ko
kernel/drivers/infiniband/core/iw_cm.ko: kernel/drivers/infiniband/core/ib_core.ko
kernel/drivers/infiniband/core/ib_cm.ko: kernel/drivers/infiniband/core/ib_core.ko
kernel/drivers/infiniband/core/ib_umad.ko: kernel/drivers/infiniband/core/ib_core.ko
kernel/lib/crc32-generic.ko.xz:
`

func TestModuleLoadOrder(t *testing.T) {
	idx, err := parseModulesDep(strings.NewReader(sampleModulesDep))
	if err != nil {
		t.Fatal(err)
	}
	order, err := idx.loadOrder([]string{"rdma_rxe", "rdma_ucm", "ib_umad", "crc32-generic"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ib_core", "udp_tunnel", "ip6_udp_tunnel", "ib_uverbs", "rdma_rxe",
		"ib_cm", "iw_cm", "rdma_cm", "rdma_ucm", "ib_umad", "crc32_generic"}
	if diff := cmp.Diff(want, order); diff != "" {
		t.Errorf("load order (-want +got):\n%s", diff)
	}
	// Every module comes after its dependencies.
	pos := map[string]int{}
	for i, m := range order {
		pos[m] = i
	}
	for _, m := range order {
		for _, d := range idx.deps[m] {
			if pos[d] > pos[m] {
				t.Errorf("%s loads before its dependency %s", m, d)
			}
		}
	}
	skip := idx.dependents(order, []string{"ib_cm"})
	if diff := cmp.Diff([]string{"ib_cm", "rdma_cm", "rdma_ucm"}, skip); diff != "" {
		t.Errorf("skip closure of ib_cm (-want +got):\n%s", diff)
	}
}

func TestModuleLoadOrderErrors(t *testing.T) {
	idx, err := parseModulesDep(strings.NewReader("a.ko: b.ko\nb.ko: a.ko\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := idx.loadOrder([]string{"a"}); err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Errorf("cycle: got %v", err)
	}
	if _, err := idx.loadOrder([]string{"nope"}); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("missing module: got %v", err)
	}
	if _, err := parseModulesDep(strings.NewReader("no colon here\n")); err == nil {
		t.Error("malformed modules.dep accepted")
	}
}

// TestModinfoIndex builds fake .ko files (ELF objects with a .modinfo
// section, as the kernel build writes it) and resolves their order.
func TestModinfoIndex(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs gcc producing ELF")
	}
	if _, err := exec.LookPath("gcc"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("gcc is not installed (tools/deps.sh installs it)")
		}
		t.Skip("gcc is not installed")
	}
	dir := t.TempDir()
	mods := map[string]string{"kernel/a/top.ko": "mid,ib-core", "kernel/b/mid.ko": "ib_core", "kernel/c/ib_core.ko": ""}
	for path, deps := range mods {
		src := filepath.Join(dir, "m.c")
		code := `__attribute__((section(".modinfo"), used)) static const char info[] = "license=GPL\0depends=` + deps + `\0vermagic=6.1";` + "\n"
		if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
			t.Fatal(err)
		}
		ko := filepath.Join(dir, path)
		os.MkdirAll(filepath.Dir(ko), 0o755)
		if out, err := exec.Command("gcc", "-c", "-o", ko, src).CombinedOutput(); err != nil {
			t.Fatalf("gcc: %v\n%s", err, out)
		}
	}
	idx, err := modinfoIndex(dir)
	if err != nil {
		t.Fatal(err)
	}
	order, err := idx.loadOrder([]string{"top"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"ib_core", "mid", "top"}, order); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

func TestLibClosure(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("resolves x86_64 Debian library paths")
	}
	res := &libResolver{dirs: []libDir{{"/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu"}, {"/usr/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu"}}}
	libs, err := res.closure("/bin/ls")
	if err != nil {
		t.Fatal(err)
	}
	guest := map[string]bool{}
	for _, l := range libs {
		guest[l.Guest] = true
		if fi, err := os.Lstat(l.Host); err != nil || !fi.Mode().IsRegular() {
			t.Errorf("%s: host file %s is not a regular file (%v)", l.Guest, l.Host, err)
		}
	}
	for _, want := range []string{"/lib64/ld-linux-x86-64.so.2", "/lib/x86_64-linux-gnu/libc.so.6"} {
		if !guest[want] {
			t.Errorf("closure of /bin/ls lacks %s: %v", want, libs)
		}
	}
	self, _ := os.Executable()
	if _, err := res.closure(self); err != nil {
		t.Errorf("closure of this test binary: %v", err)
	}
}
