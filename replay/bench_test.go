package replay

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/projector"
)

// benchEvents is the stream length of the replay benchmarks:
// QUOTA_REPLAY_EVENTS, default one million.
func benchEvents(b *testing.B) int {
	if v := os.Getenv("QUOTA_REPLAY_EVENTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("QUOTA_REPLAY_EVENTS=%q: want a positive count", v)
		}
		return n
	}
	return 1_000_000
}

const (
	benchNamespaces    = 100
	benchPodsPerNS     = 2000
	benchAppendBatch   = 10_000
	benchSnapshotShare = 0.9 // the snapshot is taken at this share of the stream
)

// benchStream is the stream shared by the replay benchmarks, filled once.
var benchStream struct {
	once   sync.Once
	stream *ledger.Stream
	js     jetstream.JetStream
	events int
	err    error
}

// fillBenchStream appends n small pod upserts spread over namespaces that
// each have a compute quota: every event recharges a quota, as a busy
// cluster's pod churn does. One pod in ten is deleted again.
func fillBenchStream(b *testing.B) (*ledger.Stream, jetstream.JetStream, int) {
	benchStream.once.Do(func() {
		n := benchEvents(b)
		// Filling is not what is measured: the server flushes on an
		// interval instead of syncing every append.
		dir, err := os.MkdirTemp("", "quota-replay-bench-")
		if err != nil {
			benchStream.err = err
			return
		}
		srv, err := ledger.StartEmbedded(ledger.EmbeddedConfig{Port: ledger.RandomPort, StoreDir: dir, SyncInterval: time.Second})
		if err != nil {
			benchStream.err = err
			return
		}
		nc, err := nats.Connect(srv.ClientURL())
		if err != nil {
			benchStream.err = err
			return
		}
		js, err := jetstream.New(nc)
		if err != nil {
			benchStream.err = err
			return
		}
		stream, err := ledger.Open(context.Background(), js, ledger.Config{})
		if err != nil {
			benchStream.err = err
			return
		}
		start := time.Now()
		entries := make([]ledger.BatchEntry, 0, benchAppendBatch)
		flush := func() error {
			if len(entries) == 0 {
				return nil
			}
			_, err := stream.AppendBatch(context.Background(), entries)
			entries = entries[:0]
			return err
		}
		for i := 0; i < n; i++ {
			ns := fmt.Sprintf("ns-%03d", i%benchNamespaces)
			var ev ledger.Event
			switch {
			case i < benchNamespaces:
				ev = computeQuota(ns)
			case i%10 == 9:
				ev = ledger.Event{Version: ledger.EncodingVersion, Type: ledger.Delete, Resource: "pods", Namespace: ns,
					Name: fmt.Sprintf("pod-%d", (i/benchNamespaces-1)%benchPodsPerNS)}
			default:
				ev = upsertPod(ns, fmt.Sprintf("pod-%d", (i/benchNamespaces)%benchPodsPerNS), []string{"100m", "250m", "1", "1500m"}[i%4])
			}
			entries = append(entries, ledger.BatchEntry{Event: ev})
			if len(entries) == benchAppendBatch {
				if err := flush(); err != nil {
					benchStream.err = err
					return
				}
			}
		}
		if err := flush(); err != nil {
			benchStream.err = err
			return
		}
		fmt.Fprintf(os.Stderr, "replay benchmark: appended %d events in %s\n", n, time.Since(start).Round(time.Millisecond))
		benchStream.stream, benchStream.js, benchStream.events = stream, js, n
	})
	if benchStream.err != nil {
		b.Fatal(benchStream.err)
	}
	return benchStream.stream, benchStream.js, benchStream.events
}

// readRate reads the whole stream through a ledger Reader, decoding every
// record, and returns events per second: the ceiling a replay can reach.
func readRate(b *testing.B, stream *ledger.Stream, n int) float64 {
	ctx := context.Background()
	start := time.Now()
	r, err := stream.Reader(ctx, 1)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	got := 0
	for got < n {
		recs, err := r.Next(ctx, ledger.ReaderNextMax, DefaultReadWaitTimeout)
		if err != nil {
			b.Fatal(err)
		}
		if len(recs) == 0 {
			b.Fatalf("read stalled after %d records", got)
		}
		got += len(recs)
	}
	return float64(n) / time.Since(start).Seconds()
}

// peakRSS is the process's peak resident set (VmHWM) in MiB.
func peakRSS() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

// BenchmarkReplay measures, on one stream of QUOTA_REPLAY_EVENTS events
// (default 1M) in the same run: the raw ordered read rate through the
// ledger Reader, the replay rate from the first event, and the replay from
// a snapshot taken at 90% of the stream (download included), each with the
// ratio to the read rate; and the process's peak RSS.
func BenchmarkReplay(b *testing.B) {
	stream, js, n := fillBenchStream(b)
	ctx := context.Background()
	var read float64

	b.Run("read", func(b *testing.B) {
		for b.Loop() {
			read = readRate(b, stream, n)
		}
		b.ReportMetric(read, "events/s")
		b.ReportMetric(peakRSS(), "peak-MiB")
	})

	b.Run("replay", func(b *testing.B) {
		var rate float64
		for b.Loop() {
			res, err := Rebuild(ctx, stream, Options{})
			if err != nil {
				b.Fatal(err)
			}
			rate = float64(res.Applied) / res.Elapsed.Seconds()
			res.Close()
		}
		b.ReportMetric(rate, "events/s")
		b.ReportMetric(rate/read, "of-read")
		b.ReportMetric(peakRSS(), "peak-MiB")
	})

	b.Run("replay-from-snapshot", func(b *testing.B) {
		snaps, err := projector.OpenSnapshots(ctx, js, projector.SnapshotConfig{Bucket: "BENCH_SNAPSHOTS", Keep: 1})
		if err != nil {
			b.Fatal(err)
		}
		base, err := Rebuild(ctx, stream, Options{UntilSeq: uint64(float64(n) * benchSnapshotShare)})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := snaps.Write(ctx, base.Projector, projector.SnapshotPeriodic); err != nil {
			b.Fatal(err)
		}
		base.Close()
		var rate, total float64
		for b.Loop() {
			start := time.Now()
			res, err := Rebuild(ctx, stream, Options{Snapshots: snaps})
			if err != nil {
				b.Fatal(err)
			}
			if res.Snapshot == nil {
				b.Fatal("replay did not start from the snapshot")
			}
			rate = float64(res.Applied) / res.Elapsed.Seconds()
			// The effective rate counts the whole stream against the whole
			// time, download of the snapshot included.
			total = float64(res.Seq) / time.Since(start).Seconds()
			res.Close()
		}
		b.ReportMetric(rate, "events/s")
		b.ReportMetric(total, "effective-events/s")
		b.ReportMetric(total/read, "effective-of-read")
		b.ReportMetric(peakRSS(), "peak-MiB")
	})
}
