package vmtest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
)

// CPIO "newc" (SVR4, no CRC) archive writer, the format the kernel unpacks
// as an initramfs (Documentation/driver-api/early-userspace/buffer-format.rst).

const (
	cpioModeDir     = 0o040000
	cpioModeFile    = 0o100000
	cpioModeSymlink = 0o120000
	cpioTrailer     = "TRAILER!!!"
)

// cpioWriter writes newc entries. Entries must be added parent-first; the
// writer does not create missing parent directories itself.
type cpioWriter struct {
	w     *bufio.Writer
	n     int64 // bytes written so far, for the 4-byte alignment
	inode uint32
	err   error
}

func newCPIOWriter(w io.Writer) *cpioWriter {
	return &cpioWriter{w: bufio.NewWriterSize(w, 1<<16), inode: 1}
}

func (c *cpioWriter) write(b []byte) {
	if c.err != nil {
		return
	}
	m, err := c.w.Write(b)
	c.n += int64(m)
	c.err = err
}

func (c *cpioWriter) pad() {
	if r := c.n % 4; r != 0 {
		c.write(make([]byte, 4-r))
	}
}

func (c *cpioWriter) header(name string, mode uint32, size int, nlink uint32) {
	name = strings.TrimPrefix(name, "/")
	if name == "" {
		name = "."
	}
	c.inode++
	hdr := fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		c.inode, mode, 0, 0, nlink, 0, size, 0, 0, 0, 0, len(name)+1, 0)
	c.write([]byte(hdr))
	c.write([]byte(name))
	c.write([]byte{0})
	c.pad()
}

// Dir adds a directory entry with permissions perm.
func (c *cpioWriter) Dir(name string, perm uint32) error {
	c.header(name, cpioModeDir|perm&0o7777, 0, 2)
	return c.err
}

// File adds a regular file.
func (c *cpioWriter) File(name string, perm uint32, data []byte) error {
	c.header(name, cpioModeFile|perm&0o7777, len(data), 1)
	c.write(data)
	c.pad()
	return c.err
}

// Symlink adds a symbolic link name -> target.
func (c *cpioWriter) Symlink(name, target string) error {
	c.header(name, cpioModeSymlink|0o777, len(target), 1)
	c.write([]byte(target))
	c.pad()
	return c.err
}

// Close writes the trailer and flushes. It does not close the underlying writer.
func (c *cpioWriter) Close() error {
	c.header(cpioTrailer, 0, 0, 1)
	if c.err != nil {
		return c.err
	}
	return c.w.Flush()
}

// fsEntry is one file of a tree to be archived.
type fsEntry struct {
	Mode   uint32 // cpioModeDir, cpioModeFile or cpioModeSymlink
	Perm   uint32
	Data   []byte // file contents
	Source string // or: read the contents from this host path
	Target string // symlink target
}

// fsTree maps archive paths ("bin/sh", no leading slash) to entries.
type fsTree map[string]*fsEntry

func (t fsTree) addDirs(p string) {
	for d := parentDir(p); d != ""; d = parentDir(d) {
		if _, ok := t[d]; !ok {
			t[d] = &fsEntry{Mode: cpioModeDir, Perm: 0o755}
		}
	}
}

func parentDir(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return ""
	}
	return p[:i]
}

func cleanArchivePath(p string) string { return strings.Trim(p, "/") }

// Dir adds a directory (and its parents).
func (t fsTree) Dir(p string) {
	p = cleanArchivePath(p)
	t.addDirs(p + "/x")
}

// File adds a file with the given contents.
func (t fsTree) File(p string, perm uint32, data []byte) {
	p = cleanArchivePath(p)
	t.addDirs(p)
	t[p] = &fsEntry{Mode: cpioModeFile, Perm: perm, Data: data}
}

// Copy adds a file whose contents are read from a host path when archived.
func (t fsTree) Copy(p string, perm uint32, source string) {
	p = cleanArchivePath(p)
	t.addDirs(p)
	t[p] = &fsEntry{Mode: cpioModeFile, Perm: perm, Source: source}
}

// Symlink adds a symbolic link.
func (t fsTree) Symlink(p, target string) {
	p = cleanArchivePath(p)
	t.addDirs(p)
	t[p] = &fsEntry{Mode: cpioModeSymlink, Target: target}
}

// WriteCPIO writes the tree as a newc archive, parents before children.
func (t fsTree) WriteCPIO(w io.Writer, readFile func(string) ([]byte, error)) error {
	names := make([]string, 0, len(t))
	for n := range t {
		names = append(names, n)
	}
	sort.Strings(names) // "a" < "a/b": parents sort before their children
	cw := newCPIOWriter(w)
	for _, n := range names {
		e := t[n]
		var err error
		switch e.Mode {
		case cpioModeDir:
			err = cw.Dir(n, e.Perm)
		case cpioModeSymlink:
			err = cw.Symlink(n, e.Target)
		case cpioModeFile:
			data := e.Data
			if e.Source != "" {
				if data, err = readFile(e.Source); err != nil {
					return fmt.Errorf("initramfs %s: %w", n, err)
				}
			}
			err = cw.File(n, e.Perm, data)
		default:
			err = errors.New("unknown entry type")
		}
		if err != nil {
			return fmt.Errorf("initramfs %s: %w", n, err)
		}
	}
	return cw.Close()
}
