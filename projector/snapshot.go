package projector

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	bolt "go.etcd.io/bbolt"

	"github.com/quotaledger/quota/projector/buckets"
)

// Defaults and limits of SnapshotConfig.
const (
	// DefaultSnapshotBucket is the JetStream object store that holds
	// snapshots of the projection.
	DefaultSnapshotBucket = "QUOTA_SNAPSHOTS"
	// DefaultSnapshotEvery is the number of applied events between two
	// periodic snapshots.
	DefaultSnapshotEvery = 100_000
	// DefaultSnapshotInterval is the longest a periodic snapshot waits once
	// anything was applied: a quiet ledger still gets checkpoints that a
	// retention can trim its log to.
	DefaultSnapshotInterval = time.Hour
	// DefaultSnapshotKeep is the number of periodic snapshots kept.
	DefaultSnapshotKeep = 3
	// SnapshotSpacingDivisor divides SnapshotConfig.Retention into the
	// spacing of the checkpoints kept inside the log's window (see
	// Retained): the log can always be trimmed to within an eighth of the
	// retention past its age limit, and any moment in it is rebuilt from
	// a checkpoint at most that far before it.
	SnapshotSpacingDivisor = 8
	// SnapshotKeepMax bounds SnapshotConfig.Keep.
	SnapshotKeepMax = 100
	// SnapshotChunkSize is the object store chunk size: well under the
	// server's default maximum payload of 1 MiB.
	SnapshotChunkSize = 256 * 1024
	// SnapshotTimeout bounds writing or reading one snapshot.
	SnapshotTimeout = 10 * time.Minute
	// SnapshotsListMax bounds the objects a snapshot listing reads.
	SnapshotsListMax = 10_000
	// snapshotVisibleTimeout bounds the wait for a snapshot to be found
	// by name (see Download).
	snapshotVisibleTimeout = 5 * time.Second
)

// Names of snapshot objects and their metadata.
const (
	// snapshotPrefix starts a periodic snapshot's name; the rest is the
	// applied sequence, zero-padded so that names sort by sequence.
	snapshotPrefix = "projection-"
	// pendingPrefix starts a periodic snapshot's name while it is
	// validated; it takes snapshotPrefix's name once it has read back
	// as written, so that no reader ever starts from one that did not.
	pendingPrefix = "pending-"
	// verifyPrefix starts a snapshot taken for a comparison. It is never a
	// starting point for replay: it is a copy of the live projection, the
	// very thing under suspicion, and the comparison deletes it after use.
	verifyPrefix = "verify-"

	metaSeq    = "applied-seq"
	metaTime   = "applied-time"
	metaSchema = "schema"
	metaRules  = "rules"
	metaKind   = "kind"
)

// Snapshot kinds.
const (
	SnapshotPeriodic = "periodic"
	SnapshotVerify   = "verify"
)

// SnapshotConfig configures the snapshot store and the Snapshotter.
type SnapshotConfig struct {
	// Bucket is the object store name. Zero: DefaultSnapshotBucket.
	Bucket string
	// Every is the number of applied events between periodic snapshots.
	// Zero: DefaultSnapshotEvery. Negative: none by count (with Interval
	// negative too, no periodic snapshots at all; the store still serves
	// verify snapshots).
	Every int64
	// Interval is the longest a periodic snapshot waits once anything
	// was applied since the newest. Zero: DefaultSnapshotInterval.
	// Negative: by Every alone.
	Interval time.Duration
	// Keep is how many periodic snapshots are kept, newest first; older
	// ones are deleted after each new one, but for those Retained keeps
	// for the log's sake. Zero: DefaultSnapshotKeep.
	Keep int
	// Retention is the log's retention (a Retainer's): the checkpoints
	// inside the log's window are then kept Retention/8 apart, so that
	// one is always old enough to trim the log to. Zero: none, the log
	// keeps everything.
	Retention time.Duration
	// Replicas of the object store's stream. Zero: 1. Use the event
	// stream's replica count in a cluster.
	Replicas int
	// Storage of the object store. Zero: file storage.
	Storage jetstream.StorageType
}

// Validate reports every problem with c in one error.
func (c *SnapshotConfig) Validate() error {
	var problems []string
	if c.Keep < 0 || c.Keep > SnapshotKeepMax {
		problems = append(problems, fmt.Sprintf("Keep %d is outside 0..%d", c.Keep, SnapshotKeepMax))
	}
	if c.Replicas < 0 || c.Replicas > 5 {
		problems = append(problems, fmt.Sprintf("Replicas %d is outside 0..5", c.Replicas))
	}
	if c.Retention < 0 {
		problems = append(problems, fmt.Sprintf("Retention %s is negative", c.Retention))
	}
	if strings.ContainsAny(c.Bucket, " .*>") {
		problems = append(problems, fmt.Sprintf("Bucket %q may hold only letters, digits, '-' and '_'", c.Bucket))
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: snapshots: %s", ErrConfig, strings.Join(problems, "; "))
	}
	return nil
}

func (c SnapshotConfig) withDefaults() SnapshotConfig {
	c.Bucket = cmp.Or(c.Bucket, DefaultSnapshotBucket)
	c.Every = cmp.Or(c.Every, DefaultSnapshotEvery)
	c.Interval = cmp.Or(c.Interval, DefaultSnapshotInterval)
	c.Keep = cmp.Or(c.Keep, DefaultSnapshotKeep)
	c.Replicas = cmp.Or(c.Replicas, 1)
	return c
}

// SnapshotInfo describes one stored snapshot.
type SnapshotInfo struct {
	// Name is the object's name in the store.
	Name string `json:"name"`
	// Kind is SnapshotPeriodic or SnapshotVerify.
	Kind string `json:"kind"`
	// Seq is the stream sequence the snapshot reflects.
	Seq uint64 `json:"seq"`
	// Time is the stream time of the record at Seq.
	Time time.Time `json:"time"`
	// Schema is the projection layout version of the file.
	Schema int `json:"schema"`
	// Rules is the RulesVersion the projection was folded under.
	Rules uint64 `json:"rules"`
	// Size is the file's size in bytes.
	Size uint64 `json:"size"`
	// Written is when a pending checkpoint was stored (zero otherwise):
	// one left pending twice SnapshotTimeout was abandoned.
	Written time.Time `json:"-"`
}

// Snapshots is the object store of projection snapshots.
type Snapshots struct {
	cfg   SnapshotConfig
	store jetstream.ObjectStore
}

// OpenSnapshots creates the snapshot object store, or updates it to cfg
// when it exists.
func OpenSnapshots(ctx context.Context, js jetstream.JetStream, cfg SnapshotConfig) (*Snapshots, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	store, err := js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{
		Bucket:      cfg.Bucket,
		Description: "snapshots of the quota projection, named by the stream sequence they reflect",
		// Snapshots are pruned by count after each write, never by age:
		// an idle ledger must keep its last snapshots.
		TTL:      0,
		MaxBytes: -1,
		Storage:  cfg.Storage,
		Replicas: cfg.Replicas,
		// bbolt files are mostly page padding and repeated JSON keys;
		// compression shrinks them several times over.
		Compression: true,
	})
	if err != nil {
		return nil, fmt.Errorf("open snapshot store %s: %w", cfg.Bucket, err)
	}
	return &Snapshots{cfg: cfg, store: store}, nil
}

// OpenSnapshotsExisting opens the snapshot store without creating or
// changing it, for readers such as replay. It returns ErrNoSnapshots when
// the store does not exist.
func OpenSnapshotsExisting(ctx context.Context, js jetstream.JetStream, bucket string) (*Snapshots, error) {
	cfg := SnapshotConfig{Bucket: bucket}.withDefaults()
	store, err := js.ObjectStore(ctx, cfg.Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, fmt.Errorf("%w: store %s does not exist", ErrNoSnapshots, cfg.Bucket)
	}
	if err != nil {
		return nil, fmt.Errorf("open snapshot store %s: %w", cfg.Bucket, err)
	}
	return &Snapshots{cfg: cfg, store: store}, nil
}

// Config returns the configuration, defaults applied.
func (s *Snapshots) Config() SnapshotConfig { return s.cfg }

// Write stores a snapshot of p's current state, of the given kind. A
// periodic one is a checkpoint: it is stored under a pending name, read
// back and compared with the state it was written from (validate), and
// only then named as a checkpoint; then the checkpoints no longer needed
// are deleted (Prune). One that does not read back as written is deleted
// and the older ones are kept. The newest view is written to a local file
// first, then uploaded.
func (s *Snapshots) Write(ctx context.Context, p *Projector, kind string) (SnapshotInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, SnapshotTimeout)
	defer cancel()
	view := p.View()
	var info SnapshotInfo
	info.Seq, info.Time = AppliedAt(view)
	info.Kind, info.Schema, info.Rules = kind, SchemaVersion, p.rules
	switch kind {
	case SnapshotPeriodic:
		info.Name = checkpointName(info.Seq)
		if old, err := s.store.GetInfo(ctx, info.Name); err == nil && !old.Deleted {
			// Another replica took this sequence's checkpoint already:
			// the same state, as the fold is deterministic.
			if got, ok := infoOf(old); ok {
				return got, nil
			}
		}
	case SnapshotVerify:
		info.Name = fmt.Sprintf("%s%020d-%d", verifyPrefix, info.Seq, time.Now().UnixNano())
	default:
		return SnapshotInfo{}, fmt.Errorf("write snapshot: unknown kind %q", kind)
	}
	dir := filepath.Dir(p.cfg.Path)
	tmp, err := os.CreateTemp(dir, ".snapshot-*.db")
	if err != nil {
		return SnapshotInfo{}, fmt.Errorf("write snapshot: %w", err)
	}
	defer os.Remove(tmp.Name())
	tmp.Close()
	// WriteFile puts a new file in the name's place: read that one.
	if err := WriteFile(tmp.Name(), view); err != nil {
		return SnapshotInfo{}, fmt.Errorf("copy projection for snapshot: %w", err)
	}
	if tmp, err = os.Open(tmp.Name()); err != nil {
		return SnapshotInfo{}, fmt.Errorf("write snapshot: %w", err)
	}
	defer tmp.Close()
	st, err := tmp.Stat()
	if err != nil {
		return SnapshotInfo{}, fmt.Errorf("write snapshot: %w", err)
	}
	info.Size = uint64(st.Size())
	if kind == SnapshotVerify {
		if _, err := s.store.Put(ctx, s.meta(info, info.Name), tmp); err != nil {
			return SnapshotInfo{}, fmt.Errorf("store snapshot %s: %w", info.Name, err)
		}
		return info, nil
	}
	if err := s.putCheckpoint(ctx, info, tmp, view, dir); err != nil {
		return SnapshotInfo{}, err
	}
	return info, s.Prune(ctx, firstSeqOf(ctx, p))
}

// checkpointName names the checkpoint at seq: zero-padded, so that names
// sort by sequence.
func checkpointName(seq uint64) string { return fmt.Sprintf("%s%020d", snapshotPrefix, seq) }

// meta is the object metadata of the snapshot info describes, stored
// under name.
func (s *Snapshots) meta(info SnapshotInfo, name string) jetstream.ObjectMeta {
	return jetstream.ObjectMeta{
		Name:        name,
		Description: fmt.Sprintf("quota projection at stream seq %d", info.Seq),
		Metadata: map[string]string{
			metaSeq:    strconv.FormatUint(info.Seq, 10),
			metaTime:   info.Time.Format(time.RFC3339Nano),
			metaSchema: strconv.Itoa(info.Schema),
			metaRules:  strconv.FormatUint(info.Rules, 10),
			metaKind:   info.Kind,
		},
		Opts: &jetstream.ObjectMetaOptions{ChunkSize: SnapshotChunkSize},
	}
}

// putCheckpoint stores the file f, written from view, as the checkpoint
// info names: under a pending name, then, once a copy read back from the
// store holds exactly view's state, under its own.
func (s *Snapshots) putCheckpoint(ctx context.Context, info SnapshotInfo, f *os.File, view *buckets.Set, dir string) error {
	pending := fmt.Sprintf("%s%020d-%d", pendingPrefix, info.Seq, time.Now().UnixNano())
	if _, err := s.store.Put(ctx, s.meta(info, pending), f); err != nil {
		return fmt.Errorf("store checkpoint %s: %w", pending, err)
	}
	if err := s.validate(ctx, pending, view, dir); err != nil {
		if derr := s.Delete(context.WithoutCancel(ctx), pending); derr != nil {
			err = errors.Join(err, derr)
		}
		return fmt.Errorf("%w: checkpoint at seq %d: %w; it is deleted, the older checkpoints are kept", ErrSnapshotUnusable, info.Seq, err)
	}
	err := s.store.UpdateMeta(ctx, pending, s.meta(info, info.Name))
	if errors.Is(err, jetstream.ErrObjectAlreadyExists) {
		// Another replica named the same sequence's checkpoint first.
		return s.Delete(ctx, pending)
	}
	if err != nil {
		return fmt.Errorf("name checkpoint %s: %w", info.Name, err)
	}
	return nil
}

// validate reads the stored snapshot called name back into a file in dir
// and checks that it holds exactly view's state, key for key. The file is
// compared where it lies, through bbolt's mapping, not loaded: a copy of
// a large projection in memory would double the server's heap while it
// is checked.
func (s *Snapshots) validate(ctx context.Context, name string, view *buckets.Set, dir string) error {
	f, err := os.CreateTemp(dir, ".snapshot-check-*.db")
	if err != nil {
		return fmt.Errorf("validate: %w", err)
	}
	path := f.Name()
	f.Close()
	defer os.Remove(path)
	if _, err := s.Download(ctx, name, path); err != nil {
		return fmt.Errorf("validate: %w", err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: openTimeout})
	if err != nil {
		return fmt.Errorf("validate: the copy read back: %w", err)
	}
	defer db.Close()
	if err := Check(db); err != nil {
		return fmt.Errorf("validate: the copy read back: %w", err)
	}
	return db.View(func(tx *bolt.Tx) error {
		var names []string
		tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
			names = append(names, string(name))
			return nil
		})
		return sameBuckets(view.Names(), names, func(name string) kvCursor {
			return setCursor(view, name)
		}, func(name string) kvCursor {
			if b := tx.Bucket([]byte(name)); b != nil {
				return b.Cursor()
			}
			return nil
		})
	})
}

// sameBuckets compares the buckets of two states, named by aNames and
// bNames and opened by a and b (nil: none), key for key: nil, or an
// error naming the first entry that differs.
func sameBuckets(aNames, bNames []string, a, b func(string) kvCursor) error {
	names := slices.Concat(aNames, bNames)
	slices.Sort(names)
	var err error
	for _, name := range slices.Compact(names) {
		diffKeys(a(name), b(name), func(key, _, _ []byte) bool {
			e := ReadEntry(name, key, nil)
			err = fmt.Errorf("bucket %s differs at %s (key %q)", name, e.Name, key)
			return false
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// firstSeqOf returns the first sequence p's stream holds, 1 when it is
// empty, unknown (the question failed) or there is no stream: nothing to
// keep a checkpoint for beyond the newest.
func firstSeqOf(ctx context.Context, p *Projector) uint64 {
	if p.stream == nil {
		return 1
	}
	st, err := p.stream.Status(ctx)
	if err != nil || st.FirstSeq == 0 {
		return 1
	}
	return st.FirstSeq
}

// List returns the periodic snapshots (the checkpoints), oldest first.
// Objects whose metadata does not read, and checkpoints still being
// validated, are left out: they are not usable as a starting point.
func (s *Snapshots) List(ctx context.Context) ([]SnapshotInfo, error) {
	list, _, err := s.list(ctx)
	return list, err
}

// list returns the checkpoints, oldest first, and the pending ones.
func (s *Snapshots) list(ctx context.Context) (checkpoints, pending []SnapshotInfo, err error) {
	objs, err := s.store.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("list snapshots: %w", err)
	}
	if len(objs) > SnapshotsListMax {
		objs = objs[len(objs)-SnapshotsListMax:]
	}
	for _, o := range objs {
		info, ok := infoOf(o)
		switch {
		case !ok || info.Kind != SnapshotPeriodic:
		case strings.HasPrefix(info.Name, snapshotPrefix):
			checkpoints = append(checkpoints, info)
		case strings.HasPrefix(info.Name, pendingPrefix):
			info.Written = o.ModTime
			pending = append(pending, info)
		}
	}
	slices.SortFunc(checkpoints, func(a, b SnapshotInfo) int { return cmp.Compare(a.Seq, b.Seq) })
	return checkpoints, pending, nil
}

func infoOf(o *jetstream.ObjectInfo) (SnapshotInfo, bool) {
	if o.Deleted {
		return SnapshotInfo{}, false
	}
	seq, err1 := strconv.ParseUint(o.Metadata[metaSeq], 10, 64)
	t, err2 := time.Parse(time.RFC3339Nano, o.Metadata[metaTime])
	schema, err3 := strconv.Atoi(o.Metadata[metaSchema])
	if err1 != nil || err2 != nil || err3 != nil {
		return SnapshotInfo{}, false
	}
	rules, _ := strconv.ParseUint(o.Metadata[metaRules], 10, 64)
	return SnapshotInfo{Name: o.Name, Kind: o.Metadata[metaKind], Seq: seq, Time: t, Schema: schema, Rules: rules, Size: o.Size}, true
}

// Usable reports whether this build can start a projection from the
// checkpoint: one of its schema, past the first event. One folded under
// other rules is recharged as it opens (Recharge).
func (i SnapshotInfo) Usable() bool {
	return i.Schema == SchemaVersion && i.Seq > 0
}

// Newest returns the newest periodic snapshot of this build's schema
// whose sequence is at most maxSeq and whose time is not after notAfter
// (zero: any time). ok is false when there is none.
func (s *Snapshots) Newest(ctx context.Context, maxSeq uint64, notAfter time.Time) (info SnapshotInfo, ok bool, err error) {
	list, err := s.List(ctx)
	if err == nil {
		info, ok = newestUsable(list, 0, maxSeq, notAfter)
	}
	return info, ok, err
}

// newestUsable returns the newest checkpoint of list (oldest first)
// usable by this build whose sequence is within first..last and whose
// event is not newer than notAfter (zero: any time).
func newestUsable(list []SnapshotInfo, first, last uint64, notAfter time.Time) (SnapshotInfo, bool) {
	for i := len(list) - 1; i >= 0; i-- {
		c := list[i]
		if c.Usable() && c.Seq >= first && c.Seq <= last && (notAfter.IsZero() || !c.Time.After(notAfter)) {
			return c, true
		}
	}
	return SnapshotInfo{}, false
}

// Download writes the snapshot called name to the file path (created or
// truncated) and returns its stored description. The object store checks
// the content's digest as it reads.
func (s *Snapshots) Download(ctx context.Context, name, path string) (SnapshotInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, SnapshotTimeout)
	defer cancel()
	obj, err := s.store.Get(ctx, name)
	// The object store's reads are served by any replica: on a cluster,
	// one may not hold yet a snapshot just written.
	for wait := time.Now().Add(snapshotVisibleTimeout); errors.Is(err, jetstream.ErrObjectNotFound) && time.Now().Before(wait); {
		time.Sleep(50 * time.Millisecond)
		obj, err = s.store.Get(ctx, name)
	}
	if err != nil {
		return SnapshotInfo{}, fmt.Errorf("get snapshot %s: %w", name, err)
	}
	defer obj.Close()
	oi, err := obj.Info()
	if err != nil {
		return SnapshotInfo{}, fmt.Errorf("get snapshot %s: %w", name, err)
	}
	info, ok := infoOf(oi)
	if !ok {
		return SnapshotInfo{}, fmt.Errorf("%w: snapshot %s has no readable metadata", ErrSnapshotUnusable, name)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err == nil {
		_, err = io.Copy(f, obj)
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		return SnapshotInfo{}, fmt.Errorf("download snapshot %s: %w", name, err)
	}
	return info, nil
}

// Delete removes the snapshot called name.
func (s *Snapshots) Delete(ctx context.Context, name string) error {
	if err := s.store.Delete(ctx, name); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
		return fmt.Errorf("delete snapshot %s: %w", name, err)
	}
	return nil
}

// Snapshotter writes a periodic snapshot of a projection every
// SnapshotConfig.Every applied events, or SnapshotConfig.Interval after
// the newest once anything was applied since.
type Snapshotter struct {
	p     *Projector
	store *Snapshots
	log   *slog.Logger
}

// NewSnapshotter returns a Snapshotter of p into store.
func NewSnapshotter(p *Projector, store *Snapshots, log *slog.Logger) *Snapshotter {
	return &Snapshotter{p: p, store: store, log: cmp.Or(log, slog.Default())}
}

// Run waits for the projection to advance and writes a snapshot each time
// it has applied Every events since the newest stored one, or Interval
// has passed with anything applied, until ctx ends. A failed snapshot is
// logged and tried again after the next Every events or Interval: the
// projection does not depend on it.
func (s *Snapshotter) Run(ctx context.Context) error {
	every := s.store.cfg.Every
	if every < 0 && s.store.cfg.Interval < 0 {
		return nil
	}
	var last uint64
	list, err := s.store.List(ctx)
	if err != nil {
		s.log.Warn("cannot list snapshots; counting from seq 0", "err", err)
	} else if len(list) > 0 {
		last = list[len(list)-1].Seq
	}
	for {
		next := uint64(math.MaxUint64) // by the interval alone
		if every >= 0 {
			next = last + uint64(every)
		}
		if err := s.wait(ctx, next); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
		if s.p.Applied() <= last {
			continue
		}
		start := time.Now()
		info, err := s.store.Write(ctx, s.p, SnapshotPeriodic)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			s.log.Warn("snapshot failed", "applied_seq", s.p.Applied(), "err", err)
			last = s.p.Applied()
			continue
		}
		s.log.Info("snapshot written", "name", info.Name, "seq", info.Seq, "bytes", info.Size, "took", time.Since(start).Round(time.Millisecond))
		last = info.Seq
	}
}

// wait returns once the projection has applied next, or Interval has
// passed (when set), or ctx has ended (nil then: a stop).
func (s *Snapshotter) wait(ctx context.Context, next uint64) error {
	waitCtx, cancel := ctx, context.CancelFunc(func() {})
	if interval := s.store.cfg.Interval; interval > 0 {
		waitCtx, cancel = context.WithTimeout(ctx, interval)
	}
	defer cancel()
	err := s.p.WaitApplied(waitCtx, next)
	if err == nil || ctx.Err() != nil || (errors.Is(err, ErrNotCaughtUp) && waitCtx.Err() != nil) {
		return nil
	}
	return err
}
