package rdmacm

import (
	"testing"

	"github.com/go-rdma/rdmacm/cm"
)

// TestEndpointConnParam checks the cm.ConnParam an endpoint gives Connect
// and Accept: defaults pass as they are, explicit zeros (negative
// options) become cm's sentinels, since a zero cm.ConnParam field means
// librdmacm's default.
func TestEndpointConnParam(t *testing.T) {
	for name, tc := range map[string]struct {
		o                      *EndpointOptions
		resp, init, retry, rnr uint8
	}{
		"default": {nil, cm.MaxResources, cm.MaxResources, 7, 7},
		"zero":    {&EndpointOptions{RetryCount: -1, RNRRetryCount: -1, ResponderResources: -1, InitiatorDepth: -1}, cm.ResourcesNone, cm.ResourcesNone, cm.RetryNone, cm.RetryNone},
		"set":     {&EndpointOptions{RetryCount: 3, RNRRetryCount: 5, ResponderResources: 1, InitiatorDepth: 2, PrivateData: []byte("x")}, 1, 2, 3, 5},
	} {
		c, err := tc.o.config()
		if err != nil {
			t.Fatal(err)
		}
		p := c.connParam(9)
		if p.ResponderResources != tc.resp || p.InitiatorDepth != tc.init || p.RetryCount != tc.retry || p.RNRRetryCount != tc.rnr || p.QPNum != 9 {
			t.Errorf("%s: %+v", name, p)
		}
		if tc.o != nil && string(p.PrivateData) != string(tc.o.PrivateData) {
			t.Errorf("%s: private data %q", name, p.PrivateData)
		}
	}
}
