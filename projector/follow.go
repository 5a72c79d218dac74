package projector

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/quotaledger/quota/ledger"
)

// Run follows the stream from the applied sequence onward, applying one
// bounded batch per transaction, until ctx ends. A batch in hand when ctx
// ends is still committed. It returns nil on cancellation and an error only
// for a failure that must stop the projector (storage, a broken invariant).
func (p *Projector) Run(ctx context.Context) error {
	if p.stream == nil {
		return errors.New("projector has no stream to follow")
	}
	log := p.cfg.Logger
	reader, err := p.stream.Reader(ctx, p.Applied()+1)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("follow stream from seq %d: %w", p.Applied()+1, err)
	}
	defer reader.Close()
	log.Info("projector following stream", "from_seq", p.Applied()+1, "path", p.cfg.Path)
	// A checkpoint that fails stops the fold; a stop of the fold makes a
	// last checkpoint.
	followCtx, stopFollow := context.WithCancel(ctx)
	defer stopFollow()
	ckCtx, stopCheckpoints := context.WithCancel(context.WithoutCancel(ctx))
	checkpoints := make(chan error, 1)
	go func() {
		err := p.checkpointLoop(ckCtx)
		stopFollow()
		checkpoints <- err
	}()
	err = p.follow(followCtx, reader)
	stopCheckpoints()
	if ckErr := <-checkpoints; ckErr != nil {
		return ckErr
	}
	return err
}

// follow applies the stream's records as they come until ctx ends. The
// records are read and their objects evaluated one batch ahead of the
// fold (prepareAhead), so that the two overlap.
func (p *Projector) follow(ctx context.Context, reader *ledger.Reader) error {
	ctx, cancel := context.WithCancel(ctx)
	batches := PrepareAhead(ctx, func(ctx context.Context) ([]ledger.Record, error) {
		records, err := reader.Next(ctx, p.cfg.BatchSizeMax, p.cfg.FetchWaitTimeout)
		if err == nil && len(records) > 0 {
			records, err = p.gather(ctx, reader, records)
		}
		return records, err
	})
	defer func() {
		cancel()
		for range batches {
		}
	}()
	for b := range batches {
		if b.Prepared != nil {
			if err := contiguous(p.Applied(), b.Prepared.Records()); err != nil {
				return err
			}
			if err := p.ApplyPrepared(ctx, b.Prepared); err != nil {
				return err
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		if b.Err != nil {
			return fmt.Errorf("read stream after seq %d: %w", p.Applied(), b.Err)
		}
	}
	return nil
}

// PreparedBatch is one step of prepareAhead: a batch, an error, or both
// (the records read before the error).
type PreparedBatch struct {
	Prepared *Prepared
	Err      error
}

// prepareAhead calls next in a goroutine of its own, prepares each batch
// it returns, and sends it on the channel it returns, at most one batch
// ahead of the receiver. It stops after next returns an error, which it
// sends, or once ctx ends; then it closes the channel.
func PrepareAhead(ctx context.Context, next func(context.Context) ([]ledger.Record, error)) <-chan PreparedBatch {
	// Unbuffered: the batch prepared waits in the send, so that two
	// batches at most are held, the one folded and the next.
	out := make(chan PreparedBatch)
	go func() {
		defer close(out)
		for ctx.Err() == nil {
			records, err := next(ctx)
			var b PreparedBatch
			if len(records) > 0 {
				b.Prepared = Prepare(records)
			}
			b.Err = err
			if b.Prepared == nil && err == nil {
				continue
			}
			select {
			case out <- b:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return out
}

// contiguous checks that records continue applied without a gap: the
// log has none (deleting single events is denied), but a log trimmed
// (Retainer) past a projection that was not following it would hand it
// the events after the trim as if nothing lay between.
func contiguous(applied uint64, records []ledger.Record) error {
	for _, r := range records {
		if r.Seq != applied+1 {
			return fmt.Errorf("%w: the log gave seq %d after applied seq %d: the events between were removed from it; move the projection file aside to start from the newest checkpoint", ErrLogGap, r.Seq, applied)
		}
		applied = r.Seq
	}
	return nil
}

// gather lets a batch of reservations smaller than a quarter of
// BatchSizeMax wait up to CommitDelay for more records, as long as no
// query waits for a commit and no other kind of event comes.
func (p *Projector) gather(ctx context.Context, reader *ledger.Reader, records []ledger.Record) ([]ledger.Record, error) {
	if p.cfg.CommitDelay <= 0 || len(records) >= p.cfg.BatchSizeMax/4 || !reservationsOnly(records) {
		return records, nil
	}
	// A wake-up left from a query that has been served since must not cut
	// this batch short.
	select {
	case <-p.wake:
	default:
	}
	deadline := time.Now().Add(p.cfg.CommitDelay)
	for len(records) < p.cfg.BatchSizeMax && p.waiting.Load() == 0 {
		wait := time.Until(deadline)
		if wait <= 0 {
			break
		}
		more, err := reader.NextUnless(ctx, p.cfg.BatchSizeMax-len(records), wait, p.wake)
		records = append(records, more...)
		if err != nil || !reservationsOnly(more) {
			return records, err
		}
	}
	return records, nil
}

// reservationsOnly reports whether records are all Reserve events: the
// admissions' own trickle, which their views account for until the
// projection applies it. A fact from the cluster, a release or anything
// else is applied without waiting, so that a decision that does not
// append (a denial, a dry run, an update of an object not known yet)
// reads it as soon as it can.
func reservationsOnly(records []ledger.Record) bool {
	for i := range records {
		if records[i].Err != nil || records[i].Event.Type != ledger.Reserve {
			return false
		}
	}
	return true
}
