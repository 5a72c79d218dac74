package admission

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/ledgertest"
	"github.com/quotaledger/quota/ledger/object"
)

// TestNoDecisionBeforeTheProjectionCatchesUp starts a replica on a fresh
// projection of a log whose quota and LimitRange come first and whose last
// pod, the one
// that fills the quota, comes after thousands of other namespaces'
// events. A dry run sent while the projection is still folding those
// would be decided on the quota without the pod, and allowed. The
// responder takes no request until its projection holds what the log held
// when it started, as kube-apiserver serves no quota admission before its
// informers have synced: the first answer the client gets, retrying while
// there is no responder, is the denial.
func TestNoDecisionBeforeTheProjectionCatchesUp(t *testing.T) {
	srv, err := ledger.StartEmbedded(ledger.EmbeddedConfig{Port: ledger.RandomPort, StoreDir: t.TempDir(), SyncInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	stream := ledgertest.OpenStream(t, js)
	upsert(t, stream, quotaManifest("team-a", "compute", map[string]string{"pods": "1"}))
	// With a quota and a LimitRange in its projection, a namespace's
	// decisions do not look the log up first (see stateCache.get).
	lr := upsert(t, stream, `{"apiVersion":"v1","kind":"LimitRange","metadata":{"name":"defaults","namespace":"team-a","uid":"lr"},"spec":{"limits":[{"type":"Container","defaultRequest":{"cpu":"100m"}}]}}`)
	const others = 20000
	entries := make([]ledger.BatchEntry, others)
	for i := range entries {
		ns := fmt.Sprintf("other-%d", i%100)
		o, err := object.Decode([]byte(podManifest(ns, fmt.Sprintf("p-%d", i), "100m")))
		if err != nil {
			t.Fatal(err)
		}
		trimmed, err := o.Trimmed()
		if err != nil {
			t.Fatal(err)
		}
		entries[i] = ledger.BatchEntry{Event: ledger.Event{Version: ledger.EncodingVersion, Type: ledger.Upsert,
			Resource: "pods", Namespace: ns, Name: o.Name, Object: trimmed, Source: "test"}}
	}
	if _, err := stream.AppendBatch(context.Background(), entries); err != nil {
		t.Fatal(err)
	}
	upsert(t, stream, podManifest("team-a", "web-1", "100m"))

	r := startReplica(t, srv.ClientURL(), Config{})
	// Once the projection holds the quota and the LimitRange, and is
	// still folding the other namespaces' events.
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := r.proj.WaitApplied(ctx, lr); err != nil {
		t.Fatal(err)
	}
	body := review("uid-web-2", "CREATE", "team-a", podManifest("team-a", "web-2", "100m"), "", true)
	deadline := time.Now().Add(waitTimeout)
	for {
		resp, err := askErr(nc, "team-a", body)
		if errors.Is(err, nats.ErrNoResponders) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond) // poll interval, bounded by the deadline
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		want := `pods "web-2" is forbidden: exceeded quota: compute, requested: pods=1, used: pods=1, limited: pods=1`
		if resp.Allowed || resp.Result == nil || resp.Result.Message != want {
			t.Fatalf("first answer: allowed %v, %+v; want the denial %q", resp.Allowed, resp.Result, want)
		}
		return
	}
}
