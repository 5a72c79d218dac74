package export

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/quotaledger/quota/ingest"
	"github.com/quotaledger/quota/ledger"
)

// Resync reasons, as the resyncs metric labels them.
const (
	// ReasonInitial: the first list of a resource without a checkpoint.
	ReasonInitial = "initial"
	// ReasonExpired: a relist after the API server no longer had the
	// resourceVersion a watch or a checkpoint asked for (410 Gone).
	ReasonExpired = "410"
	// ReasonGap: a relist after a watch ended with another error.
	ReasonGap = "gap"
	// ReasonTakeover: the first list after this replica took the lease
	// over from another.
	ReasonTakeover = "takeover"
	// ReasonGone: the API server no longer serves the resource (its
	// custom resource definition was deleted): an empty resync removes
	// what the log still holds of it.
	ReasonGone = "gone"
)

// pendingEvent is a watch event read and not yet handed to an append.
type pendingEvent struct {
	typ string
	it  *item
}

// stream follows one resource: a Reflector lists and watches it into the
// stream, which is the Reflector's store. The store keeps no object: it
// appends each watch event, and turns each list into a resync.
type stream struct {
	x   *Exporter
	res resource
	ing *ingest.Ingester
	log *slog.Logger
	ctx context.Context

	mu   sync.Mutex
	cond *sync.Cond
	// pending are the events read and not yet taken by the appender;
	// outstanding counts them with those being appended.
	pending     []pendingEvent
	outstanding int
	// latestRV is the newest resourceVersion the Reflector has seen;
	// ackedRV the newest up to which everything is in the log.
	latestRV, ackedRV string
	// failed is set once events were abandoned: ackedRV moves no more.
	failed bool
	// checkpointed is the last resourceVersion written to the bucket,
	// at checkpointedAt.
	ckMu           sync.Mutex
	checkpointed   string
	checkpointedAt time.Time
	wake           chan struct{}

	// Set between a list and the Replace that follows it, in the
	// Reflector's goroutine.
	resumed bool
	// reason is why the next list happens.
	reason string
	// resumeRV, when set, is the checkpoint the first list resumes from.
	resumeRV string
	lists    int
	watches  int
	// listed is set once a list (or a resume) has been handed over: a
	// list after it is a relist.
	listed bool
	synced chan struct{}
	newest time.Time // the newest appended event's write time
	// split counts the namespaces of the resync in hand whose list was
	// too large for one event; unchanged, those whose list the log held
	// already, which got no resync.
	split, unchanged int
	// listStarted is when the list in hand started: its point of
	// progress is at its version then.
	listStarted time.Time
	// probe is the point asked for and not yet reached (progress.go);
	// incomparable is set once the resource's versions are found not
	// comparable.
	probe        *probe
	incomparable bool
}

func newStream(ctx context.Context, x *Exporter, res resource, resumeRV, firstReason string) (*stream, error) {
	ing, err := ingest.New(x.stream, ingest.Options{BatchSize: x.cfg.BatchSizeMax})
	if err != nil {
		return nil, err
	}
	s := &stream{
		x: x, res: res, ing: ing, ctx: ctx,
		log:      x.log.With("resource", res.Name()),
		wake:     make(chan struct{}, 1),
		resumeRV: resumeRV,
		reason:   firstReason,
		synced:   make(chan struct{}),
	}
	s.cond = sync.NewCond(&s.mu)
	return s, nil
}

// run lists and watches until ctx ends, then appends what it has read,
// within the flush timeout (Config.flushTimeout).
func (s *stream) run(ctx context.Context) {
	lw := &listWatch{client: s.x.rest, typed: s.x.typed, meta: s.x.meta, res: s.res, events: s}
	r := cache.NewReflectorWithOptions(lw, nil, s, cache.ReflectorOptions{
		Name:            "quota export " + s.res.Name(),
		TypeDescription: s.res.Name(),
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.appendLoop(ctx)
	}()
	probed := make(chan struct{})
	go func() {
		defer close(probed)
		s.probeLoop(ctx)
	}()
	r.RunWithContext(ctx)
	<-done
	<-probed
	// What the Reflector handed over after the appender stopped is not
	// in the log, and the checkpoint is before it.
	s.abandon()
}

// abandon drops the events not appended, once the stream stops: the
// checkpoint stays before them (failed), so that the next start sends
// them again, in order.
func (s *stream) abandon() {
	s.mu.Lock()
	n := len(s.pending)
	s.pending = nil
	s.outstanding -= n
	s.failed = true
	s.cond.Broadcast()
	s.mu.Unlock()
	if n > 0 {
		s.log.Warn("stopped with watch events not appended; the next start sends them again", "events", n)
		s.x.window.release(n)
	}
}

// listFailed is called when a list fails: it says what the operator can
// do. The Reflector lists again, with backoff.
func (s *stream) listFailed(err error) {
	s.x.metrics.listErrors.WithLabelValues(s.res.Name()).Inc()
	s.log.Error(apiErrorMessage("list", s.res, err), "err", err)
}

// listing is called by the ListerWatcher before each list.
func (s *stream) listing() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lists++
	if s.lists == 1 && s.resumeRV != "" {
		s.resumed = true
		return s.resumeRV
	}
	if s.listed && s.reason == "" {
		// A relist after a list that reached the log: the watch ended.
		s.reason = ReasonGap
	}
	s.listStarted = time.Now()
	return ""
}

func (s *stream) watching() {
	s.watches++
	if s.watches > 1 {
		s.x.metrics.watchRestarts.WithLabelValues(s.res.Name()).Inc()
	}
}

func (s *stream) watchError(status *metav1.Status) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if isGone(status) {
		s.reason = ReasonExpired
		s.log.Info("the API server no longer has the resourceVersion watched from: relisting, then a resync", "message", status.Message)
		return
	}
	s.reason = ReasonGap
	s.log.Warn("watch ended with an error: relisting, then a resync", "code", status.Code, "reason", status.Reason, "message", status.Message)
}

// The Reflector's store.

func (s *stream) Add(obj any) error    { return s.enqueue(ingest.WatchAdded, obj) }
func (s *stream) Update(obj any) error { return s.enqueue(ingest.WatchModified, obj) }
func (s *stream) Delete(obj any) error { return s.enqueue(ingest.WatchDeleted, obj) }
func (s *stream) Resync() error        { return nil }

// UpdateResourceVersion records the newest resourceVersion the Reflector
// has seen (after each event, and at bookmarks).
func (s *stream) UpdateResourceVersion(rv string) {
	s.mu.Lock()
	s.latestRV = rv
	if s.outstanding == 0 && !s.failed {
		s.ackedRV = rv
		s.reached()
	}
	s.mu.Unlock()
	s.signal()
}

// Bookmark is a bookmark's resourceVersion.
func (s *stream) Bookmark(rv string) error {
	s.x.metrics.bookmarks.WithLabelValues(s.res.Name()).Inc()
	s.UpdateResourceVersion(rv)
	return nil
}

// enqueue waits for a free slot of the in-flight window, then hands the
// event to the appender. A full window holds the watch here.
func (s *stream) enqueue(typ string, obj any) error {
	it, ok := obj.(*item)
	if !ok {
		return fmt.Errorf("%s %T: %w", s.res.Name(), obj, errNotItem)
	}
	if err := s.x.window.acquire(s.ctx); err != nil {
		return err
	}
	s.mu.Lock()
	s.pending = append(s.pending, pendingEvent{typ: typ, it: it})
	s.outstanding++
	s.mu.Unlock()
	s.signal()
	return nil
}

func (s *stream) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// appendLoop appends pending events in batches, acknowledged, and writes
// the checkpoint after them. It returns when ctx ends and what was
// pending is appended (or the flush timeout has passed).
func (s *stream) appendLoop(ctx context.Context) {
	tick := time.NewTicker(CheckpointInterval)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			s.writeCheckpoint(ctx)
			continue
		case <-s.wake:
		case <-ctx.Done():
			flush, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.x.cfg.flushTimeout())
			for s.appendPending(flush) == nil {
			}
			s.abandon()
			s.writeCheckpoint(flush)
			cancel()
			return
		}
		for s.appendPending(ctx) == nil {
		}
		s.ckMu.Lock()
		due := time.Since(s.checkpointedAt) >= CheckpointInterval
		s.ckMu.Unlock()
		if due {
			s.writeCheckpoint(ctx)
		}
	}
}

// errNothingPending ends a run of appendPending.
var errNothingPending = errors.New("nothing pending")

// appendPending appends the oldest batch of pending events, retrying
// while NATS is unreachable, until ctx ends: then the batch stays first
// in pending, and no later event is appended before it.
func (s *stream) appendPending(ctx context.Context) error {
	s.mu.Lock()
	n := min(len(s.pending), s.x.cfg.BatchSizeMax)
	batch := slices.Clone(s.pending[:n])
	s.mu.Unlock()
	if n == 0 {
		return errNothingPending
	}
	var lines bytes.Buffer
	for _, ev := range batch {
		lines.WriteString(`{"type":"`)
		lines.WriteString(ev.typ)
		lines.WriteString(`","object":`)
		lines.Write(ev.it.trimmed)
		lines.WriteString("}\n")
	}
	name := "export " + s.res.Name()
	report, err := retry(ctx, s.log, "append "+s.res.Name()+" watch events", func() (ingest.Report, error) {
		return s.ing.IngestFile(ctx, name, bytes.NewReader(lines.Bytes()))
	})
	if err != nil {
		// Stopped before they were appended: they stay first in pending.
		return err
	}
	for _, rej := range report.Rejections {
		s.log.Warn("watch event rejected into the dead-letter stream", "source", rej.Source, "reason", rej.Reason)
	}
	for _, ev := range batch {
		s.x.metrics.events.WithLabelValues(s.res.Name(), ev.typ).Inc()
		if ev.it.written.After(s.newest) {
			s.newest = ev.it.written
		}
	}
	s.x.metrics.setNewest(s.res.Name(), s.newest)
	s.mu.Lock()
	s.pending = slices.Delete(s.pending, 0, n)
	s.outstanding -= n
	if !s.failed {
		s.ackedRV = batch[n-1].it.ResourceVersion
		if s.outstanding == 0 {
			s.ackedRV = s.latestRV
		}
		s.reached()
	}
	s.cond.Broadcast()
	s.mu.Unlock()
	s.x.window.release(n)
	return nil
}

// writeCheckpoint stores ackedRV when it changed.
func (s *stream) writeCheckpoint(ctx context.Context) {
	// The appender and the Reflector (after a list) both write.
	s.ckMu.Lock()
	defer s.ckMu.Unlock()
	s.mu.Lock()
	rv := s.ackedRV
	s.mu.Unlock()
	if rv == "" || rv == s.checkpointed {
		return
	}
	if err := s.x.checkpoints.put(ctx, s.res.Name(), rv); err != nil {
		s.log.Warn("cannot write the checkpoint; a restart would resume from an older one", "err", err)
		return
	}
	s.checkpointed, s.checkpointedAt = rv, time.Now()
	s.x.metrics.checkpointed(s.res.Name())
}

// Replace is a list: everything of the resource now. Once the events read
// before it are appended, it appends a resync of every namespace (the
// listed ones and every other one in the log), so that objects deleted
// while nothing watched are removed.
func (s *stream) Replace(list []any, rv string) error {
	s.mu.Lock()
	for s.outstanding > 0 && s.ctx.Err() == nil {
		s.cond.Wait()
	}
	resumed := s.resumed
	s.resumed = false
	s.listed = true
	reason := s.reason
	if reason == "" {
		reason = ReasonInitial
	}
	s.reason = ""
	s.mu.Unlock()
	if resumed {
		s.log.Info("resuming from the checkpoint", "resourceVersion", rv)
		s.markSynced(rv)
		return nil
	}
	items := make([]*item, 0, len(list))
	for _, o := range list {
		it, ok := o.(*item)
		if !ok {
			return fmt.Errorf("%s %T: %w", s.res.Name(), o, errNotItem)
		}
		items = append(items, it)
	}
	start := time.Now()
	s.split, s.unchanged = 0, 0
	appended, err := s.resync(s.ctx, items, rv, "list at resourceVersion "+rv)
	if err != nil {
		return err
	}
	s.x.metrics.resyncs.WithLabelValues(s.res.Name(), reason).Inc()
	attrs := []any{"reason", reason, "objects", len(items), "namespaces", appended, "unchanged", s.unchanged, "resourceVersion", rv, "took", time.Since(start).Round(time.Millisecond)}
	if s.split > 0 {
		attrs = append(attrs, "split", s.split)
	}
	s.log.Info("resynced", attrs...)
	// The list is a point of the feed's progress: the log now holds the
	// resource as it was at rv, which it had when the list started or
	// later.
	s.mu.Lock()
	s.probe = &probe{rv: rv, at: s.listStarted, asked: time.Now()}
	s.mu.Unlock()
	s.markSynced(rv)
	return nil
}

// gone appends an empty resync of the resource, which the API server no
// longer serves, once its stream has stopped: a custom resource's objects
// go with its definition, and their deletes may never reach a watch.
func (s *stream) gone(ctx context.Context) {
	// Its checkpoint goes first: should the resource come back, its
	// stream lists and resyncs instead of resuming past this.
	if err := s.x.checkpoints.delete(ctx, s.res.Name()); err != nil {
		s.log.Warn("cannot delete the checkpoint of a resource the API server no longer serves", "err", err)
		return
	}
	// A name of its own, so that the resync is not a duplicate of an
	// earlier one of the same (empty) content.
	if _, err := s.resync(ctx, nil, "", "gone at "+time.Now().UTC().Format(time.RFC3339Nano)); err != nil {
		s.log.Warn("cannot remove the objects of a resource the API server no longer serves", "err", err)
		return
	}
	s.x.metrics.resyncs.WithLabelValues(s.res.Name(), ReasonGone).Inc()
	s.log.Info("the API server no longer serves this resource: resynced as empty")
}

func (s *stream) markSynced(rv string) {
	s.mu.Lock()
	s.latestRV = rv
	if !s.failed {
		s.ackedRV = rv
		s.reached()
	}
	s.mu.Unlock()
	s.writeCheckpoint(s.ctx)
	select {
	case <-s.synced:
	default:
		close(s.synced)
	}
}

// resync appends one resync per namespace (or one of the cluster scope)
// of a list taken at resourceVersion rv ("" when there is none), named
// by what, and returns how many. A namespace whose listed versions the
// log already holds (the projection's digest of them, logVersions) gets
// none: a takeover or a relist appends only what changed.
func (s *stream) resync(ctx context.Context, items []*item, rv, what string) (int, error) {
	name := fmt.Sprintf("export %s %s", s.res.Name(), what)
	byNamespace, err := s.byNamespace(ctx, items)
	if err != nil {
		return 0, err
	}
	logged := s.x.logVersions(ctx, s.res.Name())
	namespaces := slices.Sorted(maps.Keys(byNamespace))
	appended := 0
	for _, ns := range namespaces {
		listed := byNamespace[ns]
		if logged != nil && logged[ns] == versionsDigest(listed) {
			s.unchanged++
			s.x.metrics.unchanged.WithLabelValues(s.res.Name()).Inc()
			continue
		}
		var lines bytes.Buffer
		for _, it := range listed {
			lines.Write(it.trimmed)
			lines.WriteByte('\n')
		}
		opts := ingest.ResyncOptions{Namespace: ns, Resource: s.res.Name(), ResourceVersion: rv, ClusterScoped: !s.res.Namespaced}
		if err := s.resyncGroup(ctx, name, lines.Bytes(), opts); err != nil {
			return 0, err
		}
		appended++
	}
	return appended, nil
}

// byNamespace groups a list's items by namespace, with every namespace of
// the log that the list lacks (whose objects of the resource are gone),
// or, for a cluster-scoped resource, as the one group "".
func (s *stream) byNamespace(ctx context.Context, items []*item) (map[string][]*item, error) {
	out := map[string][]*item{}
	if !s.res.Namespaced {
		out[""] = items
		return out, nil
	}
	for _, it := range items {
		out[it.Namespace] = append(out[it.Namespace], it)
	}
	known, err := retry(ctx, s.log, "read the namespaces of the log", func() ([]string, error) {
		return s.x.logNamespaces(ctx)
	})
	if err != nil {
		return nil, err
	}
	for _, ns := range known {
		if _, ok := out[ns]; !ok {
			out[ns] = nil
		}
	}
	return out, nil
}

// versionsDigest is the ledger.VersionsDigest of listed items, "" for
// none: what the projection reports for a namespace without the
// resource.
func versionsDigest(listed []*item) string {
	if len(listed) == 0 {
		return ""
	}
	vs := make([]ledger.ObjectVersion, len(listed))
	for i, it := range listed {
		vs[i] = ledger.ObjectVersion{Name: it.Name, UID: string(it.UID), ResourceVersion: it.ResourceVersion}
	}
	return ledger.VersionsDigest(vs)
}

func (s *stream) resyncGroup(ctx context.Context, name string, lines []byte, opts ingest.ResyncOptions) error {
	where := opts.Namespace
	if where == "" {
		where = "the cluster scope"
	}
	report, err := retry(ctx, s.log, "resync "+s.res.Name()+" in "+where, func() (ingest.ResyncReport, error) {
		return s.ing.Resync(ctx, name, bytes.NewReader(lines), opts)
	})
	if err != nil {
		return err
	}
	for _, rej := range report.Rejections {
		s.log.Warn("resync record rejected into the dead-letter stream", "source", rej.Source, "reason", rej.Reason)
	}
	for _, g := range report.Groups {
		s.x.metrics.events.WithLabelValues(s.res.Name(), "RESYNC").Inc()
		if g.Split {
			// Too large for one event: its objects went one by one,
			// then the list of their names.
			s.split++
		}
		if g.Resource != s.res.Name() {
			s.log.Warn("the ledger names this resource's objects otherwise (their kind's guessed plural); a quota's count of it may miss them", "ledger", g.Resource)
		}
	}
	return nil
}

// retry calls fn until it succeeds or ctx ends, with a growing delay
// between attempts, saying each time what failed and when it tries again.
func retry[T any](ctx context.Context, log *slog.Logger, what string, fn func() (T, error)) (T, error) {
	delay := RetryDelayMin
	for {
		v, err := fn()
		if err == nil {
			return v, nil
		}
		if ctx.Err() != nil {
			return v, fmt.Errorf("%s: %w", what, errors.Join(ErrStopped, err))
		}
		log.Warn(natsErrorMessage(what, delay), "err", err)
		select {
		case <-ctx.Done():
			return v, fmt.Errorf("%s: %w", what, errors.Join(ErrStopped, err))
		case <-time.After(delay):
		}
		delay = min(2*delay, RetryDelayMax)
	}
}
