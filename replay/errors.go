package replay

import "errors"

var (
	// ErrOptions is wrapped by Options.Validate.
	ErrOptions = errors.New("invalid replay options")
	// ErrBeyondStream is returned by Rebuild when the target sequence is
	// past the stream's last one, or a starting file is past the target.
	ErrBeyondStream = errors.New("target is beyond the stream")
	// ErrFileExists is returned by Rebuild when Options.Path names a file
	// that is not empty: a rebuild never folds into an existing projection.
	ErrFileExists = errors.New("rebuild file exists")
	// ErrReadStalled is returned by Rebuild when a record the stream holds
	// did not arrive within Options.ReadWaitTimeout.
	ErrReadStalled = errors.New("stream read stalled")
	// ErrNotCovered is returned by Rebuild and Verify when no starting
	// point serves the target: the log was trimmed past it and no
	// archive holds what it lacks. The message names the oldest moment
	// that could be answered.
	ErrNotCovered = errors.New("not covered by the log, its checkpoints or the archive")
	// ErrDrift is returned by Verify's callers' convention: it marks a
	// comparison that found differences (the command exits 1 on it).
	ErrDrift = errors.New("rebuilt projection differs from the live one")
)
