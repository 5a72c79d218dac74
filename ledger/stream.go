package ledger

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/errgroup"
)

// Limits of appending.
const (
	// MsgIDLengthMax is the longest Nats-Msg-Id accepted.
	MsgIDLengthMax = 1024
	// AppendBatchEntriesMax is the largest number of entries one AppendBatch
	// takes; a caller with more splits them.
	AppendBatchEntriesMax = 100_000
	// AppendAttemptTimeout bounds the wait for the acknowledgement of one
	// send of an append with a message ID; past it the append is sent
	// again (see Append), within Config.AckWaitTimeout in all. A stream
	// leader acknowledges in milliseconds; one that went away with the
	// append in flight never does.
	AppendAttemptTimeout = 2 * time.Second
	// AppendResendWait is the pause before an append is sent again.
	AppendResendWait = 250 * time.Millisecond
	// LeaderAttemptTimeout bounds one read a replicated stream's leader
	// answers (LastSeq, LastSubjectEvent): it answers in milliseconds,
	// and a leader stepping down may take a request and answer nothing.
	LeaderAttemptTimeout = time.Second
)

// Stream is the event log: a JetStream stream holding Events on per-namespace
// subjects, and its dead-letter stream. It is safe for concurrent use.
type Stream struct {
	js      jetstream.JetStream
	cfg     Config
	events  jetstream.Stream
	rejects jetstream.Stream
	// local, when set, is the server of its own that holds the stream in
	// this process (ReadLocally).
	local *Embedded
}

// Open creates the event stream and the dead-letter stream, or updates them
// to cfg when they exist.
func Open(ctx context.Context, js jetstream.JetStream, cfg Config) (*Stream, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("open stream: %w", err)
	}
	cfg = cfg.withDefaults()
	sc := cfg.eventStreamConfig()
	// Purging is denied or allowed once, when the stream is made (see
	// Config.AllowPurge): JetStream refuses to lift a denial, and a
	// denial set on a stream that allowed it could never be lifted.
	if old, err := js.Stream(ctx, cfg.StreamName); err == nil {
		sc.DenyPurge = old.CachedInfo().Config.DenyPurge
	} else if !errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("open stream %s: %w", cfg.StreamName, noJetStream(err))
	}
	// Both at once: on a cluster, a new stream waits for its replicas to
	// elect a leader, seconds each.
	var events, rejects jetstream.Stream
	var g errgroup.Group
	g.Go(func() (err error) {
		if events, err = js.CreateOrUpdateStream(ctx, sc); err != nil {
			return fmt.Errorf("open stream %s: %w", cfg.StreamName, noJetStream(err))
		}
		return nil
	})
	g.Go(func() (err error) {
		if rejects, err = js.CreateOrUpdateStream(ctx, cfg.rejectStreamConfig()); err != nil {
			return fmt.Errorf("open stream %s: %w", cfg.RejectStreamName, noJetStream(err))
		}
		return nil
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return &Stream{js: js, cfg: cfg, events: events, rejects: rejects}, nil
}

// Config returns the configuration the stream was opened with, defaults
// applied.
func (s *Stream) Config() Config { return s.cfg }

// PurgeAllowed reports whether the event stream allows purging, as it was
// made (Config.AllowPurge).
func (s *Stream) PurgeAllowed() bool { return !s.events.CachedInfo().Config.DenyPurge }

// Identity names the event stream and when JetStream created it: what
// tells it from a stream deleted and created again under the same name (a
// wiped JetStream store, another cluster).
func (s *Stream) Identity() string {
	return identity(s.cfg.StreamName, s.events.CachedInfo().Created)
}

func identity(name string, created time.Time) string {
	return fmt.Sprintf("stream %s created %s", name, created.UTC().Format(time.RFC3339Nano))
}

// CurrentIdentity asks JetStream for the identity (see Identity) of the
// stream that carries the event stream's name now. When there is none it
// fails with an error wrapping ErrStreamGone.
func (s *Stream) CurrentIdentity(ctx context.Context) (string, error) {
	st, err := s.js.Stream(ctx, s.cfg.StreamName)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return "", fmt.Errorf("%w: JetStream has no stream %s any more", ErrStreamGone, s.cfg.StreamName)
	}
	if err != nil {
		return "", fmt.Errorf("read stream %s: %w", s.cfg.StreamName, err)
	}
	return identity(s.cfg.StreamName, st.CachedInfo().Created), nil
}

// AppendOptions are the per-append options.
type AppendOptions struct {
	// MsgID is sent as Nats-Msg-Id: a second append with the same ID within
	// Config.DuplicateWindow is not stored again and reports Duplicate.
	// Empty: no deduplication.
	MsgID string
	// ExpectLastSubjectSeq, when set, makes the append succeed only if the
	// last event on the event's subject has this sequence (0: no event on
	// the subject yet); otherwise Append fails with ErrConflict.
	ExpectLastSubjectSeq *uint64
}

// AppendResult says where an append landed.
type AppendResult struct {
	// Seq is the stream sequence of the event; for a duplicate, the
	// sequence of the event first stored with the same MsgID.
	Seq uint64
	// Duplicate is true when the MsgID was already stored within the
	// duplicate window and nothing new was written.
	Duplicate bool
}

// Append writes ev on its namespace's subject and returns once JetStream has
// acknowledged it (stored, and with Replicas > 1 replicated to a quorum).
func (s *Stream) Append(ctx context.Context, ev Event, opts AppendOptions) (AppendResult, error) {
	msg, err := s.message(ev, opts.MsgID)
	if err != nil {
		return AppendResult{}, err
	}
	return s.publish(ctx, msg, describe(ev), opts)
}

// AppendEncoded writes an event this package encoded (EncodeReserve) as
// Append writes an Event.
func (s *Stream) AppendEncoded(ctx context.Context, e Encoded, opts AppendOptions) (AppendResult, error) {
	if e.data == nil {
		return AppendResult{}, fmt.Errorf("append: %w: an empty Encoded", ErrInvalidEvent)
	}
	msg, err := s.newMsg(e.namespace, e.what, e.data, opts.MsgID)
	if err != nil {
		return AppendResult{}, err
	}
	return s.publish(ctx, msg, e.what, opts)
}

// publish sends msg with the options of an append and waits for its
// acknowledgement, at most Config.AckWaitTimeout in all. On a replicated
// stream (Config.Replicas above 1) an append with a message ID is sent
// again, the same message with the same ID, while a send finds no leader
// or is not acknowledged within AppendAttemptTimeout: see the package
// doc, Appending. One without an ID is sent once, since sending it again
// could store it twice.
func (s *Stream) publish(ctx context.Context, msg *nats.Msg, what string, opts AppendOptions) (AppendResult, error) {
	pubOpts := []jetstream.PublishOpt{jetstream.WithExpectStream(s.cfg.StreamName)}
	if opts.ExpectLastSubjectSeq != nil {
		pubOpts = append(pubOpts, jetstream.WithExpectLastSequencePerSubject(*opts.ExpectLastSubjectSeq))
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.AckWaitTimeout)
	defer cancel()
	// Only a replicated stream changes leaders; a single server that does
	// not acknowledge is stuck, and a re-send would only wait again.
	resend := opts.MsgID != "" && s.cfg.Replicas > 1
	for sends := 1; ; sends++ {
		attempt, stop := ctx, context.CancelFunc(func() {})
		if resend {
			attempt, stop = context.WithTimeout(ctx, AppendAttemptTimeout)
		}
		ack, err := s.js.PublishMsg(attempt, msg, pubOpts...)
		err = classifyPublishError(err)
		if expect := opts.ExpectLastSubjectSeq; errors.Is(err, ErrConflict) && *expect > 0 && s.trimmedSubject(attempt, msg.Subject, *expect) {
			// The subject's last event was trimmed from the log:
			// JetStream knows of none on it, which is what the caller saw.
			ack, err = s.js.PublishMsg(attempt, msg, jetstream.WithExpectStream(s.cfg.StreamName), jetstream.WithExpectLastSequencePerSubject(0))
			err = classifyPublishError(err)
		}
		stop()
		if err == nil {
			return AppendResult{Seq: ack.Sequence, Duplicate: ack.Duplicate}, nil
		}
		if !resend || !resendable(err) || !pause(ctx, AppendResendWait) {
			if sends > 1 {
				err = fmt.Errorf("sent %d times with message id %q: %w", sends, opts.MsgID, err)
			}
			return AppendResult{}, fmt.Errorf("append %s %s: %w", msg.Subject, what, err)
		}
	}
}

// errCodeDuplicateInProcess is JetStream's error code for a message whose
// ID a send still in process carries (JSStreamDuplicateMessageConflict).
const errCodeDuplicateInProcess jetstream.ErrorCode = 10158

// resendable reports whether an append that failed with err may have
// failed for want of a stream leader, one that a re-send may find.
func resendable(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		// 503: JetStream unavailable, no leader yet, a cluster electing;
		// or an earlier send of this very append still in process, whose
		// sequence a later send is told.
		return apiErr.Code == 503 || apiErr.ErrorCode == errCodeDuplicateInProcess
	}
	// The connection lost its server (a member gone): it reconnects to
	// another, and the append goes there.
	return lostServer(err) || errors.Is(err, ErrAckTimeout) || errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse)
}

// pause waits d, or until ctx ends: false then.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// trimmedSubject reports whether the last event of subject a caller saw
// at seq expect was trimmed from the log (PurgeBefore), leaving none on
// the subject: expect lies before the stream's first sequence, and
// JetStream holds no event of the subject. Had another event of the
// subject come after expect, it would still be in the log (trimming only
// removes what a projection has long applied), and the compare-and-swap
// stays a conflict.
func (s *Stream) trimmedSubject(ctx context.Context, subject string, expect uint64) bool {
	if _, err := s.events.GetLastMsgForSubject(ctx, subject); !errors.Is(err, jetstream.ErrMsgNotFound) {
		return false
	}
	info, err := s.events.Info(ctx)
	return err == nil && expect < info.State.FirstSeq
}

// BatchEntry is one event of AppendBatch.
type BatchEntry struct {
	Event Event
	// MsgID is sent as Nats-Msg-Id, as in AppendOptions.
	MsgID string
}

// AppendBatch writes entries asynchronously, keeping at most
// Config.AppendBatchInFlightMax unacknowledged, and returns once every one
// is acknowledged or has failed. Events are published in order; on one
// subject they are stored in order. results[i] belongs to entries[i] and is
// zero when that entry failed. The error joins the failures, each naming
// its entry index.
//
// On a replicated stream, entries with a message ID that failed for want
// of a leader (see Append) are sent again, in order, in further passes
// within Config.AckWaitTimeout of the first pass's end; one stored before
// its leader went away is then a duplicate. A re-sent entry may land after
// later entries of the batch that its first pass stored.
//
// No entry is published when one of them does not encode: a batch is
// checked whole first, so a caller's bug does not leave half a batch.
func (s *Stream) AppendBatch(ctx context.Context, entries []BatchEntry) ([]AppendResult, error) {
	if len(entries) > AppendBatchEntriesMax {
		return nil, fmt.Errorf("append batch of %d: %w (%d)", len(entries), ErrBatchTooLarge, AppendBatchEntriesMax)
	}
	msgs := make([]*nats.Msg, len(entries))
	todo := make([]int, len(entries))
	for i, e := range entries {
		m, err := s.message(e.Event, e.MsgID)
		if err != nil {
			return nil, fmt.Errorf("append batch entry %d: %w", i, err)
		}
		msgs[i], todo[i] = m, i
	}

	b := &batchAppend{msgs: msgs, results: make([]AppendResult, len(entries)), ackWait: s.cfg.AckWaitTimeout}
	s.sendPass(ctx, b, todo)
	resendBy := time.Now().Add(s.cfg.AckWaitTimeout)
	for s.cfg.Replicas > 1 && time.Now().Before(resendBy) {
		todo = b.takeResendable()
		if len(todo) == 0 || !pause(ctx, AppendResendWait) {
			break
		}
		// A leader acknowledges at once: one that does not is gone too.
		b.ackWait, b.timedOut = AppendAttemptTimeout, false
		s.sendPass(ctx, b, todo)
	}
	if len(b.failures) > 0 {
		return b.results, fmt.Errorf("append batch: %d of %d failed: %w", len(b.failures), len(entries), joinFailures(b.failures))
	}
	return b.results, nil
}

// sendPass publishes the entries of b at indices todo, in order, and
// records how each ended.
func (s *Stream) sendPass(ctx context.Context, b *batchAppend, todo []int) {
	// window is a FIFO of unacknowledged publishes, at most
	// AppendBatchInFlightMax long; the oldest is awaited before a new one
	// is sent once it is full.
	window := make([]pendingAppend, 0, s.cfg.AppendBatchInFlightMax)
	for _, i := range todo {
		if err := ctx.Err(); err != nil {
			b.fail(i, err)
			continue
		}
		if b.timedOut {
			b.fail(i, ErrAckTimeout)
			continue
		}
		if len(window) == cap(window) {
			b.await(ctx, window[0])
			window = window[1:]
			// Reuse the backing array instead of letting append grow it.
			window = append(make([]pendingAppend, 0, s.cfg.AppendBatchInFlightMax), window...)
		}
		f, err := s.js.PublishMsgAsync(b.msgs[i], jetstream.WithExpectStream(s.cfg.StreamName))
		if err != nil {
			b.fail(i, classifyPublishError(err))
			continue
		}
		window = append(window, pendingAppend{index: i, future: f})
	}
	for _, p := range window {
		b.await(ctx, p)
	}
}

// takeResendable removes from b's failures those a re-send may store
// (see resendable) and that carry a message ID, and returns their
// indices in order.
func (b *batchAppend) takeResendable() []int {
	var again []int
	kept := b.failures[:0]
	for _, f := range b.failures {
		if resendable(f.err) && b.msgs[f.index].Header.Get(jetstream.MsgIDHeader) != "" {
			again = append(again, f.index)
		} else {
			kept = append(kept, f)
		}
	}
	b.failures = kept
	slices.Sort(again)
	return again
}

// batchAppend is the state of one AppendBatch: what each entry's
// publish gave.
type batchAppend struct {
	msgs     []*nats.Msg
	results  []AppendResult
	failures []entryFailure
	ackWait  time.Duration
	// timedOut is set once one acknowledgement has timed out: the server
	// or the connection is gone, so the rest of the window is not awaited
	// one timeout each (which, with a full window, would take minutes)
	// but failed at once unless its acknowledgement is already there.
	timedOut bool
}

// pendingAppend is a publish of entry index awaiting its acknowledgement.
type pendingAppend struct {
	index  int
	future jetstream.PubAckFuture
}

// fail records that entry i was not appended.
func (b *batchAppend) fail(i int, err error) {
	b.failures = append(b.failures, entryFailure{index: i, subject: b.msgs[i].Subject, err: err})
}

// await waits for p's acknowledgement, at most the acknowledgement
// timeout, and records its result.
func (b *batchAppend) await(ctx context.Context, p pendingAppend) {
	if b.timedOut {
		select {
		case ack := <-p.future.Ok():
			b.results[p.index] = AppendResult{Seq: ack.Sequence, Duplicate: ack.Duplicate}
		case err := <-p.future.Err():
			b.fail(p.index, classifyPublishError(err))
		default:
			b.fail(p.index, ErrAckTimeout)
		}
		return
	}
	timer := time.NewTimer(b.ackWait)
	defer timer.Stop()
	select {
	case ack := <-p.future.Ok():
		b.results[p.index] = AppendResult{Seq: ack.Sequence, Duplicate: ack.Duplicate}
	case err := <-p.future.Err():
		b.fail(p.index, classifyPublishError(err))
	case <-timer.C:
		b.timedOut = true
		b.fail(p.index, ErrAckTimeout)
	case <-ctx.Done():
		b.fail(p.index, ctx.Err())
	}
}

// entryFailure is one entry of a batch that was not appended.
type entryFailure struct {
	index   int
	subject string
	err     error
}

// joinFailures joins a batch's failures, each naming its entry, and a run
// of consecutive entries that failed alike (a server that stopped
// answering fails the rest of the batch) as one line naming the run:
// "entries 856 to 999 (144, on 20 subjects): ...". The result wraps every
// distinct error, so errors.Is sees each.
func joinFailures(failures []entryFailure) error {
	slices.SortFunc(failures, func(a, b entryFailure) int { return a.index - b.index })
	var joined []error
	for start := 0; start < len(failures); {
		first := failures[start]
		end := start + 1
		subjects := map[string]struct{}{first.subject: {}}
		for end < len(failures) && failures[end].index == failures[end-1].index+1 &&
			failures[end].err.Error() == first.err.Error() {
			subjects[failures[end].subject] = struct{}{}
			end++
		}
		if n := end - start; n == 1 {
			joined = append(joined, fmt.Errorf("entry %d %s: %w", first.index, first.subject, first.err))
		} else {
			on := "on " + first.subject
			if len(subjects) > 1 {
				on = fmt.Sprintf("on %d subjects", len(subjects))
			}
			joined = append(joined, fmt.Errorf("entries %d to %d (%d, %s): %w", first.index, failures[end-1].index, n, on, first.err))
		}
		start = end
	}
	return errors.Join(joined...)
}

// LastSeq returns the sequence of the last event in the stream, 0 if it is
// empty. The stream's leader answers; on a replicated stream without one
// for now (an election), it is asked again for Config.AckWaitTimeout at
// most. On a stream read locally (ReadLocally), the server's store
// answers in process.
func (s *Stream) LastSeq(ctx context.Context) (uint64, error) {
	if s.local != nil {
		if seq, ok := s.local.lastSeq(s.cfg.StreamName); ok {
			return seq, nil
		}
	}
	var info *jetstream.StreamInfo
	err := s.leaderless(ctx, func(ctx context.Context) (err error) {
		info, err = s.events.Info(ctx)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("last seq of %s: %w", s.cfg.StreamName, err)
	}
	return info.State.LastSeq, nil
}

// PurgeBefore removes the events before seq from the stream, keeping seq
// and later (JetStream's purge up to a sequence), and returns how many it
// removed (counted from the stream's first sequence, as it has no gaps).
// The stream must allow purging (Config.AllowPurge). A seq at or
// below the stream's first removes nothing; purging twice to the same seq
// is harmless.
func (s *Stream) PurgeBefore(ctx context.Context, seq uint64) (uint64, error) {
	before, err := s.events.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("purge %s before seq %d: %w", s.cfg.StreamName, seq, err)
	}
	if seq <= before.State.FirstSeq {
		return 0, nil
	}
	if before.Config.DenyPurge {
		return 0, fmt.Errorf("purge %s before seq %d: %w", s.cfg.StreamName, seq, ErrPurgeDenied)
	}
	if err := s.events.Purge(ctx, jetstream.WithPurgeSequence(seq)); err != nil {
		return 0, fmt.Errorf("purge %s before seq %d: %w", s.cfg.StreamName, seq, err)
	}
	// The stream has no gaps (deleting single events is denied): what
	// lay between its first sequence and seq is gone.
	return min(seq, before.State.LastSeq+1) - before.State.FirstSeq, nil
}

// LastSubjectSeq returns the sequence of the last event of namespace ns (""
// for cluster-scoped objects), 0 if there is none. It is the value to pass
// as AppendOptions.ExpectLastSubjectSeq.
func (s *Stream) LastSubjectSeq(ctx context.Context, namespace string) (uint64, error) {
	seq, _, err := s.LastSubjectEvent(ctx, namespace)
	return seq, err
}

// leaderless calls f, a request its stream's leader answers, with ctx.
// On a replicated stream each call waits LeaderAttemptTimeout at most (a
// request the leader took as it stepped down is never answered), and f
// is called again while it fails for want of a leader, for
// Config.AckWaitTimeout at most.
func (s *Stream) leaderless(ctx context.Context, f func(context.Context) error) error {
	if s.cfg.Replicas <= 1 {
		return f(ctx)
	}
	return retryUnavailable(ctx, LeaderAttemptTimeout, s.cfg.AckWaitTimeout, f)
}

// retryUnavailable calls f, each call bounded by attempt, and again while
// it fails for want of a leader (Unavailable), for giveUpAfter at most.
func retryUnavailable(ctx context.Context, attempt, giveUpAfter time.Duration, f func(context.Context) error) error {
	giveUp := time.Now().Add(giveUpAfter)
	for {
		actx, cancel := context.WithTimeout(ctx, attempt)
		err := f(actx)
		cancel()
		if err == nil || !Unavailable(err) || ctx.Err() != nil || !time.Now().Before(giveUp) || !pause(ctx, AppendResendWait) {
			return err
		}
	}
}

// message encodes ev into a NATS message on its subject, checking its size
// and message ID.
func (s *Stream) message(ev Event, msgID string) (*nats.Msg, error) {
	data, err := Encode(ev)
	if err != nil {
		return nil, err
	}
	return s.newMsg(ev.Namespace, describe(ev), data, msgID)
}

// newMsg makes the message of the encoded event data (named what in
// errors) of namespace, checking its size and message ID.
func (s *Stream) newMsg(namespace, what string, data []byte, msgID string) (*nats.Msg, error) {
	if len(data) > int(s.cfg.MaxMsgSize) {
		return nil, fmt.Errorf("append %s: %w: %d bytes, at most %d", what, ErrEventTooLarge, len(data), s.cfg.MaxMsgSize)
	}
	msg := nats.NewMsg(Subject(namespace))
	msg.Data = data
	if msgID == "" {
		return msg, nil
	}
	if len(msgID) > MsgIDLengthMax {
		return nil, fmt.Errorf("append %s: %w: %d bytes, at most %d", what, ErrInvalidMsgID, len(msgID), MsgIDLengthMax)
	}
	if hasControl(msgID) {
		return nil, fmt.Errorf("append %s: %w: %q holds a control character", what, ErrInvalidMsgID, msgID)
	}
	msg.Header.Set(jetstream.MsgIDHeader, msgID)
	return msg, nil
}

// classifyPublishError maps JetStream's wrong-last-sequence answers to
// ErrConflict and a client-side timeout to ErrAckTimeout, keeping the
// original error in the chain.
func classifyPublishError(err error) error {
	if err == nil {
		return nil
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		case jetstream.JSErrCodeStreamWrongLastSequence, jetstream.JSErrCodeStreamWrongLastSequenceConstant:
			return fmt.Errorf("%w: %w", ErrConflict, err)
		}
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) || errors.Is(err, jetstream.ErrAsyncPublishTimeout) {
		return fmt.Errorf("%w: %w", ErrAckTimeout, err)
	}
	return err
}

// describe names an event in error messages.
func describe(ev Event) string {
	if ev.Name == "" {
		return string(ev.Type) + " " + clip(ev.Resource)
	}
	if ev.Namespace == "" {
		return fmt.Sprintf("%s %s %s", ev.Type, clip(ev.Resource), clip(ev.Name))
	}
	return fmt.Sprintf("%s %s %s/%s", ev.Type, clip(ev.Resource), clip(ev.Namespace), clip(ev.Name))
}
