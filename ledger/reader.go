package ledger

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Limits of reading.
const (
	// ReaderBufferMax is the number of records a Reader holds ahead of its
	// caller. It bounds memory and is the most one Next call returns
	// without waiting for the server.
	ReaderBufferMax = 1024
	// ReaderNextMax is the largest max a Next call accepts.
	ReaderNextMax = 100_000
	// ReaderHeartbeat is how often an idle consumer tells its reader it is
	// there. Two missed in a row make the client create the consumer
	// again from the last delivered sequence: on a cluster, the member
	// that held it may be gone (killed, restarted, cut off), and the
	// reader waits that long before it goes on reading from another.
	ReaderHeartbeat = time.Second
	// ReaderStartTimeout bounds how long Reader tries to create its
	// consumer while JetStream answers that it cannot for now.
	ReaderStartTimeout = time.Minute
)

// Record is one message of the event stream as a Reader returns it.
type Record struct {
	// Seq is the stream sequence.
	Seq uint64
	// Subject is the subject the event was published on.
	Subject string
	// Namespace is the namespace the subject carries; "" for cluster-scoped
	// objects.
	Namespace string
	// Time is when the stream stored the event. Anything that depends on
	// time uses it, never a wall clock, so replay reproduces it.
	Time time.Time
	// Pending is how many records the stream held after this one when it
	// was delivered: the reader's backlog at that moment.
	Pending uint64
	// Event is the decoded event; zero when Err is set.
	Event Event
	// Raw is the message exactly as stored.
	Raw []byte
	// Err is set when the message does not decode or does not belong on its
	// subject. Such a record is still returned, in order, so that the
	// reader can report it and move past it; it is never dropped.
	Err error
}

// Reader reads the event stream in sequence order from a starting sequence,
// through an ordered consumer: an ephemeral, flow-controlled consumer that
// the client recreates from the last delivered sequence whenever it detects
// a gap, so records arrive exactly once and in order. On a replicated
// stream the reader recreates it too, from the next sequence it wants,
// when the client gives up on it (the member holding it gone, the cluster
// without a leader for a while). A Reader is used by one goroutine at a
// time.
type Reader struct {
	s    *Stream
	iter jetstream.MessagesContext
	// next is the sequence the reader wants next; the pump's own.
	next    uint64
	records chan Record
	// closed ends when Close is called.
	closed context.Context
	close  context.CancelFunc
	exited chan struct{} // closed when pump returns
	stop   sync.Once
	mu     sync.Mutex
	err    error // terminal error of the pump, read after records closes
}

// Reader starts reading at fromSeq (the first sequence wanted; 0 or 1 read
// from the beginning).
func (s *Stream) Reader(ctx context.Context, fromSeq uint64) (*Reader, error) {
	r := &Reader{
		s:       s,
		next:    max(fromSeq, 1),
		records: make(chan Record, ReaderBufferMax),
		exited:  make(chan struct{}),
	}
	r.closed, r.close = context.WithCancel(context.Background())
	var err error
	if r.iter, err = r.open(ctx); err != nil {
		r.close()
		return nil, fmt.Errorf("read %s from %d: %w", s.cfg.StreamName, fromSeq, err)
	}
	go r.pump()
	return r, nil
}

// open makes an ordered consumer delivering from r.next on and starts
// reading it.
func (r *Reader) open(ctx context.Context) (jetstream.MessagesContext, error) {
	cfg := jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{SubjectsAll},
		DeliverPolicy:  jetstream.DeliverAllPolicy,
		ReplayPolicy:   jetstream.ReplayInstantPolicy,
	}
	if r.next > 1 {
		cfg.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
		cfg.OptStartSeq = r.next
	}
	if r.s.cfg.Replicas > 1 {
		// The client would try again with a backoff growing to 10 s
		// between attempts; the reader tries more often (reopen).
		cfg.MaxResetAttempts = 1
	}
	cons, err := r.s.orderedConsumer(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return cons.Messages(jetstream.PullMaxMessages(ReaderBufferMax), jetstream.PullHeartbeat(ReaderHeartbeat))
}

// reopen replaces a consumer the client gave up on, trying until it
// succeeds, the reader is closed, or JetStream answers that it cannot
// (not for want of a leader). It reports whether it did.
func (r *Reader) reopen() bool {
	r.mu.Lock()
	r.iter.Stop()
	r.mu.Unlock()
	for {
		iter, err := r.open(r.closed)
		if err == nil {
			// Close stops the iterator it finds: swap under its lock,
			// and stop this one at once if Close came first.
			r.mu.Lock()
			defer r.mu.Unlock()
			if r.closed.Err() != nil {
				iter.Stop()
				return false
			}
			r.iter = iter
			return true
		}
		if !Unavailable(err) || !pause(r.closed, AppendResendWait) {
			return false
		}
	}
}

// orderedConsumer creates the reader's consumer. While JetStream cannot
// answer for want of a leader (a cluster electing one, a member just
// back), the creation is tried again, for ReaderStartTimeout at most.
func (s *Stream) orderedConsumer(ctx context.Context, cfg jetstream.OrderedConsumerConfig) (cons jetstream.Consumer, err error) {
	err = retryUnavailable(ctx, readerAttemptTimeout, ReaderStartTimeout, func(ctx context.Context) (err error) {
		cons, err = s.events.OrderedConsumer(ctx, cfg)
		return err
	})
	return cons, err
}

// readerAttemptTimeout bounds one attempt to create a reader's consumer.
const readerAttemptTimeout = 2 * time.Second

// pump moves messages from the consumer into the bounded records channel,
// decoding them on the way, until the iterator is closed or fails.
func (r *Reader) pump() {
	defer close(r.exited)
	defer close(r.records)
	for {
		r.mu.Lock()
		iter := r.iter
		r.mu.Unlock()
		msg, err := iter.Next()
		if err != nil && !errors.Is(err, jetstream.ErrMsgIteratorClosed) && r.s.cfg.Replicas > 1 && r.reopen() {
			continue
		}
		if err != nil {
			if !errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				r.mu.Lock()
				r.err = err
				r.mu.Unlock()
			}
			return
		}
		rec := recordOf(msg)
		r.next = rec.Seq + 1
		select {
		case r.records <- rec:
		case <-r.closed.Done():
			return
		}
	}
}

// recordOf decodes a message the consumer delivered into a record.
func recordOf(msg jetstream.Msg) Record {
	meta, err := msg.Metadata()
	if err != nil {
		// Without metadata there is no sequence; the ordered consumer
		// always provides it, so this is a broken invariant of the client.
		panic(fmt.Sprintf("ledger: message on %s without JetStream metadata: %v", msg.Subject(), err))
	}
	rec := recordFrom(msg.Subject(), msg.Data(), meta.Sequence.Stream, meta.Timestamp)
	rec.Pending = meta.NumPending
	return rec
}

// recordFrom decodes the event of a stored message (or an archived one)
// into a record.
func recordFrom(subject string, data []byte, seq uint64, at time.Time) Record {
	rec := Record{Subject: subject, Raw: data, Seq: seq, Time: at}
	if rec.Namespace, rec.Err = NamespaceOf(rec.Subject); rec.Err != nil {
		return rec
	}
	switch ev, err := decodeSurviving(rec.Raw); {
	case err != nil:
		rec.Err = err
	case ev.Namespace != rec.Namespace:
		rec.Err = fmt.Errorf("%w: event of namespace %q on subject %s", ErrInvalidEvent, ev.Namespace, rec.Subject)
	default:
		rec.Event = ev
	}
	return rec
}

// decodeSurviving is DecodeEvent, a panic in it (a bug) becoming the
// record's error, so that the record is skipped with a trace and the
// reader goes on.
func decodeSurviving(raw []byte) (ev Event, err error) {
	defer Survive(nil, "decode an event", func(e error) { err = e })
	return DecodeEvent(raw)
}

// Next returns up to max records in sequence order. It waits at most wait
// for the first one (returning none if none arrives), then takes only what
// has arrived: large batches under load, small ones when idle. It returns
// ctx's error when ctx ends and ErrReaderClosed after Close or when the
// consumer failed for good (wrapping that failure).
func (r *Reader) Next(ctx context.Context, max int, wait time.Duration) ([]Record, error) {
	return r.NextUnless(ctx, max, wait, nil)
}

// NextUnless is Next, except that it also stops waiting for the first
// record, returning none, when stop is closed or receives.
func (r *Reader) NextUnless(ctx context.Context, max int, wait time.Duration, stop <-chan struct{}) ([]Record, error) {
	if max <= 0 || max > ReaderNextMax {
		return nil, fmt.Errorf("reader next: max %d is outside 1..%d", max, ReaderNextMax)
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	var out []Record
	select {
	case rec, ok := <-r.records:
		if !ok {
			return nil, r.closedErr()
		}
		out = append(out, rec)
	case <-timer.C:
		return nil, nil
	case <-stop:
		return nil, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	// Only this goroutine receives: what the buffer holds is there to
	// take, closed or not (the next call then reports the end).
	for len(out) < max && len(r.records) > 0 {
		out = append(out, <-r.records)
	}
	return out, nil
}

func (r *Reader) closedErr() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return fmt.Errorf("%w: %w", ErrReaderClosed, r.err)
	}
	return ErrReaderClosed
}

// Close stops the consumer and returns once its goroutine has exited.
// Records not yet returned are discarded.
func (r *Reader) Close() {
	r.stop.Do(func() {
		r.mu.Lock()
		r.close()
		r.iter.Stop()
		r.mu.Unlock()
	})
	<-r.exited
}
