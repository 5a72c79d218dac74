package exporter

import "errors"

// ErrInvalidConfig is returned by Config.Validate, naming every setting
// that is wrong.
var ErrInvalidConfig = errors.New("invalid export settings")
