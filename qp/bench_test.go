package qp

import "testing"

func BenchmarkValidate(b *testing.B) {
	mask := MaskState | MaskAV | MaskPathMTU | MaskDestQPN | MaskRQPSN | MaskMaxDestRdAtomic | MaskMinRNRTimer
	for b.Loop() {
		if err := Validate(RC, Init, RTR, mask); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCheck(b *testing.B) {
	a := goodRTR()
	for b.Loop() {
		if err := Check(RC, Init, &a, rtrMask); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRTRAttr(b *testing.B) {
	p := roceParams()
	for b.Loop() {
		if _, _, err := RTRAttr(p, RC); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidateError(b *testing.B) {
	for b.Loop() {
		if err := Validate(RC, Init, RTR, MaskState); err == nil {
			b.Fatal("no error")
		}
	}
}
