package quantity

import (
	"cmp"
	"fmt"

	"github.com/cockroachdb/apd/v3"
)

// Format is Kubernetes' notion of how a quantity prints: the format of the
// string it was parsed from, kept through arithmetic as resource.Quantity
// keeps it.
type Format uint8

const (
	// DecimalSI prints with the suffixes n u m "" k M G T P E.
	DecimalSI Format = iota
	// BinarySI prints with the suffixes Ki Mi Gi Ti Pi Ei where exact.
	BinarySI
	// DecimalExponent prints as e.g. 1e3.
	DecimalExponent
)

// formatNames are the names Kubernetes gives the formats, by Format.
var formatNames = [...]string{DecimalSI: "DecimalSI", BinarySI: "BinarySI", DecimalExponent: "DecimalExponent"}

// String returns the name Kubernetes gives the format.
func (f Format) String() string {
	if int(f) < len(formatNames) {
		return formatNames[f]
	}
	return fmt.Sprintf("Format(%d)", uint8(f))
}

// Quantity is an exact decimal with a Kubernetes print format. The zero
// value is 0 in DecimalSI. Quantities are values: methods never modify the
// receiver.
type Quantity struct {
	// When d is nil the value is i * 10^scale. While wide is false, i and
	// scale are exactly the int64Amount Kubernetes would hold, so that its
	// overflow decisions can be repeated.
	i     int64
	scale int32
	// format is the print format.
	format Format
	// wide records that Kubernetes would hold this value as an inf.Dec
	// rather than an int64. It changes one thing only: how a BinarySI value
	// of exactly -2^63 prints.
	wide bool
	// d, when not nil, holds the value. It is never modified after the
	// Quantity is built, so copies of a Quantity may share it.
	d *apd.Decimal
	// s caches the original string when Kubernetes would reuse it.
	s string
}

// exactContext never rounds (precision 0 disables rounding in apd) and turns
// every condition that would lose a digit into an error.
var exactContext = apd.Context{
	Precision:   0,
	MaxExponent: apd.MaxExponent,
	MinExponent: apd.MinExponent,
	Traps:       apd.DefaultTraps | apd.Inexact | apd.Rounded,
}

// NewInt returns the integer v in DecimalSI.
func NewInt(v int64) Quantity {
	return Quantity{i: v}
}

// Format reports q's print format.
func (q Quantity) Format() Format { return q.format }

// decimal returns q's value as an apd decimal, using tmp for an int64 value.
func (q *Quantity) decimal(tmp *apd.Decimal) *apd.Decimal {
	if q.d != nil {
		return q.d
	}
	return tmp.SetFinite(q.i, q.scale)
}

// setDecimal makes d the value of q, holding it as an int64 when the
// coefficient fits, which keeps later arithmetic on the cheap path. It must
// only be used for wide values, whose int64 form Kubernetes does not mirror.
func (q *Quantity) setDecimal(d *apd.Decimal) {
	q.d, q.i, q.scale = nil, 0, 0
	if d.Coeff.IsUint64() {
		switch u := d.Coeff.Uint64(); {
		case !d.Negative && u <= int64Max:
			q.i, q.scale = int64(u), d.Exponent
			return
		case d.Negative && u <= 1<<63:
			// Negating in uint64 also yields -2^63 correctly.
			q.i, q.scale = int64(-u), d.Exponent
			return
		}
	}
	q.d = d
}

// Add returns q+y with resource.Quantity.Add's format rule: the result keeps
// q's format unless q is zero, in which case it takes y's.
func (q Quantity) Add(y Quantity) Quantity { return q.add(y, false) }

// Sub returns q-y with resource.Quantity.Sub's format rule, which is Add's.
func (q Quantity) Sub(y Quantity) Quantity { return q.add(y, true) }

func (q Quantity) add(y Quantity, subtract bool) Quantity {
	r := Quantity{format: q.format, wide: q.wide || y.wide}
	if q.IsZero() {
		r.format = y.format
	}
	if q.d == nil && y.d == nil {
		yi := y.i
		if subtract {
			yi = -yi
		}
		// Negating the most negative int64 wraps, so that case takes the
		// decimal path.
		if !subtract || y.i != int64Min {
			if v, s, ok := addAmount(q.i, q.scale, yi, y.scale); ok {
				r.i, r.scale = v, s
				return r
			}
		}
		// Kubernetes moves to its decimal form when int64 arithmetic
		// overflows.
		r.wide = true
	}
	r.setDecimal(addDecimal(q, y, subtract))
	return r
}

// addDecimal returns q+y or q-y computed by apd. It is kept out of add so
// that the int64 path stays small.
//
//go:noinline
func addDecimal(q, y Quantity, subtract bool) *apd.Decimal {
	var tq, ty apd.Decimal
	d := new(apd.Decimal)
	var cond apd.Condition
	var err error
	op := "+"
	if subtract {
		op = "-"
		cond, err = exactContext.Sub(d, q.decimal(&tq), y.decimal(&ty))
	} else {
		cond, err = exactContext.Add(d, q.decimal(&tq), y.decimal(&ty))
	}
	if err != nil || cond.Inexact() || cond.Rounded() {
		panic(fmt.Sprintf("quantity: %v %s %v is not exact: %v %v", q, op, y, cond, err))
	}
	return d
}

// Cmp compares q and y by value: -1, 0 or +1.
func (q Quantity) Cmp(y Quantity) int {
	if q.d == nil && y.d == nil {
		return cmpAmount(q.i, q.scale, y.i, y.scale)
	}
	var tq, ty apd.Decimal
	return q.decimal(&tq).Cmp(y.decimal(&ty))
}

// cmpInt compares q with the integer v.
func (q Quantity) cmpInt(v int64) int {
	if q.d == nil {
		return cmpAmount(q.i, q.scale, v, 0)
	}
	var t apd.Decimal
	return q.d.Cmp(t.SetFinite(v, 0))
}

// Sign is -1, 0 or +1.
func (q Quantity) Sign() int {
	if q.d == nil {
		return cmp.Compare(q.i, 0)
	}
	return q.d.Sign()
}

// IsZero reports whether q is 0.
func (q Quantity) IsZero() bool {
	if q.d == nil {
		return q.i == 0
	}
	return q.d.IsZero()
}

// IsInteger reports whether q is a whole number.
func (q Quantity) IsInteger() bool {
	if q.d == nil {
		return isIntegerAmount(q.i, q.scale)
	}
	if q.d.Exponent >= 0 || q.d.IsZero() {
		return true
	}
	n := -int64(q.d.Exponent)
	if n > q.d.NumDigits() {
		return false
	}
	var p, r apd.BigInt
	p.Exp(apd.NewBigInt(10), apd.NewBigInt(n), nil)
	r.Rem(&q.d.Coeff, &p)
	return r.Sign() == 0
}
