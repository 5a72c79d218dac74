package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/quotaledger/quota/ledger"
)

// watchStore returns an error wrapping ledger.ErrStoreFailed, which stops
// serve, once emb reports twice in a row that it cannot serve its store (a
// write error, a full disk's included), and nil when ctx ends. nats-server
// takes no append to a stream that met a write error until it restarts,
// and answers none of them meanwhile: stopping says so where a client
// would only time out. One report alone is only logged: a stream being
// created or deleted can be seen half made.
func watchStore(ctx context.Context, emb *ledger.Embedded, every time.Duration, dir string, log *slog.Logger) error {
	tick := time.NewTicker(every)
	defer tick.Stop()
	failed := false
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		err := emb.Health()
		if err == nil {
			failed = false
			continue
		}
		if ctx.Err() != nil {
			return nil // a stop under way, not a failure
		}
		if !failed {
			failed = true
			log.Warn("embedded JetStream reports a problem; checking again", "store", dir, "err", err, "in", every)
			continue
		}
		log.Error("embedded JetStream failed; stopping", "store", dir, "err", err)
		return fmt.Errorf("%w; it takes no append until it restarts: fix the cause (a full disk: free space where %s is) and start serve again; the stream and the projection keep what they hold", err, dir)
	}
}

// streamCheckInterval is how often serve asks JetStream whether the stream
// it follows is still there.
var streamCheckInterval = 5 * time.Second

// watchStream returns an error wrapping ledger.ErrStreamGone, which stops
// serve, once JetStream has no stream of the followed stream's name, or
// one with another identity than want (deleted and created again), at two
// checks in a row, and nil when ctx ends. The projection cannot follow either: a stream created
// again starts its sequences anew, under those the projection has applied.
// A check that fails otherwise (NATS unreachable for a while) is logged,
// once for a spell of failures.
func watchStream(ctx context.Context, stream *ledger.Stream, want string, every time.Duration, log *slog.Logger) error {
	tick := time.NewTicker(every)
	defer tick.Stop()
	failing, gone := false, false
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		got, err := stream.CurrentIdentity(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err == nil && got != want {
			err = fmt.Errorf("%w: it was deleted and created again (%s; it was %s)", ledger.ErrStreamGone, got, want)
		}
		if errors.Is(err, ledger.ErrStreamGone) && !gone {
			// Confirmed at the next check: a cluster electing its leaders
			// is not to stop every replica.
			gone = true
			log.Warn("the stream the projection follows seems gone; checking again", "err", err, "in", every)
			continue
		}
		if errors.Is(err, ledger.ErrStreamGone) {
			log.Error("the stream the projection follows is gone; stopping", "err", err)
			return fmt.Errorf("%w; the projection follows events JetStream no longer holds: start serve again, which creates the stream if it is missing and refuses the projection of the old one until it is moved aside", err)
		}
		gone = false
		switch {
		case err != nil && !failing:
			// Once per spell: NATS may be away for long.
			failing = true
			log.Warn("could not check the stream; trying on", "err", err, "every", every)
		case err == nil && failing:
			failing = false
			log.Info("the stream can be checked again")
		}
	}
}
