package ingestfiles

import "errors"

var (
	// ErrRejected is returned by Run when some records were rejected;
	// each has been printed, with the summary.
	ErrRejected = errors.New("records rejected")

	// ErrInvalidConfig is returned by Config.Validate, naming every
	// setting that is wrong.
	ErrInvalidConfig = errors.New("invalid ingest settings")
)
