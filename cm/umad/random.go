package umad

import (
	"crypto/rand"
	"encoding/binary"

	"github.com/go-rdma/rdmacm/cm/engine"
)

// randomSource draws communication IDs and PSNs from crypto/rand, as the
// kernel draws its random_id_operand and the rdma_cm its seq_num.
type randomSource struct{ tidHigh uint32 }

// NewRandomSource returns an engine.Source for real use. TIDs carry
// tidHigh in their upper half; umad replaces it with the agent's own.
func NewRandomSource(tidHigh uint32) engine.Source { return randomSource{tidHigh} }

func random32() uint32 {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return binary.BigEndian.Uint32(b[:])
}

func (randomSource) CommID() uint32         { return random32() }
func (randomSource) PSN() uint32            { return random32() & 0xffffff }
func (s randomSource) TID(id uint32) uint64 { return engine.KernelTID(s.tidHigh, id) }
