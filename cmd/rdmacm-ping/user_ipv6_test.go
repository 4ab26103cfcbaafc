package main

import (
	"testing"
	"time"
)

// TestUserBackendIPv6: rdmacm-ping on the user-space CM against rping on
// the kernel CM over IPv6 RoCE v2 GIDs (fd00::1, fd00::2), both roles,
// data checked: the engine resolves the route from the IPv6 routing
// table, carries the rdma_cm's IPv6 header and answers a REQ that
// carries one, on a listener bound to an IPv6 address and on one bound
// to the wildcard.
func TestUserBackendIPv6(t *testing.T) {
	p := userPair(t)
	a, b := p.A, p.B
	addULAs(t, ctxFor(t, time.Minute), a, b)
	t.Run("go-client-rping-server", func(t *testing.T) {
		ctx := ctxFor(t, 2*time.Minute)
		wait := cServer(t, ctx, b, 7174, "rping -s -v -a fd00::2 -C 5")
		cOut, _, cCode := runOn(t, ctx, a, userPing+" -c -v -V -a fd00::2 -C 5")
		sOut, sCode := wait()
		if cCode != 0 || sCode != 0 {
			t.Fatalf("exit codes: rdmacm-ping %d, rping %d", cCode, sCode)
		}
		wantPings(t, "rdmacm-ping", cOut, "ping data: ", 5)
		wantPings(t, "rping -s", sOut, "server ping data: ", 5)
	})
	for _, bind := range []string{"fd00::1", "::"} {
		t.Run("rping-client-go-server-"+bind, func(t *testing.T) {
			ctx := ctxFor(t, 2*time.Minute)
			wait := goServer(t, ctx, a, "-s -v -a "+bind)
			cOut, _, cCode := runOn(t, ctx, b, "rping -c -v -V -a fd00::1 -C 5")
			sOut, _, sCode := wait()
			if cCode != 0 || sCode != 0 {
				t.Fatalf("exit codes: rping %d, rdmacm-ping %d", cCode, sCode)
			}
			wantPings(t, "rping -c", cOut, "ping data: ", 5)
			wantPings(t, "rdmacm-ping -s", sOut, "server ping data: ", 5)
		})
	}
}
