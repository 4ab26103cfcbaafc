package vmtest

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"strings"
)

// moduleIndex is a parsed modules.dep: module name -> path (relative to
// /lib/modules/KVER) and its direct-or-transitive dependencies, as depmod(8)
// writes them.
type moduleIndex struct {
	path map[string]string
	deps map[string][]string
	// readDeps, when set, supplies deps lazily (modinfo-based index).
	readDeps func(string) ([]string, error)
}

// moduleName turns "kernel/drivers/net/virtio_net.ko.xz" into "virtio_net".
// The kernel treats '-' and '_' in module names alike; we use '_'.
func moduleName(p string) string {
	b := path.Base(p)
	if i := strings.Index(b, ".ko"); i >= 0 {
		b = b[:i]
	}
	return strings.ReplaceAll(b, "-", "_")
}

func normalizeModule(n string) string { return strings.ReplaceAll(strings.TrimSpace(n), "-", "_") }

func parseModulesDep(r io.Reader) (*moduleIndex, error) {
	idx := &moduleIndex{path: map[string]string{}, deps: map[string][]string{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		mod, deps, ok := strings.Cut(text, ":")
		if !ok {
			return nil, fmt.Errorf("modules.dep line %d: no colon", line)
		}
		name := moduleName(mod)
		idx.path[name] = strings.TrimSpace(mod)
		for _, d := range strings.Fields(deps) {
			idx.deps[name] = append(idx.deps[name], moduleName(d))
		}
	}
	return idx, sc.Err()
}

// loadOrder returns roots and everything they depend on, each module after
// all of its dependencies, roots in the order given where possible.
func (idx *moduleIndex) loadOrder(roots []string) ([]string, error) {
	var order []string
	state := map[string]int{} // 1 = visiting, 2 = done
	var visit func(string, []string) error
	visit = func(m string, chain []string) error {
		switch state[m] {
		case 2:
			return nil
		case 1:
			return fmt.Errorf("module dependency cycle: %s", strings.Join(append(chain, m), " -> "))
		}
		if _, ok := idx.path[m]; !ok {
			return fmt.Errorf("module %s not in modules.dep (built in, or not shipped by this kernel?)", m)
		}
		state[m] = 1
		if idx.readDeps != nil {
			if _, ok := idx.deps[m]; !ok {
				d, err := idx.readDeps(m)
				if err != nil {
					return err
				}
				idx.deps[m] = d
			}
		}
		deps := idx.deps[m]
		// depmod lists the closest dependency first; load the farthest first.
		for i := len(deps) - 1; i >= 0; i-- {
			if err := visit(deps[i], append(chain, m)); err != nil {
				return err
			}
		}
		state[m] = 2
		order = append(order, m)
		return nil
	}
	for _, r := range roots {
		if err := visit(normalizeModule(r), nil); err != nil {
			return nil, err
		}
	}
	return order, nil
}

// dependents returns the modules in order that need (directly or not) any of
// the modules in skip, plus skip itself: what a guest must not load when it
// leaves out skip.
func (idx *moduleIndex) dependents(order, skip []string) []string {
	out := map[string]bool{}
	for _, s := range skip {
		out[normalizeModule(s)] = true
	}
	var res []string
	for _, m := range order {
		if out[m] {
			res = append(res, m)
			continue
		}
		for _, d := range idx.deps[m] {
			if out[d] {
				out[m] = true
				res = append(res, m)
				break
			}
		}
	}
	return res
}

// modinfoIndex builds a moduleIndex from the .modinfo "depends=" fields of
// the .ko files under modDir, for trees without modules.dep (Debian ships
// none; depmod writes it at install time).
func modinfoIndex(modDir string) (*moduleIndex, error) {
	idx := &moduleIndex{path: map[string]string{}, deps: map[string][]string{}}
	err := filepath.WalkDir(modDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.Contains(d.Name(), ".ko") {
			return nil
		}
		rel, _ := filepath.Rel(modDir, p)
		idx.path[moduleName(rel)] = rel
		return nil
	})
	if err != nil {
		return nil, err
	}
	idx.readDeps = func(m string) ([]string, error) {
		return modinfoDepends(filepath.Join(modDir, idx.path[m]))
	}
	return idx, nil
}

// modinfoDepends reads "depends=" from a module's .modinfo section.
func modinfoDepends(ko string) ([]string, error) {
	f, err := elf.Open(ko)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sec := f.Section(".modinfo")
	if sec == nil {
		return nil, fmt.Errorf("%s: no .modinfo section", ko)
	}
	data, err := sec.Data()
	if err != nil {
		return nil, fmt.Errorf("%s: .modinfo: %w", ko, err)
	}
	var deps []string
	for _, kv := range bytes.Split(data, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte("depends=")); ok {
			for _, d := range strings.Split(string(v), ",") {
				if d = normalizeModule(d); d != "" {
					deps = append(deps, d)
				}
			}
		}
	}
	return deps, nil
}
