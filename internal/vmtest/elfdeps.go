package vmtest

import (
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
)

// libResolver finds the shared libraries an ELF executable needs, the way
// ld.so would: DT_NEEDED names looked up in a fixed list of directories.
// Each directory is a (host path, guest path) pair, so libraries extracted
// from .deb files under a staging root land at their guest paths.
type libResolver struct {
	dirs []libDir
	// root, when set, is a staging tree the interpreter is found in
	// (a foreign architecture's, which the host does not have).
	root string
}

type libDir struct{ host, guest string }

// libFile is one file to put into the guest.
type libFile struct {
	Host  string // path to read on the host (symlinks resolved)
	Guest string // path inside the guest
}

// closure returns bin's interpreter and needed libraries, transitively.
func (r *libResolver) closure(bin string) ([]libFile, error) {
	var out []libFile
	seen := map[string]bool{}
	var walk func(string) error
	walk = func(file string) error {
		f, err := elf.Open(file)
		if err != nil {
			return err
		}
		defer f.Close()
		for _, p := range f.Progs {
			if p.Type != elf.PT_INTERP {
				continue
			}
			b := make([]byte, p.Filesz)
			if _, err := p.ReadAt(b, 0); err != nil {
				return fmt.Errorf("%s: PT_INTERP: %w", file, err)
			}
			interp := string(b[:len(b)-1]) // NUL-terminated
			if !seen[interp] {
				seen[interp] = true
				host, err := r.interpreter(interp)
				if err != nil {
					return fmt.Errorf("%s: interpreter: %w", file, err)
				}
				out = append(out, libFile{Host: host, Guest: interp})
			}
		}
		libs, err := f.ImportedLibraries()
		if err != nil {
			if f.Section(".dynamic") == nil {
				return nil // static
			}
			return fmt.Errorf("%s: %w", file, err)
		}
		for _, lib := range libs {
			if seen[lib] {
				continue
			}
			seen[lib] = true
			lf, ok := r.find(lib)
			if !ok {
				return fmt.Errorf("%s needs %s, not found in %v", file, lib, r.dirs)
			}
			out = append(out, lf)
			if err := walk(lf.Host); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(bin); err != nil {
		return nil, err
	}
	return out, nil
}

// interpreter resolves the ELF interpreter on the host, or inside root
// (absolute links there point into root too).
func (r *libResolver) interpreter(interp string) (string, error) {
	if r.root == "" {
		return filepath.EvalSymlinks(interp)
	}
	p := interp
	for range 16 {
		fi, err := os.Lstat(filepath.Join(r.root, p))
		if err != nil {
			return "", err
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			return filepath.Join(r.root, p), nil
		}
		target, err := os.Readlink(filepath.Join(r.root, p))
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(p), target)
		}
		p = target
	}
	return "", fmt.Errorf("%s: too many links", interp)
}

func (r *libResolver) find(lib string) (libFile, bool) {
	for _, d := range r.dirs {
		p := filepath.Join(d.host, lib)
		if _, err := os.Stat(p); err != nil {
			continue
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			continue
		}
		return libFile{Host: real, Guest: filepath.Join(d.guest, lib)}, true
	}
	return libFile{}, false
}
