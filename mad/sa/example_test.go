package sa_test

import (
	"fmt"
	"time"

	"github.com/go-rdma/rdmacm/mad/sa"
	"github.com/go-rdma/rdmacm/rdma"
)

// A driver sends the Resolver's MAD to the SM's LID on QP1 and hands
// back what arrives; here the SA's answer is built in place.
func ExampleResolver() {
	now := time.Now()
	sgid := rdma.GID{0xfe, 0x80, 15: 1}
	dgid := rdma.GID{0xfe, 0x80, 15: 2}
	r := sa.NewResolver(sa.ResolverConfig{})
	out, err := r.Query(now, 1, sa.CMQuery(sgid, dgid, 0xffff, 0x1060000|7471))
	if err != nil {
		panic(err)
	}

	q, _ := sa.ParseQuery(out.MAD[:])
	answer := sa.Response{TransactionID: q.TransactionID(), Method: sa.MethodGetResp, Records: []sa.PathRecord{{
		PathRecord: rdma.PathRecord{SGID: sgid, DGID: dgid, SLID: 1, DLID: 2, PKey: 0xffff, SL: 3,
			MTU: rdma.MTU4096, Rate: 16, PacketLifeTime: 16, Reversible: true},
	}}}
	var mad [sa.MADSize]byte
	if _, err := answer.MarshalTo(mad[:]); err != nil {
		panic(err)
	}

	res, ok := r.Receive(mad[:])
	fmt.Println(ok, res.Err)
	p := res.Paths[0]
	fmt.Printf("LID %d -> %d, SL %d, MTU %d\n", p.SLID, p.DLID, p.SL, p.MTU.Bytes())
	// Output:
	// true <nil>
	// LID 1 -> 2, SL 3, MTU 4096
}
