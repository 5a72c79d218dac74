package projector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/ledgertest"
	"github.com/quotaledger/quota/projector/buckets"
)

// TestRetainedKeepsWhatTheLogNeeds holds each rule of which checkpoints
// are kept: the newest Keep, the base the log starts after, and inside
// the log's window one every spacing.
func TestRetainedKeepsWhatTheLogNeeds(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// A checkpoint every 10 events, one an hour: seq 10 at 1h ... 100 at 10h.
	var list []SnapshotInfo
	for i := 1; i <= 10; i++ {
		list = append(list, SnapshotInfo{Name: fmt.Sprint(i * 10), Seq: uint64(i * 10), Time: at.Add(time.Duration(i) * time.Hour)})
	}
	for _, tc := range []struct {
		name     string
		keep     int
		firstSeq uint64
		spacing  time.Duration
		want     string
	}{
		{"no retention: the newest keep", 3, 1, 0, "80 90 100"},
		{"a trimmed log keeps its base", 2, 41, 0, "40 90 100"},
		{"a base before the log's start, its events lost", 1, 45, 0, "40 100"},
		{"spaced inside the window, from the start of a log never trimmed", 1, 1, 3 * time.Hour, "10 40 70 100"},
		{"spaced from the base", 2, 31, 4 * time.Hour, "30 70 90 100"},
		{"a log wholly trimmed", 1, 101, time.Hour, "100"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, c := range Retained(list, tc.keep, tc.firstSeq, tc.spacing) {
				got = append(got, c.Name)
			}
			if strings.Join(got, " ") != tc.want {
				t.Errorf("kept %v, want %s", got, tc.want)
			}
		})
	}
}

// retentionRig is a log that allows purging, a projection following it,
// its checkpoints and an archive.
type retentionRig struct {
	t       *testing.T
	js      jetstream.JetStream
	stream  *ledger.Stream
	p       *Projector
	snaps   *Snapshots
	archive *ledger.Archive
	n       int
}

func newRetentionRig(t *testing.T, keep int) *retentionRig {
	_, _, js := ledgertest.StartServer(t)
	r := &retentionRig{t: t, js: js, stream: ledgertest.OpenStreamConfig(t, js, ledger.Config{AllowPurge: true})}
	ctx := context.Background()
	var err error
	if r.snaps, err = OpenSnapshots(ctx, js, SnapshotConfig{Keep: keep, Retention: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if r.archive, err = ledger.OpenArchive(filepath.Join(t.TempDir(), "archive"), true); err != nil {
		t.Fatal(err)
	}
	if r.p, err = Open(Config{Path: filepath.Join(t.TempDir(), "projection.db"), NoSync: true, Logger: slog.New(slog.DiscardHandler)}, r.stream); err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.p.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("projector run: %v", err)
		}
		r.p.Close()
	})
	return r
}

// add appends n pod events and waits for the projection to apply them.
func (r *retentionRig) add(n int) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for range n {
		r.n++
		name := fmt.Sprintf("p%d", r.n%7)
		obj := fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q,"namespace":"team"},"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"%dm"}}}]}}`, name, r.n)
		if _, err := r.stream.Append(ctx, ledger.Event{Type: ledger.Upsert, Resource: "pods", Namespace: "team", Name: name, Object: []byte(obj)}, ledger.AppendOptions{}); err != nil {
			r.t.Fatal(err)
		}
	}
	if err := r.p.CatchUp(ctx); err != nil {
		r.t.Fatal(err)
	}
}

func (r *retentionRig) checkpoint() SnapshotInfo {
	info, err := r.snaps.Write(context.Background(), r.p, SnapshotPeriodic)
	if err != nil {
		r.t.Fatal(err)
	}
	return info
}

func (r *retentionRig) firstSeq() uint64 {
	st, err := r.stream.Status(context.Background())
	if err != nil {
		r.t.Fatal(err)
	}
	return st.FirstSeq
}

func (r *retentionRig) retainer(holder string) *Retainer {
	ret, err := NewRetainer(context.Background(), r.js, r.stream, r.snaps, RetentionConfig{
		Retention: time.Hour, Archive: r.archive, TempDir: r.t.TempDir(), Holder: holder, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		r.t.Fatal(err)
	}
	return ret
}

// TestTrimRemovesOnlyWhatACheckpointCovers trims a log as time passes (a
// later now): nothing while no checkpoint is older than the retention;
// then up to the newest one that is, archived first with the checkpoint
// each segment folds onto; never past a checkpoint; the same round again
// removes nothing more. The checkpoints the log no longer needs go.
func TestTrimRemovesOnlyWhatACheckpointCovers(t *testing.T) {
	r := newRetentionRig(t, 1)
	ret := r.retainer("a")
	ctx := context.Background()
	r.add(30)
	first := r.checkpoint()
	r.add(20)
	if got, err := ret.Trim(ctx, time.Now()); err != nil || got.Purged != 0 || got.Reason == "" || r.firstSeq() != 1 {
		t.Fatalf("trim with no checkpoint an hour old: %+v, %v; log from seq %d; want nothing removed, and why", got, err, r.firstSeq())
	}
	later := time.Now().Add(2 * time.Hour)
	got, err := ret.Trim(ctx, later)
	if err != nil || got.Purged != 30 || got.Checkpoint.Seq != first.Seq || r.firstSeq() != 31 {
		t.Fatalf("trim: %+v, %v; log from seq %d; want 30 removed, the log from seq 31", got, err, r.firstSeq())
	}
	if len(got.Archived) != 1 || got.Archived[0].FirstSeq != 1 || got.Archived[0].LastSeq != 30 {
		t.Fatalf("archived %+v, want seq 1 to 30", got.Archived)
	}
	second := r.checkpoint()
	r.add(10)
	if got, err = ret.Trim(ctx, later); err != nil || got.Purged != 20 || r.firstSeq() != second.Seq+1 {
		t.Fatalf("second trim: %+v, %v; log from seq %d; want 20 removed", got, err, r.firstSeq())
	}
	if got, err = ret.Trim(ctx, later); err != nil || got.Purged != 0 || r.firstSeq() != second.Seq+1 {
		t.Fatalf("the same trim again: %+v, %v; want nothing more removed", got, err)
	}
	cps, err := r.archive.Checkpoints()
	if err != nil || len(cps) != 1 || cps[0].Seq != first.Seq || cps[0].Tag != CheckpointTag(SchemaVersion, RulesVersion) {
		t.Errorf("archive checkpoints %+v, %v; want the one at seq %d that seq %d on folds onto", cps, err, first.Seq, first.Seq+1)
	}
	if lo, hi, err := r.archive.Covered(); lo != 1 || hi != second.Seq || err != nil {
		t.Errorf("archive covers %d to %d (%v), want 1 to %d", lo, hi, err, second.Seq)
	}
	list, err := r.snaps.List(ctx)
	if err != nil || len(list) != 1 || list[0].Seq != second.Seq {
		t.Errorf("checkpoints kept: %+v, %v; want only the base at seq %d", list, err, second.Seq)
	}
	if ret.Purged() != 50 {
		t.Errorf("Purged() = %d, want 50", ret.Purged())
	}
}

// TestOneTrimmerAtATime: of two servers, the first to ask holds the lease
// and renews it; the other does not trim until the holder gives it up.
func TestOneTrimmerAtATime(t *testing.T) {
	r := newRetentionRig(t, 3)
	a, b := r.retainer("a"), r.retainer("b")
	ctx := context.Background()
	for i, step := range []struct {
		ret  *Retainer
		want bool
	}{{a, true}, {b, false}, {a, true}, {b, false}} {
		if held, err := step.ret.holdLease(ctx); err != nil || held != step.want {
			t.Fatalf("step %d: held %v (%v), want %v", i, held, err, step.want)
		}
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(runCtx) }()
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if held, err := b.holdLease(ctx); err != nil || !held {
		t.Fatalf("after the holder stopped: held %v (%v), want the lease", held, err)
	}
}

// TestACheckpointIsReadBackBeforeItIsNamed writes a checkpoint: it is
// listed under its own name, with no pending copy left; read back, it
// equals the state it was written from and not a later one; and
// SameState names an entry that differs.
func TestACheckpointIsReadBackBeforeItIsNamed(t *testing.T) {
	r := newRetentionRig(t, 3)
	r.add(12)
	info := r.checkpoint()
	list, pending, err := r.snaps.list(context.Background())
	if err != nil || len(list) != 1 || list[0].Name != checkpointName(12) || len(pending) != 0 || info.Seq != 12 {
		t.Fatalf("after a write: checkpoints %+v, pending %+v, %v", list, pending, err)
	}
	if again := r.checkpoint(); again.Name != info.Name {
		t.Errorf("a second write at the same seq made %s", again.Name)
	}
	// The stored file, read back through bbolt, against the state it was
	// written from and against a later one.
	at12 := r.p.View()
	r.add(3)
	ctx := context.Background()
	if err := r.snaps.validate(ctx, info.Name, at12, t.TempDir()); err != nil {
		t.Errorf("the checkpoint against the state it was written from: %v", err)
	}
	if err := r.snaps.validate(ctx, info.Name, r.p.View(), t.TempDir()); err == nil || !strings.Contains(err.Error(), "differs") {
		t.Errorf("the checkpoint at seq 12 against the state at seq 15: %v, want a difference named", err)
	}
	live := r.p.View()
	changed := live.Clone()
	// One pod more: the first one's record under another name.
	b := changed.Bucket(bucketObjects)
	_, v := b.Cursor().First()
	if err := b.Put(objectKey("team", "pods", "extra"), v); err != nil {
		t.Fatal(err)
	}
	if err := SameState(live, live.Snapshot()); err != nil {
		t.Errorf("a state against its own copy: %v", err)
	}
	if err := SameState(live, changed); err == nil || !strings.Contains(err.Error(), "object pods/extra") {
		t.Errorf("a state against one with a pod more: %v, want it named", err)
	}
	if err := SameState(changed, buckets.New()); err == nil {
		t.Error("a state against an empty one: no difference")
	}
}

// TestSnapshotterWritesOnTheInterval: with a count it never reaches, the
// Snapshotter still writes a checkpoint once the interval has passed with
// events applied, and none while nothing new is applied.
func TestSnapshotterWritesOnTheInterval(t *testing.T) {
	r := newRetentionRig(t, 3)
	ctx, cancel := context.WithCancel(context.Background())
	snaps, err := OpenSnapshots(ctx, r.js, SnapshotConfig{Every: 1 << 40, Interval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- NewSnapshotter(r.p, snaps, slog.New(slog.DiscardHandler)).Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	r.add(5)
	deadline := time.Now().Add(20 * time.Second)
	for {
		list, err := snaps.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) > 0 && list[len(list)-1].Seq == 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint at seq 5 within 20s: %+v", list)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := ctx.Err(); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

// SameState reports whether a and b hold the same keys and values in
// every bucket: nil, or an error naming the first entry that differs.
func SameState(a, b *buckets.Set) error {
	return sameBuckets(a.Names(), b.Names(), func(name string) kvCursor {
		return setCursor(a, name)
	}, func(name string) kvCursor {
		return setCursor(b, name)
	})
}
