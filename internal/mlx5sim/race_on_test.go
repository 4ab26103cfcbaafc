//go:build linux && race

package mlx5sim_test

// raceEnabled: this test binary has the race detector; the fenced Go
// child is built without it (fenceTools).
const raceEnabled = true
