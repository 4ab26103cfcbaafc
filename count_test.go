package rdmacm_test

import (
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/go-rdma/rdmacm/internal/vmtest/guest"
)

// The table in docs/endpoint.md: each example program's size in Go (this
// package) and in C (librdmacm's rdma_verbs.h), counted here so that it
// cannot rot. Lines are non-blank lines that are not only comment; names
// are the distinct library identifiers used: in Go every package-level
// name, method and field declared in this module (resolved with go/types);
// in C every rdma_*, ibv_*, RDMA_*, IBV_* and RAI_* identifier plus every
// member accessed with . or -> (the C programs declare no structs of their
// own, so every member is a library struct's).

const modPath = "github.com/go-rdma/rdmacm"

var programs = []string{"echo", "ece", "write"}

// codeLines counts lines with code after removing comments.
func codeLines(src string) int {
	src = regexp.MustCompile(`(?s)/\*.*?\*/`).ReplaceAllStringFunc(src, func(c string) string {
		return strings.Repeat("\n", strings.Count(c, "\n"))
	})
	n := 0
	for _, l := range strings.Split(src, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "//") {
			n++
		}
	}
	return n
}

func goNames(t *testing.T, path string) int {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{}}
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil)}
	if _, err := conf.Check("main", fset, []*ast.File{f}, info); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for id, obj := range info.Uses {
		if obj.Pkg() != nil && strings.HasPrefix(obj.Pkg().Path(), modPath) {
			names[obj.Pkg().Name()+"."+recv(obj)+id.Name] = true
		}
	}
	return len(names)
}

// recv names a method's or field's type, so that two types' Close count twice.
func recv(obj types.Object) string {
	if f, ok := obj.(*types.Func); ok {
		if r := f.Type().(*types.Signature).Recv(); r != nil {
			return types.TypeString(r.Type(), func(*types.Package) string { return "" }) + "."
		}
	}
	return ""
}

func cNames(src string) int {
	src = regexp.MustCompile(`(?s)/\*.*?\*/`).ReplaceAllString(src, "")
	names := map[string]bool{}
	for _, m := range regexp.MustCompile(`\b(?:rdma|ibv|RDMA|IBV|RAI)_\w+`).FindAllString(src, -1) {
		names[m] = true
	}
	for _, m := range regexp.MustCompile(`(?:\.|->)\s*([A-Za-z_]\w*)`).FindAllStringSubmatch(src, -1) {
		names["."+m[1]] = true
	}
	return len(names)
}

func countTable(t *testing.T) string {
	var b strings.Builder
	b.WriteString("| program | Go lines | Go library names | C lines | C library names |\n|---|---|---|---|---|\n")
	for _, p := range programs {
		g, err := os.ReadFile("examples/" + p + "/main.go")
		if err != nil {
			t.Fatal(err)
		}
		c, err := os.ReadFile("examples/c/" + p + ".c")
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d |\n", p, codeLines(string(g)), goNames(t, "examples/"+p+"/main.go"), codeLines(string(c)), cNames(string(c)))
	}
	return b.String()
}

func TestExampleCounts(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks the examples from source")
	}
	if guest.InGuest() {
		t.Skip("type-checks the examples from source, which the guest's copy of the module lacks (vmexec copies testdata only)")
	}
	want := countTable(t)
	doc, err := os.ReadFile("docs/endpoint.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "<!-- counts -->\n"+want+"<!-- /counts -->") {
		t.Fatalf("docs/endpoint.md's table between <!-- counts --> and <!-- /counts --> is out of date; it is:\n%s", want)
	}
}
