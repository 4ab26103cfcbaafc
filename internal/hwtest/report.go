// Package hwtest checks this module on the host's own RDMA device and
// prints a Markdown report to paste into an issue (make hwtest; the format
// is in docs/hardware.md). Run, the checks themselves, is Linux-only; the
// report types and their formatting build everywhere.
package hwtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// Status is the outcome of one check.
type Status string

// Outcomes.
const (
	Pass Status = "PASS"
	Fail Status = "FAIL"
	Skip Status = "SKIP"
)

// Result is one check: one row of the report's table.
type Result struct {
	Name     string        `json:"name"`
	Status   Status        `json:"status"`
	Duration time.Duration `json:"duration_ns"`
	Detail   string        `json:"detail"`
}

// Field is one line of the report's header.
type Field struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// PortInfo is one port of the device.
type PortInfo struct {
	Port      int    `json:"port"`
	State     string `json:"state"`
	LinkLayer string `json:"link_layer"`
	ActiveMTU string `json:"active_mtu"`
}

// GIDInfo is one valid GID table entry, as sysfs shows it.
type GIDInfo struct {
	Port   int    `json:"port"`
	Index  int    `json:"index"`
	GID    string `json:"gid"`
	Type   string `json:"type"`
	Netdev string `json:"netdev"`
}

// Report is everything hwtest found.
type Report struct {
	Header []Field    `json:"header"`
	Ports  []PortInfo `json:"ports"`
	GIDs   []GIDInfo  `json:"gids"`
	Checks []Result   `json:"checks"`
	// Counts are filled in by WriteJSON.
	Counts Counts `json:"counts"`
}

// Counts are the summary's numbers.
type Counts struct {
	Passed  int `json:"passed"`
	Failed  int `json:"failed"`
	Skipped int `json:"skipped"`
}

// Section headings, in order; the guest test checks that each is present.
const (
	TitleHeading  = "# hwtest report"
	PortsHeading  = "## Ports"
	GIDsHeading   = "## GIDs"
	ChecksHeading = "## Checks"
)

// Sections returns the headings every report has.
func Sections() []string { return []string{TitleHeading, PortsHeading, GIDsHeading, ChecksHeading} }

// Add appends a result.
func (r *Report) Add(res Result) { r.Checks = append(r.Checks, res) }

// Set appends a header field.
func (r *Report) Set(name, value string) { r.Header = append(r.Header, Field{name, value}) }

// Field returns a header field's value ("" if absent).
func (r *Report) Field(name string) string {
	for _, f := range r.Header {
		if f.Name == name {
			return f.Value
		}
	}
	return ""
}

// Count tallies the checks.
func (r *Report) Count() Counts {
	var c Counts
	for _, res := range r.Checks {
		switch res.Status {
		case Pass:
			c.Passed++
		case Skip:
			c.Skipped++
		default:
			c.Failed++ // FAIL, or anything unknown
		}
	}
	return c
}

// Summary is the report's last line.
func (r *Report) Summary() string {
	c := r.Count()
	return fmt.Sprintf("hwtest: %d passed, %d failed, %d skipped", c.Passed, c.Failed, c.Skipped)
}

// ExitCode is the program's exit status: 1 when a check failed (or none
// ran), else 0.
func (r *Report) ExitCode() int {
	if len(r.Checks) == 0 || r.Count().Failed > 0 {
		return 1
	}
	return 0
}

// cell makes s safe inside a Markdown table cell.
func cell(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return "-"
	}
	s = strings.ReplaceAll(s, "\r", "")
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", "<br>")
}

// FormatDuration rounds d for the table (ms below 10 s).
func FormatDuration(d time.Duration) string {
	switch {
	case d < 10*time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	case d < 10*time.Second:
		return d.Round(time.Millisecond).String()
	}
	return d.Round(100 * time.Millisecond).String()
}

// Markdown renders the report.
func (r *Report) Markdown() string {
	var b strings.Builder
	b.WriteString(TitleHeading + "\n\n| field | value |\n|---|---|\n")
	for _, f := range r.Header {
		fmt.Fprintf(&b, "| %s | %s |\n", cell(f.Name), cell(f.Value))
	}
	b.WriteString("\n" + PortsHeading + "\n\n| port | state | link layer | active MTU |\n|---|---|---|---|\n")
	for _, p := range r.Ports {
		fmt.Fprintf(&b, "| %d | %s | %s | %s |\n", p.Port, cell(p.State), cell(p.LinkLayer), cell(p.ActiveMTU))
	}
	b.WriteString("\n" + GIDsHeading + "\n\n| port | index | GID | type | netdev |\n|---|---|---|---|---|\n")
	for _, g := range r.GIDs {
		fmt.Fprintf(&b, "| %d | %d | %s | %s | %s |\n", g.Port, g.Index, cell(g.GID), cell(g.Type), cell(g.Netdev))
	}
	b.WriteString("\n" + ChecksHeading + "\n\n| check | result | time | detail |\n|---|---|---|---|\n")
	for _, c := range r.Checks {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", cell(c.Name), c.Status, FormatDuration(c.Duration), cell(c.Detail))
	}
	b.WriteString("\n" + r.Summary() + "\n")
	return b.String()
}

// WriteJSON writes the report as indented JSON, counts filled in.
func (r *Report) WriteJSON(w io.Writer) error {
	out := *r
	out.Counts = r.Count()
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(&out)
}

// ReadJSON parses what WriteJSON wrote and checks that its counts agree
// with its rows.
func ReadJSON(rd io.Reader) (*Report, error) {
	var r Report
	if err := json.NewDecoder(rd).Decode(&r); err != nil {
		return nil, fmt.Errorf("hwtest: report JSON: %w", err)
	}
	if got := r.Count(); got != r.Counts {
		return nil, fmt.Errorf("hwtest: report JSON: counts %+v, rows say %+v", r.Counts, got)
	}
	for i, c := range r.Checks {
		if c.Status != Pass && c.Status != Fail && c.Status != Skip {
			return nil, fmt.Errorf("hwtest: report JSON: check %d (%q): status %q", i, c.Name, c.Status)
		}
	}
	return &r, nil
}

// Config says what Run checks and how.
type Config struct {
	// Device is the RDMA device ("" for the first one in sysfs).
	Device string
	// BinDir holds prebuilt verbs-pingpong and rdmacm-ping; "" builds
	// them with go build into a temporary folder.
	BinDir string
	// Timeout bounds each check (DefaultTimeout if 0).
	Timeout time.Duration
	// Log gets one line per check as it ends; nil for none.
	Log io.Writer
}

// DefaultTimeout bounds one check.
const DefaultTimeout = 60 * time.Second

// lastLines keeps the last n non-empty lines of s, joined by " / ".
func lastLines(s string, n int) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	if len(lines) == 0 {
		return "(no output)"
	}
	return strings.Join(lines, " / ")
}

// ErrUnsupported is Run's error where the checks cannot run (not Linux).
var ErrUnsupported = errors.New("hwtest: needs Linux (RDMA devices through /dev/infiniband)")
