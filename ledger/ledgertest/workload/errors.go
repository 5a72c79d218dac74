package workload

import "errors"

// ErrInvalidConfig is returned by New and Write when a Config field is out
// of range; the message lists every problem.
var ErrInvalidConfig = errors.New("invalid workload config")
