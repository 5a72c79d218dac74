package admission

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/ledger/ledgertest"
	"github.com/quotaledger/quota/projector"
)

// behind is a responder whose projection has applied the log as it was
// when behind was made, and does not run until answer runs it: what the
// test appends after is in the log only.
type behind struct {
	stream  *ledger.Stream
	proj    *projector.Projector
	resp    *Responder
	running chan error
}

// holdBehind starts a server, appends the manifests, and returns a
// responder whose projection holds them and nothing after.
func holdBehind(t *testing.T, manifests ...string) *behind {
	t.Helper()
	srv, _, js := ledgertest.StartServer(t)
	stream := ledgertest.OpenStream(t, js)
	for _, m := range manifests {
		upsert(t, stream, m)
	}
	proj, err := projector.Open(projector.Config{Path: filepath.Join(t.TempDir(), "projection.db"), NoSync: true, Logger: discardLogger()}, stream)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proj.Close() })
	if err := proj.Apply(t.Context(), ledgertest.ReadAll(t, stream, 1)); err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	resp, err := NewResponder(nc, stream, proj, Config{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	return &behind{stream: stream, proj: proj, resp: resp, running: make(chan error, 1)}
}

// answer sends body, checks that it is not answered while the projection
// is behind, then runs the projection until ctx ends and returns the
// answer.
func (b *behind) answer(t *testing.T, ctx context.Context, namespace string, body []byte) *admissionv1.AdmissionReview {
	t.Helper()
	answered := make(chan *admissionv1.AdmissionReview, 1)
	go func() {
		out, err := b.resp.reviewBody(ctx, namespace, body)
		if err != nil {
			t.Errorf("review: %v", err)
		}
		answered <- out
	}()
	select {
	case out := <-answered:
		t.Fatalf("answered %+v while the projection was behind the log", out.Response)
	case <-time.After(200 * time.Millisecond):
	}
	go func() { b.running <- b.proj.Run(ctx) }()
	return <-answered
}

// TestDecisionsLookUpTheLogWhenTheViewLacksQuotas holds the projection
// behind a quota that is in the log: a dry-run create in the namespace
// waits for the projection to apply it and is denied, as Kubernetes'
// live look-up of quotas denies it, where reading the projection as it
// was would allow it.
func TestDecisionsLookUpTheLogWhenTheViewLacksQuotas(t *testing.T) {
	const ns = "fresh"
	b := holdBehind(t, quotaManifest("other", "q", map[string]string{"pods": "10"}))
	// In the log, not in the projection.
	upsert(t, b.stream, quotaManifest(ns, "q", map[string]string{"pods": "0"}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := b.answer(t, ctx, ns, review("u1", admissionv1.Create, ns, podManifest(ns, "web", "100m"), "", true))
	want := `pods "web" is forbidden: exceeded quota: q, requested: pods=1, used: pods=0, limited: pods=0`
	if out == nil || out.Response.Allowed || out.Response.Result == nil || out.Response.Result.Message != want {
		t.Fatalf("create in a namespace whose quota the projection had not applied: %+v, want denied with %q", out, want)
	}
	cancel()
	if err := <-b.running; err != nil {
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
	c.lookedAt["bare"] = time.Now().Add(-LiveLookupTTL)
	c.mu.Unlock()
	if !c.mayWait("bare") {
		t.Error("mayWait(bare) false with a look-up due")
	}
	get("bare")
	get("bare")
	if looked["bare"] != 2 {
		t.Errorf("bare looked up %d times after its look-up expired, want 2", looked["bare"])
	}

	// A projection behind what the look-up finds (a server whose
	// projection lags the log, or has just started) never stands for
	// the TTL: every decision on a view lacking a quota looks up again,
	// and waits, rather than decide on a view that may miss the quota.
	behind := 0
	lagging := newStateCache(r.proj, func(context.Context, string) (uint64, error) {
		behind++
		return 1 << 40, nil
	})
	for k := range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		_, _, err := lagging.get(ctx, "empty")
		cancel()
		if err == nil {
			t.Fatalf("get %d of a view behind the log: no error, want it to wait and fail", k+1)
		}
	}
	if behind != 3 {
		t.Errorf("a view behind the log looked up %d times in 3 gets, want 3", behind)
	}
}
