package ledger

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrNoStream is returned by Attach when the server has not created the
// streams yet: no ledger server has run against this NATS.
var ErrNoStream = errors.New("the ledger's streams do not exist on this NATS (has 'quota serve' run against it?)")

// Attach opens the existing event and dead-letter streams without creating
// or changing them, as a client (quota ingest, replay) does, so that its
// defaults never overwrite the server's configuration. Only the stream
// names of cfg are read; MaxMsgSize, DuplicateWindow and Replicas are the
// event stream's own, so that what a client creates beside the stream
// (quota export's key-value bucket) is kept as many times.
func Attach(ctx context.Context, js jetstream.JetStream, cfg Config) (*Stream, error) {
	cfg = cfg.withDefaults()
	open := func(name string) (jetstream.Stream, error) {
		st, err := js.Stream(ctx, name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			err = ErrNoStream
		}
		if err != nil {
			return nil, fmt.Errorf("attach %s: %w", name, noJetStream(err))
		}
		return st, nil
	}
	events, err := open(cfg.StreamName)
	if err != nil {
		return nil, err
	}
	if n := events.CachedInfo().Config.MaxMsgSize; n > 0 {
		cfg.MaxMsgSize = n
	}
	if d := events.CachedInfo().Config.Duplicates; d > 0 {
		cfg.DuplicateWindow = d
	}
	if n := events.CachedInfo().Config.Replicas; n > 0 {
		cfg.Replicas = n
	}
	rejects, err := open(cfg.RejectStreamName)
	if err != nil {
		return nil, err
	}
	return &Stream{js: js, cfg: cfg, events: events, rejects: rejects}, nil
}

// noJetStream says what a request of JetStream's API that nothing answers
// means: a NATS server without JetStream (or an account without it).
func noJetStream(err error) error {
	if errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrJetStreamNotEnabled) ||
		errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) {
		return fmt.Errorf("%w: %w", ErrNoJetStream, err)
	}
	return err
}
