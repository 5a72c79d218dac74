package ingest_test

import (
	"context"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/quotaledger/quota/ingest"
	"github.com/quotaledger/quota/ledger/ledgertest"
)

// TestALiveFeedIsAppendedAsItComes pipes watch events in a few at a time,
// as a watch piped into 'quota ingest -' sends them, keeping the input
// open: each group must reach the stream while the input is still open,
// not when a thousand events have come or the input ends.
func TestALiveFeedIsAppendedAsItComes(t *testing.T) {
	in, s := newIngester(t, ingest.Options{})
	src := lines(t, filepath.Join(samplesDir, "sample-team-a", "events.jsonl"))
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	var rep ingest.Report
	go func() {
		var err error
		rep, err = in.IngestFile(context.Background(), "watch", pr)
		done <- err
	}()
	ctx := context.Background()
	// The sample's first three events create the quota and two pods.
	for _, group := range [][]string{src[:1], src[1:3]} {
		for _, line := range group {
			if _, err := io.WriteString(pw, line+"\n"); err != nil {
				t.Fatal(err)
			}
		}
		before, _ := s.LastSeq(ctx)
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
	for _, line := range src[3:] {
		if _, err := io.WriteString(pw, line+"\n"); err != nil {
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
}
