//go:build linux

package mlx5sim_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/internal/mlx5sim"
	"github.com/go-rdma/rdmacm/internal/mlx5sim/scenario"
)

// mutant is one single-fault defect of our provider (uverbs/mlx5_mutant.go)
// and where the differential harness must see it.
type mutant struct {
	name string
	// files are the scenarios that must catch it, tried first to last;
	// none: the whole matrix. Each runs under every profile it fits.
	files []string
	// profiles replace the matrix's (diffProfiles) when set.
	profiles []string
	// want is in the first line of either side of the report of the
	// first difference: where the defect shows ("a|b": a or b).
	want string
	// fences: seen only in the fence events, which the C side records
	// on amd64 alone.
	fences bool
	// unit names a uverbs test that must fail with the defect, where
	// libmlx5 v44 itself is wrong and the comparison cannot judge.
	unit string
	// escapes, when set, says why the harness cannot see this defect
	// yet; the test then fails if it does see it (so that the entry is
	// updated), and counts it as escaped.
	escapes string
}

// mutants is the set TestMutantsCaught runs; every defect of
// uverbs/mlx5_mutant.go must be listed.
var mutants = []mutant{
	{name: "segbyte", files: []string{"send_opcodes.scn"}, want: "uar6+"},
	{name: "opcode", files: []string{"completions.scn"}, want: "uar6+"},
	{name: "ctrlidx", files: []string{"atomic_wrap.scn"}, want: "uar6+"},
	{name: "ctrlds", files: []string{"send_opcodes.scn"}, want: "uar6+"},
	{name: "ctrlqpn", files: []string{"send_opcodes.scn"}, want: "uar6+"},
	{name: "signaled", files: []string{"send_opcodes.scn"}, want: "uar6+"},
	{name: "fencesig", files: []string{"sq_sigall_fence.scn"}, want: "uar6+"},
	{name: "fence", files: []string{"send_opcodes.scn"}, want: "uar6+"},
	{name: "imm", files: []string{"completions.scn"}, want: "uar6+"},
	{name: "immorder", files: []string{"send_opcodes.scn"}, want: "uar6+"},
	{name: "raddr", files: []string{"send_opcodes.scn"}, want: "uar6+"},
	{name: "rkey", files: []string{"send_opcodes.scn"}, want: "uar6+"},
	{name: "writeimmraddr", files: []string{"completions.scn"}, want: "uar6+"},
	{name: "lkey", files: []string{"send_opcodes.scn"}, want: "uar6+"},
	{name: "sgezero", files: []string{"send_opcodes.scn"}, want: "uar6+"},
	{name: "inlpadone", files: []string{"sq_inline.scn"}, want: "uar6+|qp0.buf"},
	{name: "inlpadseg", files: []string{"sq_inline.scn"}, want: "uar6+|qp0.buf"},
	{name: "inlhdr", files: []string{"sq_inline.scn"}, want: "uar6+|qp0.buf"},
	{name: "atomicorder", files: []string{"atomic_send.scn"}, want: "uar6+"},
	{name: "atomicfa", files: []string{"atomic_wrap.scn"}, want: "qp0.buf"},
	{name: "atomicrkey", files: []string{"atomic_send.scn"}, want: "uar6+"},
	{name: "qkey", files: []string{"ud.scn"}, want: "uar6+"},
	{name: "extav", files: []string{"ud.scn"}, want: "uar6+"},
	{name: "avsl", files: []string{"sq_ah.scn"}, want: "uar6+"},
	{name: "avtc", files: []string{"sq_ah.scn"}, want: "uar6+"},
	{name: "avhop", files: []string{"ud.scn"}, want: "uar6+"},
	{name: "avflow", files: []string{"ud.scn"}, want: "uar6+"},
	{name: "avgrhle", files: []string{"ud.scn"}, want: "uar6+"},
	{name: "avrmac", files: []string{"ud.scn"}, want: "uar6+"},
	{name: "avsport", files: []string{"ud.scn"}, want: "uar6+"},
	{name: "sqdb", files: []string{"send_opcodes.scn"}, want: "qp0.db"},
	{name: "rqdb", files: []string{"completions.scn"}, want: "qp0.db"},
	{name: "rqbarrier", files: []string{"completions.scn"}, escapes: "udma_to_device_barrier is no instruction on amd64 (in libmlx5 too); TestDifferentialArm64 catches it as a missing dsb st"},
	{name: "srqdb", files: []string{"srq_basic.scn"}, want: "srq0.db"},
	{name: "cqci", files: []string{"completions.scn"}, want: "cq0.db"},
	{name: "cqcilate", files: []string{"completions.scn"}, want: "cq0.db"},
	{name: "barrier", files: []string{"send_opcodes.scn"}, want: "uar6+", fences: true},
	{name: "bftoggle", files: []string{"send_opcodes.scn"}, want: "uar6+"},
	{name: "bfnone", files: []string{"send_opcodes.scn"}, want: "uar6+"},
	{name: "bfcopy", files: []string{"send_opcodes.scn"}, want: "uar6+"},
	{name: "bfmulti", files: []string{"atomic_send.scn"}, want: "uar6+"},
	{name: "bfflush", files: []string{"shared_bfreg.scn"}, want: "fence sfence", fences: true},
	{name: "owner1", files: []string{"cq_poll_one.scn"}, want: "rec poll|rec wc"},
	{name: "ownerlist", files: []string{"cq_arm_events.scn"}, want: "fence lfence|rec wc"},
	{name: "pollbarrier", files: []string{"completions.scn"}, want: "fence lfence", fences: true},
	{name: "cqeop", files: []string{"completions.scn"}, want: "rec wc"},
	{name: "bytecnt", files: []string{"completions.scn"}, want: "rec wc"},
	{name: "cqeimm", files: []string{"completions.scn"}, want: "rec wc"},
	{name: "cqeqpn", files: []string{"completions.scn"}, want: "rec wc"},
	{name: "syndrome", files: []string{"completions.scn"}, want: "rec wc"},
	{name: "vendor", files: []string{"completions.scn"}, want: "rec wc"},
	{name: "srcqp", files: []string{"ud_recv_grh.scn"}, want: "rec wc"},
	{name: "grh", files: []string{"ud_recv_grh.scn"}, want: "rec wc"},
	{name: "sl", files: []string{"ud_recv_grh.scn"}, want: "rec wc"},
	{name: "scat64", files: []string{"cq_scatter128.scn"}, want: "rec mem"},
	// An RDMA READ's 64 bytes scattered to a 128-byte CQE: libmlx5 v44
	// reads them one byte before the slot (fixed in v64), so no scenario
	// compares it; TestMLX5CQE128 pins the slot the HCA writes.
	{name: "scat64req", unit: "TestMLX5CQE128"},
	{name: "scat32", files: []string{"scatter.scn"}, want: "rec mem"},
	// The arm writes the doorbell record, then the UAR; with no fence line
	// between them natively, the snapshot lists the UAR first.
	{name: "armci", files: []string{"cq_arm_events.scn"}, want: "cq0.db|uar0+"},
	{name: "armsn", files: []string{"cq_arm_events.scn"}, want: "cq0.db|uar0+"},
	{name: "armcmd", files: []string{"arm.scn"}, want: "cq0.db|uar0+"},
	{name: "armcqn", files: []string{"arm.scn"}, want: "uar0+"},
	{name: "armdbrec", files: []string{"arm.scn"}, want: "cq0.db"},
	{name: "armbarrier", files: []string{"arm.scn"}, want: "fence sfence", fences: true},
	{name: "cleandestroy", files: []string{"srq_basic.scn"}, want: "cq1.db"},
	{name: "cleanreset", files: []string{"cq_clean.scn"}, want: "cq0.buf"},
	{name: "cleanowner", files: []string{"cq_clean.scn"}, want: "cq0.buf"},
	{name: "srqfree", files: []string{"srq_basic.scn"}, want: "srq0.buf"},
	{name: "srqterm", files: []string{"srq_basic.scn"}, want: "srq0.buf"},
	{name: "ececreate", files: []string{"ece.scn"}, want: "CREATE_QP"},
	{name: "ececlear", files: []string{"ece_query_set.scn"}, want: "rec ece"},
	{name: "ecemodify", files: []string{"ece.scn"}, want: "MODIFY_QP"},
	{name: "sqinline", files: []string{"send_opcodes.scn"}, want: "CREATE_QP"},
	{name: "page4k", files: []string{"send_opcodes.scn"}, profiles: []string{"uar=static ece=1 iface=ioctl page=65536"}, want: "GET_CONTEXT"},
	{name: "sqpow2", files: []string{"send_opcodes.scn"}, want: "CREATE_QP"},
}

// mutantNames are the defects uverbs/mlx5_mutant.go declares, from the
// name at the start of each constant's comment.
func mutantNames(t *testing.T) []string {
	t.Helper()
	src, err := os.ReadFile("../../uverbs/mlx5_mutant.go")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^\tmutant\w+\s+// (\w+):`).FindAllSubmatch(src, -1) {
		names = append(names, string(m[1]))
	}
	return names
}

// cTraces caches libmlx5's trace per scenario and profile: every mutant
// is compared with the same C run.
type cTraces struct {
	mu    sync.Mutex
	cells map[string]*cTrace
}

type cTrace struct {
	once sync.Once
	tr   []string
	err  error
}

func (c *cTraces) get(shim, scn, file, prof string) ([]string, error) {
	c.mu.Lock()
	e := c.cells[file+"|"+prof]
	if e == nil {
		e = new(cTrace)
		c.cells[file+"|"+prof] = e
	}
	c.mu.Unlock()
	e.once.Do(func() { e.tr, e.err = runCErr(shim, scn, file, prof) })
	return e.tr, e.err
}

// TestMutantsCaught is the mutation check of the harness itself: this
// package's test binary is rebuilt once with -tags mlx5mutant, in which
// our provider takes the defect MLX5_MUTANT names. Without a defect that
// binary's traces equal libmlx5's; with each defect, the scenarios listed
// for it must differ, and the first difference must show where the
// defect is. MLX5SIM_MUTANT_SURVEY=1 runs every defect over the whole
// matrix instead and logs the first cell that sees it.
func TestMutantsCaught(t *testing.T) {
	shim, scn := cSide(t)
	if testing.Short() {
		t.Skip("builds a second test binary; not in -short")
	}
	survey := os.Getenv("MLX5SIM_MUTANT_SURVEY") != ""
	listed := map[string]bool{}
	for _, m := range mutants {
		listed[m.name] = true
	}
	names := mutantNames(t)
	for _, n := range names {
		if !listed[n] {
			t.Errorf("defect %q of uverbs/mlx5_mutant.go is not in this test's mutants", n)
		}
	}
	if len(names) != len(mutants) {
		t.Fatalf("uverbs/mlx5_mutant.go declares %d defects, the test lists %d", len(names), len(mutants))
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the mutation check needs the go command to build the mutant: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "mutant.test")
	build := exec.Command(gobin, "test", "-c", "-tags", "mlx5mutant", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the mutant: %v\n%s", err, out)
	}
	all, _ := filepath.Glob("testdata/*.scn")
	cells := func(files, profiles []string) (c [][2]string) {
		if len(profiles) == 0 {
			profiles = diffProfiles
		}
		if len(files) == 0 || survey {
			files = all
		} else {
			for i, f := range files {
				files[i] = filepath.Join("testdata", f)
			}
		}
		for _, f := range files {
			for _, p := range profiles {
				if scenario.FileFits(f, p) {
					c = append(c, [2]string{f, p})
				}
			}
		}
		return c
	}
	ct := &cTraces{cells: map[string]*cTrace{}}
	compare := func(t *testing.T, name, file, prof string, fences bool) error {
		if fences {
			// Fences are observed under qemu-user only (fence_test.go).
			c := runCFenced(t, file, prof)
			g, runErr := runGoFenced(t, runtime.GOARCH, bin, []string{"MLX5_MUTANT=" + name}, file, prof)
			if err := mlx5sim.Compare(c.trace, g.trace); err != nil {
				return err
			}
			if runErr != nil {
				return fmt.Errorf("traces equal, but the run failed: %w", runErr)
			}
			return nil
		}
		c, err := ct.get(shim, scn, file, prof)
		if err != nil {
			return fmt.Errorf("C side of %s %s: %w", file, prof, err)
		}
		g, runErr := runChildBin(bin, []string{"MLX5_MUTANT=" + name}, file, prof)
		if runtime.GOARCH != "amd64" {
			c, g = mlx5sim.DropFences(c), mlx5sim.DropFences(g)
		}
		if err := mlx5sim.Compare(c, g); err != nil {
			return err
		}
		if runErr != nil {
			return fmt.Errorf("traces equal, but the run failed: %w", runErr)
		}
		return nil
	}
	t.Run("no defect", func(t *testing.T) {
		for _, f := range []string{"send_opcodes.scn", "completions.scn", "ud.scn"} {
			if err := compare(t, "", filepath.Join("testdata", f), diffProfiles[0], false); err != nil {
				t.Fatalf("the mutant binary without a defect differs from libmlx5 in %s:\n%v", f, err)
			}
		}
	})
	var mu sync.Mutex
	var caught, escaped []string
	t.Run("defects", func(t *testing.T) {
		for _, m := range mutants {
			t.Run(m.name, func(t *testing.T) {
				if m.fences && runtime.GOARCH != "amd64" {
					t.Skip("seen only in fence events, which are compared on amd64 only")
				}
				t.Parallel()
				var err error
				var where [2]string
				if m.unit != "" {
					err, where = unitCatches(t, gobin, m.name, m.unit), [2]string{"uverbs", m.unit}
				}
				for _, c := range cells(append([]string(nil), m.files...), m.profiles) {
					if m.unit != "" {
						break
					}
					if err = compare(t, m.name, c[0], c[1], m.fences); err != nil {
						where = c
						break
					}
				}
				mu.Lock()
				if err != nil {
					caught = append(caught, m.name)
				} else {
					escaped = append(escaped, m.name)
				}
				mu.Unlock()
				if err != nil && os.Getenv("MLX5SIM_MUTANT_SHOW") != "" {
					t.Logf("caught by %s %s:\n%s", where[0], where[1], firstLines(err.Error(), 14))
				}
				switch {
				case survey && err != nil:
					t.Logf("caught by %s %s:\n%s", where[0], where[1], firstLines(err.Error(), 14))
				case survey:
					t.Logf("ESCAPED the whole matrix")
				case err == nil && m.escapes != "":
					t.Logf("escapes, as known: %s", m.escapes)
				case err == nil:
					t.Errorf("mutant %q was not caught: every trace compares equal", m.name)
				case m.escapes != "":
					t.Errorf("mutant %q is caught now (by %s %s); update its entry, which says it escapes: %s", m.name, where[0], where[1], m.escapes)
				case m.unit == "" && !firstDiffShows(err.Error(), m.want):
					t.Errorf("mutant %q caught by %s %s, but its first difference is not in %q:\n%v", m.name, where[0], where[1], m.want, firstLines(err.Error(), 20))
				}
			})
		}
	})
	t.Logf("score: %d of %d defects caught; escaped: %v", len(caught), len(caught)+len(escaped), escaped)
}

// unitCatches runs the uverbs test unit with defect name (built with
// -tags mlx5mutant) and returns an error if it fails, as it must.
func unitCatches(t *testing.T, gobin, name, unit string) error {
	cmd := exec.Command(gobin, "test", "-tags", "mlx5mutant", "-count=1", "-run", "^"+unit+"$", "../../uverbs/")
	cmd.Env = append(os.Environ(), "MLX5_MUTANT="+name)
	out, err := cmd.CombinedOutput()
	if err == nil {
		return nil
	}
	if !strings.Contains(string(out), "--- FAIL: "+unit) {
		t.Fatalf("uverbs %s with defect %q did not run to a test failure: %v\n%s", unit, name, err, out)
	}
	return fmt.Errorf("uverbs %s fails:\n%s", unit, out)
}

// firstDiffShows reports whether the first line of either side in a
// Compare report ("+ ... (Go)", "- ... (C)") contains want.
func firstDiffShows(report, want string) bool {
	seen := map[byte]bool{}
	for _, l := range strings.Split(report, "\n") {
		l = strings.TrimLeft(l, " ")
		if len(l) < 2 || (l[0] != '+' && l[0] != '-') || l[1] != ' ' || seen[l[0]] {
			continue
		}
		seen[l[0]] = true
		for _, w := range strings.Split(want, "|") {
			if strings.Contains(l, w) {
				return true
			}
		}
	}
	return false
}

func firstLines(s string, n int) string {
	l := strings.SplitN(s, "\n", n+1)
	if len(l) > n {
		l = l[:n]
	}
	return strings.Join(l, "\n")
}

// runCErr is runC for a caller that is not the test's goroutine.
func runCErr(shim, scn, file, prof string) ([]string, error) {
	p, err := mlx5sim.ParseProfile(prof)
	if err != nil {
		return nil, err
	}
	sys, err := os.MkdirTemp("", "mlx5sim-sys-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(sys)
	if err := mlx5sim.WriteSysfs(sys, p); err != nil {
		return nil, err
	}
	d := mlx5sim.New(p)
	cmd := mlx5sim.ScenarioCmd(scn, shim, sys, file)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := mlx5sim.RunChild(ctx, cmd, d); err != nil {
		return nil, fmt.Errorf("%w\nstderr:\n%s", err, stderr.String())
	}
	return d.Trace(), nil
}
