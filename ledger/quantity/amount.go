package quantity

import (
	"cmp"
	"math"
)

// The helpers in this file work on a value held as i * 10^scale in an int64,
// the form Kubernetes calls int64Amount. Each reports overflow instead of
// wrapping, so the int64 form is only ever used while it is exact.

const (
	int64Max = math.MaxInt64
	int64Min = math.MinInt64
)

// pow10 holds the powers of ten that fit in an int64.
var pow10 = [19]int64{
	1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000,
	1000000000, 10000000000, 100000000000, 1000000000000, 10000000000000,
	100000000000000, 1000000000000000, 10000000000000000,
	100000000000000000, 1000000000000000000,
}

// scaleLimit[n] is the largest magnitude that can be multiplied by 10^n
// without leaving the int64 range; for n >= 1 it bounds negative values too,
// because 2^63 is not a multiple of 10.
var scaleLimit = func() (l [19]int64) {
	for n := range l {
		l[n] = int64Max / pow10[n]
	}
	return l
}()

// add64 returns a+b, or false if the sum does not fit in an int64.
func add64(a, b int64) (int64, bool) {
	c := a + b
	if (a > 0 && b > 0 && c < 0) || (a < 0 && b < 0 && c >= 0) {
		return 0, false
	}
	return c, true
}

// mul64 returns a*b, or false if the product does not fit in an int64.
func mul64(a, b int64) (int64, bool) {
	if a == 0 || b == 0 {
		return 0, true
	}
	c := a * b
	if (a == -1 && b == int64Min) || (b == -1 && a == int64Min) || c/b != a {
		return 0, false
	}
	return c, true
}

// scaleUp returns v * 10^n for n >= 0, or false if that does not fit.
func scaleUp(v int64, n int64) (int64, bool) {
	if v == 0 || n == 0 {
		return v, true
	}
	if n >= int64(len(pow10)) {
		return 0, false
	}
	if limit := scaleLimit[n]; v > limit || v < -limit {
		return 0, false
	}
	return v * pow10[n], true
}

// addAmount adds two int64 amounts the way Kubernetes' int64Amount.Add does:
// a zero operand yields the other unchanged, and otherwise the operand with
// the larger scale is brought down to the smaller one. It reports false,
// exactly when Kubernetes falls back to its decimal form, if any step
// overflows.
func addAmount(av int64, as int32, bv int64, bs int32) (int64, int32, bool) {
	switch {
	case bv == 0:
		return av, as, true
	case av == 0:
		return bv, bs, true
	case as == bs:
		c, ok := add64(av, bv)
		return c, as, ok
	case as > bs:
		a, ok := scaleUp(av, int64(as)-int64(bs))
		if !ok {
			return 0, 0, false
		}
		c, ok := add64(a, bv)
		return c, bs, ok
	default:
		b, ok := scaleUp(bv, int64(bs)-int64(as))
		if !ok {
			return 0, 0, false
		}
		c, ok := add64(av, b)
		return c, as, ok
	}
}

// cmpAmount compares two int64 amounts by value.
func cmpAmount(av int64, as int32, bv int64, bs int32) int {
	if as == bs {
		return cmp.Compare(av, bv)
	}
	sa, sb := cmp.Compare(av, 0), cmp.Compare(bv, 0)
	if sa != sb || sa == 0 {
		return cmp.Compare(sa, sb)
	}
	if as > bs {
		a, ok := scaleUp(av, int64(as)-int64(bs))
		if !ok {
			// a has the larger magnitude, and both have the same sign.
			return sa
		}
		return cmp.Compare(a, bv)
	}
	b, ok := scaleUp(bv, int64(bs)-int64(as))
	if !ok {
		return -sa
	}
	return cmp.Compare(av, b)
}

// isIntegerAmount reports whether v * 10^scale is a whole number.
func isIntegerAmount(v int64, scale int32) bool {
	if scale >= 0 || v == 0 {
		return true
	}
	if -int64(scale) >= int64(len(pow10)) {
		return false
	}
	return v%pow10[-scale] == 0
}

// digits64 returns the number of decimal digits of |v|, with 1 for 0.
func digits64(v int64) int64 {
	u := uint64(v)
	if v < 0 {
		u = -u
	}
	n := int64(1)
	for u >= 10 {
		u /= 10
		n++
	}
	return n
}
