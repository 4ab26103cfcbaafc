//go:build linux

package cm

import (
	"net/netip"
	"testing"

	"github.com/go-rdma/rdmacm/cm/engine"
	"github.com/go-rdma/rdmacm/ece"
	"github.com/go-rdma/rdmacm/internal/abi"
	"github.com/go-rdma/rdmacm/rdma"
)

// counts are the four fields ConnParam defaults.
type counts struct{ resp, init, retry, rnr uint8 }

func countsOf(p ConnParam) counts {
	return counts{p.ResponderResources, p.InitiatorDepth, p.RetryCount, p.RNRRetryCount}
}

func TestDefaultConnParam(t *testing.T) {
	def := counts{MaxResources, MaxResources, 7, 7}
	for name, tc := range map[string]struct {
		p    *ConnParam
		want counts
	}{
		"nil":          {nil, def},
		"private data": {&ConnParam{PrivateData: []byte("x"), QPNum: 5}, def},
		"set":          {&ConnParam{ResponderResources: 1, InitiatorDepth: 2, RetryCount: 3, RNRRetryCount: 4}, counts{1, 2, 3, 4}},
		"max":          {&ConnParam{ResponderResources: MaxResources, InitiatorDepth: MaxResources}, def},
		"none": {&ConnParam{ResponderResources: ResourcesNone, InitiatorDepth: ResourcesNone,
			RetryCount: RetryNone, RNRRetryCount: RetryNone}, counts{}},
		"mixed": {&ConnParam{InitiatorDepth: ResourcesNone, RetryCount: 2}, counts{MaxResources, 0, 2, 7}},
	} {
		got := defaultConnParam(tc.p)
		if countsOf(got) != tc.want {
			t.Errorf("%s: %+v, want %+v", name, countsOf(got), tc.want)
		}
		if tc.p != nil && (got.QPNum != tc.p.QPNum || string(got.PrivateData) != string(tc.p.PrivateData)) {
			t.Errorf("%s: other fields changed: %+v", name, got)
		}
	}
	if RetryNone&7 != 0 {
		t.Fatalf("RetryNone %#x has non-zero low bits", RetryNone)
	}
}

// TestConnParamBackends checks what each backend builds from a partial
// ConnParam and from the sentinels, once Connect/Accept applied the
// defaults (external QP, no device: MaxResources resolves to 1 on the
// active side, the REQ's values on the passive side).
func TestConnParamBackends(t *testing.T) {
	f := newFake()
	c := newChannel(f)
	defer c.Close()
	ctx := testCtx(t)
	id, err := c.CreateID(rdma.PortSpaceTCP, &IDOptions{Sync: true})
	if err != nil {
		t.Fatal(err)
	}
	go f.push(rawEvent{uid: id.uid, typ: EventAddrResolved})
	if err := id.ResolveAddr(ctx, netip.AddrPort{}, netip.MustParseAddrPort("192.0.2.2:7174"), 0); err != nil {
		t.Fatal(err)
	}
	go f.push(rawEvent{uid: id.uid, typ: EventRouteResolved})
	if err := id.ResolveRoute(ctx, 0); err != nil {
		t.Fatal(err)
	}
	go f.push(rawEvent{uid: id.uid, typ: EventConnectResponse})
	if err := id.Connect(ctx, &ConnParam{QPNum: 0x11, PrivateData: []byte("hi")}); err != nil {
		t.Fatal(err)
	}
	got := f.connParams[0]
	if want := (counts{1, 1, 7, 7}); countsOf(got) != want || got.QPNum != 0x11 || string(got.PrivateData) != "hi" {
		t.Fatalf("partial Connect reached the backend as %+v, want counts %+v", got, want)
	}

	var k abi.UcmaConnParam
	putConnParam(&k, &got)
	if k.RetryCount != 7 || k.RNRRetryCount != 7 || k.ResponderResources != 1 || k.InitiatorDepth != 1 || k.PrivateDataLen != 2 || k.Valid != 1 {
		t.Fatalf("ucma conn_param %+v", k)
	}
	var cp engine.ConnectParams
	putEngineConnect(&cp, &got, ece.ECE{})
	if cp.RetryCount != 7 || cp.RNRRetryCount != 7 || cp.ResponderResources != 1 || cp.InitiatorDepth != 1 || cp.QPN != 0x11 {
		t.Fatalf("engine connect params %+v", cp)
	}

	zero := defaultConnParam(&ConnParam{RetryCount: RetryNone, RNRRetryCount: RetryNone,
		ResponderResources: ResourcesNone, InitiatorDepth: ResourcesNone})
	putConnParam(&k, &zero)
	if k.RetryCount != 0 || k.RNRRetryCount != 0 || k.ResponderResources != 0 || k.InitiatorDepth != 0 {
		t.Fatalf("ucma conn_param of the sentinels %+v", k)
	}
	cp = engine.ConnectParams{}
	putEngineConnect(&cp, &zero, ece.ECE{})
	if cp.RetryCount != 0 || cp.RNRRetryCount != 0 || cp.ResponderResources != 0 || cp.InitiatorDepth != 0 {
		t.Fatalf("engine connect params of the sentinels %+v", cp)
	}
	if ap := engineAccept(&zero, ece.ECE{}); ap.RNRRetryCount != 0 || ap.ResponderResources != 0 || ap.InitiatorDepth != 0 {
		t.Fatalf("engine accept params of the sentinels %+v", ap)
	}

	// Passive side: a partial ConnParam takes the REQ's resources and RNR 7.
	l, _ := c.CreateID(rdma.PortSpaceTCP, nil)
	if err := l.Bind(netip.MustParseAddrPort("0.0.0.0:7174")); err != nil {
		t.Fatal(err)
	}
	if err := l.Listen(0); err != nil {
		t.Fatal(err)
	}
	f.push(rawEvent{uid: l.uid, handle: 77, typ: EventConnectRequest,
		conn: ConnParam{InitiatorDepth: 3, ResponderResources: 4}})
	ev, err := c.GetEvent(ctx)
	if err != nil {
		t.Fatal(err)
	}
	nid := ev.ID
	if err := ev.Ack(); err != nil {
		t.Fatal(err)
	}
	if err := nid.Accept(ctx, &ConnParam{QPNum: 0x22, PrivateData: []byte("rep")}); err != nil {
		t.Fatal(err)
	}
	a := *f.accepts[0].param
	if want := (counts{4, 3, 7, 7}); countsOf(a) != want {
		t.Fatalf("partial Accept reached the backend as %+v, want %+v", countsOf(a), want)
	}
	if ap := engineAccept(&a, ece.ECE{}); ap.RNRRetryCount != 7 || ap.ResponderResources != 4 || ap.InitiatorDepth != 3 {
		t.Fatalf("engine accept params %+v", ap)
	}
}
