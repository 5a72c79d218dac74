package ingest_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quotaledger/quota/ingest"
	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/ledgertest"
	"github.com/quotaledger/quota/projector"
)

const samplesDir = "../testdata/samples"

// newIngester returns an Ingester on a new stream, judging plain objects
// against a projection of it unless opts says otherwise.
func newIngester(t *testing.T, opts ingest.Options) (*ingest.Ingester, *ledger.Stream) {
	t.Helper()
	_, _, js := ledgertest.StartServer(t)
	s := ledgertest.OpenStream(t, js)
	if opts.States == nil {
		opts.States = projectionStates(t, s)
	}
	in, err := ingest.New(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	return in, s
}

// projectionStates runs a projector of s, in a file of its own, until the
// test ends, and returns its answers to lookups of current states.
func projectionStates(t *testing.T, s *ledger.Stream) ingest.States {
	t.Helper()
	proj, err := projector.Open(projector.Config{Path: filepath.Join(t.TempDir(), "projection.db")}, s)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- proj.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("projector: %v", err)
		}
		proj.Close()
	})
	return ingest.ProjectionStates(proj)
}

func ingestPath(t *testing.T, in *ingest.Ingester, path string) ingest.Report {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep, err := in.IngestFile(context.Background(), filepath.Base(path), f)
	if err != nil {
		t.Fatalf("ingest %s: %v", path, err)
	}
	return rep
}

func lines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

// TestSamplesIngestEveryLine ingests the recordings of a real API server:
// every line is accounted for, nothing is rejected, and the stream holds one
// event per appended line, in order, on its namespace's subject, each
// pointing back at its line.
func TestSamplesIngestEveryLine(t *testing.T) {
	cases := []struct {
		dir, file     string
		namespace     string
		wantAppended  int
		wantUnchanged int
	}{
		// The skipped lines are status updates of the ResourceQuota: the
		// trimmed form leaves a quota's status out, since usage is computed
		// from the objects.
		{"sample-team-a", "events.jsonl", "sample-team-a", 11, 9},
		{"sample-storage", "cluster.jsonl", "", 1, 0},
		{"sample-storage", "events.jsonl", "sample-storage", 8, 6},
		{"sample-services-counts", "events.jsonl", "sample-services-counts", 9, 8},
	}
	for _, c := range cases {
		t.Run(c.dir+"/"+c.file, func(t *testing.T) {
			in, s := newIngester(t, ingest.Options{})
			path := filepath.Join(samplesDir, c.dir, c.file)
			src := lines(t, path)
			rep := ingestPath(t, in, path)
			t.Logf("%s: %+v", path, rep)
			if rep.Rejected != 0 || rep.Duplicates != 0 || rep.Bookmarks != 0 {
				t.Fatalf("got %+v, want no rejections, duplicates or bookmarks", rep)
			}
			if rep.Records() != len(src) {
				t.Fatalf("records: got %d, want %d lines", rep.Records(), len(src))
			}
			recs := ledgertest.ReadAll(t, s, 1)
			if len(recs) != rep.Appended {
				t.Fatalf("stream: got %d events, want %d appended", len(recs), rep.Appended)
			}
			prevLine := 0
			appendedLines := map[int]bool{}
			for _, r := range recs {
				if r.Err != nil {
					t.Fatalf("seq %d: %v", r.Seq, r.Err)
				}
				if r.Namespace != c.namespace {
					t.Errorf("seq %d: namespace %q, want %q", r.Seq, r.Namespace, c.namespace)
				}
				var line int
				if _, err := fmt.Sscanf(strings.TrimPrefix(r.Event.Source, c.file+":"), "%d", &line); err != nil || line <= prevLine || line > len(src) {
					t.Fatalf("seq %d: source %q after line %d", r.Seq, r.Event.Source, prevLine)
				}
				prevLine = line
				appendedLines[line] = true
				var watch struct {
					Type   string `json:"type"`
					Object struct {
						Metadata struct {
							Name, Namespace, UID, ResourceVersion string
						} `json:"metadata"`
					} `json:"object"`
				}
				if err := json.Unmarshal([]byte(src[line-1]), &watch); err != nil {
					t.Fatal(err)
				}
				wantType := ledger.Upsert
				if watch.Type == "DELETED" {
					wantType = ledger.Delete
				}
				m := watch.Object.Metadata
				if r.Event.Type != wantType || r.Event.Name != m.Name || r.Event.UID != m.UID || r.Event.ResourceVersion != m.ResourceVersion {
					t.Errorf("seq %d from line %d: got %s %s uid %s rv %s, want %s %s uid %s rv %s",
						r.Seq, line, r.Event.Type, r.Event.Name, r.Event.UID, r.Event.ResourceVersion, wantType, m.Name, m.UID, m.ResourceVersion)
				}
			}
			for i, l := range src {
				if appendedLines[i+1] {
					continue
				}
				if !strings.HasPrefix(l, `{"type":"MODIFIED","object":{"kind":"ResourceQuota"`) {
					t.Errorf("line %d skipped, but it is not a quota status update: %.80s", i+1, l)
				}
			}
			if rep.Appended != c.wantAppended {
				t.Errorf("appended: got %d, want %d", rep.Appended, c.wantAppended)
			}
			if rep.Unchanged != c.wantUnchanged {
				t.Errorf("unchanged: got %d, want %d", rep.Unchanged, c.wantUnchanged)
			}
		})
	}
}
