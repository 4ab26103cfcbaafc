package pcap

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var (
	t0      = time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.UTC)
	packets = [][]byte{
		bytes.Repeat([]byte{0xAB}, 60),
		{},
		bytes.Repeat([]byte{1, 2, 3}, 100),
	}
)

func writeTestFile(t testing.TB, nano bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	newW := NewWriter
	if nano {
		newW = NewNanosecondWriter
	}
	w, err := newW(&buf, LinkTypeEthernet)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range packets {
		if err := w.WritePacket(t0.Add(time.Duration(i)*time.Millisecond), p); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func readAll(r *Reader) ([]Record, error) {
	var recs []Record
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return recs, nil
		}
		if err != nil {
			return recs, err
		}
		rec.Data = append([]byte(nil), rec.Data...)
		recs = append(recs, rec)
	}
}

func TestWriteRead(t *testing.T) {
	for _, nano := range []bool{false, true} {
		file := writeTestFile(t, nano)
		wantMagic := []byte{0xd4, 0xc3, 0xb2, 0xa1}
		resolution := time.Microsecond
		if nano {
			wantMagic = []byte{0x4d, 0x3c, 0xb2, 0xa1}
			resolution = time.Nanosecond
		}
		if !bytes.Equal(file[:4], wantMagic) {
			t.Errorf("nano=%v: magic % x, want % x", nano, file[:4], wantMagic)
		}
		r, err := NewReader(bytes.NewReader(file))
		if err != nil {
			t.Fatal(err)
		}
		h := r.Header()
		if h.ByteOrder != binary.LittleEndian || h.Nanosecond != nano || h.VersionMajor != 2 || h.VersionMinor != 4 || h.SnapLen != MaxRecordLen || r.LinkType() != LinkTypeEthernet {
			t.Errorf("nano=%v: header %+v", nano, h)
		}
		recs, err := readAll(r)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != len(packets) {
			t.Fatalf("nano=%v: %d records, want %d", nano, len(recs), len(packets))
		}
		for i, rec := range recs {
			want := t0.Add(time.Duration(i) * time.Millisecond).Truncate(resolution)
			if !rec.Time.Equal(want) || !bytes.Equal(rec.Data, packets[i]) || rec.OrigLen != len(packets[i]) {
				t.Errorf("nano=%v record %d: time %v len %d/%d, want %v %d", nano, i, rec.Time, len(rec.Data), rec.OrigLen, want, len(packets[i]))
			}
		}
	}
}

// bigEndianFile builds a big-endian file by hand, as a big-endian host's
// libpcap writes it.
func bigEndianFile(magic uint32, snap uint32, recs ...[]byte) []byte {
	be := binary.BigEndian
	b := be.AppendUint32(nil, magic)
	b = be.AppendUint16(b, 2)
	b = be.AppendUint16(b, 4)
	b = be.AppendUint32(b, 0)
	b = be.AppendUint32(b, 0)
	b = be.AppendUint32(b, snap)
	b = be.AppendUint32(b, uint32(LinkTypeRaw)|0x10000000) // with an FCS-length bit
	for i, r := range recs {
		b = be.AppendUint32(b, 1700000000+uint32(i))
		b = be.AppendUint32(b, 999)
		b = be.AppendUint32(b, uint32(len(r)))
		b = be.AppendUint32(b, uint32(len(r)+10))
		b = append(b, r...)
	}
	return b
}

func TestReadBigEndian(t *testing.T) {
	for _, tc := range []struct {
		magic uint32
		frac  time.Duration
	}{{magicMicro, 999 * time.Microsecond}, {magicNano, 999}} {
		file := bigEndianFile(tc.magic, 128, []byte("hello"), []byte("world!"))
		r, err := NewReader(bytes.NewReader(file))
		if err != nil {
			t.Fatal(err)
		}
		if r.Header().ByteOrder != binary.BigEndian || r.LinkType() != LinkTypeRaw {
			t.Errorf("magic %#x: header %+v", tc.magic, r.Header())
		}
		recs, err := readAll(r)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != 2 || string(recs[1].Data) != "world!" || recs[1].OrigLen != 16 {
			t.Fatalf("magic %#x: records %+v", tc.magic, recs)
		}
		if want := time.Unix(1700000001, 0).Add(tc.frac); !recs[1].Time.Equal(want) {
			t.Errorf("magic %#x: time %v, want %v", tc.magic, recs[1].Time, want)
		}
	}
}

func TestReadErrors(t *testing.T) {
	good := writeTestFile(t, false)
	// Every truncation either ends cleanly between records (io.EOF) or
	// reports ErrTruncated; none panics.
	boundaries := map[int]bool{fileHeaderLen: true}
	off := fileHeaderLen
	for _, p := range packets {
		off += recordHeaderLen + len(p)
		boundaries[off] = true
	}
	for n := 0; n < len(good); n++ {
		r, err := NewReader(bytes.NewReader(good[:n]))
		if n < fileHeaderLen {
			if n == 0 && !errors.Is(err, ErrNotPcap) || n > 0 && !errors.Is(err, ErrTruncated) {
				t.Errorf("%d bytes: NewReader err = %v", n, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		_, err = readAll(r)
		if boundaries[n] && err != nil {
			t.Errorf("%d bytes (record boundary): %v", n, err)
		}
		if !boundaries[n] && !errors.Is(err, ErrTruncated) {
			t.Errorf("%d bytes: err = %v, want ErrTruncated", n, err)
		}
	}

	setRecord := func(capLen, origLen uint32) []byte {
		b := append([]byte(nil), good...)
		binary.LittleEndian.PutUint32(b[fileHeaderLen+8:], capLen)
		binary.LittleEndian.PutUint32(b[fileHeaderLen+12:], origLen)
		return b
	}
	smallSnap := append([]byte(nil), good...)
	binary.LittleEndian.PutUint32(smallSnap[16:], 59)
	ng := append([]byte{0x0a, 0x0d, 0x0d, 0x0a}, make([]byte, 40)...)
	version := append([]byte(nil), good...)
	version[4] = 1
	for _, tc := range []struct {
		name string
		file []byte
		want error
	}{
		{"record above MaxRecordLen", setRecord(MaxRecordLen+1, MaxRecordLen+1), ErrBadRecord},
		{"record of 4 GiB", setRecord(0xFFFFFFFF, 0xFFFFFFFF), ErrBadRecord},
		{"record above snap length", smallSnap, ErrBadRecord},
		{"captured above original length", setRecord(60, 59), ErrBadRecord},
		{"pcapng", ng, ErrNotPcap},
		{"text", []byte("this is not a capture file, clearly"), ErrNotPcap},
		{"version 1", version, ErrNotPcap},
	} {
		r, err := NewReader(bytes.NewReader(tc.file))
		if err == nil {
			_, err = readAll(r)
		}
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
	}
	if _, err := NewReader(bytes.NewReader(ng)); err == nil || !strings.Contains(err.Error(), "pcapng") {
		t.Errorf("pcapng error does not say so: %v", err)
	}
}

func TestWriteErrors(t *testing.T) {
	w, err := NewWriter(io.Discard, LinkTypeEthernet)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WritePacket(t0, make([]byte, MaxRecordLen+1)); !errors.Is(err, ErrTooLong) {
		t.Errorf("oversized packet: %v", err)
	}
	if err := w.WritePacket(time.Unix(-1, 0), nil); err == nil {
		t.Error("time before 1970 accepted")
	}
	if err := w.WritePacket(time.Unix(1<<32, 0), nil); err == nil {
		t.Error("time after 2106 accepted")
	}
	if _, err := NewWriter(failingWriter{}, LinkTypeEthernet); err == nil {
		t.Error("NewWriter ignored a write error")
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// TestTsharkReadsWrittenFile checks that Wireshark's reader accepts what
// we write, in both timestamp resolutions.
func TestTsharkReadsWrittenFile(t *testing.T) {
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("tshark is required in CI: apt-get install tshark")
		}
		t.Skip("tshark not installed")
	}
	for _, nano := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "test.pcap")
		if err := os.WriteFile(path, writeTestFile(t, nano), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(tshark, "-n", "-r", path, "-T", "fields", "-e", "frame.len", "-e", "frame.time_epoch").CombinedOutput()
		if err != nil {
			t.Fatalf("tshark: %v\n%s", err, out)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		var kept []string
		for _, l := range lines {
			if !strings.HasPrefix(l, "Running as user") {
				kept = append(kept, l)
			}
		}
		want := []string{"60\t1714979289.123456000", "0\t1714979289.124456000", "300\t1714979289.125456000"}
		for i := range want {
			if nano {
				want[i] = strings.Replace(want[i], "456000", "456789", 1)
			}
		}
		if strings.Join(kept, "\n") != strings.Join(want, "\n") {
			t.Errorf("nano=%v: tshark read\n%s\nwant\n%s", nano, strings.Join(kept, "\n"), strings.Join(want, "\n"))
		}
	}
}

func FuzzReader(f *testing.F) {
	f.Add(writeTestFile(f, false))
	f.Add(writeTestFile(f, true))
	f.Add(bigEndianFile(magicMicro, 16, []byte("0123456789")))
	f.Add(bigEndianFile(magicNano, 0, []byte{}))
	f.Fuzz(func(t *testing.T, file []byte) {
		r, err := NewReader(bytes.NewReader(file))
		if err != nil {
			return
		}
		total := fileHeaderLen
		for {
			rec, err := r.Next()
			if err != nil {
				break
			}
			total += recordHeaderLen + len(rec.Data)
			if len(rec.Data) > MaxRecordLen || len(rec.Data) > rec.OrigLen {
				t.Fatalf("record of %d bytes (original %d) accepted", len(rec.Data), rec.OrigLen)
			}
			if total > len(file) {
				t.Fatalf("records total %d bytes from a %d-byte file", total, len(file))
			}
		}
	})
}
