package admission

import "errors"

var (
	// ErrContention is returned when an admission lost the race for its
	// namespace's subject more than ReserveAttemptsMax times in a row.
	ErrContention = errors.New("too much contention on the namespace; retry")
	// ErrBadRequest marks a request that is not a usable AdmissionReview.
	ErrBadRequest = errors.New("bad admission request")
)
