package projector

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/quotaledger/quota/ledger/ledgertest/workload"
)

var updateRules = flag.Bool("update", false, "rewrite testdata/rules.golden with this build's RulesVersion and fold output")

// rulesGolden holds the RulesVersion and the fold's output it was written
// with.
const rulesGolden = "../testdata/rules.golden"

// TestRulesVersionCoversTheFold folds every recorded scenario and a
// generated workload, and compares what they come to (a line per quota:
// each resource's used and hard) with what testdata/rules.golden holds for
// this RulesVersion. A change to the charging rules changes the output,
// and must come with a new RulesVersion (so that `quota serve` rebuilds
// projections folded under the old rules): bump it, then run
//
//	go test ./projector -run TestRulesVersionCoversTheFold -update
//
// and review the diff. A change that keeps the output needs neither.
func TestRulesVersionCoversTheFold(t *testing.T) {
	var out strings.Builder
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
		fmt.Fprintf(&out, "== %s\n", filepath.Base(dir))
		foldQuotaLines(t, &out, lines)
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
	fmt.Fprintf(&out, "== workload\n")
	foldQuotaLines(t, &out, lines)
	got := fmt.Sprintf("rules %d\n%s", RulesVersion, out.String())

	const header = "# The fold's output on testdata/recorded and a generated workload under\n" +
		"# projector.RulesVersion (TestRulesVersionCoversTheFold): per quota, each\n" +
		"# resource's used/hard. Rewritten by\n" +
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
	if wantRules != RulesVersion {
		t.Fatalf("RulesVersion is %d, %s was written for %d: rewrite it with -update", RulesVersion, rulesGolden, wantRules)
	}
	gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
	i := 0
	for i < len(gl) && i < len(wl) && gl[i] == wl[i] {
		i++
	}
	at := func(l []string) string {
		if i < len(l) {
			return l[i]
		}
		return "(end)"
	}
	t.Fatalf("the fold's output changed under the same RulesVersion %d, first at line %d:\n got %s\nwant %s\n"+
		"a change to what objects are charged, or to how usage sums and prints, must bump projector.RulesVersion, so that "+
		"projections folded under the old rules are rebuilt; then rewrite the golden with -update and review its diff.",
		RulesVersion, i+1, at(gl), at(wl))
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// foldQuotaLines folds watch events into a fresh projection, one second
// of stream time apart, and writes a line per quota to w: its namespace
// and name, then each resource's used/hard in name order.
func foldQuotaLines(t *testing.T, w io.Writer, lines [][]byte) {
	t.Helper()
	records := watchLineRecords(t, time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC), 0, lines)
	p, err := Open(Config{Path: filepath.Join(t.TempDir(), "p.db"), NoSync: true, Logger: slog.New(slog.DiscardHandler)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		checkConsistent(t, p)
		p.Close()
	}()
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
	for _, q := range list.Items {
		names := make([]string, 0, len(q.Status.Hard))
		for name := range q.Status.Hard {
			names = append(names, string(name))
		}
		sort.Strings(names)
		fmt.Fprintf(w, "%s/%s:", q.Namespace, q.Name)
		for _, name := range names {
			used, hard := q.Status.Used[corev1.ResourceName(name)], q.Status.Hard[corev1.ResourceName(name)]
			fmt.Fprintf(w, " %s=%s/%s", name, used.String(), hard.String())
		}
		fmt.Fprintln(w)
	}
}
