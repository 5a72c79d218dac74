package ingest

import "errors"

var (
	// ErrInvalidOptions is returned by New and NewResponder when an option
	// is out of range.
	ErrInvalidOptions = errors.New("invalid ingest options")

	// ErrDocumentTooLarge is the reason given for a JSON value or a YAML
	// document larger than DocumentBytesMax (or a YAML document holding a
	// line over LineBytesMax): it is rejected, not read. A YAML document's
	// rejection ends at its separator and the documents after it are read;
	// after a JSON value's, the input is not read further.
	ErrDocumentTooLarge = errors.New("document too large")

	// ErrLineTooLong is the reason given for a first content line longer
	// than LineBytesMax that does not start JSON; the line is rejected and
	// reading goes on.
	ErrLineTooLong = errors.New("line too long")

	// ErrNotKubernetes is the reason given for input that parses but is not
	// a Kubernetes object or watch event (a JSON array, a scalar).
	ErrNotKubernetes = errors.New("not a Kubernetes object or watch event")

	// ErrBadJSON is the reason given for a record that does not parse; in
	// JSON, reading resumes at the next line that starts a record.
	ErrBadJSON = errors.New("bad JSON")

	// ErrBadYAML is the reason given for a YAML document that does not
	// parse.
	ErrBadYAML = errors.New("bad YAML")

	// ErrWatchError is the reason given for a watch event of type ERROR.
	ErrWatchError = errors.New("watch ERROR event")

	// ErrUnknownWatchType is the reason given for a watch event whose type
	// is not ADDED, MODIFIED, DELETED, BOOKMARK or ERROR.
	ErrUnknownWatchType = errors.New("unknown watch event type")

	// ErrNoNamespace is the reason given for a namespaced object without a
	// namespace when Options.Namespace is empty.
	ErrNoNamespace = errors.New("namespaced object has no namespace")

	// ErrNoName is the reason given for an object with only
	// metadata.generateName: a fact needs the name the cluster gave it.
	ErrNoName = errors.New("object has no metadata.name")

	// ErrResyncIncomplete is the reason given when a resync group is not
	// appended because one of its records was rejected: a resync removes
	// every object it does not list, so a list with a hole would delete
	// the object that fell through it.
	ErrResyncIncomplete = errors.New("resync list is incomplete")

	// ErrResyncTooLarge is the reason given for a record of a resync input
	// that lists more than ResyncGroupsMax groups or ResyncItemsMax
	// objects; the resync is then incomplete and not appended.
	ErrResyncTooLarge = errors.New("resync too large")
)
