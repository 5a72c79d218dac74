package ingest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/quotaledger/quota/ingest"
	"github.com/quotaledger/quota/ledger/ledgertest"
)

// TestALiveFeedIsAppendedAsItComes pipes watch events in a few at a time,
// keeping the input open, in each format a watch can be piped in: JSON
// lines ('kubectl get --raw .../pods?watch=true'), pretty-printed JSON
// ('kubectl get -w --output-watch-events -o json') and YAML documents.
// Each group must reach the stream while the input is still open, not when
// a thousand events have come or the input ends.
func TestALiveFeedIsAppendedAsItComes(t *testing.T) {
	src := lines(t, filepath.Join(samplesDir, "sample-team-a", "events.jsonl"))
	formats := []struct {
		name string
		// write gives one event as the format prints it: a whole event,
		// which a reader can tell is complete.
		write func(t *testing.T, event string) string
	}{
		{"json-lines", func(t *testing.T, event string) string { return event + "\n" }},
		{"pretty-json", func(t *testing.T, event string) string {
			var b bytes.Buffer
			if err := json.Indent(&b, []byte(event), "", "    "); err != nil {
				t.Fatal(err)
			}
			return b.String() + "\n"
		}},
		// A YAML document is whole at the separator that ends it.
		{"yaml", func(t *testing.T, event string) string {
			y, err := yaml.JSONToYAML([]byte(event))
			if err != nil {
				t.Fatal(err)
			}
			return string(y) + "---\n"
		}},
	}
	for _, f := range formats {
		t.Run(f.name, func(t *testing.T) {
			in, s := newIngester(t, ingest.Options{})
			pr, pw := io.Pipe()
			done := make(chan error, 1)
			var rep ingest.Report
			go func() {
				var err error
				rep, err = in.IngestFile(context.Background(), "watch", pr)
				done <- err
			}()
			ctx := context.Background()
			// The sample's first two events create the service account and
			// the quota (the third, a status write, is skipped as
			// unchanged).
			for _, group := range [][]string{src[:1], src[1:2]} {
				before, _ := s.LastSeq(ctx)
				for _, event := range group {
					if _, err := io.WriteString(pw, f.write(t, event)); err != nil {
						t.Fatal(err)
					}
				}
				deadline := time.Now().Add(10 * time.Second)
				for {
					last, err := s.LastSeq(ctx)
					if err != nil {
						t.Fatal(err)
					}
					if last == before+uint64(len(group)) {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("with the input open, the stream holds %d events 10 s after %d more were sent (it held %d)", last, len(group), before)
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
			for _, event := range src[2:] {
				if _, err := io.WriteString(pw, f.write(t, event)); err != nil {
					t.Fatal(err)
				}
			}
			pw.Close()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if rep.Records() != len(src) || rep.Rejected != 0 {
				t.Fatalf("report %+v, want %d records and no rejection", rep, len(src))
			}
			if got := ledgertest.ReadAll(t, s, 1); len(got) != rep.Appended {
				t.Fatalf("the stream holds %d events, the report says %d appended", len(got), rep.Appended)
			}
		})
	}
}
