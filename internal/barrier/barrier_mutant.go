//go:build barriermutant && (amd64 || arm64)

package barrier

import "os"

// Fence mutants (build tag barriermutant; internal/mlx5sim's
// TestFenceMutantsCaught): MLX5_FENCE_MUTANT selects one barrier
// instruction that the production path leaves out.
//
//	nolfence     udma_from_device_barrier's LFENCE (arm64: DSB LD)
//	nowcsfence   the final SFENCE of doorbellWC, mmio_flush_writes
//	             (arm64: the last MMIOFlushWrites of DoorbellWC)
var mutantNoLFENCE, mutantNoFinalSFENCE bool

func init() {
	switch m := os.Getenv("MLX5_FENCE_MUTANT"); m {
	case "":
	case "nolfence":
		mutantNoLFENCE = true
	case "nowcsfence":
		mutantNoFinalSFENCE = true
	default:
		panic("barrier: unknown MLX5_FENCE_MUTANT " + m)
	}
}
