package testfabric

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of testdata/*.txt; review the diff before committing")

// TestTranscripts runs every scenario in testdata/*.txt: each command's
// output (MADs delivered or dropped, state changes, QP transitions,
// events) must equal the recorded one. Each file's header comment names
// the IBTA section or kernel behaviour it covers.
func TestTranscripts(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no transcripts in testdata")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			cases, err := ParseTranscript(string(raw))
			if err != nil {
				t.Fatal(err)
			}
			s := NewScript()
			outputs := make([]string, len(cases))
			for i, c := range cases {
				out, err := s.Run(c.Command)
				if err != nil {
					t.Fatalf("%s:%d: %s: %v", file, c.Line, c.Command, err)
				}
				outputs[i] = out
				if !*rewrite && out != c.Expected {
					t.Errorf("%s:%d: %s\n--- got\n%s\n--- want\n%s", file, c.Line, c.Command, out, c.Expected)
				}
			}
			if *rewrite {
				if err := os.WriteFile(file, []byte(FormatTranscript(string(raw), cases, outputs)), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
