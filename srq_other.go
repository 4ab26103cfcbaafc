//go:build !linux

package rdmacm

import "github.com/go-rdma/rdmacm/uverbs"

// SRQ is a shared receive queue endpoints receive from (Linux only).
type SRQ struct{}

// MaxSRQSlots bounds NewSRQ's slots.
const MaxSRQSlots = 1 << 24

// NewSRQ returns ErrNotSupported off Linux.
func NewSRQ(slots, slotSize int) (*SRQ, error) { return nil, errNotSupported }

func (s *SRQ) Slots() int             { return 0 }
func (s *SRQ) SlotSize() int          { return 0 }
func (s *SRQ) PostRecv(off int) error { return errNotSupported }
func (s *SRQ) Data(wc WC) []byte      { return nil }
func (s *SRQ) MR() *MR                { return nil }
func (s *SRQ) Verbs() *uverbs.SRQ     { return nil }
func (s *SRQ) Close() error           { return errNotSupported }

// Entries is the size NewCQ was given.
func (cq *CQ) Entries() int { return 0 }
