//go:build mlx5mutant

package uverbs

import "os"

var mlx5Mutant = map[string]int{"segbyte": mutantSegmentByte, "barrier": mutantBarrier}[os.Getenv("MLX5_MUTANT")]
