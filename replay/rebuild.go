package replay

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/projector"
)

// Defaults and limits of Options.
const (
	// DefaultBatchSizeMax bounds the records applied per transaction. A
	// batch is what the reader holds when the fold asks (at most
	// ledger.ReaderBufferMax), so this only caps it.
	DefaultBatchSizeMax = 16_384
	// BatchSizeLimit is the largest BatchSizeMax accepted.
	BatchSizeLimit = projector.BatchSizeLimit
	// DefaultReadWaitTimeout is how long a read waits for a record that the
	// stream is known to hold before Rebuild gives up.
	DefaultReadWaitTimeout = 30 * time.Second
	// DefaultProgressInterval is how often Options.Progress is called.
	DefaultProgressInterval = 500 * time.Millisecond
)

// Options says what to rebuild and where.
type Options struct {
	// Path is the bbolt file to build. It must not exist or be empty. Zero:
	// a temporary file, removed by Result.Close.
	Path string
	// UntilSeq is the last stream sequence to apply. Zero: the stream's
	// last sequence when Rebuild starts. A sequence beyond it fails with
	// ErrBeyondStream.
	UntilSeq uint64
	// At, when set, stops before the first record the stream stored after
	// this time; records at exactly At are applied.
	At time.Time
	// Snapshots, when set, lets Rebuild start from the newest checkpoint
	// (periodic snapshot) at or before the target. Nil: fold from the
	// first event, or from a checkpoint of Archive.
	Snapshots *projector.Snapshots
	// Archive, when set, holds the events before the log's first, read
	// before the log's own, and checkpoints to start from (see plan.go).
	// Nil: the log alone.
	Archive *ledger.Archive
	// BatchSizeMax is the number of records per transaction. Zero:
	// DefaultBatchSizeMax.
	BatchSizeMax int
	// ReadWaitTimeout bounds the wait for one record known to be stored.
	// Zero: DefaultReadWaitTimeout.
	ReadWaitTimeout time.Duration
	// Progress, when set, is called about every ProgressInterval and once
	// at the end.
	Progress func(Progress)
	// ProgressInterval is the pace of Progress. Zero:
	// DefaultProgressInterval.
	ProgressInterval time.Duration
	// Logger receives the fold's warnings (skipped records). Nil: a logger
	// that discards, since a replay reports skips through Result.
	Logger *slog.Logger

	// oldest makes the rebuild start from the oldest starting point that
	// serves, not the newest: Verify's, which checks as much of the fold
	// as it can.
	oldest bool

	// Member, for Verify, names the server (a cluster member's
	// --server-name) whose projection is compared. Zero: whichever server
	// of the queue group answers.
	Member string
}

// Validate reports every problem with o in one error.
func (o *Options) Validate() error {
	var problems []string
	if o.BatchSizeMax < 0 || o.BatchSizeMax > BatchSizeLimit {
		problems = append(problems, fmt.Sprintf("BatchSizeMax %d is outside 0..%d", o.BatchSizeMax, BatchSizeLimit))
	}
	if o.ReadWaitTimeout < 0 {
		problems = append(problems, "ReadWaitTimeout is negative")
	}
	if o.ProgressInterval < 0 {
		problems = append(problems, "ProgressInterval is negative")
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrOptions, strings.Join(problems, "; "))
	}
	return nil
}

func (o Options) withDefaults() Options {
	o.BatchSizeMax = cmp.Or(o.BatchSizeMax, DefaultBatchSizeMax)
	o.ReadWaitTimeout = cmp.Or(o.ReadWaitTimeout, DefaultReadWaitTimeout)
	o.ProgressInterval = cmp.Or(o.ProgressInterval, DefaultProgressInterval)
	o.Logger = cmp.Or(o.Logger, slog.New(slog.DiscardHandler))
	return o
}

// Progress reports how far a rebuild is.
type Progress struct {
	// Applied is the number of records applied so far by this rebuild.
	Applied uint64
	// Total is the number of records to apply (an upper bound with At).
	Total uint64
	// Seq is the last applied stream sequence.
	Seq uint64
	// Elapsed is the time since reading began.
	Elapsed time.Duration
	// Done is set on the final call.
	Done bool
}

// Rate is the records applied per second so far.
func (p Progress) Rate() float64 {
	if p.Elapsed <= 0 {
		return 0
	}
	return float64(p.Applied) / p.Elapsed.Seconds()
}

// Remaining estimates the time left at the rate so far.
func (p Progress) Remaining() time.Duration {
	r := p.Rate()
	if r == 0 || p.Applied >= p.Total {
		return 0
	}
	return time.Duration(float64(p.Total-p.Applied) / r * float64(time.Second))
}

// Result is a rebuilt projection. Close it when done.
type Result struct {
	// Projector holds the rebuilt state in memory; read it with View or
	// Quotas. With Options.Path, the file holds it too.
	Projector *projector.Projector
	// Path is the file.
	Path string
	// Seq is the last applied stream sequence (0 when nothing was applied).
	Seq uint64
	// Time is the stream time of the record at Seq.
	Time time.Time
	// Snapshot is the checkpoint of the object store the rebuild started
	// from, nil when it started elsewhere.
	Snapshot *projector.SnapshotInfo
	// Archived is the archive's checkpoint the rebuild started from, nil
	// when it started elsewhere.
	Archived *ledger.ArchiveCheckpoint
	// From says where the rebuild started, for an operator: "the first
	// event", or which checkpoint.
	From string
	// Applied is the number of records this rebuild applied (after the
	// snapshot).
	Applied uint64
	// Elapsed is the time spent reading and applying.
	Elapsed time.Duration

	temp bool
}

// Close closes the rebuilt file and, when it was a temporary one, removes
// it.
func (r *Result) Close() error {
	if !r.temp {
		return r.Projector.Close()
	}
	err := r.Projector.Discard()
	if rmErr := os.RemoveAll(filepath.Dir(r.Path)); err == nil {
		err = rmErr
	}
	return err
}

// Rebuild folds the stream into a fresh projection file with the
// projector's own fold (projector.Projector.Apply), from the start or from
// a snapshot, up to Options.UntilSeq or Options.At.
func Rebuild(ctx context.Context, stream *ledger.Stream, opts Options) (*Result, error) {
	var until *uint64
	if opts.UntilSeq > 0 {
		until = &opts.UntilSeq
	}
	return rebuild(ctx, stream, opts, until)
}

// rebuild is Rebuild with an exact target: until nil means the stream's
// last sequence, and a pointer to 0 means an empty projection.
func rebuild(ctx context.Context, stream *ledger.Stream, opts Options, until *uint64) (*Result, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	h, err := readHoldings(ctx, stream, opts.Archive)
	if err != nil {
		return nil, err
	}
	target := h.log.last
	if until != nil {
		if *until > target {
			return nil, fmt.Errorf("%w: seq %d asked, the stream ends at %d", ErrBeyondStream, *until, target)
		}
		target = *until
	}

	res, err := newResult(opts.Path)
	if err != nil {
		return nil, err
	}
	// Tombstones live as long as the stream's duplicate window, as in the
	// projection of a server on the same stream.
	err = res.open(ctx, opts, target, h, stream.Config().DuplicateWindow)
	if err == nil {
		err = fold(ctx, stream, res.Projector, res, target, opts, h)
	}
	if err == nil && !res.temp {
		// --db: the file is what was asked for.
		if err = res.Projector.Checkpoint(); err != nil {
			err = fmt.Errorf("rebuild: %w", err)
		}
	}
	if err != nil {
		// A rebuild that fails leaves no file behind: a half-built one
		// would pass for a projection, and the next try would refuse its
		// path.
		if res.Projector != nil {
			res.Projector.Close()
		}
		if res.temp {
			os.RemoveAll(filepath.Dir(res.Path))
		} else {
			os.Remove(res.Path)
		}
		return nil, err
	}
	return res, nil
}

// newResult returns the Result of a rebuild into the file at path: a new
// file in a temporary directory of its own when path is empty; else path,
// which must not hold a file yet.
func newResult(path string) (*Result, error) {
	res := &Result{}
	if path == "" {
		dir, err := os.MkdirTemp("", "quota-replay-")
		if err != nil {
			return nil, fmt.Errorf("rebuild: %w", err)
		}
		path, res.temp = filepath.Join(dir, "projection.db"), true
	} else if st, err := os.Stat(path); err == nil && st.Size() > 0 {
		return nil, fmt.Errorf("%w: %s", ErrFileExists, path)
	}
	res.Path = path
	return res, nil
}

// open opens res's projection where the rebuild starts (plan.go): the
// newest checkpoint (of opts.Snapshots or opts.Archive) at or before
// target (and opts.At) that the records held continue, else an empty
// file; it sets res.Snapshot or res.Archived, res.From, res.Seq and
// res.Time. It refuses with ErrNotCovered when no starting point serves.
func (res *Result) open(ctx context.Context, opts Options, target uint64, h holdings, tombstoneTTL time.Duration) error {
	path := res.Path
	list, err := origins(ctx, opts)
	if err != nil {
		return err
	}
	o, ok := choose(list, h, target, opts)
	if !ok {
		return notCovered(list, h, target, opts)
	}
	if err := materialize(ctx, o, opts, path); err != nil {
		return err
	}
	res.Snapshot, res.Archived, res.From = o.snapshot, o.archived, o.name()
	p, err := projector.Open(projector.Config{Path: path, NoSync: true, BatchSizeMax: opts.BatchSizeMax, Logger: opts.Logger,
		TombstoneTTL: tombstoneTTL}, nil)
	if err != nil && o.seq > 0 {
		// The file is the checkpoint's copy, not one to move aside: the
		// error says what is wrong with it without Open's advice.
		cause := errors.Unwrap(err)
		if cause == nil {
			cause = err
		}
		return fmt.Errorf("rebuild: %w: %s: %w (--no-snapshot starts without the object store's checkpoints)", projector.ErrSnapshotUnusable, o.name(), cause)
	}
	if err != nil {
		return fmt.Errorf("rebuild: %w", err)
	}
	res.Projector = p
	res.Seq, res.Time = projector.AppliedAt(p.View())
	if res.Seq != o.seq {
		return fmt.Errorf("%w: %s says seq %d, its file holds seq %d", projector.ErrSnapshotUnusable, o.name(), o.seq, res.Seq)
	}
	return nil
}

// fold reads the records after res.Seq, from the archive while they lie
// before the log's first, then from the log, and applies them in batches
// until the target sequence, or until a record stored after opts.At.
func fold(ctx context.Context, stream *ledger.Stream, p *projector.Projector, res *Result, target uint64, opts Options, h holdings) error {
	f := &folder{ctx: ctx, p: p, res: res, target: target, opts: opts, start: time.Now(), total: target - res.Seq}
	f.lastReport = f.start
	defer func() { res.Elapsed = time.Since(f.start) }()
	if res.Seq < target && res.Seq+1 < h.log.first && opts.Archive != nil {
		to := min(target, h.log.first-1)
		_, err := opts.Archive.Read(ctx, res.Seq+1, to, opts.BatchSizeMax, f.apply)
		if err != nil && !errors.Is(err, errStop) {
			return fmt.Errorf("rebuild: %w", err)
		}
	}
	if !f.stopped && res.Seq < target {
		if res.Seq+1 < h.log.first {
			return fmt.Errorf("%w: the records from seq %d are in neither the archive nor the log, which starts at seq %d", ErrNotCovered, res.Seq+1, h.log.first)
		}
		if err := f.readLog(ctx, stream); err != nil {
			return err
		}
	}
	f.report(true)
	return nil
}

// errStop ends a read once the fold has reached its target.
var errStop = errors.New("target reached")

// folder applies the records of a rebuild in order.
type folder struct {
	ctx        context.Context
	p          *projector.Projector
	res        *Result
	target     uint64
	opts       Options
	start      time.Time
	lastReport time.Time
	total      uint64
	// stopped is set once a record past the target (or opts.At) came.
	stopped bool
}

func (f *folder) report(done bool) {
	if f.opts.Progress != nil {
		f.opts.Progress(Progress{Applied: f.res.Applied, Total: f.total, Seq: f.res.Seq, Elapsed: time.Since(f.start), Done: done})
	}
}

// apply applies the records of recs up to the target, each the one after
// the last applied; it returns errStop once the target is reached.
func (f *folder) apply(recs []ledger.Record) error {
	return f.applyPrepared(projector.Prepare(recs))
}

// applyPrepared is apply of a prepared batch.
func (f *folder) applyPrepared(b *projector.Prepared) error {
	recs := b.Records()
	n := 0
	for _, rec := range recs {
		if rec.Seq > f.target || (!f.opts.At.IsZero() && rec.Time.After(f.opts.At)) {
			f.stopped = true
			break
		}
		if rec.Seq != f.res.Seq+uint64(n)+1 {
			return fmt.Errorf("%w: seq %d came after seq %d: the log was trimmed meanwhile (run the rebuild again), or does not hold what it should", ErrReadStalled, rec.Seq, f.res.Seq+uint64(n))
		}
		n++
	}
	if n > 0 {
		batch := recs[:n]
		if err := f.p.ApplyPrepared(f.ctx, b.Head(n)); err != nil {
			if errors.Is(err, projector.ErrWrite) {
				return fmt.Errorf("rebuild: %w; the file is removed: run the rebuild again where its disk has room (--db elsewhere, or TMPDIR for the temporary file)", err)
			}
			return fmt.Errorf("rebuild: %w", err)
		}
		f.res.Applied += uint64(n)
		f.res.Seq, f.res.Time = batch[n-1].Seq, batch[n-1].Time
	}
	if now := time.Now(); now.Sub(f.lastReport) >= f.opts.ProgressInterval {
		f.lastReport = now
		f.report(false)
	}
	if f.stopped || f.res.Seq >= f.target {
		f.stopped = true
		return errStop
	}
	return nil
}

// readLog applies the log's records after res.Seq until the target.
func (f *folder) readLog(ctx context.Context, stream *ledger.Stream) error {
	reader, err := stream.Reader(ctx, f.res.Seq+1)
	if err != nil {
		return fmt.Errorf("rebuild: %w", err)
	}
	defer reader.Close()
	// One read per batch: the first record may wait for the server, the
	// rest are what the reader has already decoded. The next batch is
	// read and evaluated while this one is folded (PrepareAhead); waiting
	// to fill a large batch would leave the fold idle meanwhile.
	ctx, cancel := context.WithCancel(ctx)
	batches := projector.PrepareAhead(ctx, func(ctx context.Context) ([]ledger.Record, error) {
		recs, err := reader.Next(ctx, min(f.opts.BatchSizeMax, ledger.ReaderNextMax), f.opts.ReadWaitTimeout)
		if err == nil && len(recs) == 0 {
			err = errNoRecord
		}
		return recs, err
	})
	defer func() {
		cancel()
		for range batches {
		}
	}()
	for b := range batches {
		if b.Prepared != nil {
			if err := f.applyPrepared(b.Prepared); err != nil && !errors.Is(err, errStop) {
				return err
			}
			if f.stopped {
				return nil
			}
		}
		switch {
		case errors.Is(b.Err, errNoRecord):
			return fmt.Errorf("%w: no record after seq %d within %s (want up to %d)", ErrReadStalled, f.res.Seq, f.opts.ReadWaitTimeout, f.target)
		case b.Err != nil:
			return fmt.Errorf("rebuild: read after seq %d: %w", f.res.Seq, b.Err)
		}
	}
	return ctx.Err()
}

// errNoRecord is a read of the log that brought nothing within
// Options.ReadWaitTimeout.
var errNoRecord = errors.New("no record")
