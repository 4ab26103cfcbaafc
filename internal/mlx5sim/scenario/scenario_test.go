package scenario

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	lines, err := Parse("profile uar=dynamic ece=0\n\n# comment\nsend qp0 id=3 op=send_imm imm=0x12 sge=0:16:mr0,16:16:mr1 signaled  # trailing\narm cq0 solicited\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3", len(lines))
	}
	s := lines[1]
	if s.Num != 4 || s.Verb != "send" || s.Text != "send qp0 id=3 op=send_imm imm=0x12 sge=0:16:mr0,16:16:mr1 signaled" {
		t.Fatalf("line: %+v", s)
	}
	if s.Label() != "L4: "+s.Text {
		t.Fatalf("label %q", s.Label())
	}
	if diff := cmp.Diff([]string{"qp0"}, s.Args); diff != "" {
		t.Fatalf("args: %s", diff)
	}
	if !s.Flag["signaled"] || s.KV["imm"] != "0x12" {
		t.Fatalf("flags %v kv %v", s.Flag, s.KV)
	}
	sges, err := s.SGEs()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]SGESpec{{0, 16, "mr0"}, {16, 16, "mr1"}}, sges); diff != "" {
		t.Fatalf("sges: %s", diff)
	}
	if !lines[2].Flag["solicited"] || len(lines[2].Args) != 1 {
		t.Fatalf("arm line: %+v", lines[2])
	}
	if diff := cmp.Diff(map[string]string{"uar": "dynamic", "ece": "0"}, Profile(lines)); diff != "" {
		t.Fatalf("profile: %s", diff)
	}
	for _, badText := range []string{"send qp0 =3", "send qp0 sge=1:2"} {
		l, err := Parse(badText)
		if err == nil {
			_, err = l[0].SGEs()
		}
		if err == nil {
			t.Errorf("%q parsed without error", badText)
		}
	}
}

// Every scenario in testdata parses, and its SGE lists are well formed.
func TestScenarioFilesParse(t *testing.T) {
	files, _ := filepath.Glob("../testdata/*.scn")
	if len(files) == 0 {
		t.Fatal("no scenarios in ../testdata")
	}
	for _, f := range files {
		lines, err := ParseFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range lines {
			if _, err := l.SGEs(); err != nil {
				t.Errorf("%s: %v", f, err)
			}
		}
		if _, err := os.Stat(f); err != nil {
			t.Fatal(err)
		}
	}
}
