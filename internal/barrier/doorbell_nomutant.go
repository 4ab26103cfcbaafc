//go:build !amd64 && !(barriermutant && arm64)

package barrier

// mutantFinalFlush is doorbell_generic.go's last MMIOFlushWrites (the
// fence mutants' build leaves it out on demand: doorbell_mutant_arm64.go).
func mutantFinalFlush() { MMIOFlushWrites() }
