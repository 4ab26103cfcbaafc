//go:build linux

package cm

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/go-rdma/rdmacm/internal/abi"
)

// Offsets in struct rdma_ucm_event_resp (rdma_user_cm.h; the same ones
// TestDecodeEventOffsets spells out). The param union starts at 20: conn
// and ud share its bytes.
const (
	evUID, evID, evEvent, evStatus  = 0, 8, 12, 16
	evQPNum, evQKey                 = 20, 24
	evConnPData, evConnPDataLen     = 28, 284
	evConnFlags                     = 285 // srq, responder_resources, initiator_depth, flow_control, retry_count, rnr_retry_count
	evUDAH, evUDPData, evUDPDataLen = 28, 60, 316
	evECEVendor, evECEAttrMod       = 328, 332
)

// ucmaEventSeed builds a GET_EVENT response the way the kernel fills one
// (ucma_copy_conn_event / ucma_copy_ud_event in drivers/infiniband/core/ucma.c).
func ucmaEventSeed(typ EventType, status int32, conn bool, pdata []byte, ece [2]uint32) []byte {
	var raw [abi.SizeofUcmaEventResp]byte
	ne := binary.NativeEndian
	ne.PutUint64(raw[evUID:], 0xffff8881_2345_6000) // the user's context pointer
	ne.PutUint32(raw[evID:], 3)
	ne.PutUint32(raw[evEvent:], uint32(typ))
	ne.PutUint32(raw[evStatus:], uint32(status))
	ne.PutUint32(raw[evQPNum:], 0x11)
	if conn {
		copy(raw[evConnPData:], pdata)
		raw[evConnPDataLen] = byte(len(pdata))
		copy(raw[evConnFlags:], []byte{0, 1, 1, 1, 7, 7}) // rping's defaults
	} else {
		ne.PutUint32(raw[evQKey:], 0x80010000)
		copy(raw[evUDAH:], []byte{0: 0, 10: 0xff, 11: 0xff, 12: 192, 13: 0, 14: 2, 15: 2}) // dgid ::ffff:192.0.2.2
		raw[evUDAH+21] = 64                                                                // hop_limit
		raw[evUDAH+29], raw[evUDAH+30] = 1, 1                                              // is_global, port_num
		copy(raw[evUDPData:], pdata)
		raw[evUDPDataLen] = byte(len(pdata))
	}
	ne.PutUint32(raw[evECEVendor:], ece[0])
	ne.PutUint32(raw[evECEAttrMod:], ece[1])
	return raw[:]
}

// FuzzDecodeUcmaEvent fills a GET_EVENT response with the fuzzer's bytes
// (shorter input leaves the tail zero, as a kernel writing only
// UcmaGetEventMinOut bytes does) and decodes it. The event must echo the
// response's fields at their C offsets, private data must be at most the
// kernel's RDMA_MAX_PRIVATE_DATA (the PrivateData arrays) and be a copy,
// and decoding must not write to the response.
func FuzzDecodeUcmaEvent(f *testing.F) {
	pdata := bytes.Repeat([]byte("rping"), 12)[:56] // a REQ's 56 bytes after the CMA header
	f.Add(ucmaEventSeed(EventConnectRequest, 0, true, pdata, [2]uint32{0x15b3, 0x30000001}))
	f.Add(ucmaEventSeed(EventEstablished, 0, true, nil, [2]uint32{0x15b3, 0x30000003}))
	f.Add(ucmaEventSeed(EventRejected, 35, true, make([]byte, 148), [2]uint32{}))    // REJ private data
	f.Add(ucmaEventSeed(EventUnreachable, -110, true, nil, [2]uint32{}))             // -ETIMEDOUT
	f.Add(ucmaEventSeed(EventEstablished, 0, false, make([]byte, 136), [2]uint32{})) // SIDR REP
	f.Add(ucmaEventSeed(EventAddrResolved, 0, true, nil, [2]uint32{})[:abi.UcmaGetEventMinOut])
	f.Add(bytes.Repeat([]byte{0xff}, abi.SizeofUcmaEventResp))
	f.Fuzz(func(t *testing.T, data []byte) {
		var resp abi.UcmaEventResp
		raw := abi.Bytes(&resp)
		copy(raw, data)
		in := append([]byte(nil), raw...)
		ev := decodeEvent(&resp)
		if !bytes.Equal(raw, in) {
			t.Fatal("decodeEvent wrote to the response")
		}
		ne := binary.NativeEndian
		if ev.uid != ne.Uint64(in[evUID:]) || ev.handle != ne.Uint32(in[evID:]) ||
			ev.typ != EventType(ne.Uint32(in[evEvent:])) || ev.status != int32(ne.Uint32(in[evStatus:])) {
			t.Fatalf("header uid %#x id %d event %d status %d from % x", ev.uid, ev.handle, ev.typ, ev.status, in[:20])
		}
		if ev.ece.VendorID != ne.Uint32(in[evECEVendor:]) || ev.ece.Options != ne.Uint32(in[evECEAttrMod:]) {
			t.Fatalf("ECE %+v from % x", ev.ece, in[evECEVendor:])
		}

		c := ev.conn
		fl := in[evConnFlags:]
		if c.QPNum != ne.Uint32(in[evQPNum:]) || c.QKey != ne.Uint32(in[evQKey:]) || c.SRQ != (fl[0] != 0) ||
			c.ResponderResources != fl[1] || c.InitiatorDepth != fl[2] || c.FlowControl != (fl[3] != 0) ||
			c.RetryCount != fl[4] || c.RNRRetryCount != fl[5] {
			t.Fatalf("conn %+v from % x", c, fl[:6])
		}
		checkFuzzPrivateData(t, "conn", c.PrivateData, in[evConnPData:], int(in[evConnPDataLen]), len(resp.Conn().PrivateData))

		u := ev.ud
		ah := in[evUDAH:evUDPData]
		if u.QPNum != ne.Uint32(in[evQPNum:]) || u.QKey != ne.Uint32(in[evQKey:]) ||
			!bytes.Equal(u.AH.GRH.DGID[:], ah[0:16]) || u.AH.GRH.FlowLabel != ne.Uint32(ah[16:]) ||
			u.AH.GRH.SGIDIndex != ah[20] || u.AH.GRH.HopLimit != ah[21] || u.AH.GRH.TrafficClass != ah[22] ||
			u.AH.DLID != ne.Uint16(ah[24:]) || u.AH.SL != ah[26] || u.AH.SrcPathBits != ah[27] ||
			u.AH.StaticRate != ah[28] || u.AH.IsGlobal != (ah[29] != 0) || u.AH.PortNum != ah[30] {
			t.Fatalf("ud %+v from % x", u, ah)
		}
		checkFuzzPrivateData(t, "ud", u.PrivateData, in[evUDPData:], int(in[evUDPDataLen]), len(resp.UD().PrivateData))

		// The event owns its private data: scribbling over the response
		// (the next GET_EVENT reuses it) leaves the event alone.
		for i := range raw {
			raw[i] = ^raw[i]
		}
		if !bytes.Equal(c.PrivateData, in[evConnPData:][:len(c.PrivateData)]) || !bytes.Equal(u.PrivateData, in[evUDPData:][:len(u.PrivateData)]) {
			t.Fatal("private data aliases the response buffer")
		}
	})
}

func checkFuzzPrivateData(t *testing.T, which string, got, field []byte, n, max int) {
	t.Helper()
	if max != abi.UcmaMaxPrivateData || len(got) > max || len(got) != n || !bytes.Equal(got, field[:n]) {
		t.Fatalf("%s private data: %d bytes (len field %d, array %d, RDMA_MAX_PRIVATE_DATA %d)", which, len(got), n, max, abi.UcmaMaxPrivateData)
	}
}
