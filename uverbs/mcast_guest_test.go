package uverbs

import (
	"errors"
	"net"
	"net/netip"
	"testing"

	"github.com/go-rdma/rdmacm/qp"
	"github.com/go-rdma/rdmacm/rdma"
)

// TestGuestMulticastLoopback attaches a UD QP to an IPv4 group's MGID and
// sends to the group from a second QP on the same rxe device: the
// netdev's IP membership (held here by a UDP socket, as the CM's join
// holds it) loops the RoCE v2 packet back to the attached QP. Detach
// errors and the argument checks run on both interfaces.
func TestGuestMulticastLoopback(t *testing.T) {
	group := netip.MustParseAddr("239.1.2.3")
	mgid := rdma.GID(netip.AddrFrom16(group.As16()).As16()) // ::ffff:239.1.2.3
	for _, iface := range interfaces {
		t.Run(iface.String(), func(t *testing.T) {
			x := openGuest(t, iface)
			r := newRig(t, x, 8192)
			ifi, err := net.InterfaceByName("eth0")
			if err != nil {
				t.Fatal(err)
			}
			sock, err := net.ListenMulticastUDP("udp4", ifi, &net.UDPAddr{IP: net.IP(group.AsSlice()), Port: 5999})
			if err != nil {
				t.Fatal(err)
			}
			defer sock.Close()
			snd, rcv := r.udQP(t, 0x01234567), r.udQP(t, 0x01234567)
			if err := rcv.AttachMcast(mgid, 0); err != nil {
				t.Fatal(err)
			}
			if err := rcv.AttachMcast(mgid, 0); err != nil {
				t.Fatalf("second attach: %v", err)
			}
			ah, err := r.pd.CreateAH(qp.AH{IsGlobal: true, PortNum: 1, GRH: qp.GRH{DGID: mgid, SGIDIndex: uint8(r.gid.Index), HopLimit: 64}})
			if err != nil {
				t.Fatal(err)
			}
			defer ah.Close()
			mem := r.buf.Bytes()
			const dgram = "to the group"
			copy(mem, dgram)
			if err := rcv.PostRecv([]RecvWR{{ID: 1, SGEs: []SGE{r.mr.SGE(4096, 40+256)}}}); err != nil {
				t.Fatal(err)
			}
			if err := snd.PostSend([]SendWR{{ID: 2, Opcode: OpSend, Flags: SendSignaled, SGEs: []SGE{r.mr.SGE(0, len(dgram))}, AH: ah, RemoteQPN: 0xffffff, RemoteQKey: 0x01234567}}); err != nil {
				t.Fatal(err)
			}
			for _, wc := range waitWC(t, r, 2) {
				if wc.ID == 1 && (wc.ByteLen != uint32(40+len(dgram)) || wc.SrcQP != snd.Num()) {
					t.Errorf("multicast receive %+v", wc)
				}
			}
			if got := string(mem[4096+40 : 4096+40+len(dgram)]); got != dgram {
				t.Errorf("multicast payload %q", got)
			}
			if err := rcv.DetachMcast(mgid, 0); err != nil {
				t.Fatal(err)
			}
			if err := rcv.DetachMcast(mgid, 0); !errors.Is(err, ErrInvalidArgument) {
				t.Errorf("detach of a group not attached: %v, want ErrInvalidArgument", err)
			}
			unicast := rdma.GID(netip.AddrFrom16(netip.MustParseAddr("192.0.2.9").As16()).As16())
			if err := rcv.AttachMcast(unicast, 0); !errors.Is(err, ErrInvalidArgument) {
				t.Errorf("attach to a unicast GID: %v, want ErrInvalidArgument", err)
			}
			rc := r.rcQP(t, qp.RC)
			if err := rc.AttachMcast(mgid, 0); !errors.Is(err, ErrInvalidArgument) {
				t.Errorf("attach of an RC QP: %v, want ErrInvalidArgument", err)
			}
			// Destroying an attached QP detaches it.
			if err := snd.AttachMcast(mgid, 0); err != nil {
				t.Fatal(err)
			}
			for _, q := range []*QP{snd, rcv, rc} {
				if err := q.Close(); err != nil {
					t.Error(err)
				}
			}
			if err := snd.DetachMcast(mgid, 0); !errors.Is(err, ErrInvalidArgument) {
				t.Errorf("detach after Close: %v, want ErrInvalidArgument", err)
			}
			// So does Context.Close (the cleanup checks its error).
			if err := r.udQP(t, 0x01234567).AttachMcast(mgid, 0); err != nil {
				t.Fatal(err)
			}
		})
	}
}
