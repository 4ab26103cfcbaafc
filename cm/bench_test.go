package cm

import (
	"context"
	"testing"

	"github.com/go-rdma/rdmacm/ece"
	"github.com/go-rdma/rdmacm/rdma"
)

// BenchmarkEventPath measures the channel's per-event cost with the
// in-memory backend: read, dispatch to an asynchronous ID, GetEvent, Ack.
func BenchmarkEventPath(b *testing.B) {
	f := newFake()
	c := newChannel(f)
	defer c.Close()
	id, _ := c.CreateID(rdma.PortSpaceTCP, nil)
	ctx := context.Background()
	pd := make([]byte, 196)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		f.events <- rawEvent{uid: id.uid, typ: EventTimewaitExit, conn: ConnParam{PrivateData: pd}}
		ev, err := c.GetEvent(ctx)
		if err != nil {
			b.Fatal(err)
		}
		ev.Ack()
	}
}

// BenchmarkSyncCompletion measures a synchronous ID's wait for its
// completion event (Connect's wait for CONNECT_RESPONSE).
func BenchmarkSyncCompletion(b *testing.B) {
	f := newFake()
	c := newChannel(f)
	defer c.Close()
	id, _ := c.CreateID(rdma.PortSpaceTCP, &IDOptions{Sync: true})
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		id.st.state = StateRouteResolved
		f.events <- rawEvent{uid: id.uid, typ: EventConnectResponse, ece: ece.ECE{VendorID: 0x15b3}}
		if err := id.Connect(ctx, &ConnParam{}); err != nil {
			b.Fatal(err)
		}
	}
}
