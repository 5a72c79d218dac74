package server

import "errors"

// ErrInvalidFlags is returned by Flags.Validate and Serve, naming every
// flag that is wrong.
var ErrInvalidFlags = errors.New("invalid serve flags")
