package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/go-rdma/rdmacm/ece"
	"github.com/go-rdma/rdmacm/mad"
	"github.com/go-rdma/rdmacm/mad/pcap"
)

var update = flag.Bool("update", false, "rewrite testdata/golden.txt")

func runCmdump(t testing.TB, stdin []byte, args ...string) (status int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	status = run(args, bytes.NewReader(stdin), &out, &errOut)
	return status, out.String(), errOut.String()
}

func TestGoldenText(t *testing.T) {
	frames := testFrames(t)
	capture := buildCapture(t, frames)
	status, out, errOut := runCmdump(t, capture)
	if status != exitOK {
		t.Fatalf("status %d, stderr:\n%s", status, errOut)
	}
	golden := filepath.Join("testdata", "golden.txt")
	if *update {
		mustSet(t, os.WriteFile(golden, []byte(out), 0o644))
	}
	want, err := os.ReadFile(golden)
	mustSet(t, err)
	if diff := cmp.Diff(string(want), out); diff != "" {
		t.Errorf("output differs from %s (-want +got); rerun with -update after checking:\n%s", golden, diff)
	}

	// Every CM frame gives one line, nothing else does.
	var cm, bad, skipped int
	var badLines []string
	for i, f := range frames {
		switch {
		case f.cm:
			cm++
		case f.bad:
			bad++
			badLines = append(badLines, fmt.Sprintf("cmdump: frame %d: malformed: ", i+1))
		default:
			skipped++
		}
	}
	if n := strings.Count(out, "\n"); n != cm {
		t.Errorf("%d output lines, want %d", n, cm)
	}
	errLines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
	if len(errLines) != bad+1 {
		t.Fatalf("stderr has %d lines, want %d malformed reports and a summary:\n%s", len(errLines), bad, errOut)
	}
	for i, prefix := range badLines {
		if !strings.HasPrefix(errLines[i], prefix) {
			t.Errorf("stderr line %q, want prefix %q", errLines[i], prefix)
		}
	}
	for i, want := range []string{"bad ICRC", "truncated", "CM class version is not 2"} {
		if !strings.Contains(errLines[i], want) {
			t.Errorf("stderr line %q does not say %q", errLines[i], want)
		}
	}
	summary := fmt.Sprintf("cmdump: %d frames, %d CM MADs, %d skipped (not CM), %d malformed", len(frames), cm, skipped, bad)
	if errLines[len(errLines)-1] != summary {
		t.Errorf("summary %q, want %q", errLines[len(errLines)-1], summary)
	}

	// The values the issue names, spelled out.
	for _, want := range []string{
		" REQ lcid=0x11223344 qpn=0x000011 psn=0x123456 sid=TCP:7174 ece=0x15b3/0x30000001 ip=192.0.2.1:40000>192.0.2.2:7174 pd=5",
		"192.0.2.2.qp1 > 192.0.2.1.qp1 REP lcid=0x55667788 rcid=0x11223344 qpn=0x000012 psn=0x654321 ece=0x15b3/0x30000003 pd=3",
		"REJ lcid=0x55667789 rcid=0x11223345 rejected=REQ reason=35 (vendor option is not supported) pd=12",
		"DREQ lcid=0x11223344 rcid=0x55667788 rqpn=0x000012 pd=0",
		" REQ lcid=0x00000005 qpn=0x000044 psn=0x000001 sid=0x1000000000000abc ece=none ip=none pd=8",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

// jsonLine is what a test reads back from -json.
type jsonLine struct {
	record
	MAD json.RawMessage
}

func newMessageOf(name string) mad.Message {
	switch name {
	case "REQ":
		return new(mad.REQ)
	case "REP":
		return new(mad.REP)
	case "RTU":
		return new(mad.RTU)
	case "REJ":
		return new(mad.REJ)
	case "DREQ":
		return new(mad.DREQ)
	case "DREP":
		return new(mad.DREP)
	case "MRA":
		return new(mad.MRA)
	case "SIDR_REQ":
		return new(mad.SIDRREQ)
	case "SIDR_REP":
		return new(mad.SIDRREP)
	case "LAP":
		return new(mad.LAP)
	case "APR":
		return new(mad.APR)
	}
	return nil
}

func TestJSONParsesBack(t *testing.T) {
	frames := testFrames(t)
	status, out, errOut := runCmdump(t, buildCapture(t, frames), "-json")
	if status != exitOK {
		t.Fatalf("status %d: %s", status, errOut)
	}
	msgs := connectionMessages(t)
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	var n int
	for sc.Scan() {
		var got jsonLine
		if err := json.Unmarshal(sc.Bytes(), &got); err != nil {
			t.Fatalf("line %d: %v\n%s", n+1, err, sc.Text())
		}
		if n >= len(msgs) {
			t.Fatalf("more JSON objects than CM messages")
		}
		want := msgs[n].msg
		decoded := newMessageOf(got.Message)
		if decoded == nil {
			t.Fatalf("line %d: message %q", n+1, got.Message)
		}
		if err := json.Unmarshal(got.MAD, decoded); err != nil {
			t.Fatalf("line %d: MAD: %v", n+1, err)
		}
		if diff := cmp.Diff(want, decoded); diff != "" {
			t.Errorf("line %d (%s): JSON MAD differs from the built message (-want +got):\n%s", n+1, msgs[n].comment, diff)
		}
		if got.AttributeID != uint16(want.AttributeID()) {
			t.Errorf("line %d: AttributeID %#x", n+1, got.AttributeID)
		}
		// Frame-level fields.
		wantFrame := 0
		for i, cnt := 0, 0; i < len(frames); i++ {
			if frames[i].cm {
				if cnt == n {
					wantFrame = i + 1
				}
				cnt++
			}
		}
		p := got.Packet
		if got.Frame != wantFrame || p.BTH.Opcode != 0x64 || p.BTH.DestQP != 1 || p.DETH.QKey != 0x80010000 || p.DETH.SrcQP != 1 || p.BTH.PKey != 0xFFFF || p.HopLimit != 64 || !p.DontFragment {
			t.Errorf("line %d: frame %d (want %d), packet %+v", n+1, got.Frame, wantFrame, p)
		}
		if msgs[n].fromA != (p.SrcIP == ipA) || msgs[n].fromA != (p.SrcMAC == macA) {
			t.Errorf("line %d: direction %v > %v", n+1, p.SrcIP, p.DstIP)
		}
		if !got.Time.Equal(captureStart.Add(time.Duration(wantFrame-1) * (time.Millisecond + time.Microsecond))) {
			t.Errorf("line %d: time %v", n+1, got.Time)
		}
		switch m := want.(type) {
		case *mad.REQ:
			if got.ECE == nil || *got.ECE != m.ECE() {
				t.Errorf("REQ ECE %v, want %v", got.ECE, m.ECE())
			}
		case *mad.REP:
			if got.ECE == nil || *got.ECE != (ece.ECE{VendorID: 0x15b3, Options: 0x30000003}) {
				t.Errorf("REP ECE %v", got.ECE)
			}
		case *mad.REJ:
			if got.RejectReason != m.Reason.String() {
				t.Errorf("REJ reason name %q", got.RejectReason)
			}
		}
		if n == 0 {
			if got.Service == nil || got.Service.PortSpace != "TCP" || got.Service.Port != 7174 || got.IPHeader == nil || got.IPHeader.SrcPort != 40000 || got.IPHeader.Dst != ipB || got.PrivateDataLen != 5 {
				t.Errorf("REQ derived fields: service %+v IP header %+v pd %d", got.Service, got.IPHeader, got.PrivateDataLen)
			}
		}
		n++
	}
	if n != len(msgs) {
		t.Errorf("%d JSON objects, want %d", n, len(msgs))
	}
}

func TestInputs(t *testing.T) {
	capture := buildCapture(t, testFrames(t))
	dir := t.TempDir()
	path := filepath.Join(dir, "a.pcap")
	mustSet(t, os.WriteFile(path, capture, 0o644))

	// File argument, "-" and stdin give the same lines; two files get
	// prefixed with their names.
	_, fromStdin, _ := runCmdump(t, capture)
	_, fromDash, _ := runCmdump(t, capture, "-")
	status, fromFile, _ := runCmdump(t, nil, path)
	if status != exitOK || fromStdin != fromFile || fromDash != fromFile || fromFile == "" {
		t.Errorf("stdin, - and file outputs differ (status %d)", status)
	}
	status, two, errOut := runCmdump(t, nil, path, path)
	if status != exitOK || strings.Count(two, path+": ") != 2*strings.Count(fromFile, "\n") {
		t.Errorf("two files: status %d, output\n%s", status, two)
	}
	if !strings.Contains(errOut, path+": frame 11: malformed") {
		t.Errorf("two files: malformed report lacks the file name:\n%s", errOut)
	}

	// Raw-IP and Linux cooked link types.
	for _, lt := range []pcap.LinkType{pcap.LinkTypeRaw, pcap.LinkTypeLinuxSLL, pcap.LinkTypeLinuxSLL2} {
		var buf bytes.Buffer
		w, err := pcap.NewWriter(&buf, lt)
		mustSet(t, err)
		for i, f := range testFrames(t) {
			data := f.data[14:] // IP packet
			switch lt {
			case pcap.LinkTypeLinuxSLL:
				data = append(append(make([]byte, 14), f.data[12:14]...), data...)
			case pcap.LinkTypeLinuxSLL2:
				data = append(append(append([]byte(nil), f.data[12:14]...), make([]byte, 18)...), data...)
			}
			mustSet(t, w.WritePacket(captureStart.Add(time.Duration(i)*(time.Millisecond+time.Microsecond)), data))
		}
		status, out, errOut := runCmdump(t, buf.Bytes())
		if status != exitOK || out != fromFile {
			t.Errorf("link type %d: status %d, output differs:\n%s\nstderr:\n%s", lt, status, out, errOut)
		}
	}

	truncated := capture[:len(capture)-10]
	var unsupported bytes.Buffer
	w, err := pcap.NewWriter(&unsupported, 105) // 802.11
	mustSet(t, err)
	mustSet(t, w.WritePacket(captureStart, []byte{1, 2, 3}))
	for _, tc := range []struct {
		name   string
		stdin  []byte
		args   []string
		status int
		errMsg string
	}{
		{"missing file", nil, []string{filepath.Join(dir, "nope.pcap")}, exitInput, "no such file or directory"},
		{"empty stdin", nil, nil, exitInput, "stdin: pcap: not a classic pcap file: empty input"},
		{"text", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), nil, exitInput, "not a classic pcap file: magic"},
		{"pcapng", append([]byte{0x0a, 0x0d, 0x0d, 0x0a}, make([]byte, 60)...), nil, exitInput, "pcapng"},
		{"truncated record", truncated, nil, exitInput, "truncated file"},
		{"802.11", unsupported.Bytes(), nil, exitInput, "unsupported link type 105"},
		{"bad flag", nil, []string{"-bogus"}, exitUsage, "flag provided but not defined"},
	} {
		status, out, errOut := runCmdump(t, tc.stdin, tc.args...)
		if status != tc.status || !strings.Contains(errOut, tc.errMsg) {
			t.Errorf("%s: status %d, stderr %q; want %d and %q", tc.name, status, errOut, tc.status, tc.errMsg)
		}
		if tc.status == exitInput {
			// One error line plus the summary.
			if lines := strings.Count(errOut, "\n"); lines != 2 && tc.name != "truncated record" {
				t.Errorf("%s: %d stderr lines:\n%s", tc.name, lines, errOut)
			}
		}
		if tc.name == "truncated record" && strings.Count(out, "\n") != strings.Count(fromFile, "\n")-1 {
			t.Errorf("truncated record: the frames before it were not all printed:\n%s", out)
		}
	}
	if status, _, _ := runCmdump(t, nil, "-h"); status != exitOK {
		t.Errorf("-h: status %d", status)
	}
	// -icrc=false prints the frame with the bad ICRC.
	_, lenient, _ := runCmdump(t, capture, "-icrc=false")
	if strings.Count(lenient, "\n") != strings.Count(fromFile, "\n")+1 {
		t.Errorf("-icrc=false did not accept the bad-ICRC frame:\n%s", lenient)
	}
}

// TestMutatedCaptures flips, drops and inserts bytes of a valid capture:
// cmdump must never panic or hang, and must exit 0 or 1.
func TestMutatedCaptures(t *testing.T) {
	capture := buildCapture(t, testFrames(t))
	rng := rand.New(rand.NewPCG(1, 2))
	iterations := 3000
	if testing.Short() {
		iterations = 300
	}
	for i := range iterations {
		m := append([]byte(nil), capture...)
		switch i % 4 {
		case 0: // flip a few bytes anywhere
			for range 1 + rng.IntN(8) {
				m[rng.IntN(len(m))] ^= byte(1 + rng.IntN(255))
			}
		case 1: // cut
			m = m[:rng.IntN(len(m))]
		case 2: // set a record or header length word to a random value
			off := 24 + rng.IntN(len(m)-25)
			m[off] = byte(rng.Uint32())
			m[off+1] = byte(rng.Uint32())
		case 3: // delete or duplicate a span
			a := rng.IntN(len(m))
			b := a + rng.IntN(min(64, len(m)-a))
			if rng.IntN(2) == 0 {
				m = append(m[:a:a], m[b:]...)
			} else {
				m = append(m[:b:b], m[a:]...)
			}
		}
		for _, args := range [][]string{nil, {"-json"}} {
			done := make(chan int, 1)
			go func() { done <- run(args, bytes.NewReader(m), io.Discard, io.Discard) }()
			select {
			case status := <-done:
				if status != exitOK && status != exitInput {
					t.Fatalf("iteration %d: status %d", i, status)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("iteration %d: cmdump hangs", i)
			}
		}
	}
}

func FuzzCmdump(f *testing.F) {
	frames := testFrames(f)
	f.Add(buildCapture(f, frames))
	small := buildCapture(f, frames[:3]) // REQ, ARP, MRA
	f.Add(small)
	f.Add(small[:200])
	f.Add([]byte{})
	variants := [][]string{nil, {"-json"}, {"-icrc=false"}}
	f.Fuzz(func(t *testing.T, input []byte) {
		// One flag set per input keeps executions (and minimisation) cheap.
		args := variants[len(input)%len(variants)]
		var out bytes.Buffer
		status := run(args, bytes.NewReader(input), &out, io.Discard)
		if status != exitOK && status != exitInput {
			t.Fatalf("status %d", status)
		}
		if len(args) == 1 && args[0] == "-json" {
			dec := json.NewDecoder(&out)
			for dec.More() {
				var v map[string]any
				if err := dec.Decode(&v); err != nil {
					t.Fatalf("invalid JSON output: %v", err)
				}
			}
		}
	})
}

// TestRealCaptures decodes the real kernel captures of mad/testdata: no
// frame is malformed (the ICRC the kernel computed checks) and the output
// matches testdata/real-captures.txt, ECE included.
func TestRealCaptures(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("..", "..", "mad", "testdata", "captures", "*.pcap"))
	mustSet(t, err)
	if len(paths) == 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("no golden captures in mad/testdata/captures")
		}
		t.Skip("no golden captures")
	}
	status, out, errOut := runCmdump(t, nil, paths...)
	if status != exitOK || !strings.HasSuffix(errOut, " 0 skipped (not CM), 0 malformed\n") || strings.Count(errOut, "\n") != 1 {
		t.Fatalf("status %d, stderr:\n%s", status, errOut)
	}
	golden := filepath.Join("testdata", "real-captures.txt")
	if *update {
		mustSet(t, os.WriteFile(golden, []byte(out), 0o644))
	}
	want, err := os.ReadFile(golden)
	mustSet(t, err)
	if diff := cmp.Diff(string(want), out); diff != "" {
		t.Errorf("output differs from %s (-want +got); rerun with -update after checking:\n%s", golden, diff)
	}
	for _, want := range []string{"REQ", "ece=0x15b3/0x30000001", "REP", "ece=0x15b3/0x30000003", "reason=35 (vendor option is not supported)", "ece=none"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

// -describe puts mad.Describe's line, indented, under each text line and
// changes nothing else.
func TestDescribe(t *testing.T) {
	capture := buildCapture(t, testFrames(t))
	_, plain, _ := runCmdump(t, capture)
	status, out, errOut := runCmdump(t, capture, "-describe")
	if status != exitOK {
		t.Fatalf("status %d, stderr:\n%s", status, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	var kept []string
	described := 0
	for i := 0; i < len(lines); i++ {
		kept = append(kept, lines[i])
		if i+1 < len(lines) && strings.HasPrefix(lines[i+1], "    ") {
			i++
			described++
			msg := strings.Fields(lines[i-1])[4] // time, src, >, dst, MESSAGE
			if got := strings.Fields(lines[i])[0]; got != msg && !strings.HasPrefix(got, "malformed") {
				t.Errorf("line %d: %q describes %q, want the %s above it", i+1, lines[i], got, msg)
			}
		}
	}
	if want := strings.Count(plain, "\n"); described != want {
		t.Errorf("%d described lines for %d MAD lines", described, want)
	}
	if diff := cmp.Diff(plain, strings.Join(kept, "\n")+"\n"); diff != "" {
		t.Errorf("-describe changed the text lines (-plain +describe):\n%s", diff)
	}
}
