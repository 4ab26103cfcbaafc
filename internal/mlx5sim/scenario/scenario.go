// Package scenario parses the mlx5sim scenario language and runs a
// scenario through this module's uverbs package: the Go twin of
// internal/mlx5sim/c/scenario.c, which runs the same file through
// libibverbs and libmlx5 (see internal/mlx5sim/README.md for the
// language). Both interpreters must do the same verbs with the same
// arguments, so that the simulated device sees two comparable traces.
package scenario

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Line is one parsed scenario line.
type Line struct {
	Num  int               // 1-based line number in the file
	Text string            // the line without comment and surrounding space
	Verb string            // first word
	Args []string          // positional words after the verb
	KV   map[string]string // key=value words
	Flag map[string]bool   // bare words that are flags (signaled, inline, ...)
}

// flagWords are the bare words that act as flags rather than positional
// arguments.
var flagWords = map[string]bool{
	"inline": true, "signaled": true, "solicited": true, "fence": true,
}

// Parse reads a scenario. Blank lines and comments are skipped.
func Parse(text string) ([]Line, error) {
	var out []Line
	sc := bufio.NewScanner(strings.NewReader(text))
	n := 0
	for sc.Scan() {
		n++
		s := sc.Text()
		if i := strings.IndexByte(s, '#'); i >= 0 {
			s = s[:i]
		}
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		f := strings.Fields(s)
		l := Line{Num: n, Text: strings.Join(f, " "), Verb: f[0], KV: map[string]string{}, Flag: map[string]bool{}}
		for _, w := range f[1:] {
			if k, v, ok := strings.Cut(w, "="); ok {
				if k == "" {
					return nil, fmt.Errorf("line %d: empty key in %q", n, w)
				}
				l.KV[k] = v
			} else if flagWords[w] || (l.Verb == "arm" && w == "solicited") {
				l.Flag[w] = true
			} else {
				l.Args = append(l.Args, w)
			}
		}
		out = append(out, l)
	}
	return out, sc.Err()
}

// ParseFile reads and parses a scenario file.
func ParseFile(path string) ([]Line, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	l, err := Parse(string(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return l, nil
}

// Profile returns the key=value words of the scenario's profile lines.
func Profile(lines []Line) map[string]string {
	p := map[string]string{}
	for _, l := range lines {
		if l.Verb == "profile" {
			for k, v := range l.KV {
				p[k] = v
			}
		}
	}
	return p
}

// Label is the snapshot label of a line, as both interpreters write it.
func (l Line) Label() string { return "L" + strconv.Itoa(l.Num) + ": " + l.Text }

// num parses a decimal or 0x-prefixed number.
func num(s string) (uint64, error) {
	return strconv.ParseUint(s, 0, 64)
}

// SGESpec is one sge=ADDR:LEN:MR element: ADDR is an offset into MR.
type SGESpec struct {
	Off, Len uint64
	MR       string
}

// SGEs parses the sge= list.
func (l Line) SGEs() ([]SGESpec, error) {
	v, ok := l.KV["sge"]
	if !ok || v == "" {
		return nil, nil
	}
	var out []SGESpec
	for _, e := range strings.Split(v, ",") {
		p := strings.Split(e, ":")
		if len(p) != 3 {
			return nil, fmt.Errorf("line %d: sge element %q is not ADDR:LEN:MR", l.Num, e)
		}
		off, err1 := num(p[0])
		n, err2 := num(p[1])
		if err1 != nil || err2 != nil || n > 1<<31 {
			return nil, fmt.Errorf("line %d: sge element %q: bad number", l.Num, e)
		}
		out = append(out, SGESpec{Off: off, Len: n, MR: p[2]})
	}
	return out, nil
}

// Fits reports whether a run profile (key=value words, as the tests'
// profile matrix writes them) agrees with the scenario's profile lines:
// a scenario that needs the ioctl interface (REG_DMABUF_MR has no write
// command) says "profile iface=ioctl" and runs under no other.
func Fits(lines []Line, prof string) bool {
	want := Profile(lines)
	for _, w := range strings.Fields(prof) {
		k, v, _ := strings.Cut(w, "=")
		if s, ok := want[k]; ok && s != v {
			return false
		}
	}
	return true
}

// FileFits is Fits for a scenario file; a file that does not parse fits
// every profile (its run reports the error).
func FileFits(path, prof string) bool {
	lines, err := ParseFile(path)
	return err != nil || Fits(lines, prof)
}
