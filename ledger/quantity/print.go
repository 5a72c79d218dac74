package quantity

import (
	"math/big"
	"strconv"

	"github.com/cockroachdb/apd/v3"
)

// String prints q as resource.Quantity.String() does: the text q was parsed
// from when Kubernetes keeps it, and otherwise the canonical form.
func (q Quantity) String() string {
	if q.s != "" {
		return q.s
	}
	var buf [40]byte
	b, _ := q.appendCanonical(buf[:0])
	return string(b)
}

// appendCanonical appends Kubernetes' canonical form of q (CanonicalizeBytes)
// and reports whether that text determines the value. It does not when
// Kubernetes has no suffix for the exponent and prints the digits alone: a
// DecimalSI 1e21 prints "1", a BinarySI 2^70 prints "1".
func (q Quantity) appendCanonical(out []byte) ([]byte, bool) {
	if q.IsZero() {
		return append(out, '0'), true
	}
	format := q.format
	if format == BinarySI {
		// Kubernetes prints BinarySI only for whole numbers of at least
		// 1024 in magnitude, and DecimalSI otherwise.
		if q.cmpInt(-1024) > 0 && q.cmpInt(1024) < 0 || !q.IsInteger() {
			format = DecimalSI
		}
	}
	if format == BinarySI {
		return q.appendBinary(out)
	}
	if q.d == nil {
		// Move factors of ten into the exponent, then bring the exponent
		// down to a multiple of three.
		m, e := q.i, int64(q.scale)
		for m%10 == 0 {
			m /= 10
			e++
		}
		ok := true
		switch e % 3 {
		case 1, -2:
			m, ok = mul64(m, 10)
			e--
		case 2, -1:
			m, ok = mul64(m, 100)
			e -= 2
		}
		if ok {
			return appendDecimalSuffix(strconv.AppendInt(out, m, 10), e, format)
		}
	}
	var t apd.Decimal
	return appendDecimalBig(out, q.decimal(&t), format)
}

// appendDecimalBig is appendCanonical's decimal form for any value.
func appendDecimalBig(out []byte, d *apd.Decimal, format Format) ([]byte, bool) {
	if d.Negative {
		out = append(out, '-')
	}
	start := len(out)
	out = d.Coeff.Append(out, 10)
	e := int64(d.Exponent)
	for len(out) > start+1 && out[len(out)-1] == '0' {
		out = out[:len(out)-1]
		e++
	}
	for e%3 != 0 {
		out = append(out, '0')
		e--
	}
	return appendDecimalSuffix(out, e, format)
}

// decimalSuffixes are Kubernetes' suffixes for 10^-9 to 10^18, a power of
// 1000 apart, 10^0 having none (the space); binarySuffixes those for
// 1024^0 to 1024^6.
const decimalSuffixes = "num kMGTPE"

var binarySuffixes = [...]string{"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"}

// appendDecimalSuffix appends the suffix for 10^e, which is a multiple of 3.
// For DecimalSI Kubernetes has suffixes from n to E only; beyond them it
// prints no suffix at all.
func appendDecimalSuffix(out []byte, e int64, format Format) ([]byte, bool) {
	switch {
	case e == 0:
		return out, true
	case format == DecimalExponent:
		return strconv.AppendInt(append(out, 'e'), e, 10), true
	case e < -9 || e > 18:
		return out, false
	}
	return append(out, decimalSuffixes[(e+9)/3]), true
}

// appendBinary appends a whole q of magnitude at least 1024 as a multiple of
// the largest power of 1024 that divides it.
func (q Quantity) appendBinary(out []byte) ([]byte, bool) {
	if q.d == nil {
		v, ok := q.i, true
		if q.scale < 0 {
			v /= pow10[-q.scale]
		} else {
			v, ok = scaleUp(q.i, int64(q.scale))
		}
		switch {
		case ok && v == int64Min && !q.wide:
			// Kubernetes' int64 path cannot negate -2^63 and so finds no
			// factor of 1024 in it; its decimal path prints -8Ei.
			return strconv.AppendInt(out, v, 10), true
		case ok && v != int64Min:
			m, times := v, 0
			for m != 0 && m%1024 == 0 {
				m /= 1024
				times++
			}
			return appendBinarySuffix(strconv.AppendInt(out, m, 10), times)
		}
	}
	var t apd.Decimal
	d := q.decimal(&t)
	c := d.Coeff.MathBigInt()
	if d.Exponent != 0 {
		p := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(d.Exponent)).Abs(big.NewInt(int64(d.Exponent))), nil)
		if d.Exponent > 0 {
			c.Mul(c, p)
		} else {
			c.Quo(c, p)
		}
	}
	times := int(c.TrailingZeroBits() / 10)
	c.Rsh(c, uint(10*times))
	if d.Negative {
		out = append(out, '-')
	}
	return appendBinarySuffix(c.Append(out, 10), times)
}

// appendBinarySuffix appends the suffix for 1024^times. Kubernetes has none
// for 1024^0 and none beyond Ei, and then prints the digits alone.
func appendBinarySuffix(out []byte, times int) ([]byte, bool) {
	if times >= len(binarySuffixes) {
		return out, false
	}
	return append(out, binarySuffixes[times]...), true
}
