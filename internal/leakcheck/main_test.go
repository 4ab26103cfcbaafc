package leakcheck

import "testing"

// The package checks itself: its tests close everything they open.
func TestMain(m *testing.M) { Main(m) }
