package rdmacm

import "github.com/go-rdma/rdmacm/uverbs"

// wcOf is the endpoint layer's view of a verbs completion; the values of
// status and opcode are the same enums.
func wcOf(w uverbs.WC) WC {
	return WC{ID: w.ID, Status: w.Status, Opcode: w.Opcode, ByteLen: w.ByteLen,
		Imm: w.Imm, HasImm: w.Flags&uverbs.WCWithImm != 0, QPNum: w.QPNum, VendorErr: w.VendorErr}
}
