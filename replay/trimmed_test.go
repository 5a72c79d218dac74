package replay

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/ledgertest"
	"github.com/quotaledger/quota/projector"
)

// trimmedLog is a log of 80 generated events trimmed after seq 40, whose
// checkpoint at seq 40 it starts after, with the events before it in an
// archive; refs are rebuilds of the log at seq 20 and 60 made before
// the trim.
type trimmedLog struct {
	nc      *nats.Conn
	stream  *ledger.Stream
	snaps   *projector.Snapshots
	archive *ledger.Archive
	live    *liveProjector
	base    projector.SnapshotInfo
	records []ledger.Record
	refs    map[uint64]*Result
}

func newTrimmedLog(t *testing.T) *trimmedLog {
	_, nc, js := ledgertest.StartServer(t)
	l := &trimmedLog{nc: nc, stream: ledgertest.OpenStreamConfig(t, js, ledger.Config{AllowPurge: true}), refs: map[uint64]*Result{}}
	ctx := context.Background()
	l.snaps = openSnapshots(t, js)
	var err error
	if l.archive, err = ledger.OpenArchive(filepath.Join(t.TempDir(), "archive"), true); err != nil {
		t.Fatal(err)
	}
	l.live = startLive(t, filepath.Join(t.TempDir(), "live.db"), l.stream)
	appendGenerated(t, l.stream, 21, 40)
	l.live.waitCaughtUp()
	if l.base, err = l.snaps.Write(ctx, l.live.p, projector.SnapshotPeriodic); err != nil {
		t.Fatal(err)
	}
	appendGenerated(t, l.stream, 22, 40)
	l.live.waitCaughtUp()
	l.records = ledgertest.ReadAll(t, l.stream, 1)
	for _, seq := range []uint64{20, 60} {
		ref, err := Rebuild(ctx, l.stream, Options{UntilSeq: seq})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ref.Close() })
		l.refs[seq] = ref
	}
	ret, err := projector.NewRetainer(ctx, js, l.stream, l.snaps, projector.RetentionConfig{
		Retention: time.Hour, Archive: l.archive, TempDir: t.TempDir(), Holder: "test", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	trimmed, err := ret.Trim(ctx, time.Now().Add(2*time.Hour))
	if err != nil || trimmed.Purged != 40 {
		t.Fatalf("trim: %+v, %v; want 40 events removed", trimmed, err)
	}
	serveAudit(t, nc, l.live, l.snaps)
	return l
}

// TestATrimmedLogAnswersFromItsCheckpointOrTheArchive rebuilds a log
// trimmed after its checkpoint at seq 40: a sequence or moment before the
// checkpoint is refused (ErrNotCovered) naming the oldest one the log
// answers and --archive; with the archive it is answered, equal to the
// rebuild made before the trim; one after it starts from the checkpoint.
// Verify folds from that checkpoint and finds no drift.
func TestATrimmedLogAnswersFromItsCheckpointOrTheArchive(t *testing.T) {
	l := newTrimmedLog(t)
	ctx := context.Background()
	at20 := l.records[19].Time
	for _, opts := range []Options{{UntilSeq: 20}, {At: at20}} {
		opts.Snapshots = l.snaps
		_, err := Rebuild(ctx, l.stream, opts)
		if !errors.Is(err, ErrNotCovered) {
			t.Fatalf("rebuild %+v of the trimmed log: %v, want ErrNotCovered", opts, err)
		}
		for _, want := range []string{"before the oldest moment the log answers", l.base.Time.UTC().Format(time.RFC3339Nano), "seq 40", "--archive"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("refusal %q lacks %q", err, want)
			}
		}
		opts.Archive = l.archive
		res, err := Rebuild(ctx, l.stream, opts)
		if err != nil {
			t.Fatalf("rebuild %+v with the archive: %v", opts, err)
		}
		requireSame(t, "seq 20 from the archive", l.refs[20].Projector.View(), res.Projector.View())
		if res.Seq != 20 || res.From != "the first event" {
			t.Errorf("rebuilt to seq %d from %s, want seq 20 from the first event", res.Seq, res.From)
		}
		res.Close()
	}
	res, err := Rebuild(ctx, l.stream, Options{UntilSeq: 60, Snapshots: l.snaps})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	requireSame(t, "seq 60 from the checkpoint", l.refs[60].Projector.View(), res.Projector.View())
	if res.Snapshot == nil || res.Snapshot.Seq != 40 || res.Applied != 20 {
		t.Errorf("rebuild to seq 60 started from %+v, applied %d; want the checkpoint at seq 40 and 20 events", res.Snapshot, res.Applied)
	}
	for _, tc := range []struct {
		opts Options
		from string
	}{{Options{}, "checkpoint " + l.base.Name}, {Options{Archive: l.archive}, "the first event"}} {
		v, err := Verify(ctx, l.nc, l.stream, l.snaps, tc.opts)
		if err != nil {
			t.Fatalf("verify the trimmed log: %v", err)
		}
		if len(v.Differences) != 0 || v.Live.Seq != 80 || !strings.HasPrefix(v.Rebuilt.From, tc.from) {
			t.Errorf("verify: %d differences at seq %d from %s; want none at seq 80 from %s", len(v.Differences), v.Live.Seq, v.Rebuilt.From, tc.from)
		}
		v.Close()
	}
}
