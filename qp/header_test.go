package qp

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// needTool skips outside CI and fails in CI (CI=true), where the C
// toolchain and libibverbs-dev are part of the image.
func needTool(t *testing.T, what string, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is needed in CI: %v", what, err)
	}
	t.Skipf("%s not available: %v", what, err)
}

// TestHeaderValues compiles a C program against the installed
// <infiniband/verbs.h> and <rdma/ib_user_ioctl_verbs.h> and compares every
// constant it prints with this package's value.
func TestHeaderValues(t *testing.T) {
	cc, err := exec.LookPath("gcc")
	if err != nil {
		needTool(t, "gcc", err)
	}
	for _, h := range []string{"/usr/include/infiniband/verbs.h", "/usr/include/rdma/ib_user_ioctl_verbs.h"} {
		if _, err := os.Stat(h); err != nil {
			needTool(t, h+" (libibverbs-dev, linux-libc-dev)", err)
		}
	}

	var src strings.Builder
	src.WriteString("#include <stdio.h>\n#include <infiniband/verbs.h>\n#include <rdma/ib_user_ioctl_verbs.h>\nint main(void) {\n")
	want := map[string]uint64{}
	add := func(cname string, v uint64) {
		fmt.Fprintf(&src, "\tprintf(\"%s %%llu\\n\", (unsigned long long)(%s));\n", cname, cname)
		want[cname] = v
	}
	for name, m := range goMask {
		add("IBV_QP_"+name, uint64(m))
	}
	for name, s := range goState {
		add("IBV_QPS_"+name, uint64(s))
	}
	for name, ty := range goType {
		add("IBV_QPT_"+name, uint64(ty))
		add("IB_UVERBS_QPT_"+name, uint64(ty))
	}
	for name, a := range goAccess {
		add("IBV_ACCESS_"+name, uint64(a))
		add("IB_UVERBS_ACCESS_"+name, uint64(a))
	}
	for name, m := range goMTU {
		add("IBV_MTU_"+name, uint64(m))
	}
	for name, m := range goMig {
		add("IBV_MIG_"+name, uint64(m))
	}
	src.WriteString("\treturn 0;\n}\n")

	dir := t.TempDir()
	cfile := filepath.Join(dir, "values.c")
	bin := filepath.Join(dir, "values")
	if err := os.WriteFile(cfile, []byte(src.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(cc, "-o", bin, cfile).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	seen := 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			t.Fatalf("bad line %q", sc.Text())
		}
		got, err := strconv.ParseUint(val, 10, 64)
		if err != nil {
			t.Fatalf("bad value in %q", sc.Text())
		}
		if got != want[name] {
			t.Errorf("%s: header %d, Go %d", name, got, want[name])
		}
		seen++
	}
	if seen != len(want) {
		t.Fatalf("compared %d constants, want %d", seen, len(want))
	}
}
