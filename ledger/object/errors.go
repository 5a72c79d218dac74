package object

import "errors"

var (
	// ErrNotObject is returned by Decode when the input is not a JSON object.
	ErrNotObject = errors.New("not a JSON object")
	// ErrMalformed is returned by Decode when the JSON does not parse or a
	// field has the wrong type.
	ErrMalformed = errors.New("malformed object")
	// ErrMissingKind is returned by Decode when the object has no kind.
	ErrMissingKind = errors.New("missing kind")
	// ErrMissingAPIVersion is returned by Decode when the object has no
	// apiVersion.
	ErrMissingAPIVersion = errors.New("missing apiVersion")
	// ErrMissingName is returned by Decode when the object has neither
	// metadata.name nor metadata.generateName.
	ErrMissingName = errors.New("missing metadata.name")
	// ErrTooLarge is returned by Decode for input above SizeMax.
	ErrTooLarge = errors.New("object too large")
)
