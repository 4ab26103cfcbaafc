package mad

import "time"

// timeoutUnit is the CM time unit: 4.096 µs (IBTA 12.6.5, "4.096 µs ×
// 2^x" for every 5-bit CM timeout field).
const timeoutUnit = 4096 * time.Nanosecond

// timeoutBits is the width of every CM timeout exponent.
const timeoutBits = 5

// MaxTimeout is the largest 5-bit timeout exponent.
const MaxTimeout = 1<<timeoutBits - 1

// TimeoutDuration returns 4.096 µs × 2^n, with n clamped to 31.
func TimeoutDuration(n uint8) time.Duration {
	return timeoutUnit << min(n, MaxTimeout)
}

// TimeoutExponent returns the smallest n in 0..31 with
// TimeoutDuration(n) >= d (rounding up), or 31 if d is larger.
func TimeoutExponent(d time.Duration) uint8 {
	for n := uint8(0); n < MaxTimeout; n++ {
		if TimeoutDuration(n) >= d {
			return n
		}
	}
	return MaxTimeout
}
