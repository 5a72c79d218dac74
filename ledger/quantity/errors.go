package quantity

import "errors"

// The first three errors carry Kubernetes' own messages, because a user who
// wrote a bad quantity should read the same words the API server would have
// shown them.
var (
	// ErrFormatWrong is returned by Parse for empty text and for text that is
	// not a number followed by suffix letters, an optional sign and digits.
	ErrFormatWrong = errors.New("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")

	// ErrNumeric is returned by Parse when the number part has no digits
	// but Kubernetes still has to read it as a decimal (for example "-.e-10").
	ErrNumeric = errors.New("unable to parse numeric part of quantity")

	// ErrSuffix is returned by Parse for a suffix that is none of the decimal
	// SI suffixes, the binary SI suffixes, or e/E followed by an int64.
	ErrSuffix = errors.New("unable to parse quantity's suffix")

	// ErrRange is returned by Parse, ParseExact and FromKube for a quantity
	// that Kubernetes accepts but that this package does not hold: text longer
	// than LengthMax bytes, or a value whose magnitude reaches
	// 10^(ExponentMax+1) or whose smallest digit lies below 10^-ExponentMax.
	ErrRange = errors.New("quantity is outside the range held exactly")

	// ErrExactForm is returned by ParseExact for text that Exact cannot have
	// written.
	ErrExactForm = errors.New("malformed exact quantity")
)
