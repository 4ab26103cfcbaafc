package testfabric

import (
	"strings"
	"testing"
)

// TestScriptUsage checks the dispatch of Script.Run: every command the
// transcripts do not use runs, and malformed commands are errors naming
// their usage, not output.
func TestScriptUsage(t *testing.T) {
	s := NewScript()
	if _, err := s.Run("listen 1 port=1"); err == nil || !strings.Contains(err.Error(), "first command must be nodes") {
		t.Fatalf("before nodes: %v", err)
	}
	for _, cmd := range []string{"nodes 2", "policy 2 auto-accept auto-establish", "listen 2 port=7471",
		"connect 1->2 port=7471", "stabilize", "partition 1 2", "heal 1 2", "notify 1", "state"} {
		if _, err := s.Run(cmd); err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
	}
	for _, tc := range []struct{ cmd, want string }{
		{"", "empty command"},
		{"frobnicate", `unknown command "frobnicate"`},
		{"nodes", "nodes <n>"},
		{"nodes 0", `nodes "0"`},
		{"policy", "usage: policy <node> flags"},
		{"policy 1 auto-nothing", `unknown policy "auto-nothing"`},
		{"policy 9", `bad node "9"`},
		{"listen 1 ps=sdp", `port space "sdp"`},
		{"listen", "listen <node>"},
		{"crash", "crash <node>"},
		{"restart", "restart <node>"},
		{"connect 1", `want i->j, got "1"`},
		{"sidr", "sidr i->j port=<p>"},
		{"accept", "accept <node> [id=...]"},
		{"reject 1 id=9:9", `unknown ID alias "9:9"`},
		{"mra 1 timeout=x", "invalid syntax"},
		{"deliver drop=FOO", `unknown message "FOO"`},
		{"advance", "advance <duration>"},
		{"advance 1parsec", "unknown unit"},
		{"replay LAP", "no LAP delivered yet"},
		{"partition 1", "partition <i> <j>"},
		{"heal 1 3", `bad node "3"`},
	} {
		out, err := s.Run(tc.cmd)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: output %q, error %v; want an error with %q", tc.cmd, out, err, tc.want)
		}
	}
}
