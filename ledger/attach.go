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
// or changing them: what a client (quota ingest, replay) does, so that its
// defaults never overwrite the configuration the server chose. Only the
// stream names of cfg are read; the largest event and the replicas are
// the event stream's own (Config.MaxMsgSize and Config.Replicas of the
// server that opened it), so that what a client creates beside the
// stream (quota export's key-value bucket) is kept as many times.
func Attach(ctx context.Context, js jetstream.JetStream, cfg Config) (*Stream, error) {
	cfg = cfg.withDefaults()
	events, err := js.Stream(ctx, cfg.StreamName)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("attach %s: %w", cfg.StreamName, ErrNoStream)
	}
	if err != nil {
		return nil, fmt.Errorf("attach %s: %w", cfg.StreamName, noJetStream(err))
	}
	if n := events.CachedInfo().Config.MaxMsgSize; n > 0 {
		cfg.MaxMsgSize = n
	}
	if n := events.CachedInfo().Config.Replicas; n > 0 {
		cfg.Replicas = n
	}
	rejects, err := js.Stream(ctx, cfg.RejectStreamName)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("attach %s: %w", cfg.RejectStreamName, ErrNoStream)
	}
	if err != nil {
		return nil, fmt.Errorf("attach %s: %w", cfg.RejectStreamName, noJetStream(err))
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
