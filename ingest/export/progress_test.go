package export

import (
	"context"
	"testing"
	"time"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/ledgertest"
)

// TestStreamRecordsProgress drives a resource's store as the Reflector
// would, on an embedded JetStream, and reads the Progress events the
// exporter appends: a list is a point at its version and the time it
// started; a version asked for becomes a point only once an event or a
// bookmark at or past it is in the log, dated when it was asked; and a
// resource whose versions do not compare records none.
func TestStreamRecordsProgress(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	x, s, ledgerStream, cp := configMapStream(t, ctx, Config{Identity: "export-0", ProgressInterval: 20 * time.Millisecond})
	go s.appendLoop(ctx)
	go x.appendProgress(ctx)

	listStarted := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	s.listing()
	s.listStarted = listStarted
	if err := s.Replace(nil, "5"); err != nil {
		t.Fatal(err)
	}
	waitProgress(t, ledgerStream, ledger.FeedPoint{Resource: "configmaps", ResourceVersion: "5", At: listStarted})

	// Asked for version 30: events before it, and a bookmark before it,
	// are no point yet.
	asked := listStarted.Add(time.Minute)
	s.mu.Lock()
	s.probe = &probe{rv: "30", at: asked, asked: time.Now()}
	s.mu.Unlock()
	it, err := trim([]byte(`{"metadata":{"name":"one","namespace":"a","uid":"u1","resourceVersion":"12"}}`), "v1", "ConfigMap")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Add(it); err != nil {
		t.Fatal(err)
	}
	s.UpdateResourceVersion("12")
	if err := s.Bookmark("29"); err != nil {
		t.Fatal(err)
	}
	waitCheckpoint(t, cp, "configmaps", "29")
	if d, late := s.behind(time.Now().Add(FeedBehind + time.Second)); !late || d < FeedBehind {
		t.Errorf("a probe waiting past FeedBehind: behind %s, %v; want late", d, late)
	}
	if got := lastProgress(t, ledgerStream); got.ResourceVersion != "5" {
		t.Fatalf("a point before the bookmark reached the version asked for: %+v", got)
	}
	if err := s.Bookmark("31"); err != nil {
		t.Fatal(err)
	}
	waitProgress(t, ledgerStream, ledger.FeedPoint{Resource: "configmaps", ResourceVersion: "30", At: asked})
	if _, late := s.behind(time.Now()); late {
		t.Error("no probe waits, yet the stream is behind")
	}

	// Versions that do not compare: no point, and no more probes.
	s.mu.Lock()
	s.probe = &probe{rv: "not-a-number", at: asked.Add(time.Minute), asked: time.Now()}
	s.reached()
	incomparable, pending := s.incomparable, s.probe != nil
	s.mu.Unlock()
	if !incomparable || pending {
		t.Errorf("incomparable versions: incomparable %v, probe pending %v; want true, false", incomparable, pending)
	}
}

// lastProgress returns the feed point of the last Progress event in the
// log (zero if there is none).
func lastProgress(t *testing.T, stream *ledger.Stream) ledger.FeedPoint {
	t.Helper()
	var last ledger.FeedPoint
	for _, r := range ledgertest.ReadAll(t, stream, 1) {
		if r.Event.Type == ledger.Progress {
			if len(r.Event.Progress) != 1 || r.Event.Source != "export export-0" {
				t.Fatalf("progress event %+v, want one point from export export-0", r.Event)
			}
			last = r.Event.Progress[0]
		}
	}
	return last
}

// waitProgress polls until the last Progress event in the log carries
// want.
func waitProgress(t *testing.T, stream *ledger.Stream, want ledger.FeedPoint) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := lastProgress(t, stream)
		if got.Resource == want.Resource && got.ResourceVersion == want.ResourceVersion && got.At.Equal(want.At) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("last progress %+v, want %+v", got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
