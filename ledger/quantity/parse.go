package quantity

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"github.com/cockroachdb/apd/v3"
)

const (
	// LengthMax is the longest text Parse accepts. Kubernetes has no limit;
	// this one keeps the cost of a single Parse bounded, and is far beyond
	// anything a person writes.
	LengthMax = 512

	// ExponentMax bounds the magnitude of values: a value's leading digit
	// may not lie above 10^ExponentMax, nor its last non-zero digit below
	// 10^-ExponentMax. Kubernetes accepts 1e2147483647 and then needs
	// billions of digits to add 1 to it; within this bound every sum stays
	// small enough to compute exactly.
	ExponentMax = 1000

	// int64Digits is the number of decimal digits Kubernetes is sure to fit
	// in an int64 when it decides whether to take its int64 path.
	int64Digits = 18

	// nanoScale is the smallest power of ten a parsed value keeps: finer
	// digits are rounded up to it.
	nanoScale = -9
)

// scanned is a quantity's text split the way Kubernetes' scanner splits it.
type scanned struct {
	negative bool
	// value is the signed number without its suffix, as Kubernetes hands
	// it to inf.Dec.
	value string
	// num is the integer digits without leading zeros, "0" when there are
	// none; denom is the fraction digits.
	num, denom string
	suffix     string
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isSuffixLetter(c byte) bool {
	switch c {
	case 'e', 'E', 'i', 'n', 'u', 'm', 'k', 'K', 'M', 'G', 'T', 'P':
		return true
	}
	return false
}

// scan splits str into sign, number and suffix exactly as Kubernetes'
// parseQuantityString does, including its quirks: "+", "-" and "." are zero,
// and "1.G" is accepted.
func scan(str string) (p scanned, err error) {
	pos, end := 0, len(str)
	if pos < end {
		switch str[0] {
		case '-':
			p.negative = true
			pos++
		case '+':
			pos++
		}
	}
	for ; ; pos++ {
		if pos >= end {
			p.num, p.value = "0", "0"
			return p, nil
		}
		if str[pos] != '0' {
			break
		}
	}
	i := pos
	for i < end && isDigit(str[i]) {
		i++
	}
	if i >= end {
		p.num, p.value = str[pos:], str
		return p, nil
	}
	p.num, pos = str[pos:i], i
	if p.num == "" {
		p.num = "0"
	}
	if str[pos] == '.' {
		pos++
		i = pos
		for i < end && isDigit(str[i]) {
			i++
		}
		if i >= end {
			p.denom, p.value = str[pos:], str
			return p, nil
		}
		p.denom, pos = str[pos:i], i
	}
	p.value = str[:pos]
	start := pos
	for pos < end && isSuffixLetter(str[pos]) {
		pos++
	}
	if pos < end && (str[pos] == '-' || str[pos] == '+') {
		pos++
	}
	for pos < end && isDigit(str[pos]) {
		pos++
	}
	if pos < end {
		return scanned{}, ErrFormatWrong
	}
	p.suffix = str[start:]
	return p, nil
}

// interpretSuffix returns the base, exponent and format a suffix stands for,
// as Kubernetes' suffixer does. Like Kubernetes it truncates an e/E exponent
// to 32 bits.
func interpretSuffix(s string) (base int, exponent int32, format Format, ok bool) {
	switch s {
	case "":
		return 10, 0, DecimalSI, true
	case "n":
		return 10, -9, DecimalSI, true
	case "u":
		return 10, -6, DecimalSI, true
	case "m":
		return 10, -3, DecimalSI, true
	case "k":
		return 10, 3, DecimalSI, true
	case "M":
		return 10, 6, DecimalSI, true
	case "G":
		return 10, 9, DecimalSI, true
	case "T":
		return 10, 12, DecimalSI, true
	case "P":
		return 10, 15, DecimalSI, true
	case "E":
		return 10, 18, DecimalSI, true
	case "Ki":
		return 2, 10, BinarySI, true
	case "Mi":
		return 2, 20, BinarySI, true
	case "Gi":
		return 2, 30, BinarySI, true
	case "Ti":
		return 2, 40, BinarySI, true
	case "Pi":
		return 2, 50, BinarySI, true
	case "Ei":
		return 2, 60, BinarySI, true
	}
	if len(s) > 1 && (s[0] == 'e' || s[0] == 'E') {
		v, err := strconv.ParseInt(s[1:], 10, 64)
		if err != nil {
			return 0, 0, DecimalExponent, false
		}
		return 10, int32(v), DecimalExponent, true
	}
	return 0, 0, DecimalExponent, false
}

// Parse parses s exactly as Kubernetes' resource.ParseQuantity does: the
// same accepted forms and errors, the same value (rounded up to 1n, and
// BinarySI capped at 2^63-1), the same format, and the same decision to keep
// s itself as the printed form. It also returns ErrRange for text longer than
// LengthMax and for values beyond ExponentMax, which Kubernetes accepts.
func Parse(s string) (Quantity, error) {
	if len(s) == 0 {
		return Quantity{}, ErrFormatWrong
	}
	if s == "0" {
		return Quantity{s: s}, nil
	}
	p, err := scan(s)
	if err != nil {
		return Quantity{}, err
	}
	base, exponent, format, ok := interpretSuffix(p.suffix)
	if !ok {
		return Quantity{}, ErrSuffix
	}
	if len(s) > LengthMax {
		return Quantity{}, ErrRange
	}

	// Kubernetes takes its int64 path when the digits surely fit; what it
	// decides here shows later, in whether s is kept and in int64 overflow.
	precision := int32(0)
	scale := int32(0)
	mantissa := int64(1)
	switch format {
	case DecimalExponent, DecimalSI:
		scale = exponent
		precision = int64Digits - int32(len(p.num)+len(p.denom))
	case BinarySI:
		if len(p.denom) == 0 {
			mantissa = 1 << exponent
			// Kubernetes estimates 2^exponent as exponent*3/10 digits.
			precision = 15 - int32(len(p.num)) - exponent*3/10 - 1
		} else {
			precision = -1
		}
	}
	if precision >= 0 {
		if q, ok, err := parseInt64(s, p, mantissa, scale, format); ok {
			return q, err
		}
	}
	return parseDecimal(p, base, exponent, format)
}

// parseInt64 is Parse's int64 path, Kubernetes' own for digits that
// surely fit: ok false when the value does not fit after all (or is finer
// than 1n), and Parse goes on as a decimal.
func parseInt64(s string, p scanned, mantissa int64, scale int32, format Format) (q Quantity, ok bool, err error) {
	scale -= int32(len(p.denom))
	if scale < nanoScale {
		return Quantity{}, false, nil
	}
	v := digitsValue(p.num, p.denom)
	r, ok := mul64(v, mantissa)
	if !ok {
		return Quantity{}, false, nil
	}
	if p.negative {
		r = -r
	}
	q = Quantity{i: r, scale: scale, format: format}
	if r == 0 {
		q.scale = 0
		return q, true, nil
	}
	if int64(scale)+digits64(r)-1 > ExponentMax {
		return Quantity{}, true, ErrRange
	}
	// Kubernetes keeps s when it is already canonical, by a rough test
	// that also keeps "+1Ki", "01Ki" and "1E3".
	switch format {
	case BinarySI:
		if v&7 != 0 {
			q.s = s
		}
	default:
		if scale%3 == 0 && !endsInThreeZeros(p.num, p.denom) && p.num != "0" {
			q.s = s
		}
	}
	return q, true, nil
}

// digitsValue returns the integer written by the digits of num then denom,
// which the caller knows to fit in an int64.
func digitsValue(num, denom string) int64 {
	var v int64
	for i := 0; i < len(num); i++ {
		v = v*10 + int64(num[i]-'0')
	}
	for i := 0; i < len(denom); i++ {
		v = v*10 + int64(denom[i]-'0')
	}
	return v
}

// endsInThreeZeros reports whether num followed by denom ends in "000".
func endsInThreeZeros(num, denom string) bool {
	n := 0
	for _, part := range [2]string{denom, num} {
		for i := len(part) - 1; i >= 0; i-- {
			if part[i] != '0' {
				return false
			}
			if n++; n == 3 {
				return true
			}
		}
	}
	return false
}

// parseDecimal is Kubernetes' inf.Dec path: the exact value, rounded up to
// 1n, BinarySI capped at 2^63-1 and shown as DecimalSI below 1.
func parseDecimal(p scanned, base int, exponent int32, format Format) (Quantity, error) {
	if !strings.ContainsAny(p.value, "0123456789") {
		return Quantity{}, ErrNumeric
	}
	q := Quantity{format: format, wide: true}
	digits := strings.TrimLeft(p.num+p.denom, "0")
	if digits == "" {
		return q, nil
	}
	c := new(big.Int)
	var e int64
	if base == 10 {
		// Kubernetes computes this exponent in 32 bits, wrapping.
		e = int64(exponent - int32(len(p.denom)))
		roundUp := false
		if e < nanoScale {
			cut := nanoScale - e
			if cut >= int64(len(digits)) {
				digits = "1"
			} else {
				kept := int64(len(digits)) - cut
				roundUp = strings.Trim(digits[kept:], "0") != ""
				digits = digits[:kept]
			}
			e = nanoScale
		}
		if e+int64(len(digits))-1 > ExponentMax {
			return Quantity{}, ErrRange
		}
		c.SetString(digits, 10)
		if roundUp {
			c.Add(c, big.NewInt(1))
		}
	} else {
		c.SetString(digits, 10)
		c.Lsh(c, uint(exponent))
		e = -int64(len(p.denom))
		if e < nanoScale {
			// Divide by 10^(nanoScale-e), rounding up.
			div := new(big.Int).Exp(big.NewInt(10), big.NewInt(nanoScale-e), nil)
			m := new(big.Int)
			c.QuoRem(c, div, m)
			if m.Sign() != 0 {
				c.Add(c, big.NewInt(1))
			}
			e = nanoScale
		}
		unit := new(big.Int).Exp(big.NewInt(10), big.NewInt(-e), nil)
		limit := new(big.Int).Mul(big.NewInt(int64Max), unit)
		if c.Cmp(limit) > 0 {
			c.SetInt64(int64Max)
			e = 0
		} else if c.Cmp(unit) < 0 {
			q.format = DecimalSI
		}
	}
	d := &apd.Decimal{Negative: p.negative, Exponent: int32(e)}
	d.Coeff.SetMathBigInt(c)
	q.setDecimal(d)
	return q, nil
}

// MustParse is Parse for constants in code and tests; it panics on error.
func MustParse(s string) Quantity {
	q, err := Parse(s)
	if err != nil {
		panic(fmt.Errorf("parse quantity %q: %w", s, err))
	}
	return q
}
