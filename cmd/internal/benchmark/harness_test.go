package benchmark

import (
	"bytes"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/quotaledger/quota/ledger/ledgertest/workload"
)

// TestHarnessSmoke runs the whole harness on a small stream. It checks
// that every figure was produced and is positive, never how fast anything
// is: speeds are for `make bench`.
func TestHarnessSmoke(t *testing.T) {
	var log bytes.Buffer
	rep, err := Run(t.Context(), Config{
		Workload: workload.Config{Seed: 1, Namespaces: 10, Events: 3000, LiveObjectsMax: 300},
		Dir:      t.TempDir(),
		Requests: 200,
		Hooks:    pluggedHooks(),
		Log:      &log,
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, name := range []string{
		FigureRawPublish, FigureIngest, FigureRawRead, FigureProjection,
		FigureRawRequest1, FigureRawRequest1P50, FigureRawRequest1P99, FigureRawRequest16,
		FigureDescribe1, FigureDescribe1P99, FigureDescribe16,
		FigureAdmitDry1, FigureAdmitDry1P50, FigureAdmitDry1P99, FigureAdmitDry16,
		FigureRawAppend1, FigureRawAppend1P50, FigureRawAppend1P99,
		FigureAdmitReserve1, FigureAdmitReserve1P50, FigureAdmitReserve1P99, FigureAdmitReserve16,
		FigureReplay, FigurePeakRSSIngest, FigurePeakRSSProjection, FigurePeakRSSReserving, FigurePeakRSSReplay, FigureProjectionFile,
	} {
		f := rep.Figure(name)
		switch {
		case f == nil:
			t.Errorf("%s: missing from the report", name)
		case f.Status != Measured:
			t.Errorf("%s: got status %q (%s), want measured", name, f.Status, f.Note)
		case f.Value <= 0:
			t.Errorf("%s: got %v, want a positive value", name, f.Value)
		}
	}
	// The request-reply figures compared to the ceiling take it from runs
	// of their own: each of their runs follows a ceiling run.
	for _, name := range []string{FigureDescribe1, FigureDescribe16, FigureAdmitDry1, FigureAdmitDry16, FigureAdmitReserve1, FigureAdmitReserve16} {
		f := rep.Figure(name)
		if f == nil || f.Status != Measured {
			continue
		}
		if !f.Paired || f.CeilingValue <= 0 || f.Ratio <= 0 {
			t.Errorf("%s: paired %v, ceiling %v, ratio %v; want a paired ceiling and ratio", name, f.Paired, f.CeilingValue, f.Ratio)
		}
		if !strings.Contains(f.Note, "ceiling right before each") {
			t.Errorf("%s: note %q lists no ceiling runs", name, f.Note)
		}
	}
	for _, name := range []string{FigurePeakRSSIngest, FigurePeakRSSProjection, FigurePeakRSSReserving, FigurePeakRSSReplay} {
		if f := rep.Figure(name); f != nil && !strings.Contains(f.Note, "largest sample") {
			t.Errorf("%s: note %q has no breakdown of the peak", name, f.Note)
		}
	}
	// The replay's peak is its own process's, not the harness's.
	if f := rep.Figure(FigurePeakRSSReplay); f != nil && !strings.Contains(f.Note, "own process") {
		t.Errorf("%s: note %q does not say the replay ran in its own process", FigurePeakRSSReplay, f.Note)
	}
	// The reserving admissions' peak says how many reservations they left
	// open; the replay rebuilds the workload's events alone.
	if f := rep.Figure(FigurePeakRSSReserving); f != nil && !strings.Contains(f.Note, "reservations open at its end") {
		t.Errorf("%s: note %q does not count the reservations", FigurePeakRSSReserving, f.Note)
	}
	if f := rep.Figure(FigureReplay); f != nil && !strings.Contains(f.Note, "the workload's events") {
		t.Errorf("%s: note %q does not say what it rebuilt", FigureReplay, f.Note)
	}
	if got, want := rep.Stats.Events, 3000; got != want {
		t.Errorf("got %d events generated, want %d", got, want)
	}
	var table, js bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if t.Failed() {
		t.Logf("progress:\n%s\nreport:\n%s", log.String(), table.String())
	}
}

// BenchmarkHarness is `make bench`: one run of every figure on the stream
// the BENCH_* variables describe, printed as a table (and written as JSON
// to BENCH_JSON). It ignores b.N: run it with -benchtime 1x.
func BenchmarkHarness(b *testing.B) {
	cfg, err := ConfigFromEnv(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	cfg.Log = os.Stderr
	cfg.Hooks = pluggedHooks()
	cfg.Hooks.Admission = AdmissionResponder
	var rep *Report
	for b.Loop() {
		if rep != nil {
			continue
		}
		rep, err = Run(b.Context(), cfg)
		if err != nil {
			b.Fatal(err)
		}
	}
	if err := rep.WriteTable(os.Stdout); err != nil {
		b.Fatal(err)
	}
	for name, unit := range map[string]string{FigureIngest: "ingest-events/s", FigureProjection: "projection-events/s"} {
		if f := rep.Figure(name); f != nil && f.Status == Measured {
			b.ReportMetric(f.Value, unit)
		}
	}
	if path := os.Getenv(EnvJSON); path != "" {
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		if err := rep.WriteJSON(f); err != nil {
			b.Fatal(err)
		}
	}
}

// TestMemSamplerKeepsTheLargestSample: memory allocated and touched while
// a part runs shows in the sample the sampler keeps, labelled with that
// part, in the Go heap's objects and the anonymous resident set.
func TestMemSamplerKeepsTheLargestSample(t *testing.T) {
	m := startMemSampler("before", "")
	time.Sleep(2 * memSampleInterval)
	m.at("allocating")
	big := make([]byte, 64<<20)
	for i := range big {
		big[i] = byte(i)
	}
	time.Sleep(3 * memSampleInterval)
	peak := m.end()
	runtime.KeepAlive(big)
	if peak.Part != "allocating" {
		t.Errorf("peak sampled during %q, want allocating", peak.Part)
	}
	if peak.HeapObjects < 64<<20 || peak.Anon < 64<<20 || peak.RSS < peak.Anon {
		t.Errorf("peak %+v: want at least 64 MiB of heap objects and anonymous memory", peak)
	}
	if note := peak.note(); !strings.Contains(note, "during allocating") {
		t.Errorf("note %q", note)
	}
}
