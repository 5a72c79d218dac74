package benchmark

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/ledgertest/workload"
	"github.com/quotaledger/quota/projector"
)

// BenchmarkFold measures the fold alone (Projector.Apply of decoded records
// in batches of projector.DefaultBatchSizeMax), without JetStream, to
// separate the projection's own cost from reading the stream. Profile it
// with -cpuprofile. BENCH_FOLD_EVENTS sets the event count (default 20000,
// a tenth of them live at most).
func BenchmarkFold(b *testing.B) {
	for _, noSync := range []bool{false, true} {
		name := "sync"
		if noSync {
			name = "nosync"
		}
		b.Run(name, func(b *testing.B) {
			events := 20_000
			if s := os.Getenv("BENCH_FOLD_EVENTS"); s != "" {
				n, err := strconv.Atoi(s)
				if err != nil {
					b.Fatalf("BENCH_FOLD_EVENTS=%q: %v", s, err)
				}
				events = n
			}
			cfg := workload.Config{Seed: 1, Namespaces: 100, Events: events, LiveObjectsMax: events / 10}
			var records []ledger.Record
			r := &run{cfg: Config{Workload: cfg}, rep: &Report{}}
			base := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
			err := r.chunks(func(lines [][]byte) error {
				for _, l := range lines {
					e, err := convert(l)
					if err != nil {
						return err
					}
					seq := uint64(len(records) + 1)
					records = append(records, ledger.Record{Seq: seq, Subject: ledger.Subject(e.Event.Namespace),
						Namespace: e.Event.Namespace, Time: base.Add(time.Duration(seq) * time.Millisecond), Event: e.Event})
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			var applied int
			for b.Loop() {
				b.StopTimer()
				p, err := projector.Open(projector.Config{Path: filepath.Join(b.TempDir(), "p.db"), NoSync: noSync, Logger: discardLogger()}, nil)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				for rest := records; len(rest) > 0; {
					n := min(projector.DefaultBatchSizeMax, len(rest))
					if err := p.Apply(b.Context(), rest[:n]); err != nil {
						b.Fatal(err)
					}
					rest = rest[n:]
				}
				applied += len(records)
				b.StopTimer()
				p.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(applied)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
