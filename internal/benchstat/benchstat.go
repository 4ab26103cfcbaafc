// Package benchstat holds the statistics the guest benchmarks report: the
// median of per-round figures and a bootstrap interval for it. Guest
// rounds are few (4–10) and skewed by the shared host, so the median and
// a percentile bootstrap are used rather than a mean and a t interval.
package benchstat

import (
	"math/rand/v2"
	"slices"
)

// Median is the median of v (the mean of the middle two for an even
// count); 0 for none.
func Median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// MedianCI is a 95% percentile-bootstrap interval for the median of v:
// 2,000 resamples with a fixed seed, so a table repeats from its data.
func MedianCI(v []float64) (lo, hi float64) {
	if len(v) == 0 {
		return 0, 0
	}
	r := rand.New(rand.NewPCG(1, 2))
	meds := make([]float64, 2000)
	x := make([]float64, len(v))
	for i := range meds {
		for j := range x {
			x[j] = v[r.IntN(len(v))]
		}
		meds[i] = Median(x)
	}
	slices.Sort(meds)
	return meds[len(meds)*25/1000], meds[len(meds)*975/1000]
}
