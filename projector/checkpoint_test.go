package projector

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/quotaledger/quota/ledger/ledgertest/workload"
)

// TestCheckpointsWriteWhatChanged folds a generated workload (objects
// created, changed and deleted) in batches with a checkpoint after some
// of them, each after a batch refused and rolled back, and checks after
// each that the file equals the live state key for key, and that a
// checkpoint writes the keys changed since the one before, not the whole
// state, unless most keys changed (then a new file, in many transactions).
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
	// A rewrite of the whole state takes many transactions.
	defer func(n int) { rewriteTxBytes = n }(rewriteTxBytes)
	rewriteTxBytes = 2 << 10
	p := openTemp(t)
	inPlace, rewritten := 0, 0
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
		if p.unwritten.Len() < p.View().Len()/2 {
			inPlace++
		} else {
			rewritten++
		}
		p.unwrittenMu.Unlock()
		checkFileIsView(t, p)
	}
	checkFileIsView(t, p)
	if inPlace < 10 || rewritten < 1 {
		t.Errorf("%d checkpoints in place and %d in a new file, want at least 10 and 1", inPlace, rewritten)
	}
	t.Logf("%d records, %d keys in the state; %d checkpoints in place, %d in a new file", len(recs), p.View().Len(), inPlace, rewritten)
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

// TestOpenRemovesAnUnfinishedRewrite: a rewrite a crash cut short leaves
// its file beside the projection's, which keeps its last checkpoint; the
// next Open removes it and reads the checkpoint.
func TestOpenRemovesAnUnfinishedRewrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "projection.db")
	p, err := Open(Config{Path: path, NoSync: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	records := benchRecords(t, 2, 30)
	applyAll(t, p, records, len(records))
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+rewriteSuffix, []byte("half a file"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err = Open(Config{Path: path, NoSync: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := os.Stat(path + rewriteSuffix); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the unfinished rewrite after Open: %v, want it gone", err)
	}
	if got, want := p.Applied(), records[len(records)-1].Seq; got != want {
		t.Fatalf("applied seq %d after reopening, want %d", got, want)
	}
}
