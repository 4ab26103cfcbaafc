package rdmacm

import (
	"errors"
	"testing"

	"github.com/go-rdma/rdmacm/ece"
	"github.com/go-rdma/rdmacm/rdma"
)

func TestOptionDefaults(t *testing.T) {
	def := config{backend: rdma.BackendAuto, sendWR: 16, recvWR: 16, retry: 7, rnr: 7, resp: 0xff, init: 0xff, reply: ece.LibrdmacmReply}
	check := func(name string, o *EndpointOptions, want config) {
		t.Helper()
		got, err := o.config()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got.backend != want.backend || got.sendWR != want.sendWR || got.recvWR != want.recvWR || got.inline != want.inline ||
			got.retry != want.retry || got.rnr != want.rnr || got.resp != want.resp || got.init != want.init || got.spin != want.spin {
			t.Fatalf("%s: config %+v, want %+v", name, got, want)
		}
		if got.reply == nil {
			t.Fatalf("%s: no ECE reply policy", name)
		}
	}
	check("nil", nil, def)
	check("zero", &EndpointOptions{}, def)
	// The new user's trap: options set only for private data keep the
	// retry counts and resources.
	pd := def
	pd.privateData = []byte("x")
	check("private data only", &EndpointOptions{PrivateData: []byte("x")}, pd)
	zero := def
	zero.retry, zero.rnr, zero.resp, zero.init = 0, 0, 0, 0
	check("explicit zero", &EndpointOptions{RetryCount: -1, RNRRetryCount: -1, ResponderResources: -1, InitiatorDepth: -1}, zero)
	set := config{backend: rdma.BackendUser, sendWR: 4, recvWR: 1000, inline: 64, retry: 3, rnr: 5, resp: 1, init: 2, spin: 100}
	check("set", &EndpointOptions{Backend: rdma.BackendUser, MaxSendWR: 4, MaxRecvWR: 1000, MaxInline: 64, RetryCount: 3,
		RNRRetryCount: 5, ResponderResources: 1, InitiatorDepth: 2, Spin: 100}, set)
	// RecvSlots raises the default receive queue to hold them.
	slots := def
	slots.recvWR = 64
	check("recv slots", &EndpointOptions{RecvSlots: 64, RecvSlotSize: 128}, slots)
}

func TestOptionErrors(t *testing.T) {
	for name, o := range map[string]*EndpointOptions{
		"retry 8":         {RetryCount: 8},
		"rnr 8":           {RNRRetryCount: 8},
		"resources 255":   {ResponderResources: 255},
		"depth 300":       {InitiatorDepth: 300},
		"send WR -1":      {MaxSendWR: -1},
		"recv WR -1":      {MaxRecvWR: -1},
		"ECE vendor 0":    {ECE: &ece.ECE{Options: 1}},
		"ECE comp mask":   {ECE: &ece.ECE{VendorID: 1, CompMask: 1}},
		"ECE vendor 2^24": {ECE: &ece.ECE{VendorID: 1 << 24}},
		"slots over WRs":  {RecvSlots: 8, MaxRecvWR: 4},
		"slots -1":        {RecvSlots: -1},
		"slot size -1":    {RecvSlots: 1, RecvSlotSize: -1},
	} {
		if _, err := o.config(); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", name, err)
		}
	}
}
