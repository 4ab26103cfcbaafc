package sa

import (
	"bytes"
	"testing"
)

func seeds(f *testing.F) {
	b := make([]byte, MADSize)
	q := CMQuery(sample().SGID, sample().DGID, 0xffff, 1)
	q.MarshalTo(b)
	f.Add(bytes.Clone(b))
	for _, r := range []Response{
		{Method: MethodGetResp, Records: []PathRecord{sample()}},
		{Method: MethodGetTableResp, Records: []PathRecord{sample(), sample()}},
		{Method: MethodGetTableResp, Status: 0x300},
	} {
		r.MarshalTo(b)
		f.Add(bytes.Clone(b))
	}
}

// FuzzParseResponse: no input panics the parser; the records of an
// accepted response without reserved bits build back to the same bytes.
func FuzzParseResponse(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := ParseResponse(b)
		if err != nil {
			return
		}
		r := Response{TransactionID: v.TransactionID(), Method: MethodGetTableResp}
		for i := range v.Len() {
			rv := v.Record(i)
			if rv.Reserved() {
				return
			}
			var p PathRecord
			rv.Decode(&p)
			r.Records = append(r.Records, p)
		}
		if len(r.Records) > MaxRecords || v.Len() == 0 {
			return
		}
		out := make([]byte, MADSize)
		if _, err := r.MarshalTo(out); err != nil {
			t.Fatalf("decoded records do not build: %v", err)
		}
		for i := range v.Len() {
			if got, want := out[HeaderSize+i*PathRecordSize:][:PathRecordSize], v.Record(i).b; !bytes.Equal(got, want) {
				t.Fatalf("record %d: rebuilt % x, parsed % x", i, got, want)
			}
		}
	})
}

// FuzzParseQuery: the SA side's parser never panics, and an accepted
// query without reserved bits builds back to the same record and masks.
func FuzzParseQuery(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := ParseQuery(b)
		if err != nil || v.Record().Reserved() {
			return
		}
		var q Query
		v.Decode(&q)
		out := make([]byte, MADSize)
		if _, err := q.MarshalTo(out); err != nil {
			t.Fatalf("a decoded query does not build: %v", err)
		}
		if !bytes.Equal(out[HeaderSize:HeaderSize+PathRecordSize], b[HeaderSize:HeaderSize+PathRecordSize]) ||
			!bytes.Equal(out[36:44], b[36:44]) || !bytes.Equal(out[48:56], b[48:56]) {
			t.Fatalf("query rebuilt differently:\n% x\n% x", out[36:120], b[36:120])
		}
	})
}
