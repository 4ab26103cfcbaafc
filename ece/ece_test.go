package ece

import (
	"errors"
	"testing"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		in   ECE
		want error // nil, or the specific sentinel
	}{
		{"mlx5", ECE{VendorID: 0x15b3, Options: 0x30000001}, nil},
		{"max vendor", ECE{VendorID: MaxVendorID}, nil},
		{"zero vendor", ECE{Options: 1}, ErrZeroVendor},
		{"25-bit vendor", ECE{VendorID: 1 << 24}, ErrVendorTooWide},
		{"comp mask", ECE{VendorID: 0x15b3, CompMask: 1}, ErrCompMask},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.in.Validate()
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Validate(%v) = %v, want nil", tt.in, err)
				}
				return
			}
			if !errors.Is(err, tt.want) || !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("Validate(%v) = %v, want %v wrapped in ErrInvalidArgument", tt.in, err, tt.want)
			}
		})
	}
}

func TestString(t *testing.T) {
	got := ECE{VendorID: 0x15b3, Options: 0x30000001}.String()
	if want := "vendor=0x15b3 options=0x30000001"; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
	if got, want := (ECE{VendorID: 1}).String(), "vendor=0x1 options=0x00000000"; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
}

func TestPlacementOf(t *testing.T) {
	want := map[uint16]Placement{0x0010: PlacementREQ, 0x0013: PlacementREP, 0x0018: PlacementSIDRREP}
	for id := uint16(0); id < 0x0020; id++ {
		if got := PlacementOf(id); got != want[id] {
			t.Errorf("PlacementOf(%#04x) = %d, want %d", id, got, want[id])
		}
	}
}

// The REP splits the vendor ID over three bytes (kernel cm_format_rep).
func TestREPSplitJoin(t *testing.T) {
	h, m, l := SplitREP(0x0015b3)
	if h != 0x00 || m != 0x15 || l != 0xb3 {
		t.Fatalf("SplitREP(0x15b3) = %#x %#x %#x", h, m, l)
	}
	for _, v := range []uint32{0, 1, 0x15b3, 0xabcdef, MaxVendorID} {
		if got := JoinREP(SplitREP(v)); got != v {
			t.Errorf("JoinREP(SplitREP(%#x)) = %#x", v, got)
		}
	}
}

// SIDR_REP carries only vendor bits 15:0 (kernel cm_format_sidr_rep).
func TestSIDRREPSplitJoin(t *testing.T) {
	hi, lo := SplitSIDRREP(0xab15b3)
	if hi != 0x0015 || lo != 0xb3 {
		t.Fatalf("SplitSIDRREP(0xab15b3) = %#x %#x", hi, lo)
	}
	if got := JoinSIDRREP(hi, lo); got != 0x15b3 {
		t.Fatalf("JoinSIDRREP = %#x, want 0x15b3 (bits 23:16 are not carried)", got)
	}
}

func TestReplyPolicies(t *testing.T) {
	mlx := func(o uint32) ECE { return ECE{VendorID: 0x15b3, Options: o} }
	other := ECE{VendorID: 0x1234, Options: 0xff}
	tests := []struct {
		name          string
		policy        ReplyPolicy
		remote, local ECE
		want          ECE
	}{
		{"librdmacm echoes vendor, sends local options", LibrdmacmReply, mlx(0x30000001), mlx(0x30000003), mlx(0x30000003)},
		{"librdmacm with other vendor keeps remote vendor", LibrdmacmReply, other, mlx(0x3), ECE{VendorID: 0x1234, Options: 0x3}},
		{"librdmacm quirk: vendor 0 request, options still sent", LibrdmacmReply, None, mlx(0x10000000), ECE{Options: 0x10000000}},
		{"intersect same vendor ANDs options", IntersectReply, mlx(0x30000001), mlx(0x30000003), mlx(0x30000001)},
		{"intersect different vendor gives none", IntersectReply, other, mlx(0x3), None},
		{"intersect no remote ECE gives none", IntersectReply, None, mlx(0x3), None},
		{"intersect no local ECE gives none", IntersectReply, mlx(0x3), None, None},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.policy.Reply(tt.remote, tt.local); got != tt.want {
				t.Fatalf("Reply(%v, %v) = %v, want %v", tt.remote, tt.local, got, tt.want)
			}
		})
	}
}
