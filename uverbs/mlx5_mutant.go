package uverbs

// The mutation check of the differential harness: built with
// -tags mlx5mutant (mlx5_mutant_on.go), the provider takes the deliberate
// defect MLX5_MUTANT names, and internal/mlx5sim's TestMutantsCaught must
// see the traces differ from libmlx5's. In every other build mlx5Mutant
// is the constant mutantNone (mlx5_mutant_off.go) and the mutated lines
// compile away.
const (
	mutantNone = iota
	// mutantSegmentByte ("segbyte") flips the solicited bit of every
	// send WQE's ctrl segment.
	mutantSegmentByte
	// mutantBarrier ("barrier") moves mmio_wc_start from before the
	// BlueFlame copy to after it.
	mutantBarrier
)
