package quantity

import (
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

// Quantity is an exact decimal with a Kubernetes print format. The zero
// value is 0 in DecimalSI. Quantities are values: methods never modify the
// receiver.
type Quantity struct {
	d      apd.Decimal
	format Format
	// s caches the original string when Kubernetes would reuse it.
	s string
}

// Parse parses s exactly as Kubernetes' resource.ParseQuantity does.
func Parse(s string) (Quantity, error) { panic("TODO") }

// MustParse is Parse for constants in code and tests; it panics on error.
func MustParse(s string) Quantity { panic("TODO") }

// NewInt returns the integer v in DecimalSI.
func NewInt(v int64) Quantity { panic("TODO") }

// String prints q as resource.Quantity.String() does.
func (q Quantity) String() string { panic("TODO") }

// Format reports q's print format.
func (q Quantity) Format() Format { return q.format }

// Add returns q+y with resource.Quantity.Add's format rule.
func (q Quantity) Add(y Quantity) Quantity { panic("TODO") }

// Sub returns q-y with resource.Quantity.Sub's format rule.
func (q Quantity) Sub(y Quantity) Quantity { panic("TODO") }

// Cmp compares q and y by value: -1, 0 or +1.
func (q Quantity) Cmp(y Quantity) int { panic("TODO") }

// Sign is -1, 0 or +1.
func (q Quantity) Sign() int { panic("TODO") }

// IsZero reports whether q is 0.
func (q Quantity) IsZero() bool { panic("TODO") }
