//go:build !mlx5mutant

package uverbs

const mlx5Mutant = mutantNone
