package rdmacm

import "github.com/go-rdma/rdmacm/uverbs"

// wcOf is the endpoint layer's view of a verbs completion; status and
// opcode are package rdma's types in both.
func wcOf(w uverbs.WC) WC {
	return WC{ID: w.ID, Status: w.Status, Opcode: w.Opcode, ByteLen: w.ByteLen,
		Imm: w.Imm, HasImm: w.Flags&uverbs.WCWithImm != 0, QPNum: w.QPNum, VendorErr: w.VendorErr}
}
