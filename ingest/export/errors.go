package export

import "errors"

var (
	// ErrInvalidConfig is returned by Config.Validate and New for a
	// configuration that cannot work; the message lists every problem.
	ErrInvalidConfig = errors.New("invalid exporter configuration")
	// ErrStopped is returned by a wait for a free in-flight slot or for an
	// append when the exporter, or the stream of the resource, stops.
	ErrStopped = errors.New("export stopped")
	// errNotItem is returned by the Reflector's store when handed an
	// object its ListerWatcher did not make: a bug.
	errNotItem = errors.New("not an item")
)
