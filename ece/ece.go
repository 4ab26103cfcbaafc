// Package ece models InfiniBand Enhanced Connection Establishment (ECE):
// a 24-bit vendor ID and 32 bits of vendor-defined options that the two
// sides of a CM exchange carry in REQ, REP and SIDR_REP (IBTA vol. 1
// release 1.4, chapter 12; kernel include/rdma/ibta_vol1_c12.h).
//
// The kernel CM treats ECE as opaque. Meaning and negotiation belong to
// the consumers: librdmacm echoes the peer's vendor with its own options,
// and providers such as mlx5 apply the options to the QP. This package
// holds the value type, its wire mapping, and the reply policies.
package ece

import (
	"errors"
	"fmt"

	"github.com/go-rdma/rdmacm/rdma"
)

// MaxVendorID is the largest vendor ID the wire can carry (24 bits).
const MaxVendorID = 1<<24 - 1

// Sentinel errors. Each error returned by Validate wraps
// ErrInvalidArgument and one of the more specific sentinels.
var (
	// ErrInvalidArgument is wrapped by every validation failure (package
	// rdma's sentinel).
	ErrInvalidArgument = rdma.ErrInvalidArgument
	// ErrZeroVendor: vendor ID 0 means "no ECE"; librdmacm's
	// rdma_set_local_ece refuses it with EINVAL.
	ErrZeroVendor = errors.New("vendor ID is 0")
	// ErrVendorTooWide: the wire carries 24 bits of vendor ID.
	ErrVendorTooWide = errors.New("vendor ID does not fit in 24 bits")
	// ErrCompMask: no comp_mask bits are defined; librdmacm requires 0.
	ErrCompMask = errors.New("comp mask is not 0")
)

// ECE is one side's Enhanced Connection Establishment value, the Go form
// of struct ibv_ece.
type ECE struct {
	// VendorID identifies who defines Options. mlx5 uses 0x15b3, its PCI
	// vendor ID. 0 means "no ECE".
	VendorID uint32
	// Options are vendor-defined bits, carried in the MAD header's
	// AttributeModifier.
	Options uint32
	// CompMask must be 0: no extension fields are defined.
	CompMask uint32
}

// None is the zero ECE, meaning "no ECE offered".
var None ECE

// IsZero reports whether e carries no ECE (vendor 0).
func (e ECE) IsZero() bool { return e.VendorID == 0 }

// Validate checks e as librdmacm's rdma_set_local_ece does, and also that
// the vendor fits the 24-bit wire field.
func (e ECE) Validate() error {
	switch {
	case e.VendorID == 0:
		return fmt.Errorf("ece: %w: %w", ErrInvalidArgument, ErrZeroVendor)
	case e.VendorID > MaxVendorID:
		return fmt.Errorf("ece: %w: %w: %#x", ErrInvalidArgument, ErrVendorTooWide, e.VendorID)
	case e.CompMask != 0:
		return fmt.Errorf("ece: %w: %w: %#x", ErrInvalidArgument, ErrCompMask, e.CompMask)
	}
	return nil
}

// String formats e as "vendor=0x15b3 options=0x30000001".
func (e ECE) String() string {
	return fmt.Sprintf("vendor=%#x options=%#08x", e.VendorID, e.Options)
}
