//go:build barriermutant

package barrier

// mutantFinalFlush is doorbell_generic.go's last MMIOFlushWrites, which
// the nowcsfence mutant leaves out (barrier_mutant.go).
func mutantFinalFlush() {
	if !mutantNoFinalSFENCE {
		MMIOFlushWrites()
	}
}
