package admission

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/quotaledger/quota/ledger/ledgertest"
	"github.com/quotaledger/quota/projector"
)

// TestDecisionsLookUpTheLogWhenTheViewLacksQuotas holds the projection
// behind a quota that is in the log: a dry-run create in the namespace
// waits for the projection to apply it and is denied, as Kubernetes'
// live look-up of quotas denies it, where reading the projection as it
// was would allow it.
func TestDecisionsLookUpTheLogWhenTheViewLacksQuotas(t *testing.T) {
	srv, _, js := ledgertest.StartServer(t)
	stream := ledgertest.OpenStream(t, js)
	const ns = "fresh"
	upsert(t, stream, quotaManifest("other", "q", map[string]string{"pods": "10"}))
	proj, err := projector.Open(projector.Config{Path: filepath.Join(t.TempDir(), "projection.db"), NoSync: true, Logger: discardLogger()}, stream)
	if err != nil {
		t.Fatal(err)
	}
	defer proj.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := proj.Apply(ctx, ledgertest.ReadAll(t, stream, 1)); err != nil {
		t.Fatal(err)
	}
	// In the log, not in the projection.
	upsert(t, stream, quotaManifest(ns, "q", map[string]string{"pods": "0"}))
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	resp, err := NewResponder(nc, stream, proj, Config{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	create := review("u1", admissionv1.Create, ns, podManifest(ns, "web", "100m"), "", true)
	answered := make(chan *admissionv1.AdmissionReview, 1)
	go func() {
		out, err := resp.Review(ctx, ns, create)
		if err != nil {
			t.Errorf("review: %v", err)
		}
		answered <- out
	}()
	select {
	case out := <-answered:
		t.Fatalf("answered %+v before the projection held the namespace's quota", out.Response)
	case <-time.After(200 * time.Millisecond):
	}
	running := make(chan error, 1)
	go func() { running <- proj.Run(ctx) }()
	out := <-answered
	want := `pods "web" is forbidden: exceeded quota: q, requested: pods=1, used: pods=0, limited: pods=0`
	if out == nil || out.Response.Allowed || out.Response.Result == nil || out.Response.Result.Message != want {
		t.Fatalf("create in a namespace whose quota the projection had not applied: %+v, want denied with %q", out, want)
	}
	cancel()
	if err := <-running; err != nil {
		t.Error(err)
	}
}

// TestLiveLookUpsStandForTheirTTL checks when the state cache asks the
// log: for a namespace whose view lacks quotas or LimitRanges, once per
// LiveLookupTTL; for one with both, never.
func TestLiveLookUpsStandForTheirTTL(t *testing.T) {
	r, stream := startWithQuota(t, "bare", map[string]string{"pods": "4"})
	upsert(t, stream, quotaManifest("full", "q", map[string]string{"pods": "4"}))
	upsert(t, stream, `{"apiVersion":"v1","kind":"LimitRange","metadata":{"name":"defaults","namespace":"full","uid":"lr"},"spec":{"limits":[{"type":"Container","defaultRequest":{"cpu":"100m"}}]}}`)
	r.catchUp(t)
	looked := map[string]int{}
	c := newStateCache(r.proj, func(ctx context.Context, namespace string) (uint64, error) {
		looked[namespace]++
		return stream.LastSubjectSeq(ctx, namespace)
	})
	get := func(ns string) {
		t.Helper()
		if _, _, err := c.get(context.Background(), ns); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		get("bare") // a quota, no LimitRange
		get("full")
		get("empty") // nothing at all
	}
	if looked["bare"] != 1 || looked["full"] != 0 || looked["empty"] != 1 {
		t.Errorf("look-ups %v, want bare and empty once, full never", looked)
	}
	if c.mayWait("bare") {
		t.Error("mayWait(bare) true within its look-up's TTL")
	}
	c.mu.Lock()
	c.looked["bare"] = time.Now().Add(-LiveLookupTTL)
	c.mu.Unlock()
	if !c.mayWait("bare") {
		t.Error("mayWait(bare) false with a look-up due")
	}
	get("bare")
	get("bare")
	if looked["bare"] != 2 {
		t.Errorf("bare looked up %d times after its look-up expired, want 2", looked["bare"])
	}
}
