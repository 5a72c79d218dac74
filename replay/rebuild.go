package replay

import (
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
	// Snapshots, when set, lets Rebuild start from the newest periodic
	// snapshot at or before the target. Nil: fold from the first event.
	Snapshots *projector.Snapshots
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
	if o.BatchSizeMax == 0 {
		o.BatchSizeMax = DefaultBatchSizeMax
	}
	if o.ReadWaitTimeout == 0 {
		o.ReadWaitTimeout = DefaultReadWaitTimeout
	}
	if o.ProgressInterval == 0 {
		o.ProgressInterval = DefaultProgressInterval
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
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
	// Snapshot is the snapshot the rebuild started from, nil when it
	// folded from the first event.
	Snapshot *projector.SnapshotInfo
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
	var err error
	if r.temp {
		err = r.Projector.Discard()
	} else {
		err = r.Projector.Close()
	}
	if r.temp {
		if rmErr := os.RemoveAll(filepath.Dir(r.Path)); rmErr != nil && err == nil {
			err = rmErr
		}
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
	last, err := stream.LastSeq(ctx)
	if err != nil {
		return nil, fmt.Errorf("rebuild: %w", err)
	}
	target := last
	if until != nil {
		if *until > last {
			return nil, fmt.Errorf("%w: seq %d asked, the stream ends at %d", ErrBeyondStream, *until, last)
		}
		target = *until
	}

	res, err := newResult(opts.Path)
	if err != nil {
		return nil, err
	}
	path := res.Path
	// A rebuild that fails leaves no file behind: a half-built one would
	// pass for a projection, and the next try would refuse its path.
	fail := func(err error) (*Result, error) {
		if res.Projector != nil {
			res.Projector.Close()
		}
		if res.temp {
			os.RemoveAll(filepath.Dir(path))
		} else {
			os.Remove(path)
		}
		return nil, err
	}
	if err := res.open(ctx, opts, target); err != nil {
		return fail(err)
	}
	p := res.Projector
	if err := fold(ctx, stream, p, res, target, opts); err != nil {
		return fail(err)
	}
	if !res.temp {
		// --db: the file is what was asked for.
		if err := p.Checkpoint(); err != nil {
			return fail(fmt.Errorf("rebuild: %w", err))
		}
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

// open opens res's projection where the rebuild starts: the newest
// snapshot of opts.Snapshots at or before target (and opts.At), else an
// empty file; it sets res.Snapshot, res.Seq and res.Time.
func (res *Result) open(ctx context.Context, opts Options, target uint64) error {
	path := res.Path
	if opts.Snapshots != nil {
		info, ok, err := opts.Snapshots.Newest(ctx, target, opts.At)
		if err != nil {
			return fmt.Errorf("rebuild: %w", err)
		}
		if ok {
			got, err := opts.Snapshots.Download(ctx, info.Name, path)
			if err != nil {
				return fmt.Errorf("rebuild: %w", err)
			}
			res.Snapshot = &got
		}
	}

	p, err := projector.Open(projector.Config{Path: path, NoSync: true, BatchSizeMax: opts.BatchSizeMax, Logger: opts.Logger}, nil)
	if err != nil && res.Snapshot != nil {
		// The file is the snapshot's copy, not one to move aside: the
		// error says what is wrong with it without Open's advice.
		cause := errors.Unwrap(err)
		if cause == nil {
			cause = err
		}
		return fmt.Errorf("rebuild: %w: snapshot %s: %w (--no-snapshot folds from the first event)", projector.ErrSnapshotUnusable, res.Snapshot.Name, cause)
	}
	if err != nil {
		return fmt.Errorf("rebuild: %w", err)
	}
	res.Projector = p
	res.Seq, res.Time = projector.AppliedAt(p.View())
	if res.Snapshot != nil && res.Seq != res.Snapshot.Seq {
		return fmt.Errorf("%w: %s says seq %d, its file holds seq %d", projector.ErrSnapshotUnusable, res.Snapshot.Name, res.Snapshot.Seq, res.Seq)
	}
	if res.Seq > target {
		return fmt.Errorf("%w: starting file is at seq %d, past the target %d", ErrBeyondStream, res.Seq, target)
	}
	return nil
}

// fold reads records after res.Seq and applies them in batches until the
// target sequence, or until a record stored after opts.At.
func fold(ctx context.Context, stream *ledger.Stream, p *projector.Projector, res *Result, target uint64, opts Options) error {
	start := time.Now()
	total := target - res.Seq
	report := func(done bool) {
		if opts.Progress != nil {
			opts.Progress(Progress{Applied: res.Applied, Total: total, Seq: res.Seq, Elapsed: time.Since(start), Done: done})
		}
	}
	defer func() { res.Elapsed = time.Since(start) }()
	if res.Seq >= target {
		report(true)
		return nil
	}
	reader, err := stream.Reader(ctx, res.Seq+1)
	if err != nil {
		return fmt.Errorf("rebuild: %w", err)
	}
	defer reader.Close()
	lastReport := start
	batch := make([]ledger.Record, 0, opts.BatchSizeMax)
	for res.Seq < target {
		batch = batch[:0]
		stop := false
		// One read per batch: the first record may wait for the server, the
		// rest are what the reader has already decoded. Folding a batch
		// while the reader fills its buffer keeps both busy; waiting to fill
		// a large batch would leave the fold idle meanwhile.
		recs, err := reader.Next(ctx, min(opts.BatchSizeMax, ledger.ReaderNextMax), opts.ReadWaitTimeout)
		if err != nil {
			return fmt.Errorf("rebuild: read after seq %d: %w", res.Seq, err)
		}
		if len(recs) == 0 {
			return fmt.Errorf("%w: no record after seq %d within %s (want up to %d)", ErrReadStalled, res.Seq, opts.ReadWaitTimeout, target)
		}
		for _, rec := range recs {
			if rec.Seq > target || (!opts.At.IsZero() && rec.Time.After(opts.At)) {
				stop = true
				break
			}
			batch = append(batch, rec)
		}
		if len(batch) > 0 {
			if err := p.Apply(ctx, batch); err != nil {
				if errors.Is(err, projector.ErrWrite) {
					return fmt.Errorf("rebuild: %w; the file is removed: run the rebuild again where its disk has room (--db elsewhere, or TMPDIR for the temporary file)", err)
				}
				return fmt.Errorf("rebuild: %w", err)
			}
			res.Applied += uint64(len(batch))
			res.Seq, res.Time = batch[len(batch)-1].Seq, batch[len(batch)-1].Time
		}
		if stop {
			break
		}
		if now := time.Now(); now.Sub(lastReport) >= opts.ProgressInterval {
			lastReport = now
			report(false)
		}
	}
	report(true)
	return nil
}
