package sa

import (
	"encoding/binary"
	"fmt"

	"github.com/go-rdma/rdmacm/rdma"
)

// PathRecord is the SA's PathRecord attribute: the path proper in the
// shared rdma.PathRecord (whose Flags are not on the wire), plus the
// fields only the SA uses.
type PathRecord struct {
	ServiceID uint64
	rdma.PathRecord
	RawTraffic bool
	// NumbPath is 7 bits: in a query, how many paths to return.
	NumbPath uint8
	// QoSClass is 12 bits.
	QoSClass uint16
	// MTUSelector, RateSelector and PacketLifeTimeSelector are 2 bits.
	MTUSelector, RateSelector, PacketLifeTimeSelector Selector
	Preference                                        uint8
}

// PathRecord offsets inside the record.
const (
	prServiceID = 0
	prDGID      = 8
	prSGID      = 24
	prDLID      = 40
	prSLID      = 42
	prFlowHop   = 44 // RawTraffic:1, reserved:3, FlowLabel:20, HopLimit:8
	prTClass    = 48
	prRevNumb   = 49 // Reversible:1, NumbPath:7
	prPKey      = 50
	prQoSSL     = 52 // QoSClass:12, SL:4
	prMTU       = 54 // MTUSelector:2, MTU:6
	prRate      = 55 // RateSelector:2, Rate:6
	prLifeTime  = 56 // PacketLifeTimeSelector:2, PacketLifeTime:6
	prPref      = 57
	// 58..63 reserved
)

func (r *PathRecord) check() error {
	switch {
	case r.FlowLabel > 0xfffff:
		return fmt.Errorf("%w: flow label 0x%x is wider than 20 bits", ErrFieldRange, r.FlowLabel)
	case r.NumbPath > 0x7f:
		return fmt.Errorf("%w: NumbPath %d is wider than 7 bits", ErrFieldRange, r.NumbPath)
	case r.QoSClass > 0xfff:
		return fmt.Errorf("%w: QoS class 0x%x is wider than 12 bits", ErrFieldRange, r.QoSClass)
	case r.SL > 15:
		return fmt.Errorf("%w: SL %d is wider than 4 bits", ErrFieldRange, r.SL)
	case r.MTU > 0x3f, r.Rate > 0x3f, r.PacketLifeTime > 0x3f:
		return fmt.Errorf("%w: MTU %d, rate %d or packet lifetime %d is wider than 6 bits", ErrFieldRange,
			r.MTU, r.Rate, r.PacketLifeTime)
	case r.MTUSelector > 3, r.RateSelector > 3, r.PacketLifeTimeSelector > 3:
		return fmt.Errorf("%w: a selector is wider than 2 bits", ErrFieldRange)
	}
	return nil
}

// put writes r into the 64 bytes of b; r has been checked.
func (r *PathRecord) put(b []byte) {
	b = b[:PathRecordSize]
	clear(b)
	binary.BigEndian.PutUint64(b[prServiceID:], r.ServiceID)
	copy(b[prDGID:], r.DGID[:])
	copy(b[prSGID:], r.SGID[:])
	binary.BigEndian.PutUint16(b[prDLID:], r.DLID)
	binary.BigEndian.PutUint16(b[prSLID:], r.SLID)
	w := r.FlowLabel<<8 | uint32(r.HopLimit)
	if r.RawTraffic {
		w |= 1 << 31
	}
	binary.BigEndian.PutUint32(b[prFlowHop:], w)
	b[prTClass] = r.TrafficClass
	b[prRevNumb] = r.NumbPath
	if r.Reversible {
		b[prRevNumb] |= 0x80
	}
	binary.BigEndian.PutUint16(b[prPKey:], r.PKey)
	binary.BigEndian.PutUint16(b[prQoSSL:], r.QoSClass<<4|uint16(r.SL))
	b[prMTU] = byte(r.MTUSelector)<<6 | byte(r.MTU)
	b[prRate] = byte(r.RateSelector)<<6 | r.Rate
	b[prLifeTime] = byte(r.PacketLifeTimeSelector)<<6 | r.PacketLifeTime
	b[prPref] = r.Preference
}

// PathRecordView reads a PathRecord in place.
type PathRecordView struct{ b []byte }

// DGID, SGID, DLID and SLID are the path's ends.
func (v PathRecordView) DGID() (g rdma.GID) { copy(g[:], v.b[prDGID:]); return }
func (v PathRecordView) SGID() (g rdma.GID) { copy(g[:], v.b[prSGID:]); return }
func (v PathRecordView) DLID() uint16       { return be16(v.b, prDLID) }
func (v PathRecordView) SLID() uint16       { return be16(v.b, prSLID) }

// Reserved reports whether any reserved bit of the record is set.
func (v PathRecordView) Reserved() bool {
	if v.b[prFlowHop]&0x70 != 0 {
		return true
	}
	for _, c := range v.b[58:PathRecordSize] {
		if c != 0 {
			return true
		}
	}
	return false
}

// Decode fills r from the record.
func (v PathRecordView) Decode(r *PathRecord) {
	b := v.b
	*r = PathRecord{ServiceID: be64(b, prServiceID)}
	r.DGID, r.SGID, r.DLID, r.SLID = v.DGID(), v.SGID(), v.DLID(), v.SLID()
	w := be32(b, prFlowHop)
	r.RawTraffic = w>>31 != 0
	r.FlowLabel = w >> 8 & 0xfffff
	r.HopLimit = uint8(w)
	r.TrafficClass = b[prTClass]
	r.Reversible = b[prRevNumb]&0x80 != 0
	r.NumbPath = b[prRevNumb] & 0x7f
	r.PKey = be16(b, prPKey)
	qs := be16(b, prQoSSL)
	r.QoSClass, r.SL = qs>>4, uint8(qs&0xf)
	r.MTUSelector, r.MTU = Selector(b[prMTU]>>6), rdma.MTU(b[prMTU]&0x3f)
	r.RateSelector, r.Rate = Selector(b[prRate]>>6), b[prRate]&0x3f
	r.PacketLifeTimeSelector, r.PacketLifeTime = Selector(b[prLifeTime]>>6), b[prLifeTime]&0x3f
	r.Preference = b[prPref]
}

// Query is a PathRecord query: SubnAdmGet asks for one path,
// SubnAdmGetTable for every path that matches.
type Query struct {
	TransactionID uint64
	// Method is MethodGet or MethodGetTable.
	Method   Method
	SMKey    uint64
	CompMask CompMask
	Record   PathRecord
}

// MarshalTo writes the 256-byte MAD into b and returns 256.
func (q *Query) MarshalTo(b []byte) (int, error) {
	if len(b) < MADSize {
		return 0, fmt.Errorf("%w: %d bytes, need %d", ErrShortBuffer, len(b), MADSize)
	}
	if q.Method != MethodGet && q.Method != MethodGetTable {
		return 0, fmt.Errorf("%w: a query is %v or %v, not %v", ErrBadMethod, MethodGet, MethodGetTable, q.Method)
	}
	if err := q.Record.check(); err != nil {
		return 0, err
	}
	putHeader(b, q.Method, 0, q.TransactionID, q.SMKey, q.CompMask)
	q.Record.put(b[HeaderSize:])
	return MADSize, nil
}

// CMQuery is the query the rdma_cm's route resolution sends
// (cma_query_ib_route): one reversible path from sgid to dgid in the
// partition pkey, for the connection's service ID.
func CMQuery(sgid, dgid rdma.GID, pkey uint16, serviceID uint64) Query {
	return Query{Method: MethodGet, CompMask: CMCompMask, Record: PathRecord{ServiceID: serviceID, NumbPath: 1,
		PathRecord: rdma.PathRecord{SGID: sgid, DGID: dgid, PKey: pkey, Reversible: true}}}
}

// QueryView reads a validated PathRecord query in place (the SA's side).
type QueryView struct{ b []byte }

// ParseQuery validates b as a PathRecord Get or GetTable.
func ParseQuery(b []byte) (QueryView, error) {
	if err := checkHeader(b); err != nil {
		return QueryView{}, err
	}
	if m := Method(b[offMethod]); m != MethodGet && m != MethodGetTable {
		return QueryView{}, fmt.Errorf("%w: %v is not a query", ErrBadMethod, m)
	}
	return QueryView{b[:MADSize]}, nil
}

func (v QueryView) Method() Method        { return Method(v.b[offMethod]) }
func (v QueryView) TransactionID() uint64 { return be64(v.b, offTID) }
func (v QueryView) SMKey() uint64         { return be64(v.b, offSMKey) }
func (v QueryView) CompMask() CompMask    { return CompMask(be64(v.b, offCompMask)) }
func (v QueryView) Record() PathRecordView {
	return PathRecordView{v.b[HeaderSize : HeaderSize+PathRecordSize]}
}

// Decode fills q from the query.
func (v QueryView) Decode(q *Query) {
	*q = Query{TransactionID: v.TransactionID(), Method: v.Method(), SMKey: v.SMKey(), CompMask: v.CompMask()}
	v.Record().Decode(&q.Record)
}

// MaxRecords is how many PathRecords one table response MAD holds.
const MaxRecords = DataSize / PathRecordSize

// Response is the SA's answer: GetResp with one record, or GetTableResp
// with up to MaxRecords in one RMPP segment. A nonzero Status carries no
// record.
type Response struct {
	TransactionID uint64
	// Method is MethodGetResp or MethodGetTableResp.
	Method  Method
	Status  uint16
	Records []PathRecord
}

// MarshalTo writes the 256-byte MAD into b and returns 256.
func (r *Response) MarshalTo(b []byte) (int, error) {
	if len(b) < MADSize {
		return 0, fmt.Errorf("%w: %d bytes, need %d", ErrShortBuffer, len(b), MADSize)
	}
	n := len(r.Records)
	switch {
	case r.Method != MethodGetResp && r.Method != MethodGetTableResp:
		return 0, fmt.Errorf("%w: a response is %v or %v, not %v", ErrBadMethod, MethodGetResp, MethodGetTableResp, r.Method)
	case r.Status != 0 && n != 0:
		return 0, fmt.Errorf("%w: a response with status 0x%04x carries no record", ErrFieldRange, r.Status)
	case r.Method == MethodGetResp && r.Status == 0 && n != 1:
		return 0, fmt.Errorf("%w: %v carries one record, not %d", ErrFieldRange, r.Method, n)
	case n > MaxRecords:
		return 0, fmt.Errorf("%w: %d records do not fit one MAD (at most %d)", ErrFieldRange, n, MaxRecords)
	}
	for i := range r.Records {
		if err := r.Records[i].check(); err != nil {
			return 0, err
		}
	}
	putHeader(b, r.Method, r.Status, r.TransactionID, 0, 0)
	if r.Method == MethodGetTableResp {
		b[offRMPPVersion], b[offRMPPType], b[offRMPPFlags] = rmppVersion, rmppData, rmppActive|rmppFirst|rmppLast
		binary.BigEndian.PutUint32(b[offRMPPSegment:], 1)
		binary.BigEndian.PutUint32(b[offRMPPPayload:], uint32(saHeaderSize+n*PathRecordSize))
		binary.BigEndian.PutUint16(b[offAttrOffset:], PathRecordSize/8)
	}
	for i := range r.Records {
		r.Records[i].put(b[HeaderSize+i*PathRecordSize:])
	}
	return MADSize, nil
}

// ResponseView reads a validated response in place. A table response
// the kernel's RMPP agent reassembled is longer than one MAD: the
// headers once, then every record.
type ResponseView struct {
	b      []byte
	n      int
	stride int
}

// ParseResponse validates b as a PathRecord GetResp or GetTableResp. A
// response with a nonzero status returns its view and a *StatusError.
func ParseResponse(b []byte) (ResponseView, error) {
	if err := checkHeader(b); err != nil {
		return ResponseView{}, err
	}
	v := ResponseView{b: b, stride: PathRecordSize}
	switch m := Method(b[offMethod]); m {
	case MethodGetResp:
		v.n = 1
	case MethodGetTableResp:
		flags := b[offRMPPFlags] & 7
		if b[offRMPPVersion] != rmppVersion || b[offRMPPType] != rmppData || flags&rmppActive == 0 ||
			flags&rmppFirst == 0 || b[offRMPPStatus] != 0 || be32(b, offRMPPSegment) != 1 {
			return ResponseView{}, fmt.Errorf("%w: RMPP version %d, type %d, flags %#x, status %d, segment %d", ErrBadRMPP,
				b[offRMPPVersion], b[offRMPPType], flags, b[offRMPPStatus], be32(b, offRMPPSegment))
		}
		off := int(be16(b, offAttrOffset)) * 8
		// The first segment's PayloadLength counts every segment's SA
		// header: a transfer of n segments carries 20·n header bytes
		// and the records (mad_rmpp.c sends it so, from seg_count ×
		// 220 less the pad).
		pay := int(be32(b, offRMPPPayload))
		segs := (pay + rmppSegPayload - 1) / rmppSegPayload
		data := pay - segs*saHeaderSize
		if off < PathRecordSize || pay < saHeaderSize || data%off != 0 {
			return ResponseView{}, fmt.Errorf("%w: attribute offset %d bytes, payload %d bytes", ErrBadRMPP, off, pay)
		}
		v.stride, v.n = off, data/off
		if need := HeaderSize + v.n*off; need > len(b) {
			return ResponseView{}, fmt.Errorf("%w: %d records need %d bytes, have %d", ErrShortBuffer, v.n, need, len(b))
		}
	default:
		return ResponseView{}, fmt.Errorf("%w: %v is not a response", ErrBadMethod, m)
	}
	if st := be16(b, offStatus); st != 0 {
		v.n = 0
		return v, &StatusError{Status: st}
	}
	return v, nil
}

func (v ResponseView) Method() Method        { return Method(v.b[offMethod]) }
func (v ResponseView) TransactionID() uint64 { return be64(v.b, offTID) }
func (v ResponseView) Status() uint16        { return be16(v.b, offStatus) }

// Len is the number of records.
func (v ResponseView) Len() int { return v.n }

// Record returns record i, 0 <= i < Len().
func (v ResponseView) Record(i int) PathRecordView {
	o := HeaderSize + i*v.stride
	return PathRecordView{v.b[o : o+PathRecordSize]}
}
