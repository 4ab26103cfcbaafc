package mad

import "testing"

func BenchmarkREQMarshalTo(b *testing.B) {
	m, buf := sampleREQ(), make([]byte, MADSize)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.MarshalTo(buf); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkREQDecode(b *testing.B) {
	in := mustMarshal(sampleREQ())
	var m REQ
	b.ReportAllocs()
	for b.Loop() {
		v, err := ParseREQ(in)
		if err != nil {
			b.Fatal(err)
		}
		v.Decode(&m)
	}
}

func BenchmarkREPMarshalTo(b *testing.B) {
	m, buf := sampleREP(), make([]byte, MADSize)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.MarshalTo(buf); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkREPDecode(b *testing.B) {
	in := mustMarshal(sampleREP())
	var m REP
	b.ReportAllocs()
	for b.Loop() {
		v, err := ParseREP(in)
		if err != nil {
			b.Fatal(err)
		}
		v.Decode(&m)
	}
}

func BenchmarkParse(b *testing.B) {
	in := mustMarshal(sampleREQ())
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(in); err != nil {
			b.Fatal(err)
		}
	}
}
