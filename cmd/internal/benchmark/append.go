package benchmark

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quotaledger/quota/ledger"
)

// rawStreamName names the stream of the raw publish ceiling. It is
// deleted once measured, before ingest (dropRawStream), and
// rawCASStreamName, the stream of the raw compare-and-swap append, lives
// only for that measurement: a server running the ledger carries neither,
// nor their duplicate tables, which the later phases would otherwise hold
// in memory and garbage collection would mark.
const (
	rawStreamName    = "BENCH_RAW"
	rawCASStreamName = "BENCH_RAW_CAS"
)

// createRawStream creates a plain stream with the ledger's stream options.
func (r *run) createRawStream(ctx context.Context, name, subjects string) error {
	_, err := r.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name: name, Subjects: []string{subjects},
		Retention: jetstream.LimitsPolicy, MaxConsumers: -1, MaxMsgs: -1, MaxBytes: -1, MaxMsgsPerSubject: -1,
		MaxMsgSize: ledger.DefaultMaxMsgSize, Discard: jetstream.DiscardNew, Storage: jetstream.FileStorage,
		Replicas: 1, Duplicates: ledger.DefaultDuplicateWindow, DenyDelete: true, DenyPurge: false,
		Compression: jetstream.NoCompression,
	})
	return err
}

// dropRawStream deletes the raw publish ceiling's stream.
func (r *run) dropRawStream(ctx context.Context) error {
	err := r.js.DeleteStream(ctx, rawStreamName)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil
	}
	return err
}

// rawPublish publishes the encoded events the ledger will append, with the
// same options, message IDs and in-flight window, to a plain stream. Only
// the publishing is timed; converting and encoding is not.
func (r *run) rawPublish(ctx context.Context) (float64, string, error) {
	err := r.createRawStream(ctx, rawStreamName, "bench.raw.>")
	if err != nil {
		return 0, "", err
	}
	window := ledger.DefaultAppendBatchInFlightMax
	var (
		elapsed time.Duration
		events  int
	)
	msgs := make([]*nats.Msg, 0, ChunkEvents)
	pending := make([]jetstream.PubAckFuture, 0, window)
	err = r.chunks(func(lines [][]byte) error {
		var err error
		if msgs, err = rawMessages(lines, msgs[:0]); err != nil {
			return err
		}
		start := time.Now()
		if err := r.publishWindow(ctx, msgs, pending); err != nil {
			return err
		}
		elapsed += time.Since(start)
		events += len(msgs)
		return nil
	})
	if err != nil {
		return 0, "", fmt.Errorf("raw publish: %w", err)
	}
	return rate(events, elapsed), fmt.Sprintf("async, %d in flight, Nats-Msg-Id set, the ledger's encoded events", window), nil
}

// rawMessages appends to msgs the messages the ledger would append for
// the watch lines: each event encoded, on its namespace's subject, with
// its message ID.
func rawMessages(lines [][]byte, msgs []*nats.Msg) ([]*nats.Msg, error) {
	for _, line := range lines {
		e, err := convert(line)
		if err != nil {
			return nil, err
		}
		data, err := ledger.Encode(e.Event)
		if err != nil {
			return nil, err
		}
		token := e.Event.Namespace
		if token == "" {
			token = ledger.ClusterToken
		}
		m := nats.NewMsg("bench.raw." + token)
		m.Data = data
		m.Header.Set(jetstream.MsgIDHeader, e.MsgID)
		msgs = append(msgs, m)
	}
	return msgs, nil
}

// publishWindow publishes msgs to the raw stream asynchronously, with at
// most cap(pending) acknowledgements awaited at once, and returns once
// every one has been acknowledged.
func (r *run) publishWindow(ctx context.Context, msgs []*nats.Msg, pending []jetstream.PubAckFuture) error {
	wait := func(f jetstream.PubAckFuture) error {
		select {
		case <-f.Ok():
			return nil
		case err := <-f.Err():
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	pending = pending[:0]
	for _, m := range msgs {
		if len(pending) == cap(pending) {
			if err := wait(pending[0]); err != nil {
				return err
			}
			pending = append(pending[:0], pending[1:]...)
		}
		f, err := r.js.PublishMsgAsync(m, jetstream.WithExpectStream(rawStreamName))
		if err != nil {
			return err
		}
		pending = append(pending, f)
	}
	for _, f := range pending {
		if err := wait(f); err != nil {
			return err
		}
	}
	return nil
}

// ingest appends the stream to the ledger, durably.
func (r *run) ingest(ctx context.Context) (float64, string, error) {
	if r.cfg.Hooks.Ingest != nil {
		return r.ingestHook(ctx)
	}
	var (
		elapsed time.Duration
		events  int
	)
	entries := make([]ledger.BatchEntry, 0, ChunkEvents)
	err := r.chunks(func(lines [][]byte) error {
		r.collect(lines)
		start := time.Now()
		entries = entries[:0]
		for _, line := range lines {
			e, err := convert(line)
			if err != nil {
				return err
			}
			entries = append(entries, e)
		}
		if _, err := r.stream.AppendBatch(ctx, entries); err != nil {
			return err
		}
		elapsed += time.Since(start)
		events += len(entries)
		return nil
	})
	if err != nil {
		return 0, "", fmt.Errorf("ingest: %w", err)
	}
	return rate(events, elapsed), "decode, trim and Stream.AppendBatch per chunk of " + fmt.Sprint(ChunkEvents) + " (the ingest package is not plugged in)", nil
}

// ingestHook streams the watch JSON lines through Hooks.Ingest; the
// generator runs concurrently and its time is included.
func (r *run) ingestHook(ctx context.Context) (float64, string, error) {
	pr, pw := io.Pipe()
	go func() {
		err := r.chunks(func(lines [][]byte) error {
			r.collect(lines)
			for _, l := range lines {
				if _, err := pw.Write(append(l, '\n')); err != nil {
					return err
				}
			}
			return nil
		})
		pw.CloseWithError(err)
	}()
	start := time.Now()
	n, err := r.cfg.Hooks.Ingest(ctx, r.stream, pr)
	elapsed := time.Since(start)
	pr.CloseWithError(io.ErrClosedPipe)
	if err != nil {
		return 0, "", fmt.Errorf("ingest: %w", err)
	}
	return rate(n, elapsed), "through Hooks.Ingest, generation included", nil
}
