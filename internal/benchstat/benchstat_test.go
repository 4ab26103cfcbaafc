package benchstat

import "testing"

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		v    []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := Median(c.v); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.v, got, c.want)
		}
	}
}

func TestMedianCI(t *testing.T) {
	v := []float64{1.1, 0.9, 1.0, 1.2, 0.95, 1.05, 1.0, 0.98}
	lo, hi := MedianCI(v)
	m := Median(v)
	if !(lo <= m && m <= hi) || lo < 0.9 || hi > 1.2 || lo == hi {
		t.Errorf("MedianCI = [%v, %v] around median %v", lo, hi, m)
	}
	if lo2, hi2 := MedianCI(v); lo2 != lo || hi2 != hi {
		t.Errorf("MedianCI is not repeatable: [%v, %v] then [%v, %v]", lo, hi, lo2, hi2)
	}
	if lo, hi := MedianCI([]float64{2, 2, 2}); lo != 2 || hi != 2 {
		t.Errorf("MedianCI of constants = [%v, %v]", lo, hi)
	}
}
