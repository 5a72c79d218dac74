package projector_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/ledgertest"
	"github.com/quotaledger/quota/projector"
)

// TestCommitDelayHoldsSmallBatchesButNotQueries runs a projector whose
// small batches of reservations may wait a whole second for more: a query
// waiting for one (WaitApplied) gets it at once all the same, with nobody
// waiting it is still committed once the delay has passed, and an event
// of another kind (a fact from the cluster) is not held at all.
func TestCommitDelayHoldsSmallBatchesButNotQueries(t *testing.T) {
	_, _, js := ledgertest.StartServer(t)
	stream := ledgertest.OpenStream(t, js)
	p, err := projector.Open(projector.Config{Path: filepath.Join(t.TempDir(), "p.db"), NoSync: true, CommitDelay: time.Second}, stream)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	pod := func(name string) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q,"namespace":"team"},"spec":{"containers":[{"name":"c"}]}}`, name))
	}
	appendEvent := func(ev ledger.Event) uint64 {
		t.Helper()
		res, err := stream.Append(ctx, ev, ledger.AppendOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return res.Seq
	}
	reserve := func(name string) uint64 {
		return appendEvent(ledger.Event{Type: ledger.Reserve, Namespace: "team", ReservationTTL: time.Minute,
			Reservations: []ledger.Reservation{{ID: "r-" + name, Resource: "pods", Name: name, Object: pod(name)}}})
	}
	appliedWithin := func(seq uint64, d time.Duration) bool {
		deadline := time.Now().Add(d)
		for p.Applied() < seq {
			if time.Now().After(deadline) {
				return false
			}
			time.Sleep(5 * time.Millisecond)
		}
		return true
	}

	seq := reserve("a")
	wctx, wcancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer wcancel()
	start := time.Now()
	if err := p.WaitApplied(wctx, seq); err != nil {
		t.Fatalf("a waiting query was held back by the commit delay: %v", err)
	}
	if took := time.Since(start); took > 400*time.Millisecond {
		t.Errorf("WaitApplied took %s with a 1s commit delay, want it cut short", took)
	}

	seq = reserve("b")
	if appliedWithin(seq, 300*time.Millisecond) {
		t.Errorf("a lone reservation was committed within 300ms; the 1s commit delay should hold it")
	}
	if !appliedWithin(seq, 5*time.Second) {
		t.Fatalf("with nobody waiting, seq %d was not committed within 5s (applied %d)", seq, p.Applied())
	}

	// A fact from the cluster is applied without waiting for the delay,
	// and so is the reservation batched before it.
	reserve("c")
	seq = appendEvent(ledger.Event{Type: ledger.Upsert, Resource: "pods", Namespace: "team", Name: "d", Object: pod("d")})
	if !appliedWithin(seq, 800*time.Millisecond) {
		t.Errorf("an upsert was held back by the 1s commit delay (applied %d, want %d)", p.Applied(), seq)
	}
}

func TestCommitDelayIsBounded(t *testing.T) {
	_, err := projector.Open(projector.Config{Path: filepath.Join(t.TempDir(), "p.db"), CommitDelay: 2 * projector.CommitDelayMax}, nil)
	if err == nil {
		t.Fatal("a commit delay over the limit was accepted")
	}
}

// TestPendingIsTheBacklogBehindTheLastApplied applies the first records of
// a stream by hand and then follows it: Pending is what the stream held
// behind the last record applied, and nothing once caught up.
func TestPendingIsTheBacklogBehindTheLastApplied(t *testing.T) {
	_, _, js := ledgertest.StartServer(t)
	stream := ledgertest.OpenStream(t, js)
	ctx := t.Context()
	for i := range 50 {
		obj := json.RawMessage(fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c%d","namespace":"team"}}`, i))
		if _, err := stream.Append(ctx, ledger.Event{Type: ledger.Upsert, Resource: "configmaps", Namespace: "team", Name: fmt.Sprintf("c%d", i), Object: obj}, ledger.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	p, err := projector.Open(projector.Config{Path: filepath.Join(t.TempDir(), "p.db"), NoSync: true}, stream)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	records := ledgertest.ReadAll(t, stream, 1)
	if err := p.Apply(ctx, records[:10]); err != nil {
		t.Fatal(err)
	}
	if got := p.Pending(); got != 40 {
		t.Errorf("after 10 of 50 records: Pending() = %d, want 40", got)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Run(runCtx) }()
	if err := p.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if got := p.Pending(); got != 0 {
		t.Errorf("caught up: Pending() = %d, want 0", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Error(err)
	}
}
