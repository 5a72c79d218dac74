package projector

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/quotaledger/quota/ledger"
)

// The log bounded by time (see the package doc): a Retainer purges the
// stream up to the newest checkpoint older than the retention, archiving
// the events first, with the checkpoint they fold onto, when it has an
// archive. Only one server trims at a time: the holder of a lease in a
// key-value bucket; each step is safe to repeat (the archive resumes
// after its last segment, and a purge to the same sequence removes
// nothing more). Prune keeps the checkpoints the log needs (Retained).

// Defaults and limits of RetentionConfig.
const (
	// DefaultLeaseBucket is the key-value bucket of the trimming lease.
	DefaultLeaseBucket = "QUOTA_RETENTION"
	// RetentionMin is the shortest retention accepted.
	RetentionMin = time.Second
	// RetentionIntervalMax bounds the default interval between two looks
	// at the log: an eighth of the retention, at most a minute.
	RetentionIntervalMax = time.Minute
	// RetentionIntervalMin is the shortest interval.
	RetentionIntervalMin = 100 * time.Millisecond
	// leaseKey is the lease's key; its value names the holder.
	leaseKey = "trimmer"
	// leaseTTLMin is the shortest a lease lasts unrenewed.
	leaseTTLMin = 5 * time.Second
	// archiveReadWait bounds the wait for one record the log holds while
	// archiving it.
	archiveReadWait = 30 * time.Second
	// pendingAbandoned is how long a checkpoint may stay pending before
	// Prune takes it for one a crash left behind.
	pendingAbandoned = 2 * SnapshotTimeout
)

// Retained returns the checkpoints of list (oldest first) to keep when
// the log starts at firstSeq: the newest keep; the newest at or before
// firstSeq-1, the base the log is folded onto (when firstSeq > 1); and,
// with spacing, from the base on, each that is at least spacing newer
// than the last kept. The rest are no longer needed: the log no longer
// continues them, or a kept one near them serves as well.
func Retained(list []SnapshotInfo, keep int, firstSeq uint64, spacing time.Duration) []SnapshotInfo {
	base := -1
	for i, c := range list {
		if firstSeq > 1 && c.Seq <= firstSeq-1 {
			base = i
		}
	}
	var out []SnapshotInfo
	var last time.Time
	for i, c := range list {
		spaced := spacing > 0 && i >= base && (last.IsZero() || !c.Time.Before(last.Add(spacing)))
		if spaced {
			last = c.Time
		}
		if spaced || i == base || i >= len(list)-keep {
			out = append(out, c)
		}
	}
	return out
}

// Prune deletes the checkpoints Retained does not keep for a log that
// starts at firstSeq, and pending ones a crash abandoned.
func (s *Snapshots) Prune(ctx context.Context, firstSeq uint64) error {
	list, pending, err := s.list(ctx)
	if err != nil {
		return err
	}
	var spacing time.Duration
	if s.cfg.Retention > 0 {
		spacing = s.cfg.Retention / SnapshotSpacingDivisor
	}
	keep := map[string]bool{}
	for _, c := range Retained(list, s.cfg.Keep, firstSeq, spacing) {
		keep[c.Name] = true
	}
	for _, c := range list {
		if !keep[c.Name] {
			if err := s.Delete(ctx, c.Name); err != nil {
				return fmt.Errorf("prune: %w", err)
			}
		}
	}
	for _, c := range pending {
		if !c.Written.IsZero() && time.Since(c.Written) > pendingAbandoned {
			if err := s.Delete(ctx, c.Name); err != nil {
				return fmt.Errorf("prune: %w", err)
			}
		}
	}
	return nil
}

// RetentionConfig configures a Retainer.
type RetentionConfig struct {
	// Retention is the age past which events covered by a checkpoint
	// leave the log. Required: at least RetentionMin.
	Retention time.Duration
	// Interval is how often the Retainer looks at the log. Zero: an
	// eighth of Retention, between RetentionIntervalMin and
	// RetentionIntervalMax.
	Interval time.Duration
	// Archive, when set, receives the events before they leave the log,
	// and the checkpoint they fold onto. Zero: they are not kept.
	Archive *ledger.Archive
	// TempDir holds the copy of a checkpoint on its way to the archive.
	// Zero: os.TempDir().
	TempDir string
	// LeaseBucket is the key-value bucket of the lease. Zero:
	// DefaultLeaseBucket.
	LeaseBucket string
	// Holder names this server in the lease. Required; each server
	// sharing a log needs its own.
	Holder string
	// Replicas of the lease bucket. Zero: 1.
	Replicas int
	// Storage of the lease bucket. Zero: file storage.
	Storage jetstream.StorageType
	// Logger receives what each round did. Nil: slog.Default().
	Logger *slog.Logger
}

// Validate reports every problem with c in one error.
func (c *RetentionConfig) Validate() error {
	var problems []string
	if c.Retention < RetentionMin {
		problems = append(problems, fmt.Sprintf("Retention %s is under %s", c.Retention, RetentionMin))
	}
	if c.Interval < 0 {
		problems = append(problems, "Interval is negative")
	}
	if c.Holder == "" {
		problems = append(problems, "Holder is required")
	}
	if c.Replicas < 0 || c.Replicas > ledger.ReplicasMax {
		problems = append(problems, fmt.Sprintf("Replicas %d is outside 0..%d", c.Replicas, ledger.ReplicasMax))
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: retention: %s", ErrConfig, strings.Join(problems, "; "))
	}
	return nil
}

func (c RetentionConfig) withDefaults() RetentionConfig {
	c.Interval = cmp.Or(c.Interval, min(max(c.Retention/SnapshotSpacingDivisor, RetentionIntervalMin), RetentionIntervalMax))
	c.LeaseBucket = cmp.Or(c.LeaseBucket, DefaultLeaseBucket)
	c.Replicas = cmp.Or(c.Replicas, 1)
	c.Logger = cmp.Or(c.Logger, slog.Default())
	return c
}

// Retainer bounds the log by time (see the comment at the top of this
// file).
type Retainer struct {
	cfg    RetentionConfig
	stream *ledger.Stream
	snaps  *Snapshots
	lease  jetstream.KeyValue

	purged   atomic.Uint64
	failures atomic.Uint64
}

// NewRetainer returns a Retainer of stream's events, trimming to the
// checkpoints in snaps; it creates or updates the lease's bucket.
func NewRetainer(ctx context.Context, js jetstream.JetStream, stream *ledger.Stream, snaps *Snapshots, cfg RetentionConfig) (*Retainer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      cfg.LeaseBucket,
		Description: "quota ledger: which server trims the log and archives what leaves it",
		History:     1,
		// A holder that stops renewing (gone, or cut off) loses the lease
		// after three of its rounds.
		TTL:      max(3*cfg.Interval, leaseTTLMin),
		Storage:  cfg.Storage,
		Replicas: cfg.Replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("open lease bucket %s: %w", cfg.LeaseBucket, err)
	}
	return &Retainer{cfg: cfg, stream: stream, snaps: snaps, lease: kv}, nil
}

// Purged returns how many events this Retainer has removed from the log.
func (r *Retainer) Purged() uint64 { return r.purged.Load() }

// Failures returns how many of its rounds failed (an archive that cannot
// be written, a purge refused): the events stay in the log.
func (r *Retainer) Failures() uint64 { return r.failures.Load() }

// Run trims the log every Interval while this server holds the lease,
// until ctx ends; then it gives the lease up. A round that fails is
// logged and tried again at the next: the events stay in the log.
func (r *Retainer) Run(ctx context.Context) error {
	log := r.cfg.Logger
	tick := time.NewTicker(r.cfg.Interval)
	defer tick.Stop()
	holding := false
	for {
		held, err := r.holdLease(ctx)
		if err != nil && ctx.Err() == nil {
			log.Warn("cannot take or renew the trimming lease", "bucket", r.cfg.LeaseBucket, "err", err)
		}
		if held != holding {
			log.Info("trimming lease", "held", held, "holder", r.cfg.Holder)
			holding = held
		}
		if held {
			r.round(ctx)
		}
		select {
		case <-ctx.Done():
			// Let another server take over at once.
			r.releaseLease(context.WithoutCancel(ctx))
			return nil
		case <-tick.C:
		}
	}
}

// releaseLease gives the lease up if this server holds it.
func (r *Retainer) releaseLease(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if e, err := r.lease.Get(ctx, leaseKey); err == nil && string(e.Value()) == r.cfg.Holder {
		_ = r.lease.Delete(ctx, leaseKey, jetstream.LastRevision(e.Revision()))
	}
}

// round trims once and logs what it did.
func (r *Retainer) round(ctx context.Context) {
	t, err := r.Trim(ctx, time.Now())
	if err != nil {
		if ctx.Err() == nil {
			r.failures.Add(1)
			r.cfg.Logger.Error("trimming the log failed; its events stay in it", "err", err)
		}
		return
	}
	if t.Purged > 0 {
		r.cfg.Logger.Info("log trimmed", "purged", t.Purged, "first_seq", t.Checkpoint.Seq+1,
			"checkpoint", t.Checkpoint.Name, "archived_segments", len(t.Archived))
	}
}

// holdLease takes the lease when no one holds it, or renews it when this
// server does, and reports whether it holds it.
func (r *Retainer) holdLease(ctx context.Context) (bool, error) {
	e, err := r.lease.Get(ctx, leaseKey)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		_, err = r.lease.Create(ctx, leaseKey, []byte(r.cfg.Holder))
	case err != nil:
		return false, err
	case string(e.Value()) != r.cfg.Holder:
		return false, nil
	default:
		_, err = r.lease.Update(ctx, leaseKey, []byte(r.cfg.Holder), e.Revision())
	}
	if errors.Is(err, jetstream.ErrKeyExists) {
		return false, nil // another server took or renewed it first
	}
	return err == nil, err
}

// Trimmed is what one Trim did.
type Trimmed struct {
	// Checkpoint is the checkpoint the log now starts after; zero when
	// nothing was removed.
	Checkpoint SnapshotInfo
	// Purged is the number of events removed from the log.
	Purged uint64
	// Archived are the segments written to the archive.
	Archived []ledger.ArchiveSegment
	// Reason says why nothing was removed.
	Reason string
}

// Trim removes the events older than the retention at now that a kept
// checkpoint of this build covers: it purges the log up to the newest
// checkpoint whose event is that old, archiving the events first when
// there is an archive. Nothing is removed that no checkpoint covers.
// Trim holds no lease: Run calls it while holding one.
func (r *Retainer) Trim(ctx context.Context, now time.Time) (Trimmed, error) {
	st, err := r.stream.Status(ctx)
	if err != nil {
		return Trimmed{}, fmt.Errorf("trim: %w", err)
	}
	if st.Messages == 0 {
		return Trimmed{Reason: "the log is empty"}, nil
	}
	list, err := r.snaps.List(ctx)
	if err != nil {
		return Trimmed{}, fmt.Errorf("trim: %w", err)
	}
	cut := now.Add(-r.cfg.Retention)
	base, ok := newestUsable(list, st.FirstSeq, st.LastSeq, cut)
	if !ok {
		return Trimmed{Reason: fmt.Sprintf("no checkpoint at seq %d or later is older than %s", st.FirstSeq, r.cfg.Retention)}, nil
	}
	out := Trimmed{Checkpoint: base}
	if r.cfg.Archive != nil {
		if out.Archived, err = r.archive(ctx, list, st.FirstSeq, base.Seq); err != nil {
			return Trimmed{}, fmt.Errorf("trim: archive seq %d to %d before removing them: %w", st.FirstSeq, base.Seq, err)
		}
	}
	if out.Purged, err = r.stream.PurgeBefore(ctx, base.Seq+1); err != nil {
		return Trimmed{}, fmt.Errorf("trim to checkpoint %s: %w", base.Name, err)
	}
	r.purged.Add(out.Purged)
	if err := r.snaps.Prune(ctx, base.Seq+1); err != nil {
		return out, fmt.Errorf("trim: %w", err)
	}
	return out, nil
}

// archive writes the log's events from first to to into the archive,
// after what it holds of them already, with the checkpoint at first-1
// they fold onto when they start a segment there.
func (r *Retainer) archive(ctx context.Context, list []SnapshotInfo, first, to uint64) ([]ledger.ArchiveSegment, error) {
	a := r.cfg.Archive
	segs, err := a.Segments()
	if err != nil {
		return nil, err
	}
	from := first
	for _, s := range segs {
		if s.FirstSeq <= from && s.LastSeq >= from {
			from = s.LastSeq + 1
		}
	}
	if from > to {
		return nil, nil
	}
	if from == first && first > 1 {
		if err := r.archiveCheckpoint(ctx, list, first-1); err != nil {
			return nil, err
		}
	}
	return a.Copy(ctx, r.stream, from, to, archiveReadWait)
}

// archiveCheckpoint copies the checkpoint at seq into the archive, unless
// it holds it already. Without one (the log was trimmed otherwise), the
// segments that follow have no base there, which the log says.
func (r *Retainer) archiveCheckpoint(ctx context.Context, list []SnapshotInfo, seq uint64) error {
	have, err := r.cfg.Archive.Checkpoints()
	if err != nil || slices.ContainsFunc(have, func(c ledger.ArchiveCheckpoint) bool { return c.Seq == seq }) {
		return err
	}
	i := slices.IndexFunc(list, func(c SnapshotInfo) bool { return c.Seq == seq })
	if i < 0 {
		r.cfg.Logger.Warn("no checkpoint at the archive's new start: its events from there fold onto none until a later one", "seq", seq)
		return nil
	}
	base := list[i]
	f, err := os.CreateTemp(r.cfg.TempDir, ".archive-checkpoint-*.db")
	if err != nil {
		return fmt.Errorf("copy checkpoint %s: %w", base.Name, err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if _, err := r.snaps.Download(ctx, base.Name, f.Name()); err != nil {
		return err
	}
	_, err = r.cfg.Archive.PutCheckpoint(base.Seq, base.Time, CheckpointTag(base.Schema, base.Rules), f)
	return err
}

// CheckpointTag is what an archived checkpoint's name says of it: the
// projection's layout and rules.
func CheckpointTag(schema int, rules uint64) string { return fmt.Sprintf("s%d.r%d", schema, rules) }
