package testfabric

import (
	"fmt"
	"testing"
	"time"
)

var sprintf = fmt.Sprintf

// TestConcurrentConnections holds 100,000 connections open at once between
// two engines (10,000 with -short), then disconnects them all: every one
// must be established at both ends, every teardown must finish, and after
// TimeWait nothing but the listener may remain.
func TestConcurrentConnections(t *testing.T) {
	n := 100000
	if testing.Short() {
		n = 10000
	}
	f := newPairFabric(t)
	start := time.Now()
	ids, err := establishMany(f, n)
	if err != nil {
		t.Fatal(err)
	}
	setup := time.Since(start)
	a, b := f.Nodes[0].Engine, f.Nodes[1].Engine
	for i, id := range ids {
		if err := a.Disconnect(f.Now, id, nil); err != nil {
			t.Fatal(err)
		}
		if i%1024 == 1023 {
			f.Stabilize()
		}
	}
	f.Stabilize()
	if a.Timers() != n || b.Timers() != n {
		t.Fatalf("TimeWait timers: %d and %d, want %d each", a.Timers(), b.Timers(), n)
	}
	if !f.Run(1000) {
		t.Fatal("fabric not idle")
	}
	if a.Len() != 0 || b.Len() != 1 || a.Timers()+b.Timers() != 0 {
		t.Fatalf("left: active %d IDs, passive %d IDs, %d timers", a.Len(), b.Len(), a.Timers()+b.Timers())
	}
	if err := a.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	if err := b.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	if err := f.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d connections established (%v wall) and torn down", n, setup)
}
