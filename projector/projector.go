package projector

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/quotaledger/quota/projector/buckets"

	"github.com/quotaledger/quota/ledger"
)

// Defaults for Config's zero values.
const (
	// DefaultBatchSizeMax bounds the records applied in one transaction.
	DefaultBatchSizeMax = 1024
	// DefaultFetchWaitTimeout bounds how long an idle fetch waits for a
	// first record. Records that have arrived are applied at once; this
	// only paces the loop when the stream is quiet.
	DefaultFetchWaitTimeout = 250 * time.Millisecond
	// DefaultCommitDelay is how long a small batch of reservations waits
	// for more before it is committed (see Config.CommitDelay). Every commit
	// rewrites the file's pages its records touch, a burst of work and
	// writes that the admissions running beside it wait behind: under a
	// steady trickle of reservations, a quarter second between commits
	// kept one client's reserving p99 near the log's own append p99 in
	// the benchmark, where 25 ms more than doubled it (BENCHMARKS.md).
	DefaultCommitDelay = 250 * time.Millisecond
	// CommitDelayMax is the largest CommitDelay accepted.
	CommitDelayMax = time.Second
	// BatchSizeLimit is the largest BatchSizeMax accepted: one transaction
	// holds the whole batch in memory.
	BatchSizeLimit = 65536
)

// Config configures a Projector.
type Config struct {
	// Path is the bbolt file of the projection. Required.
	Path string
	// BatchSizeMax is the most records applied in one transaction.
	// Zero means DefaultBatchSizeMax.
	BatchSizeMax int
	// FetchWaitTimeout is how long an idle fetch waits for a first record.
	// Zero means DefaultFetchWaitTimeout.
	FetchWaitTimeout time.Duration
	// CommitDelay is how long the projector, once it has caught up with
	// the stream, lets a small batch of reservations (Reserve events
	// only) wait for more before committing it, unless a query (describe,
	// an admission catching up) waits for it or an event of another kind
	// comes: while reservations trickle in under load, one commit and one
	// fsync then serve many. A decision that waits for nothing (a dry
	// run) on another replica sees such a reservation up to this long
	// after it is in the log; a reservation never misses one, as its
	// compare-and-swap fails and it waits. Zero means DefaultCommitDelay;
	// negative commits every batch at once.
	CommitDelay time.Duration
	// NoSync skips bbolt's fsync on a checkpoint. The stream stays the
	// truth, so a projection lost to a power failure is rebuilt from it;
	// a process crash alone loses nothing either way. Zero (false) syncs
	// every checkpoint.
	NoSync bool
	// CheckpointEvery is how many applied records, at most, a checkpoint
	// of the live state waits for. Zero means DefaultCheckpointEvery.
	CheckpointEvery uint64
	// CheckpointInterval is how long, at most, a checkpoint waits once
	// anything was applied. Zero means DefaultCheckpointInterval.
	CheckpointInterval time.Duration
	// TombstoneTTL is how long, in stream time, the projection remembers
	// a deleted uid, so that a stale writer's late event for it is
	// ignored (fence.go). Zero means the stream's duplicate window, or
	// ledger.DefaultDuplicateWindow without a stream.
	TombstoneTTL time.Duration
	// Logger receives structured logs. Nil means slog.Default().
	Logger *slog.Logger
}

// Validate reports every problem with c in one error.
func (c *Config) Validate() error {
	var problems []string
	if c.Path == "" {
		problems = append(problems, "Path is required")
	}
	if c.BatchSizeMax < 0 || c.BatchSizeMax > BatchSizeLimit {
		problems = append(problems, fmt.Sprintf("BatchSizeMax %d is outside 0..%d", c.BatchSizeMax, BatchSizeLimit))
	}
	if c.FetchWaitTimeout < 0 {
		problems = append(problems, "FetchWaitTimeout is negative")
	}
	if c.CheckpointInterval < 0 {
		problems = append(problems, "CheckpointInterval is negative")
	}
	if c.TombstoneTTL < 0 {
		problems = append(problems, "TombstoneTTL is negative")
	}
	if c.CommitDelay > CommitDelayMax {
		problems = append(problems, fmt.Sprintf("CommitDelay %s is over %s", c.CommitDelay, CommitDelayMax))
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrConfig, strings.Join(problems, "; "))
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.BatchSizeMax == 0 {
		c.BatchSizeMax = DefaultBatchSizeMax
	}
	if c.FetchWaitTimeout == 0 {
		c.FetchWaitTimeout = DefaultFetchWaitTimeout
	}
	if c.CommitDelay == 0 {
		c.CommitDelay = DefaultCommitDelay
	}
	if c.CheckpointEvery == 0 {
		c.CheckpointEvery = DefaultCheckpointEvery
	}
	if c.CheckpointInterval == 0 {
		c.CheckpointInterval = DefaultCheckpointInterval
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Projector keeps a projection up to date with a stream: the live state
// in memory, checkpointed to a bbolt file (checkpoint.go).
type Projector struct {
	cfg    Config
	db     *bolt.DB
	stream *ledger.Stream

	fold *Fold // the only writer's cache
	// set is the live state, written by Apply alone; view is its newest
	// snapshot, what every read sees: the state after one applied batch.
	set  *buckets.Set
	view atomic.Pointer[buckets.Set]
	// ckMu serializes checkpoints, and guards db, which one may replace;
	// checkpointed is the applied sequence of the newest one,
	// checkpointedOnce set once the file holds one.
	ckMu             sync.Mutex
	checkpointed     atomic.Uint64
	checkpointedOnce bool
	// unwritten are the keys changed by the views published since the
	// last checkpoint took them; unwrittenMu makes a view's publication
	// and its changes one step for Checkpoint.
	unwrittenMu  sync.Mutex
	unwritten    buckets.Changes
	unwrittenAll bool // the next checkpoint rewrites the file (addUnwritten)
	pageSize     int  // the file's page size, for inPlace
	// checkpointDue asks the checkpoint loop for one now.
	checkpointDue chan struct{}

	applied atomic.Uint64
	// rules is the RulesVersion the file was first folded under.
	rules uint64
	// skipped counts the records this process's Apply skipped.
	skipped atomic.Uint64
	stale   atomic.Uint64
	// positions reads the stream's position for CatchUp.
	positions positions
	// pending is the stream's backlog behind the last record applied.
	pending atomic.Uint64
	// factTime is LastFactTime in Unix ns, 0 while unknown.
	factTime atomic.Int64
	// waiting counts the callers of WaitApplied waiting for a commit; a
	// small batch is not held back while there is one. A caller that
	// starts waiting also sends on wake, to cut short a batch held back.
	waiting atomic.Int32
	wake    chan struct{}
	mu      sync.Mutex
	changed chan struct{} // closed and replaced after every commit
	// subjects are the subjects' last applied sequences (SubjectSeqs).
	subjects subjectSeqs
}

// Open opens (or creates) the projection file and checks every page of
// an existing one (Check), refusing a damaged file with ErrDamaged. With
// a stream it binds the file to it (bindStream), refusing one built from
// another stream with ErrOtherStream. stream may be nil for a projection
// that is only read or folded by hand (replay).
func Open(cfg Config, stream *ledger.Stream) (*Projector, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	st, statErr := os.Stat(cfg.Path)
	existed := statErr == nil && st.Size() > 0
	db, err := openFile(cfg.Path, cfg.NoSync, 0)
	if err != nil {
		return nil, openError(cfg.Path, err)
	}
	// A rewrite a crash cut short; the file is locked now, so it is no
	// other process's.
	if err := os.Remove(cfg.Path + rewriteSuffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
		db.Close()
		return nil, fmt.Errorf("open projection %s: remove an unfinished checkpoint: %w", cfg.Path, err)
	}
	if existed {
		// Seconds for a large file that is not in the page cache.
		cfg.Logger.Info("checking the projection file", "path", cfg.Path, "bytes", st.Size())
	}
	started := time.Now()
	if err := Check(db); err != nil {
		db.Close()
		return nil, openError(cfg.Path, err)
	}
	if existed {
		cfg.Logger.Info("projection file checked", "path", cfg.Path, "bytes", st.Size(), "took", time.Since(started).Round(time.Millisecond))
	}
	p := &Projector{cfg: cfg, db: db, pageSize: db.Info().PageSize, stream: stream, fold: NewFold(), changed: make(chan struct{}), wake: make(chan struct{}, 1),
		checkpointDue: make(chan struct{}, 1)}
	if stream != nil {
		p.positions.read = stream.LastSeq
	}
	p.fold.TombstoneTTL = cfg.TombstoneTTL
	if p.fold.TombstoneTTL == 0 && stream != nil {
		p.fold.TombstoneTTL = stream.Config().DuplicateWindow
	}
	if err := p.load(existed); err != nil {
		db.Close()
		return nil, openError(cfg.Path, err)
	}
	if rules := p.rules; rules != RulesVersion {
		if err := p.Recharge(); err != nil {
			db.Close()
			return nil, openError(cfg.Path, fmt.Errorf("recharge under rules %d: %w", RulesVersion, err))
		}
		cfg.Logger.Info("the projection was folded under other charging rules: every charge and used recomputed from the objects it holds",
			"path", cfg.Path, "rules", rules, "build_rules", RulesVersion)
	}
	return p, nil
}

// load reads the file into the live state, checks its layout, binds it to
// the stream and publishes the first view.
func (p *Projector) load(existed bool) error {
	set, err := loadSet(p.db)
	if err != nil {
		return err
	}
	// From here the file lacks what the state takes: the layout and the
	// stream's binding below, then each batch.
	set.TrackChanges()
	if err := initBuckets(set); err != nil {
		return err
	}
	p.set = set
	p.applied.Store(appliedSeq(set))
	p.checkpointed.Store(appliedSeq(set))
	p.checkpointedOnce = existed
	if p.rules, err = rulesVersion(set); err != nil {
		return err
	}
	if p.stream != nil {
		if err := bindStream(set, p.stream); err != nil {
			return err
		}
	}
	if b := set.Bucket(bucketStream); b != nil {
		if v := b.Get(keyFactTime); len(v) == 8 {
			p.factTime.Store(int64(binary.BigEndian.Uint64(v)))
		}
	}
	p.publish(set)
	return nil
}

// publish makes set's state the view, and its changes the next
// checkpoint's.
func (p *Projector) publish(set *buckets.Set) {
	p.unwrittenMu.Lock()
	defer p.unwrittenMu.Unlock()
	p.view.Store(set.Snapshot())
	p.addUnwritten(set.TakeChanges(), false)
}

// addUnwritten adds changes to the next checkpoint's, and all, the note
// that it rewrites the whole file. Past what a checkpoint writes in place
// (inPlaceBytesMax) the keys are not kept: that note replaces them. The
// caller holds unwrittenMu.
func (p *Projector) addUnwritten(changes buckets.Changes, all bool) {
	if p.unwritten == nil {
		p.unwritten = buckets.Changes{}
	}
	p.unwrittenAll = p.unwrittenAll || all
	if !p.unwrittenAll {
		p.unwritten.Add(changes)
		p.unwrittenAll = pastInPlaceBytes(p.unwritten.Len(), p.pageSize)
	}
	if p.unwrittenAll {
		clear(p.unwritten)
	}
}

// read calls fn with the newest view of the live state.
func (p *Projector) read(fn func(*buckets.Set) error) error {
	return fn(p.view.Load())
}

// bindTimeout bounds bindStream's question for the stream's last
// sequence.
const bindTimeout = 10 * time.Second

// bindStream records which stream the projection follows, and refuses a
// file built from another: one that followed a stream of another identity
// (deleted and created again since, or another cluster's), or that has
// applied events the stream does not hold (another stream, or this one
// after losing its last events). Either would otherwise go
// unnoticed: the projection would wait for sequences the new stream
// reaches only later, skipping the events below them, and answer from
// the old stream's objects meanwhile.
func bindStream(tx *buckets.Set, stream *ledger.Stream) error {
	id := stream.Identity()
	ctx, cancel := context.WithTimeout(context.Background(), bindTimeout)
	defer cancel()
	last, err := stream.LastSeq(ctx)
	if err != nil {
		return err
	}
	b, err := tx.CreateBucketIfNotExists(bucketStream)
	if err != nil {
		return err
	}
	if got := b.Get(keyIdentity); got != nil && string(got) != id {
		return fmt.Errorf("%w: it followed %s; the server's is %s", ErrOtherStream, got, id)
	}
	if applied := appliedSeq(tx); applied > last {
		return fmt.Errorf("%w: it has applied events up to seq %d, and %s ends at seq %d (or the stream lost its last events, as a power failure can under a sync interval)", ErrOtherStream, applied, id, last)
	}
	return b.Put(keyIdentity, []byte(id))
}

// Close writes a last checkpoint and closes the projection file.
func (p *Projector) Close() error {
	err := p.Checkpoint()
	if cerr := p.file().Close(); err == nil {
		err = cerr
	}
	return err
}

// Discard closes the projection file without a last checkpoint: for a
// projection whose file is thrown away (a replay's temporary one).
func (p *Projector) Discard() error { return p.file().Close() }

// DB writes a checkpoint of the newest view and returns the file, for
// reading (tests, the whole-state check) until the next checkpoint, which
// may replace it. Nothing else writes it.
func (p *Projector) DB() *bolt.DB {
	if err := p.Checkpoint(); err != nil {
		p.cfg.Logger.Error("checkpoint for a read of the file", "err", err)
	}
	return p.file()
}

// file returns the open projection file, which a checkpoint may replace.
func (p *Projector) file() *bolt.DB {
	p.ckMu.Lock()
	defer p.ckMu.Unlock()
	return p.db
}

// View returns the newest view of the live state: the state after the
// last applied batch, which never changes.
func (p *Projector) View() *buckets.Set { return p.view.Load() }

// Applied returns the last stream sequence the projection reflects.
func (p *Projector) Applied() uint64 { return p.applied.Load() }

// Rules returns the RulesVersion the file was first folded under (this
// build's for a new file). A projection of other rules holds charges this
// build would not make until each object's next event; rebuild it from
// the stream.
func (p *Projector) Rules() uint64 { return p.rules }

// Skipped returns how many records Apply has skipped since Open: records
// the fold could not apply, each noted in the projection and kept as a
// dead letter.
func (p *Projector) Skipped() uint64 { return p.skipped.Load() }

// Stale returns how many facts (upserts, deletes, resync items) this
// projector has ignored as older than the state it held (fence.go).
func (p *Projector) Stale() uint64 { return p.stale.Load() }

// Pending returns how many records the stream held after the last record
// applied, when that record was delivered (ledger.Record.Pending): the
// projection's backlog, zero once it has caught up and until new events
// are delivered.
func (p *Projector) Pending() uint64 { return p.pending.Load() }

// Apply applies records (which must continue the applied sequence) to the
// live state as one batch, publishes the new view, then reports skipped
// records to the log and the stream's dead-letter place. A batch that
// fails leaves the state as the last view had it.
func (p *Projector) Apply(ctx context.Context, records []ledger.Record) error {
	return p.ApplyPrepared(ctx, Prepare(records))
}

// ApplyPrepared is Apply of a prepared batch.
func (p *Projector) ApplyPrepared(ctx context.Context, b *Prepared) error {
	records := b.records
	if len(records) == 0 {
		return nil
	}
	var skipped []Skipped
	facts := lastFactTime(records)
	// panicked says the fold panicked: a bug. The state goes back to the
	// last view, and the projector stops with an error, not the process.
	panicked := false
	err := func() (err error) {
		defer ledger.Survive(p.cfg.Logger, "apply a batch to the projection", func(e error) { err, panicked = e, true })
		if skipped, err = p.fold.ApplyPrepared(p.set, b); err != nil {
			return err
		}
		if b := p.set.Bucket(bucketStream); b != nil && facts > p.factTime.Load() {
			return b.Put(keyFactTime, seqBytes(uint64(facts)))
		}
		return nil
	}()
	if err != nil {
		p.fold.Forget()
		p.set = p.view.Load().Clone()
		p.set.TrackChanges()
		first, last := records[0].Seq, records[len(records)-1].Seq
		if panicked {
			return fmt.Errorf("apply batch seq %d..%d: %w; a bug (the log holds the stack)", first, last, err)
		}
		return fmt.Errorf("apply batch seq %d..%d: %w", first, last, err)
	}
	p.publish(p.set)
	if last := records[len(records)-1].Seq; last-p.checkpointed.Load() >= p.cfg.CheckpointEvery {
		select {
		case p.checkpointDue <- struct{}{}:
		default:
		}
	}
	p.subjects.applied(records)
	if facts > p.factTime.Load() {
		p.factTime.Store(facts)
	}
	p.skipped.Add(uint64(len(skipped)))
	stale := p.fold.TakeStaleItems()
	for _, s := range skipped {
		if s.Stale {
			stale++
		}
	}
	p.stale.Add(stale)
	p.pending.Store(records[len(records)-1].Pending)
	p.publishApplied(records[len(records)-1].Seq)
	for _, s := range skipped {
		p.cfg.Logger.Warn("skipped stream record", "seq", s.Seq, "subject", s.Subject, "reason", s.Reason)
		if p.stream != nil {
			raw := recordRaw(records, s.Seq)
			rej := ledger.Rejection{Origin: ledger.OriginProjector, Source: fmt.Sprintf("%s:%d (%s)", p.stream.Config().StreamName, s.Seq, s.Subject), Reason: s.Reason, Raw: raw}
			if err := p.stream.Reject(ctx, rej); err != nil {
				p.cfg.Logger.Error("could not keep skipped record as dead letter", "seq", s.Seq, "err", err)
			}
		}
	}
	return nil
}

// lastFactTime returns when the stream took the newest record of records
// that carries a fact of the cluster (an upsert, a delete, a resync: what
// an exporter or 'quota ingest' sends, not an admission's reservation or
// its expiry), in Unix ns; 0 if none does.
func lastFactTime(records []ledger.Record) int64 {
	var t int64
	for i := range records {
		if r := &records[i]; r.Err == nil {
			switch r.Event.Type {
			case ledger.Upsert, ledger.Delete, ledger.Resync:
				t = max(t, r.Time.UnixNano())
			}
		}
	}
	return t
}

// LastFactTime is when the stream took the newest cluster fact (an
// upsert, a delete or a resync) the projection has applied, kept across
// restarts: the time since it is how long the feed has been quiet. Zero
// while no fact has been applied since the file recorded its stream.
func (p *Projector) LastFactTime() time.Time {
	if ns := p.factTime.Load(); ns > 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

func recordRaw(records []ledger.Record, seq uint64) []byte {
	for i := range records {
		if records[i].Seq == seq {
			return records[i].Raw
		}
	}
	return nil
}

func (p *Projector) publishApplied(seq uint64) {
	p.mu.Lock()
	p.applied.Store(seq)
	close(p.changed)
	p.changed = make(chan struct{})
	p.mu.Unlock()
}

// WaitApplied blocks until the projection reflects seq or ctx ends.
func (p *Projector) WaitApplied(ctx context.Context, seq uint64) error {
	if p.applied.Load() >= seq {
		return nil
	}
	p.waiting.Add(1)
	defer p.waiting.Add(-1)
	select {
	case p.wake <- struct{}{}:
	default: // a wake-up is pending already
	}
	for {
		p.mu.Lock()
		ch := p.changed
		p.mu.Unlock()
		if p.applied.Load() >= seq {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("%w: at seq %d, want %d: %v", ErrNotCaughtUp, p.applied.Load(), seq, ctx.Err())
		}
	}
}

// CatchUp waits until the projection reflects everything appended to the
// stream before the call: the read-your-writes point for queries.
func (p *Projector) CatchUp(ctx context.Context) error {
	last, err := p.positions.last(ctx)
	if err != nil {
		return fmt.Errorf("read stream position: %w", err)
	}
	return p.WaitApplied(ctx, last)
}
