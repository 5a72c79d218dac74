package projector

import (
	"testing"
	"time"

	"github.com/quotaledger/quota/ledger/ledgertest/workload"
)

// TestCheckpointsWriteWhatChanged folds a generated workload (objects
// created, changed and deleted) in batches with a checkpoint after some
// of them, each after a batch refused and rolled back, and checks after
// each that the file equals the live state key for key, and that a
// checkpoint writes the keys changed since the one before, not the whole
// state.
func TestCheckpointsWriteWhatChanged(t *testing.T) {
	gen, err := workload.New(workload.Config{Seed: 3, Namespaces: 5, Events: 3000, LiveObjectsMax: 150})
	if err != nil {
		t.Fatal(err)
	}
	var lines [][]byte
	for line, ok := gen.Next(nil); ok; line, ok = gen.Next(nil) {
		lines = append(lines, line)
	}
	recs := watchLineRecords(t, time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), 0, lines)
	p := openTemp(t)
	smaller := 0
	for i := 0; i < len(recs); i += 40 {
		batch := recs[i:min(i+40, len(recs))]
		if err := p.Apply(t.Context(), batch); err != nil {
			t.Fatal(err)
		}
		if i%120 != 0 {
			continue
		}
		if err := p.Apply(t.Context(), batch); err == nil {
			t.Fatal("a batch applied twice was taken")
		}
		p.unwrittenMu.Lock()
		if p.unwritten.Len() < p.View().Len() {
			smaller++
		}
		p.unwrittenMu.Unlock()
		checkFileIsView(t, p)
	}
	checkFileIsView(t, p)
	if smaller < 10 {
		t.Errorf("only %d checkpoints had fewer keys to write than the state holds", smaller)
	}
	t.Logf("%d records, %d keys in the state", len(recs), p.View().Len())
}

// checkFileIsView checkpoints p and compares its file with its view.
func checkFileIsView(t *testing.T, p *Projector) {
	t.Helper()
	file, err := loadSet(p.DB())
	if err != nil {
		t.Fatal(err)
	}
	if err := SameState(file, p.View()); err != nil {
		t.Fatalf("at seq %d the file is not the live state: %v", p.Applied(), err)
	}
}
