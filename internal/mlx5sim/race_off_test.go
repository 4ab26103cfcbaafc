//go:build linux && !race

package mlx5sim_test

const raceEnabled = false
