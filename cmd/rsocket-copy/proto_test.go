package main

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/rdma"
)

func TestParseArgs(t *testing.T) {
	for _, tc := range []struct {
		args string
		want config
	}{
		{"", config{server: true, port: "7427", backend: rdma.BackendAuto}},
		{"-p 7000 -backend user", config{server: true, port: "7000", backend: rdma.BackendUser}},
		{"a.bin host", config{src: "a.bin", host: "host", dst: "a.bin", port: "7427", backend: rdma.BackendAuto}},
		{"a.bin 192.0.2.2:/tmp/b.bin -p 7001", config{src: "a.bin", host: "192.0.2.2", dst: "/tmp/b.bin", port: "7001", backend: rdma.BackendAuto}},
		{"a.bin [fe80::1]:b -p7002", config{src: "a.bin", host: "fe80::1", dst: "b", port: "7002", backend: rdma.BackendAuto}},
	} {
		got, err := parseArgs(strings.Fields(tc.args))
		if err != nil {
			t.Errorf("%q: %v", tc.args, err)
			continue
		}
		if *got != tc.want {
			t.Errorf("%q: %+v, want %+v", tc.args, *got, tc.want)
		}
	}
	for _, bad := range []string{"a.bin", "a.bin host extra", "-p", "-x", "-p 1 extra", "a :dst", "-backend ib"} {
		if _, err := parseArgs(strings.Fields(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestOpenMessageLayout checks the bytes of rcopy's msg_open for a
// 7-character name: struct msg_hdr (version, command, len, data = st_mode,
// id) in host order, then the name NUL-padded to (strlen + 8) & ~7.
func TestOpenMessageLayout(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "s")
	if err := os.WriteFile(src, []byte("abc"), 0o640); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var sent bytes.Buffer
	// The reply to OPEN is EACCES, which ends the copy after the first message.
	reply := make([]byte, hdrLen)
	header{command: cmdOpen | cmdResp, length: hdrLen, data: uint32(syscall.EACCES)}.marshal(reply)
	_, _, err = clientCopy(struct {
		io.Reader
		io.Writer
	}{bytes.NewReader(reply), &sent}, f, "dst.bin", io.Discard)
	if !errors.Is(err, syscall.EACCES) {
		t.Fatalf("err %v, want EACCES", err)
	}
	want := []byte{0, cmdOpen, 24, 0, 0xa0, 0x81, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 'd', 's', 't', '.', 'b', 'i', 'n', 0}
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 { // a big-endian host sends its own order
		binary.BigEndian.PutUint16(want[2:], 24)
		binary.BigEndian.PutUint32(want[4:], 0o100640)
	}
	if !bytes.Equal(sent.Bytes(), want) {
		t.Errorf("open message\n got % x\nwant % x", sent.Bytes(), want)
	}
}

func dirOpener(dir string) openFunc {
	return func(name string, perm os.FileMode) (destination, error) {
		return openFile(filepath.Join(dir, filepath.Base(name)), perm)
	}
}

// TestCopyOverTCP runs both ends of the protocol over a loopback TCP
// connection and compares the copy with the source.
func TestCopyOverTCP(t *testing.T) {
	dir := t.TempDir()
	data := make([]byte, 3<<20+5)
	rand.Read(data)
	src := filepath.Join(dir, "src.bin")
	if err := os.WriteFile(src, data, 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var serverLog bytes.Buffer
	served := make(chan error, 1)
	go func() {
		conn, err := l.Accept()
		if err != nil {
			served <- err
			return
		}
		defer conn.Close()
		served <- serveConn(conn, dirOpener(filepath.Join(dir)), &serverLog)
	}()
	conn, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var clientLog bytes.Buffer
	n, elapsed, err := clientCopy(conn, f, "copy.bin", &clientLog)
	conn.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "copy.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(len(data)) || sha256.Sum256(got) != sha256.Sum256(data) {
		t.Fatalf("copied %d bytes, file %d bytes, sha256 differs: %v", n, len(got), sha256.Sum256(got) != sha256.Sum256(data))
	}
	if st, _ := os.Stat(filepath.Join(dir, "copy.bin")); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want the source's 0600", st.Mode())
	}
	if want := "opening...transferring...closing...done\n"; clientLog.String() != want {
		t.Errorf("client printed %q, want rcopy's %q", clientLog.String(), want)
	}
	if want := "opening: copy.bin, transferring...3145733 bytes...closing...done\n"; serverLog.String() != want {
		t.Errorf("server printed %q, want rcopy's %q", serverLog.String(), want)
	}
	var perf bytes.Buffer
	printPerf(&perf, n, elapsed)
	if !strings.HasPrefix(perf.String(), "3145733 bytes in ") || !strings.HasSuffix(perf.String(), " Gb/sec\n") {
		t.Errorf("perf line %q", perf.String())
	}
	perf.Reset()
	printPerf(&perf, 16777216, 2345678*time.Microsecond)
	if want := "16777216 bytes in 2.35 seconds = 0.06 Gb/sec\n"; perf.String() != want {
		t.Errorf("perf line %q, want %q", perf.String(), want)
	}
}

// memFile is a destination in memory that records only its size.
type memFile struct{ size int64 }

func (m *memFile) Write(b []byte) (int, error)           { m.size += int64(len(b)); return len(b), nil }
func (m *memFile) Truncate(size int64) error             { m.size = size; return nil }
func (m *memFile) Close() error                          { return nil }
func memOpener(string, os.FileMode) (destination, error) { return &memFile{}, nil }

// session runs the server over a canned client stream and returns the
// replies' statuses.
func serveBytes(t testing.TB, in []byte) ([]uint32, error) {
	var out bytes.Buffer
	err := serveConn(struct {
		io.Reader
		io.Writer
	}{bytes.NewReader(in), &out}, memOpener, io.Discard)
	var statuses []uint32
	b := out.Bytes()
	for len(b) >= hdrLen {
		h, herr := readHeader(bytes.NewReader(b))
		if herr != nil || h.length != hdrLen || h.command&cmdResp == 0 {
			t.Fatalf("server sent a malformed reply % x (%v)", b[:hdrLen], herr)
		}
		statuses = append(statuses, h.data)
		b = b[hdrLen:]
	}
	if len(b) != 0 {
		t.Fatalf("server sent %d stray bytes", len(b))
	}
	return statuses, err
}

func msg(cmd uint8, length uint16, tail ...byte) []byte {
	b := make([]byte, hdrLen, hdrLen+len(tail))
	header{command: cmd, length: length}.marshal(b)
	return append(b, tail...)
}

func TestServerRefusals(t *testing.T) {
	openMsg := msg(cmdOpen, hdrLen+8, 'f', 0, 0, 0, 0, 0, 0, 0)
	size := binary.NativeEndian.AppendUint64(nil, 3)
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	for _, tc := range []struct {
		name string
		in   []byte
		want []uint32
		fail bool
	}{
		{"write before open", cat(msg(cmdWrite, writeLen), size), []uint32{uint32(syscall.EINVAL)}, true},
		{"second open", cat(openMsg, openMsg), []uint32{0, uint32(syscall.EBUSY)}, true},
		{"short write message", cat(openMsg, msg(cmdWrite, hdrLen)), []uint32{0, uint32(syscall.EINVAL)}, true},
		{"unknown command", msg(9, hdrLen), []uint32{uint32(syscall.EINVAL)}, true},
		{"bad version", append([]byte{1}, msg(cmdClose, hdrLen)[1:]...), nil, true},
		{"short length", msg(cmdClose, 8), nil, true},
		{"truncated data", cat(openMsg, msg(cmdWrite, writeLen), size, []byte{1}), []uint32{0}, true},
		{"a whole copy", cat(openMsg, msg(cmdWrite, writeLen), size, []byte{1, 2, 3}, msg(cmdClose, hdrLen)), []uint32{0, 0, 0}, false},
		{"nothing", nil, nil, false},
	} {
		got, err := serveBytes(t, tc.in)
		if (err != nil) != tc.fail {
			t.Errorf("%s: err %v", tc.name, err)
		}
		if !slicesEqual(got, tc.want) {
			t.Errorf("%s: statuses %v, want %v", tc.name, got, tc.want)
		}
	}
}

func slicesEqual(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// FuzzServeConn feeds the server whatever a client can send: it must
// answer with well-formed replies and never panic.
func FuzzServeConn(f *testing.F) {
	openMsg := msg(cmdOpen, hdrLen+8, 'f', 0, 0, 0, 0, 0, 0, 0)
	f.Add(bytes.Join([][]byte{openMsg, msg(cmdWrite, writeLen), binary.NativeEndian.AppendUint64(nil, 2), {7, 7}, msg(cmdClose, hdrLen)}, nil))
	f.Add(msg(cmdWrite, writeLen))
	f.Add(msg(cmdOpen, 0xffff))
	f.Fuzz(func(t *testing.T, in []byte) {
		serveBytes(t, in)
	})
}
