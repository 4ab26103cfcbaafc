package ece_test

import (
	"errors"
	"fmt"

	"github.com/go-rdma/rdmacm/ece"
	"github.com/go-rdma/rdmacm/rdma"
)

// The ECE exchange of the kernel capture in mad/testdata/captures: the
// client offers mlx5's vendor with options 0x30000001, the server holds
// 0x30000003. librdmacm's rdma_accept answers with the REQ's vendor and
// the server's own options, which is what the captured REP carries; an
// intersecting policy would answer with the options both sides hold.
func Example() {
	offer := ece.ECE{VendorID: ece.VendorMellanox, Options: 0x30000001}
	local := ece.ECE{VendorID: ece.VendorMellanox, Options: 0x30000003}
	fmt.Println("offer:", offer, "valid:", offer.Validate() == nil)

	fmt.Println("librdmacm REP:", ece.LibrdmacmReply.Reply(offer, local))
	fmt.Println("intersect REP:", ece.IntersectReply.Reply(offer, local))
	fmt.Println("no offer:", ece.IntersectReply.Reply(ece.None, local))

	// The REP carries the 24-bit vendor ID as three single bytes.
	hi, mid, lo := ece.SplitREP(offer.VendorID)
	fmt.Printf("REP vendor bytes %#02x %#02x %#02x -> %#x\n", hi, mid, lo, ece.JoinREP(hi, mid, lo))

	// Vendor 0 means no ECE: rdma_set_local_ece refuses to set it.
	err := ece.ECE{Options: 1}.Validate()
	fmt.Println(err)
	fmt.Println(errors.Is(err, ece.ErrZeroVendor), errors.Is(err, rdma.ErrInvalidArgument))

	// Output:
	// offer: vendor=0x15b3 options=0x30000001 valid: true
	// librdmacm REP: vendor=0x15b3 options=0x30000003
	// intersect REP: vendor=0x15b3 options=0x30000001
	// no offer: vendor=0x0 options=0x00000000
	// REP vendor bytes 0x00 0x15 0xb3 -> 0x15b3
	// ece: invalid argument: vendor ID is 0
	// true true
}
