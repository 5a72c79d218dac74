package quantity

import (
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/cockroachdb/apd/v3"
	"k8s.io/apimachinery/pkg/api/resource"
)

const (
	// exactExponentMax is the largest leading power of ten ParseExact
	// accepts. Sums may grow past ExponentMax by one digit per ten-fold
	// increase in the number of terms; twenty digits more covers any count
	// of terms an int64 can hold.
	exactExponentMax = ExponentMax + 20

	// ExactLengthMax is the longest text ParseExact accepts: enough for
	// every digit from 10^exactExponentMax down to 10^-ExponentMax, a sign,
	// a suffix and the format.
	ExactLengthMax = exactExponentMax + ExponentMax + 64
)

// Exact returns a text that ParseExact turns back into a Quantity with the
// same value, Format and String(). It has one of two forms:
//
//	=TEXT         q is what Parse(TEXT) returned, and prints as TEXT
//	VALUE;FORMAT  VALUE is q's exact value in Kubernetes notation (String()
//	              when that is exact, the e-notation otherwise) and FORMAT is
//	              DecimalSI, BinarySI or DecimalExponent
func (q Quantity) Exact() string {
	var buf [48]byte
	return string(q.AppendExact(buf[:0]))
}

// AppendExact appends Exact() to b, without allocating when b has room.
func (q Quantity) AppendExact(b []byte) []byte {
	if q.s != "" {
		return append(append(b, '='), q.s...)
	}
	start := len(b)
	b, lossless := q.appendCanonical(b)
	if !lossless {
		var t apd.Decimal
		b, _ = appendDecimalBig(b[:start], q.decimal(&t), DecimalExponent)
	}
	b = append(b, ';')
	return append(b, q.format.String()...)
}

// ParseExact parses a text written by Exact.
func ParseExact(s string) (Quantity, error) {
	if len(s) > ExactLengthMax {
		return Quantity{}, fmt.Errorf("exact quantity of %d bytes: %w", len(s), ErrRange)
	}
	if text, ok := strings.CutPrefix(s, "="); ok {
		q, err := Parse(text)
		if err != nil {
			return Quantity{}, fmt.Errorf("exact quantity %q: %w", s, err)
		}
		return q, nil
	}
	value, name, ok := strings.Cut(s, ";")
	if !ok {
		return Quantity{}, fmt.Errorf("exact quantity %q has no format: %w", s, ErrExactForm)
	}
	i := slices.Index(formatNames[:], name)
	if i < 0 {
		return Quantity{}, fmt.Errorf("exact quantity %q has format %q: %w", s, name, ErrExactForm)
	}
	format := Format(i)
	q, ok := parseExactInt64(value, format)
	if !ok {
		d, err := parseExactValue(value)
		if err != nil {
			return Quantity{}, fmt.Errorf("exact quantity %q: %w", s, err)
		}
		q = fromExactDecimal(d, format)
	}
	// Kubernetes' int64 and inf.Dec forms print -2^63 BinarySI differently;
	// the text Exact wrote tells which one q was.
	if q.d == nil {
		var buf [48]byte
		if printed, _ := q.appendCanonical(buf[:0]); string(printed) != value {
			other := q
			if other.wide = !q.wide; other.String() == value {
				return other, nil
			}
		}
	}
	return q, nil
}

// parseExactInt64 is parseExactValue then fromExactDecimal for a value
// whose coefficient has at most int64Digits significant digits and whose
// suffix is not an e-notation exponent: the common case, done without
// big.Int and apd. It reports false for any other value, which the general
// path then reads (and refuses, where it must).
func parseExactInt64(s string, format Format) (Quantity, bool) {
	p, err := scan(s)
	if err != nil || s == "" {
		return Quantity{}, false
	}
	base, exponent, _, ok := interpretSuffix(p.suffix)
	if !ok || base == 10 && len(p.suffix) > 1 {
		return Quantity{}, false
	}
	var c int64
	significant, anyDigit := 0, false
	for _, part := range [2]string{p.num, p.denom} {
		for i := 0; i < len(part); i++ {
			d := part[i]
			if d < '0' || d > '9' {
				return Quantity{}, false
			}
			anyDigit = true
			if c == 0 && d == '0' {
				continue
			}
			if significant++; significant > int64Digits {
				return Quantity{}, false
			}
			c = c*10 + int64(d-'0')
		}
	}
	// scan reports "0" for a value with no digits at all ("+", "."),
	// which the general path refuses.
	if !anyDigit || !strings.ContainsAny(p.value, "0123456789") {
		return Quantity{}, false
	}
	e := int64(exponent)
	if base == 2 {
		if c > int64Max>>exponent {
			return Quantity{}, false
		}
		c <<= exponent
		e = 0
	}
	e -= int64(len(p.denom))
	if checkRange64(c, e, exactExponentMax) != nil {
		return Quantity{}, false
	}
	if p.negative {
		c = -c
	}
	return Quantity{i: c, scale: int32(e), format: format}, true
}

// fromExactDecimal builds a quantity without a cached text. A value whose
// coefficient fits an int64 is held the way Kubernetes holds a quantity
// built from an int64; any other is one Kubernetes holds as an inf.Dec.
func fromExactDecimal(d *apd.Decimal, format Format) Quantity {
	q := Quantity{format: format}
	q.setDecimal(d)
	q.wide = q.d != nil
	return q
}

// parseExactValue reads Kubernetes notation exactly: no rounding, no cap and
// no 32-bit exponent.
func parseExactValue(s string) (*apd.Decimal, error) {
	p, err := scan(s)
	if err != nil {
		return nil, err
	}
	if s == "" || !strings.ContainsAny(p.value, "0123456789") {
		return nil, ErrExactForm
	}
	base, exponent, _, ok := interpretSuffix(p.suffix)
	if !ok {
		return nil, ErrSuffix
	}
	e := int64(exponent)
	if base == 10 && len(p.suffix) > 1 {
		// An e-notation exponent, read again without truncation.
		if e, err = strconv.ParseInt(p.suffix[1:], 10, 64); err != nil {
			return nil, ErrSuffix
		}
	}
	digits := strings.TrimLeft(p.num+p.denom, "0")
	c := new(big.Int)
	if digits != "" {
		c.SetString(digits, 10)
	}
	if base == 2 {
		c.Lsh(c, uint(exponent))
		e = 0
	}
	e -= int64(len(p.denom))
	if err := checkRange(c, e, exactExponentMax); err != nil {
		return nil, err
	}
	d := &apd.Decimal{Negative: p.negative && c.Sign() != 0, Exponent: int32(e)}
	d.Coeff.SetMathBigInt(c)
	return d, nil
}

// checkRange returns ErrRange unless the non-negative c * 10^e has its
// leading digit at most at 10^max and its last non-zero digit at least at
// 10^-ExponentMax. Zero is always in range.
func checkRange(c *big.Int, e int64, max int64) error {
	if c.Sign() == 0 {
		return nil
	}
	text := c.String()
	if e+int64(len(text))-1 > max {
		return ErrRange
	}
	low := e + int64(len(text)-len(strings.TrimRight(text, "0")))
	if low < -ExponentMax {
		return ErrRange
	}
	return nil
}

// FromKube returns the quantity k holds: the same exact value, the same
// Format and the same String(). A Format other than Kubernetes' three prints
// in Kubernetes as DecimalExponent and becomes DecimalExponent here. It
// returns ErrRange for a value beyond ExponentMax.
//
// It reads k through its exported methods only: its value through AsDec
// (of a copy, as AsDec converts its receiver in place) and its text through
// String. Only a value whose coefficient does not fit an int64 takes the
// big-number path.
func FromKube(k resource.Quantity) (Quantity, error) {
	var format Format
	switch k.Format {
	case resource.DecimalSI:
		format = DecimalSI
	case resource.BinarySI:
		format = BinarySI
	default:
		format = DecimalExponent
	}
	// String first: it prints k as it is, and AsDec below changes the form
	// of the copy it converts.
	text := k.String()
	dec := k.AsDec()
	var q Quantity
	if v, ok := dec.Unscaled(); ok {
		// The int64 form fromExactDecimal would give: the coefficient and
		// exponent as they are, not wide.
		e := -int64(dec.Scale())
		if err := checkRange64(v, e, ExponentMax); err != nil {
			return Quantity{}, fmt.Errorf("kubernetes quantity: %w", err)
		}
		q = Quantity{i: v, scale: int32(e), format: format}
	} else {
		unscaled := new(big.Int).Abs(dec.UnscaledBig())
		e := -int64(dec.Scale())
		if err := checkRange(unscaled, e, ExponentMax); err != nil {
			return Quantity{}, fmt.Errorf("kubernetes quantity: %w", err)
		}
		d := &apd.Decimal{Negative: dec.Sign() < 0, Exponent: int32(e)}
		d.Coeff.SetMathBigInt(unscaled)
		q = fromExactDecimal(d, format)
	}
	return fromKubeText(q, text), nil
}

// fromKubeText returns q, the value and format of a Kubernetes quantity
// that prints as text, with what q must keep of text.
func fromKubeText(q Quantity, text string) Quantity {
	var buf [48]byte
	if printed, _ := q.appendCanonical(buf[:0]); string(printed) == text {
		return q
	}
	// Kubernetes' int64 and inf.Dec forms print -2^63 BinarySI differently.
	other := q
	other.wide = !q.wide
	if q.d == nil && other.String() == text {
		return other
	}
	// Otherwise k keeps the text it was parsed from.
	if p, err := Parse(text); err == nil && p.format == q.format && p.Cmp(q) == 0 {
		return p
	}
	return q
}

// checkRange64 is checkRange for a coefficient held in an int64 (either
// sign; its magnitude is what counts).
func checkRange64(v int64, e int64, max int64) error {
	if v == 0 {
		return nil
	}
	u := uint64(v)
	if v < 0 {
		u = -u
	}
	if e+digits64(v)-1 > max {
		return ErrRange
	}
	low := e
	for u%10 == 0 {
		u /= 10
		low++
	}
	if low < -ExponentMax {
		return ErrRange
	}
	return nil
}
