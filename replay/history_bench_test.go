package replay

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quotaledger/quota/ingest"
	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/ledgertest/workload"
	"github.com/quotaledger/quota/projector"
)

// The history benchmark's workload: the benchmark harness's generator
// with its live set bounded, so that a longer history ends in a live state
// of the same size. BENCH_HISTORY_EVENTS sets the events of one "day"
// (1x), BENCH_HISTORY_LIVE the live objects.
const (
	historyNamespaces   = 100
	historyDefaultDay   = 50_000
	historyDefaultLive  = 5_000
	historyRetention    = 24 * time.Hour
	historyCheckpointMB = 1 << 20
)

func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a positive count", name, v)
	}
	return n
}

// historyRig is one ledger: an embedded server, its log (which allows
// purging), a projection following it and its checkpoints.
type historyRig struct {
	b      *testing.B
	dir    string
	js     jetstream.JetStream
	stream *ledger.Stream
	snaps  *projector.Snapshots
	live   *projector.Projector
	stop   func()
}

func newHistoryRig(b *testing.B) *historyRig {
	dir := b.TempDir()
	// Filling is not what is measured: the server flushes on an interval.
	srv, err := ledger.StartEmbedded(ledger.EmbeddedConfig{Port: ledger.RandomPort, StoreDir: filepath.Join(dir, "jetstream"), SyncInterval: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		b.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	r := &historyRig{b: b, dir: dir, js: js}
	if r.stream, err = ledger.Open(ctx, js, ledger.Config{AllowPurge: true}); err != nil {
		b.Fatal(err)
	}
	if r.snaps, err = projector.OpenSnapshots(ctx, js, projector.SnapshotConfig{Retention: historyRetention}); err != nil {
		b.Fatal(err)
	}
	if r.live, err = projector.Open(projector.Config{Path: filepath.Join(dir, "live.db"), NoSync: true, Logger: slog.New(slog.DiscardHandler)}, r.stream); err != nil {
		b.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.live.Run(runCtx) }()
	r.stop = func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
		r.live.Close()
		nc.Close()
		srv.Shutdown()
	}
	return r
}

// day ingests the generator's next n events and waits for the projection.
func (r *historyRig) day(gen *workload.Generator, n int) {
	var buf bytes.Buffer
	var line []byte
	for range n {
		var ok bool
		if line, ok = gen.Next(line[:0]); !ok {
			break
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	in, err := ingest.New(r.stream, ingest.Options{})
	if err != nil {
		r.b.Fatal(err)
	}
	ctx := context.Background()
	rep, err := in.IngestFile(ctx, "workload.jsonl", &buf)
	if err != nil || rep.Rejected > 0 {
		r.b.Fatalf("ingest: %v, %d rejected", err, rep.Rejected)
	}
	waitCtx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	if err := r.live.CatchUp(waitCtx); err != nil {
		r.b.Fatal(err)
	}
}

// storeBytes is the size of the files of the JetStream store: the log,
// the checkpoints, the dead letters and the lease.
func (r *historyRig) storeBytes() float64 {
	var n int64
	filepath.WalkDir(filepath.Join(r.dir, "jetstream"), func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return float64(n)
}

// BenchmarkHistory measures, at 1x, 5x and 10x the history (days of the
// benchmark workload, BENCH_HISTORY_EVENTS each) ending in a live state of
// the same size (BENCH_HISTORY_LIVE objects), what a log trimmed to its
// last day costs: the store's bytes on disk, the log's, and a rebuild from
// the newest checkpoint (what a restart without its file, a new replica
// or a replay does); beside them, what the whole history cost untrimmed.
// A checkpoint is written after every day but the last; the trim takes
// the log to the one before the last day, as a retention of a day would.
func BenchmarkHistory(b *testing.B) {
	day := envInt(b, "BENCH_HISTORY_EVENTS", historyDefaultDay)
	live := envInt(b, "BENCH_HISTORY_LIVE", historyDefaultLive)
	for _, days := range []int{1, 5, 10} {
		b.Run(fmt.Sprintf("history=%dx", days), func(b *testing.B) {
			for b.Loop() {
				benchHistory(b, day, live, days)
			}
		})
	}
}

func benchHistory(b *testing.B, day, live, days int) {
	r := newHistoryRig(b)
	defer r.stop()
	ctx := context.Background()
	gen, err := workload.New(workload.Config{Seed: 1, Namespaces: historyNamespaces, Events: day * (days + 1), LiveObjectsMax: live})
	if err != nil {
		b.Fatal(err)
	}
	var base projector.SnapshotInfo
	for d := 0; d <= days; d++ {
		r.day(gen, day)
		if d < days {
			if base, err = r.snaps.Write(ctx, r.live, projector.SnapshotPeriodic); err != nil {
				b.Fatal(err)
			}
		}
	}
	untrimmed, err := r.stream.Status(ctx)
	if err != nil {
		b.Fatal(err)
	}
	diskUntrimmed := r.storeBytes()
	full, err := Rebuild(ctx, r.stream, Options{})
	if err != nil {
		b.Fatal(err)
	}
	fullFold := full.Elapsed
	full.Close()

	archive, err := ledger.OpenArchive(filepath.Join(r.dir, "archive"), true)
	if err != nil {
		b.Fatal(err)
	}
	ret, err := projector.NewRetainer(ctx, r.js, r.stream, r.snaps, projector.RetentionConfig{Retention: historyRetention, Archive: archive, TempDir: r.dir, Holder: "bench", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	trim, err := ret.Trim(ctx, base.Time.Add(historyRetention))
	if err != nil {
		b.Fatal(err)
	}
	trimmed, err := r.stream.Status(ctx)
	if err != nil {
		b.Fatal(err)
	}
	res, rebuild, quickest, folds := medianRebuild(b, r.stream, r.snaps)
	checkpoints, _ := r.snaps.List(ctx)
	var archived int64
	for _, seg := range trim.Archived {
		archived += seg.Bytes
	}
	objects, err := r.js.Stream(ctx, "OBJ_"+projector.DefaultSnapshotBucket)
	if err != nil {
		b.Fatal(err)
	}
	stored := objects.CachedInfo().State.Bytes
	fmt.Fprintf(os.Stderr, "history %2dx: %7d events, %d live objects; untrimmed: log %.1f MiB (%.0f bytes/event), store %.1f MiB, fold of all %s; "+
		"trimmed to seq %d: log %d events %.1f MiB, store %.1f MiB, %d checkpoints of %.1f MiB (%.1f MiB stored); archived %d events in %.1f MiB (%.0f bytes/event); rebuild from %s: %d events in %s (quickest %s; folds %v)\n",
		days, untrimmed.LastSeq, len(liveObjects(res)), float64(untrimmed.Bytes)/(1<<20), float64(untrimmed.Bytes)/float64(untrimmed.Messages),
		diskUntrimmed/(1<<20), fullFold.Round(time.Millisecond), trimmed.FirstSeq, trimmed.Messages, float64(trimmed.Bytes)/(1<<20),
		r.storeBytes()/(1<<20), len(checkpoints), float64(base.Size)/historyCheckpointMB, float64(stored)/(1<<20),
		trim.Purged, float64(archived)/(1<<20), float64(archived)/float64(max(trim.Purged, 1)), res.From, res.Applied, rebuild.Round(time.Millisecond), quickest.Round(time.Millisecond), folds)
	b.ReportMetric(rebuild.Seconds(), "rebuild-s")
	b.ReportMetric(quickest.Seconds(), "quickest-rebuild-s")
	b.ReportMetric(r.storeBytes()/(1<<20), "store-MiB")
	b.ReportMetric(float64(trimmed.Bytes)/(1<<20), "log-MiB")
	b.ReportMetric(fullFold.Seconds(), "untrimmed-fold-s")
	b.ReportMetric(diskUntrimmed/(1<<20), "untrimmed-store-MiB")
	b.ReportMetric(float64(untrimmed.Bytes)/float64(untrimmed.Messages), "log-bytes/event")
	res.Close()
}

// historyRebuilds is how many times the trimmed log is rebuilt; the
// median is reported.
const historyRebuilds = 3

// medianRebuild rebuilds the log from the newest checkpoint
// historyRebuilds times and returns the last result, the median time and
// the quickest (the least disturbed by other work on the machine), and
// the times of each rebuild's fold alone, the rest being the checkpoint's
// download and check.
func medianRebuild(b *testing.B, stream *ledger.Stream, snaps *projector.Snapshots) (res *Result, median, quickest time.Duration, folds []time.Duration) {
	var times []time.Duration
	for i := range historyRebuilds {
		start := time.Now()
		got, err := Rebuild(context.Background(), stream, Options{Snapshots: snaps})
		if err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(start))
		folds = append(folds, got.Elapsed.Round(time.Millisecond))
		if i < historyRebuilds-1 {
			got.Close()
		} else {
			res = got
		}
	}
	slices.Sort(times)
	return res, times[len(times)/2], times[0], folds
}

// liveObjects lists the objects a rebuilt projection holds.
func liveObjects(res *Result) []string {
	var out []string
	if b := res.Projector.View().Bucket([]byte("objects")); b != nil {
		b.ForEach(func(k, _ []byte) error {
			out = append(out, string(k))
			return nil
		})
	}
	return out
}
