package uverbs

import (
	"bytes"
	"encoding/binary"
	"testing"
	"unsafe"

	"github.com/go-rdma/rdmacm/internal/abi"
	"github.com/go-rdma/rdmacm/internal/unix"
	"github.com/go-rdma/rdmacm/rdma"
)

// Offsets of a mapped rxe queue (struct rxe_queue_buf, rdma_user_rxe.h)
// and of struct ib_uverbs_wc (ib_user_verbs.h), independent of the Go
// structs.
const (
	rqLog2, rqMask, rqProd, rqCons, rqData = 0, 4, 128, 256, 384
	wcSize                                 = 48
)

// alignedCopy copies b into 8-byte aligned memory, as a mapping is: the
// indices are read with sync/atomic.
func alignedCopy(b []byte) []byte {
	words := make([]uint64, (len(b)+7)/8)
	if len(words) == 0 {
		return []byte{}
	}
	mem := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(b))
	copy(mem, b)
	return mem
}

// cqRingSeed lays out a CQ ring as the kernel's rxe_queue_init does:
// slots of 1<<shift bytes, prod and cons on their own cache lines, CQEs
// (ib_uverbs_wc) in the slots from cons up to prod.
func cqRingSeed(slots int, shift uint32, prod, cons uint32) []byte {
	mem := make([]byte, rqData+slots<<shift)
	ne := abi.Native
	ne.PutUint32(mem[rqLog2:], shift)
	ne.PutUint32(mem[rqMask:], uint32(slots-1))
	ne.PutUint32(mem[rqProd:], prod)
	ne.PutUint32(mem[rqCons:], cons)
	for i := 0; i < slots && 1<<shift >= wcSize; i++ {
		c := mem[rqData+i<<shift:]
		ne.PutUint64(c[0:], uint64(0x1000+i))                    // wr_id
		ne.PutUint32(c[8:], uint32(i%2)*5)                       // status: success, or IB_WC_WR_FLUSH_ERR
		ne.PutUint32(c[12:], uint32(rdma.WCRecvRDMAWithImm))     // opcode
		ne.PutUint32(c[20:], 4096)                               // byte_len
		binary.BigEndian.PutUint32(c[24:], 0xcafe0000+uint32(i)) // imm_data
		ne.PutUint32(c[28:], 0x11)                               // qp_num
		ne.PutUint32(c[32:], 0x12)                               // src_qp
		ne.PutUint32(c[36:], uint32(WCWithImm|WCWithGRH))        // wc_flags
		c[44], c[46] = 0, 1                                      // sl, port_num
	}
	return mem
}

// FuzzRxeCQPoll maps the fuzzer's bytes as a CQ ring the kernel shares
// (header, indices and CQEs all under its control) and polls it. A header
// is accepted only if every slot lies inside the mapping and holds a CQE;
// polling returns at most len(wc) completions, each the CQE of the next
// slot (the indices wrap at the mask), advances only the consumer index,
// and writes nothing else into the ring.
func FuzzRxeCQPoll(f *testing.F) {
	f.Add(cqRingSeed(8, 6, 5, 2), uint8(4))  // three CQEs, 64-byte slots
	f.Add(cqRingSeed(8, 6, 1, 6), uint8(8))  // wrapped: slots 6, 7, 0
	f.Add(cqRingSeed(4, 7, 3, 3), uint8(4))  // empty
	f.Add(cqRingSeed(4, 7, 3, 0), uint8(16)) // full (3 of 4 slots)
	f.Add(cqRingSeed(4, 7, 9, 77), uint8(5)) // indices beyond the mask
	f.Add(cqRingSeed(8, 5, 1, 0), uint8(1))  // 32-byte slots: too small
	f.Add(cqRingSeed(8, 6, 1, 0)[:rqData+7*64], uint8(1))
	f.Add(make([]byte, rqData-1), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, nwc uint8) {
		mem := alignedCopy(data)
		ne := abi.Native
		q, err := newRxeQueue(mem, wcSize)
		var shift, mask uint32
		if len(mem) >= rqData {
			shift, mask = ne.Uint32(mem[rqLog2:]), ne.Uint32(mem[rqMask:])
		}
		slots := uint64(mask) + 1
		fits := len(mem) >= rqData && shift <= 20 && slots&(slots-1) == 0 && 1<<shift >= wcSize &&
			rqData+slots<<shift <= uint64(len(mem))
		if (err == nil) != fits {
			t.Fatalf("%d bytes, log2_elem_size %d, index_mask %#x: err %v, want accepted=%v", len(mem), shift, mask, err, fits)
		}
		if err != nil {
			return
		}
		before := append([]byte(nil), mem...)
		prod, cons := ne.Uint32(mem[rqProd:]), ne.Uint32(mem[rqCons:])
		wc := make([]WC, nwc%17)
		n := (&rxeCQ{q: q}).poll(wc)
		if n < 0 || n > len(wc) {
			t.Fatalf("polled %d into %d entries", n, len(wc))
		}
		if prod <= mask && cons <= mask {
			if want := min(len(wc), int((prod-cons)&mask)); n != want {
				t.Fatalf("prod %d cons %d mask %d: polled %d, want %d", prod, cons, mask, n, want)
			}
		}
		for i := range n {
			c := before[rqData+int((cons+uint32(i))&mask)<<shift:][:wcSize]
			w := wc[i]
			if w.ID != ne.Uint64(c[0:]) || w.Status != rdma.WCStatus(ne.Uint32(c[8:])) || w.Opcode != rdma.WCOpcode(ne.Uint32(c[12:])) ||
				w.VendorErr != ne.Uint32(c[16:]) || w.ByteLen != ne.Uint32(c[20:]) || w.Imm != binary.BigEndian.Uint32(c[24:]) ||
				w.QPNum != ne.Uint32(c[28:]) || w.SrcQP != ne.Uint32(c[32:]) || w.Flags != WCFlags(ne.Uint32(c[36:])) ||
				w.PKeyIndex != ne.Uint16(c[40:]) || w.SLID != ne.Uint16(c[42:]) || w.SL != c[44] ||
				w.DLIDPathBits != c[45] || w.PortNum != c[46] {
				t.Fatalf("completion %d is %+v, CQE % x", i, w, c)
			}
		}
		wantCons := cons
		if n > 0 {
			wantCons = (cons + uint32(n)) & mask
		}
		if got := ne.Uint32(mem[rqCons:]); got != wantCons {
			t.Fatalf("consumer index %d after %d completions from %d, want %d", got, n, cons, wantCons)
		}
		copy(mem[rqCons:rqCons+4], before[rqCons:])
		if !bytes.Equal(mem, before) {
			t.Fatal("poll wrote into the ring beyond the consumer index")
		}
	})
}

type nlAttrSeen struct {
	typ     uint16
	payload []byte
}

func walkNLAttrs(b []byte) []nlAttrSeen {
	var out []nlAttrSeen
	parseNLAttrs(b, func(typ uint16, p []byte) { out = append(out, nlAttrSeen{typ, p}) })
	return out
}

// FuzzParseNLAttrs walks arbitrary RDMA netlink message bodies. Every
// attribute reported lies inside the body, after the previous one and
// after its own 4-byte header, with the NLA_F_NESTED and
// NLA_F_NET_BYTEORDER bits stripped from its type; encoding the
// attributes again with nlAttr and walking that gives the same list.
func FuzzParseNLAttrs(f *testing.F) {
	u32 := func(v uint32) []byte { return abi.Native.AppendUint32(nil, v) }
	u64 := func(v uint64) []byte { return abi.Native.AppendUint64(nil, v) }
	var chardev []byte // a RDMA_NLDEV_CMD_GET_CHARDEV reply (nldev.c nldev_get_chardev)
	chardev = nlAttr(chardev, abi.RDMANldevAttrChardev, u64(231<<8|192))
	chardev = nlAttr(chardev, abi.RDMANldevAttrChardevABI, u64(6))
	chardev = nlAttr(chardev, abi.RDMANldevAttrChardevName, []byte("uverbs0\x00"))
	chardev = nlAttr(chardev, abi.RDMANldevAttrUverbsDriverID, u32(abi.RDMADriverRXE))
	f.Add(chardev)
	var dev []byte // a RDMA_NLDEV_CMD_GET dump entry, with a nested attribute
	dev = nlAttr(dev, abi.RDMANldevAttrDevIndex, u32(0))
	dev = nlAttr(dev, abi.RDMANldevAttrDevName, []byte("rxe0\x00"))
	dev = nlAttr(dev, 3|unix.NLA_F_NESTED, nlAttr(nil, 4, u64(1)))
	f.Add(dev)
	f.Add(chardev[:len(chardev)-2]) // truncated last attribute
	f.Add([]byte{0, 0, 1, 0, 9, 9, 9, 9})
	f.Add([]byte{5, 0, 2, 0, 'x'}) // last attribute's padding missing
	f.Fuzz(func(t *testing.T, body []byte) {
		attrs := walkNLAttrs(body)
		end := uintptr(unsafe.Pointer(unsafe.SliceData(body))) + uintptr(len(body))
		next := uintptr(unsafe.Pointer(unsafe.SliceData(body)))
		var again []byte
		for i, a := range attrs {
			start := uintptr(unsafe.Pointer(unsafe.SliceData(a.payload)))
			if a.typ > 0x3fff || start < next+unix.NLA_HDRLEN || start+uintptr(len(a.payload)) > end {
				t.Fatalf("attribute %d (type %d, %d bytes) outside the body or overlapping the previous one", i, a.typ, len(a.payload))
			}
			next = start + uintptr(len(a.payload))
			again = nlAttr(again, a.typ, a.payload)
		}
		back := walkNLAttrs(again)
		if len(back) != len(attrs) {
			t.Fatalf("re-encoded %d attributes, walked %d", len(attrs), len(back))
		}
		for i := range back {
			if back[i].typ != attrs[i].typ || !bytes.Equal(back[i].payload, attrs[i].payload) {
				t.Fatalf("attribute %d: re-encoded %d % x, walked %d % x", i, attrs[i].typ, attrs[i].payload, back[i].typ, back[i].payload)
			}
		}
	})
}

// FuzzGIDEntries decodes arbitrary QUERY_GID_TABLE answers: a buffer of
// entries as the kernel filled it and an arbitrary entry count. Never more
// entries than the buffer held, each one field for field.
func FuzzGIDEntries(f *testing.F) {
	one := abi.UverbsGIDEntry{GID: [16]byte{10: 0xff, 11: 0xff, 12: 192, 15: 1}, GIDIndex: 1, PortNum: 1, GIDType: 2, NetdevIfindex: 2}
	f.Add(abi.Bytes(&one), uint64(1))
	f.Add(append(abi.Bytes(&one), abi.Bytes(&one)...), uint64(1<<63))
	f.Add([]byte{}, uint64(3))
	f.Fuzz(func(t *testing.T, raw []byte, num uint64) {
		size := len(abi.Bytes(&abi.UverbsGIDEntry{}))
		entries := make([]abi.UverbsGIDEntry, len(raw)/size)
		for i := range entries {
			entries[i] = abi.Decode[abi.UverbsGIDEntry](raw[i*size : (i+1)*size])
		}
		out := gidEntries(entries, num)
		if uint64(len(out)) > num || len(out) > len(entries) {
			t.Fatalf("%d entries from %d in the buffer and a count of %d", len(out), len(entries), num)
		}
		for i, g := range out {
			e := entries[i]
			if g.GID != rdma.GID(e.GID) || g.Index != int(e.GIDIndex) || g.Port != int(e.PortNum) ||
				g.Type != GIDType(e.GIDType) || g.NetdevIndex != int(e.NetdevIfindex) {
				t.Fatalf("entry %d: %+v from %+v", i, g, e)
			}
		}
	})
}
