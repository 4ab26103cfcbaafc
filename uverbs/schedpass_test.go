package uverbs

import (
	"testing"
	"time"
)

func TestSchedPassDue(t *testing.T) {
	var s schedPass
	ms := int64(time.Millisecond)
	steps := []struct {
		now  int64
		want bool
	}{{6 * ms, true}, {7 * ms, false}, {10 * ms, false}, {11 * ms, true}, {11 * ms, false}, {40 * ms, true}}
	for _, st := range steps {
		if got := s.due(st.now); got != st.want {
			t.Errorf("due(%v) = %v, want %v", time.Duration(st.now), got, st.want)
		}
	}
}
