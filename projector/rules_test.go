package projector

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/quotaledger/quota/ledger/ledgertest/workload"
)

var updateRules = flag.Bool("update", false, "rewrite testdata/rules.golden with this build's RulesVersion and fold output")

// rulesGolden holds the RulesVersion and the digest of the fold's output
// it was written with.
const rulesGolden = "../testdata/rules.golden"

// TestRulesVersionCoversTheFold folds every recorded scenario and a
// generated workload, and compares a digest of what they come to (every
// quota's describe, and explain: each object's charge under it) with the
// one testdata/rules.golden holds for this RulesVersion. A change to the
// charging rules changes the digest, and must come with a new
// RulesVersion (so that `quota serve` rebuilds projections folded under
// the old rules): bump it, then run
//
//	go test ./projector -run TestRulesVersionCoversTheFold -update
//
// and review the diff. A change that keeps the digest needs neither.
func TestRulesVersionCoversTheFold(t *testing.T) {
	digest := sha256.New()
	scenarios, _ := filepath.Glob("../testdata/recorded/rec-*")
	if len(scenarios) == 0 {
		t.Fatal("no recorded scenarios in testdata/recorded")
	}
	for _, dir := range scenarios {
		var lines [][]byte
		for _, name := range []string{"cluster.jsonl", "events.jsonl"} {
			if path := filepath.Join(dir, name); fileExists(path) {
				lines = append(lines, readLines(t, path)...)
			}
		}
		fmt.Fprintf(digest, "== %s\n", filepath.Base(dir))
		foldDigest(t, digest, lines)
	}
	gen, err := workload.New(workload.Config{Seed: 1, Namespaces: 20, Events: 4000, LiveObjectsMax: 400})
	if err != nil {
		t.Fatal(err)
	}
	var lines [][]byte
	for {
		line, ok := gen.Next(nil)
		if !ok {
			break
		}
		lines = append(lines, line)
	}
	fmt.Fprintf(digest, "== workload\n")
	foldDigest(t, digest, lines)
	got := fmt.Sprintf("rules %d\nsha256 %s\n", RulesVersion, hex.EncodeToString(digest.Sum(nil)))

	const header = "# The fold's output on testdata/recorded and a generated workload under\n" +
		"# projector.RulesVersion (TestRulesVersionCoversTheFold). Rewritten by\n" +
		"# go test ./projector -run TestRulesVersionCoversTheFold -update\n"
	if *updateRules {
		if err := os.WriteFile(rulesGolden, []byte(header+got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(rulesGolden)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.TrimPrefix(string(b), header)
	if got == want {
		return
	}
	var wantRules int
	fmt.Sscanf(want, "rules %d", &wantRules)
	if wantRules == RulesVersion {
		t.Fatalf("the fold's output changed under the same RulesVersion %d:\n got %s\nwant %s"+
			"a change to what objects are charged, or to how usage sums and prints, must bump projector.RulesVersion, so that "+
			"projections folded under the old rules are rebuilt; then rewrite the golden with -update. "+
			"(A change to the describe or explain text alone needs only the rewrite.)", RulesVersion, got, want)
	}
	t.Fatalf("RulesVersion is %d, %s was written for %d: rewrite it with -update", RulesVersion, rulesGolden, wantRules)
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// foldDigest folds watch events into a fresh projection, one second of
// stream time apart, and writes every quota's describe and explain to w.
func foldDigest(t *testing.T, w interface{ Write([]byte) (int, error) }, lines [][]byte) {
	t.Helper()
	records := watchLineRecords(t, time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC), 0, lines)
	p, err := Open(Config{Path: filepath.Join(t.TempDir(), "p.db"), NoSync: true, Logger: slog.New(slog.DiscardHandler)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for rest := records; len(rest) > 0; {
		n := min(DefaultBatchSizeMax, len(rest))
		if err := p.Apply(context.Background(), rest[:n]); err != nil {
			t.Fatal(err)
		}
		rest = rest[n:]
	}
	list, err := p.Quotas("", "", true)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteDescribe(w, list); err != nil {
		t.Fatal(err)
	}
	for _, q := range list.Items {
		e, err := p.Explain(q.Namespace, q.Name)
		if err != nil {
			t.Fatal(err)
		}
		if err := WriteExplain(w, e); err != nil {
			t.Fatal(err)
		}
	}
}
