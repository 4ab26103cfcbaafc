//go:build linux

package cm

import (
	"encoding/binary"
	"testing"

	"github.com/go-rdma/rdmacm/ece"
	"github.com/go-rdma/rdmacm/internal/abi"
)

// TestDecodeEventOffsets fills a GET_EVENT response byte by byte at the
// offsets of rdma_ucm_event_resp (rdma_user_cm.h; checked against the C
// header by internal/abi's layout test) and decodes it.
func TestDecodeEventOffsets(t *testing.T) {
	var raw [abi.SizeofUcmaEventResp]byte
	ne := binary.NativeEndian
	ne.PutUint64(raw[0:], 0x1122334455667788) // uid
	ne.PutUint32(raw[8:], 42)                 // id
	ne.PutUint32(raw[12:], uint32(EventConnectRequest))
	ne.PutUint32(raw[16:], uint32(0xfffffff5)) // status -11
	// param.conn
	ne.PutUint32(raw[20:], 0xabcdef) // qp_num
	ne.PutUint32(raw[24:], 0x01234567)
	copy(raw[28:], "private")
	raw[284] = 56                       // private_data_len
	raw[285] = 1                        // srq
	raw[286] = 3                        // responder_resources
	raw[287] = 4                        // initiator_depth
	raw[288] = 1                        // flow_control
	raw[289] = 6                        // retry_count
	raw[290] = 7                        // rnr_retry_count
	ne.PutUint32(raw[328:], 0x15b3)     // ece.vendor_id
	ne.PutUint32(raw[332:], 0x30000001) // ece.attr_mod

	resp := abi.Decode[abi.UcmaEventResp](raw[:])
	ev := decodeEvent(&resp)
	if ev.uid != 0x1122334455667788 || ev.handle != 42 || ev.typ != EventConnectRequest || ev.status != -11 {
		t.Fatalf("header %+v", ev)
	}
	if ev.ece != (ece.ECE{VendorID: 0x15b3, Options: 0x30000001}) {
		t.Fatalf("ECE %v, want it read at offset 328", ev.ece)
	}
	c := ev.conn
	if c.QPNum != 0xabcdef || c.QKey != 0x01234567 || len(c.PrivateData) != 56 || string(c.PrivateData[:7]) != "private" ||
		!c.SRQ || c.ResponderResources != 3 || c.InitiatorDepth != 4 || !c.FlowControl || c.RetryCount != 6 || c.RNRRetryCount != 7 {
		t.Fatalf("conn %+v", c)
	}

	// The same bytes as param.ud: qp_num, qkey, then the AH at 28.
	raw[28+16] = 0 // flow label bytes
	ne.PutUint32(raw[44:], 0x54321)
	raw[48], raw[49], raw[50] = 2, 64, 0x20 // sgid_index, hop_limit, traffic_class
	ne.PutUint16(raw[52:], 0x1234)          // dlid
	raw[54], raw[57], raw[58] = 5, 1, 1     // sl, is_global, port_num
	raw[316] = 9                            // ud private_data_len
	resp = abi.Decode[abi.UcmaEventResp](raw[:])
	ev = decodeEvent(&resp)
	u := ev.ud
	if u.QPNum != 0xabcdef || u.QKey != 0x01234567 || u.AH.GRH.FlowLabel != 0x54321 || u.AH.GRH.SGIDIndex != 2 ||
		u.AH.GRH.HopLimit != 64 || u.AH.GRH.TrafficClass != 0x20 || u.AH.DLID != 0x1234 || u.AH.SL != 5 ||
		!u.AH.IsGlobal || u.AH.PortNum != 1 || len(u.PrivateData) != 9 {
		t.Fatalf("ud %+v", u)
	}
	// A decoded event owns its private data.
	raw[60] = 'X'
	if u.PrivateData[0] == 'X' {
		t.Fatal("private data aliases the response buffer")
	}
}

func TestParseSAPathRecord(t *testing.T) {
	var b [64]byte
	b[8], b[23] = 0xfe, 0x02  // DGID
	b[24], b[39] = 0xfe, 0x01 // SGID
	binary.BigEndian.PutUint16(b[40:], 0x11)
	binary.BigEndian.PutUint16(b[42:], 0x22)
	binary.BigEndian.PutUint32(b[44:], 0x80000000|0x12345<<8|64) // raw traffic, flow label, hop limit
	b[48] = 0x28                                                 // traffic class
	b[49] = 0x81                                                 // reversible, numb path 1
	binary.BigEndian.PutUint16(b[50:], 0xffff)
	binary.BigEndian.PutUint16(b[52:], 0x0003) // SL 3
	b[54] = 0x80 | 5                           // MTU selector 2, MTU 4096
	b[55] = 0x80 | 16                          // rate 100G
	b[56] = 0x80 | 18                          // packet life time
	pr := parseSAPathRecord(b[:])
	if pr.DGID[0] != 0xfe || pr.DGID[15] != 2 || pr.SGID[15] != 1 || pr.DLID != 0x11 || pr.SLID != 0x22 ||
		pr.FlowLabel != 0x12345 || pr.HopLimit != 64 || pr.TrafficClass != 0x28 || !pr.Reversible ||
		pr.PKey != 0xffff || pr.SL != 3 || pr.MTU != 5 || pr.Rate != 16 || pr.PacketLifeTime != 18 {
		t.Fatalf("%+v", pr)
	}
}
