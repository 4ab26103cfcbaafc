package mad

import (
	"testing"

	"github.com/go-rdma/rdmacm/ece"
	"github.com/go-rdma/rdmacm/rdma"
)

func TestDescribe(t *testing.T) {
	marshal := func(m Message) []byte {
		b := make([]byte, MADSize)
		if _, err := m.MarshalTo(b); err != nil {
			t.Fatal(err)
		}
		return b
	}
	req := &REQ{LocalCommID: 0x11223344, ServiceID: ServiceID(rdma.PortSpaceTCP, 7174), LocalQPN: 0x11, StartingPSN: 0x123456,
		LocalCMResponseTimeout: 20, RemoteCMResponseTimeout: 18, MaxCMRetries: 15, Primary: Path{LocalACKTimeout: 14}}
	req.SetECE(ece.ECE{VendorID: 0x15b3, Options: 0x30000001})
	rej := &REJ{LocalCommID: 1, RemoteCommID: 2, Reason: RejectTimeout}
	if err := rej.SetARI([]byte{0xca, 0xfe}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		in   []byte
		want string
	}{
		{nil, "malformed: CM MAD: 0 bytes, need 256: mad: buffer too short"},
		{marshal(req), "REQ lcid=0x11223344 sid=0x1061c06 qpn=0x11 psn=0x123456 resp=20/18 retries=15 plt+1=14 ece=0x15b3/0x30000001"},
		{marshal(&RTU{LocalCommID: 1, RemoteCommID: 0xabcdef01}), "RTU lcid=0x00000001 rcid=0xabcdef01"},
		{marshal(rej), "REJ lcid=0x00000001 rcid=0x00000002 rejected=REQ reason=4 ari=cafe"},
		{marshal(&SIDRREP{RequestID: 7, Status: SIDRNoQP}), "SIDR_REP reqid=0x00000007 status=no QP qpn=0x0 qkey=0x0"},
		{marshal(&APR{LocalCommID: 1}), "APR"},
	}
	for _, tt := range tests {
		if got := Describe(tt.in); got != tt.want {
			t.Errorf("Describe = %q\nwant       %q", got, tt.want)
		}
	}
}
