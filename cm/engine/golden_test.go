package engine_test

import (
	"errors"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/cm/engine"
	"github.com/go-rdma/rdmacm/mad"
	"github.com/go-rdma/rdmacm/mad/pcap"
	"github.com/go-rdma/rdmacm/mad/roce"
	"github.com/go-rdma/rdmacm/rdma"
	"github.com/google/go-cmp/cmp"
)

const capturesDir = "../../mad/testdata/captures"

// readCapture returns the CM MADs of a golden capture in order.
func readCapture(t testing.TB, name string) [][]byte {
	t.Helper()
	f, err := os.Open(filepath.Join(capturesDir, name))
	if err != nil {
		t.Fatalf("golden capture: %v", err)
	}
	defer f.Close()
	r, err := pcap.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var mads [][]byte
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		p, err := roce.Decode(rec.Data)
		if err != nil {
			t.Fatal(err)
		}
		m, err := p.MAD()
		if err != nil {
			t.Fatal(err)
		}
		mads = append(mads, append([]byte(nil), m...))
	}
	return mads
}

// scriptSource returns the IDs and PSNs a capture shows, with the TIDs a
// little-endian kernel derives from them (MAD agent hi_tid 2).
type scriptSource struct{ ids, psns []uint32 }

func (s *scriptSource) CommID() uint32 {
	id := s.ids[0]
	if len(s.ids) > 1 {
		s.ids = s.ids[1:]
	}
	return id
}

func (s *scriptSource) PSN() uint32 {
	p := s.psns[0]
	if len(s.psns) > 1 {
		s.psns = s.psns[1:]
	}
	return p
}

func (s *scriptSource) TID(id uint32) uint64 { return engine.KernelTID(2, id) }

// decodeAny decodes a MAD into its struct for a field-by-field diff.
func decodeAny(t testing.TB, b []byte) mad.Message {
	t.Helper()
	m, err := mad.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestGoldenKernelExchange replays each golden capture (Linux 6.1 rdma_cm
// on rxe, mad/testdata/captures) with two engines configured as the
// kernels were: the Source hands out the capture's communication IDs and
// PSNs, and everything else comes from the engine. Every MAD the engines
// send must equal the kernel's byte for byte; a difference is reported
// field by field.
func TestGoldenKernelExchange(t *testing.T) {
	for _, tc := range []struct {
		file   string
		reject bool
	}{{"rping-cm.pcap", false}, {"ece-req-rep.pcap", false}, {"ece-rej35.pcap", true}} {
		t.Run(tc.file, func(t *testing.T) {
			golden := readCapture(t, tc.file)
			req, err := mad.ParseREQ(golden[0])
			if err != nil {
				t.Fatal(err)
			}
			var r mad.REQ
			req.Decode(&r)
			hdr, err := mad.ParseIPHeader(r.PrivateData[:])
			if err != nil {
				t.Fatal(err)
			}
			_, dport, _ := mad.SplitServiceID(r.ServiceID)

			pass := &scriptSource{}
			var rep mad.REP
			if !tc.reject {
				v, err := mad.ParseREP(golden[1])
				if err != nil {
					t.Fatal(err)
				}
				v.Decode(&rep)
				pass.ids, pass.psns = []uint32{0xffff0001, rep.LocalCommID}, []uint32{rep.StartingPSN}
			} else {
				rej, _ := mad.ParseREJ(golden[1])
				pass.ids, pass.psns = []uint32{0xffff0001, rej.LocalCommID()}, []uint32{1}
			}
			act := &scriptSource{ids: []uint32{r.LocalCommID}, psns: []uint32{r.StartingPSN}}
			mk := func(guid uint64, src engine.Source) *engine.Engine {
				e, err := engine.New(engine.Config{CAGUID: guid, Source: src, ACKDelay: rxeACKDelay})
				if err != nil {
					t.Fatal(err)
				}
				return e
			}
			a := mk(r.LocalCAGUID, act)
			b := mk(rep.LocalCAGUID, pass)
			now := epoch
			var sent [][]byte
			take := func(e *engine.Engine) [][]byte {
				var out [][]byte
				if e.HasReady() {
					for _, o := range e.Ready().Messages {
						out = append(out, append([]byte(nil), o.MAD[:]...))
					}
					e.Advance()
				}
				sent = append(sent, out...)
				return out
			}
			from := func(g rdma.GID) engine.Addr { return engine.Addr{Port: 1, GID: g, QPN: 1, HopLimit: 64} }
			deliver := func(to *engine.Engine, src rdma.GID, msgs [][]byte) {
				for _, m := range msgs {
					to.Receive(now, from(src), m)
				}
			}
			if _, err := b.Listen(now, engine.ListenParams{PortSpace: rdma.PortSpaceTCP, Port: dport}); err != nil {
				t.Fatal(err)
			}
			id, err := a.Connect(now, engine.ConnectParams{
				PortSpace: rdma.PortSpaceTCP,
				Src:       netip.AddrPortFrom(hdr.Src(), hdr.SrcPort()), Dst: netip.AddrPortFrom(hdr.Dst(), dport),
				Path: engine.Path{
					PathRecord: rdma.PathRecord{PKey: r.PartitionKey, SGID: r.Primary.LocalGID, DGID: r.Primary.RemoteGID, HopLimit: r.Primary.HopLimit, Rate: r.Primary.PacketRate, MTU: r.PathMTU, PacketLifeTime: rocePLT},
					Port:       1,
					RoCE:       true,
				},
				QPN: r.LocalQPN, ResponderResources: r.ResponderResources, InitiatorDepth: r.InitiatorDepth,
				RetryCount: r.RetryCount, RNRRetryCount: r.RNRRetryCount, ECE: r.ECE(),
			})
			if err != nil {
				t.Fatal(err)
			}
			deliver(b, r.Primary.LocalGID, take(a))
			var evs []engine.Event
			if b.HasReady() {
				evs = append(evs, b.Ready().Events...)
			}
			if len(evs) != 1 || evs[0].Type != engine.EventConnectRequest {
				t.Fatalf("passive events %v", evs)
			}
			passive := evs[0].ID
			if tc.reject {
				if err := b.Reject(now, passive, mad.RejectVendorOptionNotSupported, nil, nil); err != nil {
					t.Fatal(err)
				}
				deliver(a, r.Primary.RemoteGID, take(b))
			} else {
				if err := b.Accept(now, passive, engine.AcceptParams{QPN: rep.LocalQPN,
					ResponderResources: rep.ResponderResources, InitiatorDepth: rep.InitiatorDepth,
					RNRRetryCount: rep.RNRRetryCount, ECE: rep.ECE()}); err != nil {
					t.Fatal(err)
				}
				deliver(a, r.Primary.RemoteGID, take(b))
				take(a) // events only
				if err := a.Establish(now, id, nil); err != nil {
					t.Fatal(err)
				}
				deliver(b, r.Primary.LocalGID, take(a))
				take(b)
				now = now.Add(300 * time.Millisecond)
				if err := a.Disconnect(now, id, nil); err != nil {
					t.Fatal(err)
				}
				deliver(b, r.Primary.LocalGID, take(a))
				take(b)
				if err := b.Disconnect(now, passive, nil); err != nil {
					t.Fatal(err)
				}
				deliver(a, r.Primary.RemoteGID, take(b))
			}
			if len(sent) != len(golden) {
				t.Fatalf("engines sent %d MADs, the kernels %d", len(sent), len(golden))
			}
			for i := range golden {
				if string(sent[i]) == string(golden[i][:mad.MADSize]) {
					continue
				}
				t.Errorf("MAD %d (%s) differs from the kernel's:\n%s", i, mad.Describe(golden[i]),
					cmp.Diff(decodeAny(t, golden[i]), decodeAny(t, sent[i])))
			}
		})
	}
}
