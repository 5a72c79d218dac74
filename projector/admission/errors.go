package admission

import "errors"

var (
	// ErrContention is returned when the round deciding an admission
	// made ReserveAttemptsMax attempts without appending its reservations:
	// other writers kept appending to the namespace's subject first.
	ErrContention = errors.New("too much contention on the namespace; retry")
	// ErrBadRequest marks a request that is not a usable AdmissionReview.
	ErrBadRequest = errors.New("bad admission request")
)
