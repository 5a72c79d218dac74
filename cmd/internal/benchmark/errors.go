package benchmark

import "errors"

// ErrConfig is returned by Run when Config is invalid; the message lists
// every problem.
var ErrConfig = errors.New("invalid benchmark config")

// ErrNotMeasured marks a figure whose code does not exist yet (a nil Hook).
// Such a figure is reported with Status NotMeasured, never estimated.
var ErrNotMeasured = errors.New("not measured yet")
