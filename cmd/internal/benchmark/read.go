package benchmark

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/projector"
)

// rawRead reads the ledger's stream through a plain ordered consumer,
// touching each message's data and nothing else.
func (r *run) rawRead(ctx context.Context) (float64, string, error) {
	last, err := r.stream.LastSeq(ctx)
	if err != nil {
		return 0, "", err
	}
	if last == 0 {
		return 0, "", errors.New("raw read: the stream is empty")
	}
	start := time.Now()
	cons, err := r.js.OrderedConsumer(ctx, r.stream.Config().StreamName, jetstream.OrderedConsumerConfig{
		DeliverPolicy: jetstream.DeliverAllPolicy, ReplayPolicy: jetstream.ReplayInstantPolicy,
	})
	if err != nil {
		return 0, "", err
	}
	iter, err := cons.Messages(jetstream.PullMaxMessages(ledger.ReaderBufferMax))
	if err != nil {
		return 0, "", err
	}
	defer iter.Stop()
	var n, size int
	for {
		m, err := iter.Next()
		if err != nil {
			return 0, "", fmt.Errorf("raw read after %d: %w", n, err)
		}
		n++
		size += len(m.Data())
		meta, err := m.Metadata()
		if err != nil {
			return 0, "", err
		}
		if meta.Sequence.Stream >= last {
			break
		}
	}
	return rate(n, time.Since(start)), fmt.Sprintf("%d events, %s; %d in flight", n, bytesText(float64(size)), ledger.ReaderBufferMax), nil
}

// projection follows the stream with a fresh projector until it has
// applied everything, and leaves it running for the queries.
func (r *run) projection() (*projector.Projector, func(), error) {
	ctx, cancel := context.WithTimeout(context.Background(), PhaseTimeout)
	defer cancel()
	fail := func(err error) (*projector.Projector, func(), error) {
		r.add(Figure{Name: FigureProjection, Unit: UnitEventsPerSecond, Status: Failed, Note: err.Error(), Ceiling: FigureRawRead})
		return nil, nil, err
	}
	last, err := r.stream.LastSeq(ctx)
	if err != nil {
		return fail(err)
	}
	r.workloadEnd = last
	p, err := projector.Open(projector.Config{
		Path:   filepath.Join(r.cfg.Dir, "projection.db"),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}, r.stream)
	if err != nil {
		return fail(err)
	}
	stopProfile, err := r.profile(FigureProjection)
	if err != nil {
		p.Close()
		return fail(err)
	}
	runCtx, stopRun := context.WithCancel(context.Background())
	exited := make(chan error, 1)
	start := time.Now()
	go func() {
		defer func() {
			if v := recover(); v != nil {
				exited <- fmt.Errorf("projector panicked: %v", v)
			}
		}()
		exited <- p.Run(runCtx)
	}()
	stop := func() {
		stopRun()
		<-exited
		p.Close()
	}
	caught := make(chan error, 1)
	go func() { caught <- p.WaitApplied(ctx, last) }()
	select {
	case err = <-caught:
	case err = <-exited:
		if err == nil {
			err = errors.New("projector stopped before catching up")
		}
		_ = stopProfile()
		stopRun()
		p.Close()
		return fail(err)
	}
	elapsed := time.Since(start)
	if perr := stopProfile(); err == nil {
		err = perr
	}
	if err != nil {
		stop()
		return fail(err)
	}
	r.add(Figure{Name: FigureProjection, Unit: UnitEventsPerSecond, Value: rate(int(last), elapsed),
		Ceiling: FigureRawRead, Target: "≥ 0.5 × ceiling, ≥ 100k events/s",
		check: func(v, ratio float64) bool { return ratio >= CeilingShareMin && v >= ProjectionRateMin },
		Note:  fmt.Sprintf("fresh projection file, default batch %d, bbolt sync per batch", projector.DefaultBatchSizeMax)})
	return p, stop, nil
}
