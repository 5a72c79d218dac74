package projector

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Defaults and limits of SnapshotConfig.
const (
	// DefaultSnapshotBucket is the JetStream object store that holds
	// snapshots of the projection.
	DefaultSnapshotBucket = "QUOTA_SNAPSHOTS"
	// DefaultSnapshotEvery is the number of applied events between two
	// periodic snapshots.
	DefaultSnapshotEvery = 100_000
	// DefaultSnapshotKeep is the number of periodic snapshots kept.
	DefaultSnapshotKeep = 3
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
	// Zero: DefaultSnapshotEvery. Negative: no periodic snapshots (the
	// store still serves verify snapshots).
	Every int64
	// Keep is how many periodic snapshots are kept; older ones are
	// deleted after each new one. Zero: DefaultSnapshotKeep.
	Keep int
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
	if strings.ContainsAny(c.Bucket, " .*>") {
		problems = append(problems, fmt.Sprintf("Bucket %q may hold only letters, digits, '-' and '_'", c.Bucket))
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: snapshots: %s", ErrConfig, strings.Join(problems, "; "))
	}
	return nil
}

func (c SnapshotConfig) withDefaults() SnapshotConfig {
	if c.Bucket == "" {
		c.Bucket = DefaultSnapshotBucket
	}
	if c.Every == 0 {
		c.Every = DefaultSnapshotEvery
	}
	if c.Keep == 0 {
		c.Keep = DefaultSnapshotKeep
	}
	if c.Replicas == 0 {
		c.Replicas = 1
	}
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

// Write stores a snapshot of p's current state, of the given kind, and for
// a periodic one deletes all but the newest Keep periodic snapshots. The
// newest view is written to a local file first, then uploaded.
func (s *Snapshots) Write(ctx context.Context, p *Projector, kind string) (SnapshotInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, SnapshotTimeout)
	defer cancel()
	view := p.View()
	var info SnapshotInfo
	info.Seq, info.Time = AppliedAt(view)
	tmp, err := os.CreateTemp(filepath.Dir(p.cfg.Path), ".snapshot-*.db")
	if err != nil {
		return SnapshotInfo{}, fmt.Errorf("write snapshot: %w", err)
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	if err := WriteFile(tmp.Name(), view); err != nil {
		return SnapshotInfo{}, fmt.Errorf("copy projection for snapshot: %w", err)
	}
	st, err := tmp.Stat()
	if err != nil {
		return SnapshotInfo{}, fmt.Errorf("write snapshot: %w", err)
	}
	info.Size = uint64(st.Size())
	info.Kind, info.Schema, info.Rules = kind, SchemaVersion, p.rules
	switch kind {
	case SnapshotPeriodic:
		info.Name = fmt.Sprintf("%s%020d", snapshotPrefix, info.Seq)
	case SnapshotVerify:
		info.Name = fmt.Sprintf("%s%020d-%d", verifyPrefix, info.Seq, time.Now().UnixNano())
	default:
		return SnapshotInfo{}, fmt.Errorf("write snapshot: unknown kind %q", kind)
	}
	meta := jetstream.ObjectMeta{
		Name:        info.Name,
		Description: fmt.Sprintf("quota projection at stream seq %d", info.Seq),
		Metadata: map[string]string{
			metaSeq:    strconv.FormatUint(info.Seq, 10),
			metaTime:   info.Time.Format(time.RFC3339Nano),
			metaSchema: strconv.Itoa(SchemaVersion),
			metaRules:  strconv.FormatUint(p.rules, 10),
			metaKind:   kind,
		},
		Opts: &jetstream.ObjectMetaOptions{ChunkSize: SnapshotChunkSize},
	}
	if _, err := s.store.Put(ctx, meta, tmp); err != nil {
		return SnapshotInfo{}, fmt.Errorf("store snapshot %s: %w", info.Name, err)
	}
	if kind == SnapshotPeriodic {
		if err := s.prune(ctx); err != nil {
			return info, err
		}
	}
	return info, nil
}

// prune deletes periodic snapshots beyond the newest Keep.
func (s *Snapshots) prune(ctx context.Context) error {
	list, err := s.List(ctx)
	if err != nil {
		return err
	}
	for len(list) > s.cfg.Keep {
		if err := s.store.Delete(ctx, list[0].Name); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
			return fmt.Errorf("prune snapshot %s: %w", list[0].Name, err)
		}
		list = list[1:]
	}
	return nil
}

// List returns the periodic snapshots, oldest first. Objects whose metadata
// does not read are left out: they are not usable as a starting point.
func (s *Snapshots) List(ctx context.Context) ([]SnapshotInfo, error) {
	objs, err := s.store.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list snapshots: %w", err)
	}
	if len(objs) > SnapshotsListMax {
		objs = objs[len(objs)-SnapshotsListMax:]
	}
	var out []SnapshotInfo
	for _, o := range objs {
		info, ok := infoOf(o)
		if ok && info.Kind == SnapshotPeriodic {
			out = append(out, info)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out, nil
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

// Newest returns the newest periodic snapshot of this build's schema and
// rules whose sequence is at most maxSeq and whose time is not after
// notAfter (zero: any time). ok is false when there is none. A snapshot
// folded under other rules is no starting point: it holds charges this
// build would not make.
func (s *Snapshots) Newest(ctx context.Context, maxSeq uint64, notAfter time.Time) (info SnapshotInfo, ok bool, err error) {
	list, err := s.List(ctx)
	if err != nil {
		return SnapshotInfo{}, false, err
	}
	for i := len(list) - 1; i >= 0; i-- {
		c := list[i]
		if c.Schema != SchemaVersion || c.Rules != RulesVersion || c.Seq > maxSeq || c.Seq == 0 {
			continue
		}
		if !notAfter.IsZero() && c.Time.After(notAfter) {
			continue
		}
		return c, true, nil
	}
	return SnapshotInfo{}, false, nil
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
	if err != nil {
		return SnapshotInfo{}, fmt.Errorf("download snapshot %s: %w", name, err)
	}
	if _, err := io.Copy(f, obj); err != nil {
		f.Close()
		return SnapshotInfo{}, fmt.Errorf("download snapshot %s: %w", name, err)
	}
	if err := f.Close(); err != nil {
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
// SnapshotConfig.Every applied events.
type Snapshotter struct {
	p     *Projector
	store *Snapshots
	log   *slog.Logger
}

// NewSnapshotter returns a Snapshotter of p into store.
func NewSnapshotter(p *Projector, store *Snapshots, log *slog.Logger) *Snapshotter {
	if log == nil {
		log = slog.Default()
	}
	return &Snapshotter{p: p, store: store, log: log}
}

// Run waits for the projection to advance and writes a snapshot each time
// it has applied Every events since the newest stored one, until ctx ends.
// A failed snapshot is logged and tried again after the next Every events:
// the projection does not depend on it.
func (s *Snapshotter) Run(ctx context.Context) error {
	every := s.store.cfg.Every
	if every < 0 {
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
		next := last + uint64(every)
		if err := s.p.WaitApplied(ctx, next); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
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
