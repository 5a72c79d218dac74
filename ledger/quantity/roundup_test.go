package quantity

import "github.com/cockroachdb/apd/v3"

// RoundUp serves the tests only, which check that values held here round
// as resource.Quantity's do: the quota package rounds Kubernetes'
// quantities before it converts them.

// RoundUp returns q rounded away from zero to a multiple of 10^scale and
// reports whether that lost nothing, as resource.Quantity.RoundUp does:
// RoundUp(0) is what Kubernetes' quota evaluator applies to a claim's
// requested storage so that it is charged in whole bytes. A quantity already
// at that scale is returned unchanged, keeping the text it was parsed from;
// otherwise the result prints canonically in q's format. (Kubernetes also
// forgets the parsed text once a Cmp has converted its receiver to inf.Dec;
// Quantity never changes on reading, and keeps it.)
func (q Quantity) RoundUp(scale int32) (Quantity, bool) {
	r := q
	if q.d == nil {
		if q.scale >= scale {
			if q.wide {
				r.s = ""
			}
			return r, true
		}
		r.s = ""
		v, exact := roundAmount(q.i, q.scale, scale)
		if !q.wide {
			r.i, r.scale = v, scale
			return r, exact
		}
		r.setDecimal(new(apd.Decimal).SetFinite(v, scale))
		return r, exact
	}
	r.s = ""
	if q.d.Exponent >= scale {
		return r, true
	}
	n := int64(scale) - int64(q.d.Exponent)
	d := &apd.Decimal{Negative: q.d.Negative, Exponent: scale}
	if n > q.d.NumDigits() {
		// Every digit lies below 10^scale and q is not zero.
		d.Coeff.SetInt64(1)
		r.setDecimal(d)
		return r, false
	}
	var p, rem apd.BigInt
	p.Exp(apd.NewBigInt(10), apd.NewBigInt(n), nil)
	d.Coeff.QuoRem(&q.d.Coeff, &p, &rem)
	exact := rem.Sign() == 0
	if !exact {
		d.Coeff.Add(&d.Coeff, apd.NewBigInt(1))
	}
	r.setDecimal(d)
	return r, exact
}

// roundAmount rounds v * 10^from to a multiple of 10^to (to > from), away
// from zero, and reports whether no digit was lost. It is Kubernetes'
// negativeScaleInt64.
func roundAmount(v int64, from, to int32) (int64, bool) {
	n := int64(to) - int64(from)
	var result int64
	var lost bool
	if n >= int64(len(pow10)) {
		result, lost = 0, v != 0
	} else {
		p := pow10[n]
		result, lost = v/p, v%p != 0
	}
	if lost {
		if v > 0 {
			result++
		} else {
			result--
		}
	}
	return result, !lost
}
