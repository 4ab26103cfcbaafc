package umad

import (
	crand "crypto/rand"
	"math/rand/v2"
	"sync"

	"github.com/go-rdma/rdmacm/cm/engine"
)

// randomSource draws communication IDs and PSNs from a ChaCha8 stream
// seeded from crypto/rand, as the kernel draws its random_id_operand and
// the rdma_cm its seq_num from its CSPRNG (get_random_u32). Reading
// crypto/rand per value costs a getrandom syscall each (no vDSO getrandom
// before Linux 6.11): two per connection.
type randomSource struct {
	tidHigh uint32
	mu      sync.Mutex
	r       *rand.ChaCha8
}

// NewRandomSource returns an engine.Source for real use. TIDs carry
// tidHigh in their upper half; umad replaces it with the agent's own.
func NewRandomSource(tidHigh uint32) engine.Source {
	var seed [32]byte
	_, _ = crand.Read(seed[:]) // crypto/rand.Read never fails (Go 1.24+)
	return &randomSource{tidHigh: tidHigh, r: rand.NewChaCha8(seed)}
}

func (s *randomSource) random32() uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return uint32(s.r.Uint64())
}

func (s *randomSource) CommID() uint32       { return s.random32() }
func (s *randomSource) PSN() uint32          { return s.random32() & 0xffffff }
func (s *randomSource) TID(id uint32) uint64 { return engine.KernelTID(s.tidHigh, id) }
