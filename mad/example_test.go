package mad_test

import (
	"fmt"
	"io"
	"os"

	"github.com/go-rdma/rdmacm/mad"
	"github.com/go-rdma/rdmacm/mad/pcap"
	"github.com/go-rdma/rdmacm/mad/roce"
)

// This example takes the REQ a Linux 6.1 kernel sent over soft-RoCE,
// captured by tcpdump (testdata/captures/ece-req-rep.pcap: librdmacm
// offering ECE vendor 0x15b3 options 0x30000001), and reads it: the frame
// is unwrapped with mad/roce, the MAD parsed once, and its fields read in
// place, down to the rdma_cm IP header at the start of the private data.
func ExampleParse() {
	f, err := os.Open("testdata/captures/ece-req-rep.pcap")
	if err != nil {
		panic(err)
	}
	defer f.Close()
	r, err := pcap.NewReader(f)
	if err != nil {
		panic(err)
	}
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			panic(err)
		}
		p, err := roce.Decode(rec.Data)
		if err != nil {
			panic(err)
		}
		b, err := p.MAD()
		if err != nil {
			panic(err)
		}
		v, err := mad.Parse(b)
		if err != nil {
			panic(err)
		}
		req, ok := v.(mad.REQView)
		if !ok {
			continue // the REP, RTU, DREQ and DREP that follow
		}
		fmt.Println(mad.Describe(b))
		ps, port, _ := mad.SplitServiceID(req.ServiceID())
		fmt.Printf("service: %v port %d\n", ps, port)
		fmt.Printf("QPN %#x, PSN %#x, MTU %v, retries %d, RNR retries %d\n",
			req.LocalQPN(), req.StartingPSN(), req.PathMTU(), req.RetryCount(), req.RNRRetryCount())
		fmt.Printf("responder resources %d, initiator depth %d\n", req.ResponderResources(), req.InitiatorDepth())
		path := req.Primary()
		fmt.Printf("path: GID %v -> %v, hop limit %d\n", path.LocalGID.Addr().Unmap(), path.RemoteGID.Addr().Unmap(), path.HopLimit)
		fmt.Println("ECE:", req.ECE())
		ip, err := mad.ParseIPHeader(req.PrivateData())
		if err != nil {
			panic(err)
		}
		fmt.Printf("rdma_cm header: %v:%d -> %v\n", ip.Src(), ip.SrcPort(), ip.Dst())
		return
	}
	// Output:
	// REQ lcid=0x73057691 sid=0x1061d2f qpn=0x13 psn=0x78b33c resp=20/20 retries=15 plt+1=19 ece=0x15b3/0x30000001
	// service: TCP port 7471
	// QPN 0x13, PSN 0x78b33c, MTU 1024, retries 7, RNR retries 7
	// responder resources 1, initiator depth 1
	// path: GID 192.0.2.1 -> 192.0.2.2, hop limit 64
	// ECE: vendor=0x15b3 options=0x30000001
	// rdma_cm header: 192.0.2.1:56274 -> 192.0.2.2
}
