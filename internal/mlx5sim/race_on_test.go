//go:build linux && race

package mlx5sim_test

// raceEnabled: this test binary has the race detector, whose shadow
// memory qemu-user cannot host; fenced Go children are built without it.
const raceEnabled = true
