package projector

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/quotaledger/quota/ledger"
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
	inPlaceN, rewrittenN := 0, 0
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
		if !p.unwrittenAll && inPlace(p.unwritten.Len(), p.View().Len(), p.pageSize) {
			inPlaceN++
		} else {
			rewrittenN++
		}
		p.unwrittenMu.Unlock()
		checkFileIsView(t, p)
	}
	checkFileIsView(t, p)
	if inPlaceN < 10 || rewrittenN < 1 {
		t.Errorf("%d checkpoints in place and %d in a new file, want at least 10 and 1", inPlaceN, rewrittenN)
	}
	t.Logf("%d records, %d keys in the state; %d checkpoints in place, %d in a new file", len(recs), p.View().Len(), inPlaceN, rewrittenN)
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

// TestCheckpointsPastTheInPlaceBoundWriteANewFile: a checkpoint of few
// keys is written in place, in the same file; one whose pages would pass
// inPlaceBytesMax goes to a new file, which replaces the old, and the
// keys changed past that bound are not kept until it.
func TestCheckpointsPastTheInPlaceBoundWriteANewFile(t *testing.T) {
	p := openTemp(t)
	records := benchRecords(t, 2, 300)
	applyAll(t, p, records, len(records))
	checkFileIsView(t, p)
	same := func() bool {
		t.Helper()
		before, err := os.Stat(p.cfg.Path)
		if err != nil {
			t.Fatal(err)
		}
		last := records[len(records)-1]
		last.Seq = p.Applied() + 1
		if err := p.Apply(t.Context(), []ledger.Record{last}); err != nil {
			t.Fatal(err)
		}
		checkFileIsView(t, p)
		after, err := os.Stat(p.cfg.Path)
		if err != nil {
			t.Fatal(err)
		}
		return os.SameFile(before, after)
	}
	if !same() {
		t.Fatal("a checkpoint of one object's keys replaced the file")
	}
	defer func(n int) { inPlaceBytesMax = n }(inPlaceBytesMax)
	inPlaceBytesMax = p.pageSize
	last := records[len(records)-1]
	last.Seq = p.Applied() + 1
	if err := p.Apply(t.Context(), []ledger.Record{last}); err != nil {
		t.Fatal(err)
	}
	p.unwrittenMu.Lock()
	if !p.unwrittenAll || p.unwritten.Len() != 0 {
		t.Errorf("past the bound: rewrite %v, %d keys kept; want a rewrite and none", p.unwrittenAll, p.unwritten.Len())
	}
	p.unwrittenMu.Unlock()
	if same() {
		t.Fatalf("a checkpoint past inPlaceBytesMax (%d bytes) was written in place", inPlaceBytesMax)
	}
	// The new file grows by what it holds, not by bbolt's default step.
	st, err := os.Stat(p.cfg.Path)
	if err != nil {
		t.Fatal(err)
	}
	if used, most := fileSize(p.db), rewriteAllocBytes+p.pageSize; st.Size() > int64(used+most) {
		t.Errorf("the new file takes %d bytes for %d used, want at most %d more", st.Size(), used, most)
	}
}

// fileSize returns the bytes db's pages take.
func fileSize(db *bolt.DB) int {
	var n int64
	_ = db.View(func(tx *bolt.Tx) error {
		n = tx.Size()
		return nil
	})
	return int(n)
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
