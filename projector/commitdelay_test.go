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
// small batches may wait a whole second for more events: a query waiting
// for an event (WaitApplied) gets it at once all the same, and with nobody
// waiting the event is still committed once the delay has passed.
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
	appendPod := func(name string) uint64 {
		t.Helper()
		obj := json.RawMessage(fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q,"namespace":"team"},"spec":{"containers":[{"name":"c"}]}}`, name))
		res, err := stream.Append(ctx, ledger.Event{Type: ledger.Upsert, Resource: "pods", Namespace: "team", Name: name, Object: obj}, ledger.AppendOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return res.Seq
	}

	seq := appendPod("a")
	wctx, wcancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer wcancel()
	start := time.Now()
	if err := p.WaitApplied(wctx, seq); err != nil {
		t.Fatalf("a waiting query was held back by the commit delay: %v", err)
	}
	if took := time.Since(start); took > 400*time.Millisecond {
		t.Errorf("WaitApplied took %s with a 1s commit delay, want it cut short", took)
	}

	seq = appendPod("b")
	deadline := time.Now().Add(5 * time.Second)
	for p.Applied() < seq {
		if time.Now().After(deadline) {
			t.Fatalf("with nobody waiting, seq %d was not committed within 5s (applied %d)", seq, p.Applied())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestCommitDelayIsBounded(t *testing.T) {
	_, err := projector.Open(projector.Config{Path: filepath.Join(t.TempDir(), "p.db"), CommitDelay: 2 * projector.CommitDelayLimit}, nil)
	if err == nil {
		t.Fatal("a commit delay over the limit was accepted")
	}
}
