package hwtest

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func sample() *Report {
	r := &Report{}
	r.Set("device", "mlx5_0")
	r.Set("driver", "mlx5")
	r.Ports = []PortInfo{{Port: 1, State: "ACTIVE", LinkLayer: "Ethernet", ActiveMTU: "1024"}}
	r.GIDs = []GIDInfo{{Port: 1, Index: 3, GID: "0000:0000:0000:0000:0000:ffff:c000:0201", Type: "RoCE v2", Netdev: "eth0"}}
	r.Add(Result{Name: "verbs objects (ioctl)", Status: Pass, Duration: 1500 * time.Microsecond, Detail: "ok"})
	r.Add(Result{Name: "ECE query/set", Status: Skip, Duration: 2 * time.Millisecond, Detail: "provider rxe has no ECE"})
	r.Add(Result{Name: "rdmacm-ping", Status: Fail, Duration: 12345 * time.Millisecond, Detail: "server: a | b\nclient: exit 1"})
	return r
}

func TestMarkdown(t *testing.T) {
	md := sample().Markdown()
	want := `# hwtest report

| field | value |
|---|---|
| device | mlx5_0 |
| driver | mlx5 |

## Ports

| port | state | link layer | active MTU |
|---|---|---|---|
| 1 | ACTIVE | Ethernet | 1024 |

## GIDs

| port | index | GID | type | netdev |
|---|---|---|---|---|
| 1 | 3 | 0000:0000:0000:0000:0000:ffff:c000:0201 | RoCE v2 | eth0 |

## Checks

| check | result | time | detail |
|---|---|---|---|
| verbs objects (ioctl) | PASS | 1.5ms | ok |
| ECE query/set | SKIP | 2ms | provider rxe has no ECE |
| rdmacm-ping | FAIL | 12.3s | server: a \| b<br>client: exit 1 |

hwtest: 1 passed, 1 failed, 1 skipped
`
	if diff := cmp.Diff(want, md); diff != "" {
		t.Errorf("Markdown (-want +got):\n%s", diff)
	}
	for _, s := range Sections() {
		if !strings.Contains(md, "\n"+s+"\n") && !strings.HasPrefix(md, s+"\n") {
			t.Errorf("section %q missing", s)
		}
	}
}

func TestEmptyCellsAndEveryRowHasFourColumns(t *testing.T) {
	r := &Report{}
	r.Add(Result{Name: "x", Status: Pass, Detail: " "})
	r.Add(Result{Name: "a|b", Status: Fail, Detail: "1|2|3\r\nline"})
	for _, line := range strings.Split(r.Markdown(), "\n") {
		if !strings.HasPrefix(line, "| x") && !strings.HasPrefix(line, "| a") {
			continue
		}
		// Unescaped pipes delimit columns: 5 of them for 4 cells.
		if n := strings.Count(line, "|") - strings.Count(line, `\|`); n != 5 {
			t.Errorf("%d delimiters in %q", n, line)
		}
	}
	if !strings.Contains(r.Markdown(), "| x | PASS | 0s | - |") {
		t.Errorf("empty detail:\n%s", r.Markdown())
	}
}

func TestSummaryAndExitCode(t *testing.T) {
	for _, c := range []struct {
		statuses []Status
		summary  string
		exit     int
	}{
		{nil, "hwtest: 0 passed, 0 failed, 0 skipped", 1},
		{[]Status{Pass, Pass}, "hwtest: 2 passed, 0 failed, 0 skipped", 0},
		{[]Status{Pass, Skip}, "hwtest: 1 passed, 0 failed, 1 skipped", 0},
		{[]Status{Skip}, "hwtest: 0 passed, 0 failed, 1 skipped", 0},
		{[]Status{Pass, Fail, Skip}, "hwtest: 1 passed, 1 failed, 1 skipped", 1},
		{[]Status{"WEIRD"}, "hwtest: 0 passed, 1 failed, 0 skipped", 1},
	} {
		r := &Report{}
		for i, s := range c.statuses {
			r.Add(Result{Name: string(rune('a' + i)), Status: s})
		}
		if got := r.Summary(); got != c.summary {
			t.Errorf("%v: summary %q, want %q", c.statuses, got, c.summary)
		}
		if got := r.ExitCode(); got != c.exit {
			t.Errorf("%v: exit %d, want %d", c.statuses, got, c.exit)
		}
		md := r.Markdown()
		if !strings.HasSuffix(md, "\n"+c.summary+"\n") {
			t.Errorf("%v: report does not end with the summary:\n%s", c.statuses, md)
		}
	}
}

func TestJSONRoundTrip(t *testing.T) {
	r := sample()
	var buf bytes.Buffer
	if err := r.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	got, err := ReadJSON(&buf)
	if err != nil {
		t.Fatal(err)
	}
	want := *r
	want.Counts = Counts{Passed: 1, Failed: 1, Skipped: 1}
	if diff := cmp.Diff(&want, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if r.Counts != (Counts{}) {
		t.Error("WriteJSON changed the report")
	}
	for _, field := range []string{`"status": "FAIL"`, `"duration_ns": 12345000000`, `"counts"`, `"failed": 1`} {
		if !strings.Contains(buf.String(), field) && !bytes.Contains(mustJSON(t, r), []byte(field)) {
			t.Errorf("JSON lacks %s", field)
		}
	}
}

func mustJSON(t *testing.T, r *Report) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestReadJSONRejects(t *testing.T) {
	for name, in := range map[string]string{
		"not JSON":      "{",
		"counts differ": `{"checks":[{"name":"a","status":"PASS"}],"counts":{"passed":0,"failed":1,"skipped":0}}`,
		"bad status":    `{"checks":[{"name":"a","status":"MAYBE"}],"counts":{"passed":0,"failed":1,"skipped":0}}`,
	} {
		if _, err := ReadJSON(strings.NewReader(in)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestLastLines(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"", 2, "(no output)"},
		{"a\n\nb\nc\n", 2, "b / c"},
		{"  only  \n", 3, "only"},
	} {
		if got := lastLines(c.in, c.n); got != c.want {
			t.Errorf("lastLines(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		1234 * time.Microsecond: "1.23ms",
		1234 * time.Millisecond: "1.234s",
		83 * time.Second:        "1m23s",
		0:                       "0s",
	} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestField(t *testing.T) {
	r := sample()
	if r.Field("driver") != "mlx5" || r.Field("nope") != "" {
		t.Errorf("Field: %q %q", r.Field("driver"), r.Field("nope"))
	}
}
