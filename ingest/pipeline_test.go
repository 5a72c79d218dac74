package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/quotaledger/quota/ingest"
)

// Records are prepared in parallel and appended one batch at a time while
// the next is prepared; the stream and the rejections must still follow
// the input order.
func TestStreamOrderIsInputOrderAcrossBatches(t *testing.T) {
	in, s := newIngester(t, ingest.Options{BatchSize: 3})
	var b strings.Builder
	var want, wantRejected []string
	for i := 1; i <= 60; i++ {
		switch {
		case i%7 == 0:
			b.WriteString(fmt.Sprintf(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"bad\u0001%d","namespace":"ns"}}`+"\n", i))
			wantRejected = append(wantRejected, fmt.Sprintf("order.jsonl:%d", i))
		case i%11 == 0 && (i-1)%7 != 0:
			// The same state as line i-1: skipped as unchanged.
			b.WriteString(fmt.Sprintf(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"cm-%d","namespace":"ns"}}`+"\n", i-1))
		default:
			b.WriteString(fmt.Sprintf(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"cm-%d","namespace":"ns"}}`+"\n", i))
			want = append(want, fmt.Sprintf("order.jsonl:%d upsert configmaps ns/cm-%d", i, i))
		}
	}
	rep := ingestString(t, in, "order.jsonl", b.String())
	if rep.Appended != len(want) || rep.Rejected != len(wantRejected) || rep.Unchanged != 60-len(want)-len(wantRejected) {
		t.Fatalf("got %+v, want %d appended, %d rejected", rep, len(want), len(wantRejected))
	}
	var gotRejected []string
	for _, r := range rep.Rejections {
		gotRejected = append(gotRejected, r.Source)
	}
	if strings.Join(gotRejected, " ") != strings.Join(wantRejected, " ") {
		t.Fatalf("rejections: got %v, want %v", gotRejected, wantRejected)
	}
	checkStream(t, s, want)
}

func TestCancelledIngestFailsAndAppendsNothing(t *testing.T) {
	in, s := newIngester(t, ingest.Options{BatchSize: 2})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var b strings.Builder
	for i := range 10 {
		b.WriteString(fmt.Sprintf(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"cm-%d","namespace":"ns"}}`+"\n", i))
	}
	rep, err := in.IngestFile(ctx, "cancelled.jsonl", strings.NewReader(b.String()))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if rep.Records() != 0 {
		t.Fatalf("got %+v, want nothing counted", rep)
	}
	if last, _ := s.LastSeq(context.Background()); last != 0 {
		t.Fatalf("last seq: got %d, want 0", last)
	}
}
